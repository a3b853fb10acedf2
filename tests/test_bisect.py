"""Issue 42, a bisect plan when the cause is not settled: the single-variable runs that separate the
candidate graph changes, as overrides in the stack's spelling, in every format and as a JSON list.
The configs: the real Megatron Bridge 0.6.2 run_config.yaml (tests/fixtures/configs/real/bridge-0.6.2)
and the same with two graph settings changed as a user would (moe_router added to cuda_graph_modules,
warmup 3 -> 1); the failure: a real unexplained one (real/cpu-outcome/uncaught_torch_error.log)."""
import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli

HERE = os.path.dirname(os.path.abspath(__file__))
GOOD = os.path.join(HERE, "fixtures", "configs", "real", "bridge-0.6.2", "good", "moe-te-attn.yaml")
FAILED = os.path.join(HERE, "fixtures", "logs", "real", "cpu-outcome", "uncaught_torch_error.log")
ROUTER = """  - _args_:
    - 4
    _call_: true
    _name_: moe_router
    _target_: megatron.core.transformer.enums.CudaGraphModule
"""


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    with open(GOOD, encoding="utf-8") as f:
        src = f.read()
    anchor = "    _target_: megatron.core.transformer.enums.CudaGraphModule\n  cuda_graph_retain_backward_graph: false"
    assert anchor in src and "  cuda_graph_warmup_steps: 3\n" in src
    text = src.replace(anchor, anchor.replace("\n  cuda_graph_retain", "\n" + ROUTER + "  cuda_graph_retain"), 1)
    text = text.replace("  cuda_graph_warmup_steps: 3\n", "  cuda_graph_warmup_steps: 1\n", 1)
    p = tmp_path_factory.mktemp("bisect") / "bad.yaml"
    p.write_text(text)
    return str(p)


def _analyze(bad, fmt="json"):
    return CliRunner().invoke(cli, ["analyze", FAILED, "--config", bad, "--baseline-config", GOOD, "--format", fmt],
                              env={"TRIAGE_DB": None}).stdout


def test_the_plan_separates_the_candidates_in_the_bridge_spelling(bad):
    d = json.loads(_analyze(bad))
    assert d["outcome"] == "unexplained-failure"
    plan = d["bisect"]
    assert [p["overrides"] for p in plan] == [["model.cuda_graph_impl=none"], ["model.cuda_graph_modules=[attn]"]]
    assert plan[0]["set"] == {"cuda_graph_impl": "none"} and plan[1]["set"] == {"cuda_graph_scope": ["attn"]}
    assert "cuda_graph_warmup_steps is the cause" in plan[-1]["why"]        # the last candidate needs no run


def test_each_run_changes_one_setting_of_the_failed_config(bad):
    """Applied to the failed run's config, step 2's override brings back the good run's modules only."""
    r = CliRunner().invoke(cli, ["check-config", bad, "--set", "model.cuda_graph_modules=[attn]", "--format", "json"],
                           env={"TRIAGE_DB": None})
    assert json.loads(r.stdout)["config"]["cuda_graph_scope"] == ["attn"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "junit", "jira"])
def test_every_format_shows_the_plan(bad, fmt):
    out = _analyze(bad, fmt).replace("\\\\", "").replace("\\", "")
    assert "model.cuda_graph_modules=[attn]" in out and "model.cuda_graph_impl=none" in out


def test_a_settled_blame_has_no_plan():
    pair = os.path.join(HERE, "fixtures", "configs", "real", "bridge-0.6.2", "pair-te-rng")
    r = CliRunner().invoke(cli, ["analyze", os.path.join(pair, "summary-bad.log"), "--config",
                                 os.path.join(pair, "bad.yaml"), "--baseline-config", os.path.join(pair, "good.yaml"),
                                 "--format", "json"], env={"TRIAGE_DB": None})
    assert "bisect" not in json.loads(r.stdout)


# Inference engines (issue 42: "vLLM / SGLang flags"): the failed and the last good run's own logs,
# each with the engine's start-up config line in its release's format (synthetic pairs, made by
# tests/fixtures/logs/synthetic/engine_pairs/gen.py from real-wording capture-OOM excerpts).
PAIRS = os.path.join(HERE, "fixtures", "logs", "synthetic", "engine_pairs")


def _pair(engine, fmt="json"):
    return CliRunner().invoke(cli, ["analyze", os.path.join(PAIRS, f"{engine}_failed.log"), "--baseline-log",
                                    os.path.join(PAIRS, f"{engine}_good.log"), "--format", fmt],
                              env={"TRIAGE_DB": None}).stdout


def test_sglang_plan_is_in_launch_server_flags():
    d = json.loads(_pair("sglang"))
    assert d["primary"] == "capture-memory-overhead"
    assert [p["overrides"] for p in d["bisect"]] == [["--disable-cuda-graph"], ["--cuda-graph-max-bs 160"]]
    assert d["bisect"][0]["set"] == {"disable_cuda_graph": True}
    blamed = {s["key"] for s in d["suspects"] if not s["unrelated"]}
    assert blamed == {"cuda_graph_max_bs", "mem_fraction_static"}


def test_vllm_plan_is_in_vllm_serve_flags():
    d = json.loads(_pair("vllm"))
    plan = d["bisect"]
    assert plan[0]["overrides"] == ["--enforce-eager"] and plan[0]["set"] == {"enforce_eager": True}
    assert plan[1]["overrides"][0].startswith("--compilation-config '{\"cudagraph_capture_sizes\": [256, 248,")
    assert json.loads(plan[1]["overrides"][0].split(" ", 1)[1].strip("'"))["cudagraph_capture_sizes"][-1] == 1
    assert "cudagraph_mode is the cause" in plan[-1]["why"] and "(35 values)" in plan[-1]["why"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "junit", "jira"])
def test_engine_plan_in_every_format(fmt):
    out = _pair("sglang", fmt).replace("\\-", "-")        # Jira's markup escapes each dash
    assert "--disable-cuda-graph" in out and "--cuda-graph-max-bs 160" in out


def test_engine_config_lines_of_each_release_shape():
    from triage.config.engines import engine_config
    v0 = ("INFO 10-24 12:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: "
          "model='m', speculative_config=None, tensor_parallel_size=4, enforce_eager=True, seed=0")
    assert engine_config(v0) == ("vllm", {"tensor_model_parallel_size": 4, "enforce_eager": True,
                                          "vllm_version": "0.6.3.post1"})
    cut = ('INFO x [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: model=\'m\', enforce_eager=False, '
           'compilation_config={"level":3,"cudagraph_mode":[2,0],"cudagraph_capture_sizes":[4,2,1],"max_cap')
    assert engine_config(cut)[1]["cudagraph_mode"] == "FULL_DECODE_ONLY"      # a cut paste still reads
    assert engine_config(cut)[1]["cudagraph_capture_sizes"] == [4, 2, 1]
    assert engine_config("INFO the run said with config: nothing here") is None
    assert engine_config("server_args=ServerArgs(disable_cuda_graph=True, cuda_graph_bs=[1, 2, 4])")[1] == \
        {"disable_cuda_graph": True, "cuda_graph_bs": [1, 2, 4]}
