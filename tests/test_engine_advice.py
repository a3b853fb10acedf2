"""Advice that fits the engine (issue 40): the stack a log is of is read from what its lines name, and a
finding's fix and the settings it names come from its pattern's `advice` for that engine; a Megatron log
keeps the pattern's own fix; the advice is data (patterns/*.yaml) naming only the settings its text names."""
import json
import os
import re

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.patterns import ENGINES, builtin_dir, load_dir
from triage.scan.jobfacts import engines_in

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
PATTERNS = load_dir(builtin_dir())


def _json(path):
    r = CliRunner().invoke(cli, ["analyze", path, "--format", "json"], env={"TRIAGE_DB": None})
    return json.loads(r.stdout)


CASES = [  # (log, engine, a setting the fix must name, a Megatron knob it must not)
    ("synthetic/other-stacks/vllm_capture_progress_oom.log", "vllm", "--gpu-memory-utilization", "micro_batch_size"),
    ("synthetic/other-stacks/sglang_capture_failed_oom.log", "sglang", "--mem-fraction-static", "micro_batch_size"),
]


@pytest.mark.parametrize("log,engine,knob,not_knob", CASES)
def test_an_engines_capture_oom_gets_that_engines_advice(log, engine, knob, not_knob):
    d = _json(os.path.join(LOGS, log))
    assert d["engine"] == engine and d["primary"] == "capture-memory-overhead"
    p = d["findings"][0]
    assert knob in p["fix"] and knob in p["settings"] and not_knob not in p["fix"]
    assert "moe_preprocess" not in p["fix"]
    text = CliRunner().invoke(cli, ["analyze", os.path.join(LOGS, log)], env={"TRIAGE_DB": None}).stdout
    assert "settings involved: " in text and knob in text


def test_a_megatron_log_keeps_the_patterns_own_fix():
    d = _json(os.path.join(LOGS, "real", "mcore-0.19.2", "moe_preprocess_dtoh_capacity.log"))
    assert d["engine"] == "megatron"
    p = next(x for x in PATTERNS if x.id == d["primary"])
    assert d["findings"][0]["fix"] == p.fix and d["findings"][0]["settings"] == []


def test_the_engine_is_read_from_what_the_lines_name():
    assert engines_in(['  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 1']) == {"vllm": 1}
    assert engines_in(["[2026-12-04 06:10:09 TP3] Scheduler hit an exception"]) == {"sglang": 1}
    assert engines_in(["[01/24/2025-09:50:47] [TRT-LLM] [RANK 3] [E] boom"]) == {"trtllm": 1}
    assert engines_in(["INFO:megatron.core.transformer.cuda_graphs:Start CUDA Graphs capture..."]) == {"megatron": 1}
    assert engines_in(["jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED"]) == {"jax": 1}
    assert engines_in(["iteration 10/100 | loss 2.0", "an ajax call"]) == {}


@pytest.mark.parametrize("line,engine", [
    # every process/logger tag the launcher table reads as vLLM's or SGLang's names its engine too
    ("(VllmWorker rank=3 pid=1090) RuntimeError: CUDA error: out of memory", "vllm"),
    ("(Worker_PP1_TP2 pid=1090) RuntimeError: CUDA error: out of memory", "vllm"),
    ("(VllmWorkerProcess_TP1 pid=1090) RuntimeError: CUDA error: out of memory", "vllm"),
    ("[2026-12-04 06:10:09.123 PP0 EP1] Scheduler hit an exception", "sglang"),
    ("[2026-12-04 06:10:09 DP0 ATTN_CP1 MOE_DP0 TP2 EP2] Scheduler hit an exception", "sglang"),
])
def test_every_engine_tag_of_the_launcher_table_names_its_engine(line, engine):
    assert engines_in([line]) == {engine: 1}


@pytest.mark.parametrize("p", [p for p in PATTERNS if p.advice], ids=lambda p: p.id)
def test_each_advice_names_only_settings_its_text_names(p):
    for eng, adv in p.advice.items():
        assert eng in ENGINES and adv.fix.strip()
        for s in adv.settings:
            words = [w for w in re.split(r"[^\w-]+", s.split(".")[-1]) if len(w.strip("-")) >= 3]
            assert words and all(w.strip("-") in adv.fix for w in words), (p.id, eng, s)


def test_capture_memory_overhead_advises_vllm_and_sglang():
    p = next(x for x in PATTERNS if x.id == "capture-memory-overhead")
    assert {"vllm", "sglang"} <= set(p.advice)


def test_a_failure_on_a_nightly_build_says_pin_the_last_good_version(tmp_path):
    ima = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    p = tmp_path / "nightly.log"
    p.write_text("torch version: 2.6.0.dev20241112+cu124\n" + ima)
    d = _json(str(p))
    assert any("2.6.0.dev20241112+cu124 is a nightly" in n and "pin the last good version" in n for n in d["notes"])
    good = tmp_path / "good.log"
    good.write_text("torch version: 2.5.1+cu124\n[rank0]: iteration 10/100 | loss 2.0\n")
    bad = tmp_path / "bad.log"
    bad.write_text("torch version: 2.6.0+cu124\n" + ima)
    r = CliRunner().invoke(cli, ["analyze", str(bad), "--baseline-log", str(good), "--format", "json"],
                           env={"TRIAGE_DB": None})
    notes = json.loads(r.stdout).get("notes", [])
    assert any("torch changed since the last good run (2.5.1+cu124 -> 2.6.0+cu124)" in n for n in notes), notes
    p.write_text("torch version: 2.6.0.dev20241112+cu124\n[rank0]: iteration 10/100 | loss 2.0\n")
    assert not any("nightly" in n for n in _json(str(p)).get("notes", []))      # a healthy run: nothing to pin


def _engines_line_by_line(lines):
    """engines_in's definition, a line at a time (what it did before issue 44)."""
    from triage.scan.jobfacts import ENGINE_MARKERS, ENGINE_PROBES
    out = {}
    for ln in lines:
        if not any(p in ln for p in ENGINE_PROBES):
            continue
        for name, rx in ENGINE_MARKERS:
            if rx.search(ln[:4096]):
                out[name] = out.get(name, 0) + 1
    return out


def test_engines_are_counted_as_line_by_line_on_every_fixture():
    """One search per marker through the joined lines counts each engine's lines, in the order they are first
    named, exactly as a line at a time: every fixture log's lines, and lines built to straddle the 4,096
    characters read of each and the lines' ends."""
    import os
    root = os.path.join(os.path.dirname(__file__), "fixtures")
    n = 0
    for d, _, files in os.walk(root):
        for f in sorted(files):
            with open(os.path.join(d, f), "rb") as fh:
                lines = fh.read(1 << 20).decode("utf-8", "replace").split("\n")
            got, want = engines_in(lines), _engines_line_by_line(lines)
            assert got == want and list(got) == list(want), f
            n += bool(want)
    assert n > 50
    edge = ["x" * 4090 + "vllm/ here", "megatron.core " + "y" * 5000, "vLLM", "tail vllm", "", "-- arguments --",
            "[2026-12-04 06:10:09 TP3]", "jax.", "prefix megatron", "\\bvllm/"]
    for k in range(len(edge) + 1):
        lines = edge[k:] + edge[:k]
        got, want = engines_in(lines), _engines_line_by_line(lines)
        assert got == want and list(got) == list(want)


def test_every_marker_has_its_probes():
    from triage.scan.jobfacts import ENGINE_MARKERS, ENGINE_PROBES_OF
    assert [n for n, _ in ENGINE_MARKERS] == list(ENGINE_PROBES_OF)
