import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.config import (ConfigError, build_config, canonical, config_from_lines, diff, load_config,
                           norm_scope, parse_cmdline)
from triage.selftest import lines_of

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")


@pytest.mark.parametrize("raw,want", [
    (["attn", "moe_router"], ["attn", "moe_router"]),
    ("attn,moe_router,moe_preprocess", ["attn", "moe_router", "moe_preprocess"]),
    ("[<CudaGraphScope.attn: 2>, <CudaGraphScope.moe_router: 5>]", ["attn", "moe_router"]),
    ("['full_iteration']", ["full_iteration"]),
    ("full", ["full"]),
    (None, []),
])
def test_scope_spellings(raw, want):
    assert norm_scope(raw) == want


def test_canonical_keys_across_versions():
    assert canonical({"model.cuda_graph_modules": "['attn']"})["cuda_graph_scope"] == ["attn"]
    c = canonical({"cuda_graph_impl": "full_iteration", "cuda_graph_modules": "[]"})
    assert c["cuda_graph_impl"] == "local" and c["cuda_graph_scope"] == ["full_iteration"]
    assert canonical({"enable_cuda_graph": "True"})["cuda_graph_impl"] == "local"
    assert canonical({"external_cuda_graph": True})["cuda_graph_impl"] == "transformer_engine"
    assert canonical({"model.use_te_rng_tracker": False, "rng.te_rng_tracker": True})["use_te_rng_tracker"] is True
    assert canonical({"check_for_nan_in_loss_and_grad": "False"})["check_for_nan_in_loss"] is False
    assert canonical({"env.PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})["expandable_segments"] is True


def test_bridge_run_config_yaml():
    c = load_config(os.path.join(CFG, "good_run_config.yaml"))
    assert c["cuda_graph_impl"] == "transformer_engine"
    assert c["cuda_graph_scope"] == ["attn", "moe_router", "moe_preprocess"]
    assert c["use_te_rng_tracker"] is True and c["check_for_nan_in_loss"] is True
    assert c["micro_batch_size"] == 1 and c["lr"] == 0.0003
    assert c["moe_expert_capacity_factor"] is None


def test_megatron_arguments_block_in_log():
    log = "\n".join([
        "------------------------ arguments ------------------------",
        "  check_for_nan_in_loss_and_grad .................. True",
        "  cuda_graph_impl ................................. local",
        "  cuda_graph_scope ................................ [<CudaGraphScope.full_iteration: 1>]",
        "  lr .............................................. 0.0003",
        "  te_rng_tracker .................................. True",
        "-------------------- end of arguments ---------------------",
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "node1:123:123 [0] NCCL INFO NCCL_GRAPH_REGISTER set by environment to 0.",
    ])
    c = config_from_lines(lines_of(log))
    assert c["cuda_graph_impl"] == "local" and c["cuda_graph_scope"] == ["full_iteration"]
    assert c["check_for_nan_in_loss"] is True and c["lr"] == 0.0003
    assert c["env.NCCL_GRAPH_REGISTER"] == "0" and c["expandable_segments"] is True


def test_bridge_task_configuration_and_summary_blocks():
    task = "\n".join(["------- Task Configuration -------", "model:", "  cuda_graph_impl: transformer_engine",
                      "  cuda_graph_scope:", "  - attn", "rng:", "  te_rng_tracker: false",
                      "----------------------------------"])
    c = config_from_lines(lines_of(task))
    assert c["cuda_graph_scope"] == ["attn"] and c["use_te_rng_tracker"] is False
    summary = "\n".join(["=" * 70, "Configuration Summary (Non-Default Values vs Megatron Core)", "=" * 70,
                         "", "[model] Non-default values (vs Mcore GPTModelProvider):",
                         "  cuda_graph_impl: 'transformer_engine'  (Mcore default: 'none')",
                         "  cuda_graph_scope: ['attn', 'moe_router']  (Mcore default: [])",
                         "Other Configuration Values:", "  train_iters: 100", "=" * 70])
    c = config_from_lines(lines_of(summary))
    assert c["cuda_graph_impl"] == "transformer_engine" and c["cuda_graph_scope"] == ["attn", "moe_router"]
    assert c["other.train_iters"] == 100


def test_echoed_command_line():
    d = parse_cmdline("torchrun pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn "
                      "moe_router --te-rng-tracker --no-check-for-nan-in-loss-and-grad model.seq_length=4096")
    c = canonical(d)
    assert c["cuda_graph_impl"] == "transformer_engine" and c["cuda_graph_scope"] == ["attn", "moe_router"]
    assert c["use_te_rng_tracker"] is True and c["check_for_nan_in_loss"] is False
    assert c["seq_length"] == 4096


def test_overrides_and_env():
    c = build_config([os.path.join(CFG, "good_run_config.yaml")],
                     ["model.cuda_graph_impl=local", "model.cuda_graph_scope=[full_iteration]"],
                     ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"])
    assert c["cuda_graph_impl"] == "local" and c["cuda_graph_scope"] == ["full_iteration"]
    assert c["expandable_segments"] is True


def test_bad_config_files(tmp_path):
    with pytest.raises(ConfigError, match="no such config"):
        load_config(str(tmp_path / "nope.yaml"))
    (tmp_path / "broken.yaml").write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(tmp_path / "broken.yaml"))
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        build_config([], ["novalue"])


def test_diff_is_canonical():
    a = load_config(os.path.join(CFG, "good_run_config.yaml"))
    b = load_config(os.path.join(CFG, "bad_run_config.yaml"))
    keys = {c.key for c in diff(a, b)}
    assert keys == {"cuda_graph_scope", "lr", "log_interval"}
    assert diff(a, a) == []


def invoke(args, input=None):
    return CliRunner().invoke(cli, args, input=input)


def test_cli_diff_and_check_config_bad_file():
    r = invoke(["diff", os.path.join(CFG, "good_run_config.yaml"), os.path.join(CFG, "bad_run_config.yaml"),
                "--format", "json"])
    assert r.exit_code == 1 and {c["key"] for c in json.loads(r.output)} >= {"cuda_graph_scope"}  # they differ
    r = invoke(["check-config", "/nonexistent.yaml"])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_scope_reorder_is_no_change_and_cross_format_keys_agree():
    a = canonical({"model.cuda_graph_scope": ["attn", "moe_router"], "optimizer.lr": 3e-4})
    b = canonical({"cuda_graph_scope": "moe_router,attn", "lr": "0.0003"})
    assert diff(a, b) == []
    assert diff({"framework": "bridge"}, {"framework": "megatron-lm"}) == []


def test_cmdline_single_value_flags_take_one_token():
    d = parse_cmdline("torchrun --nproc-per-node 8 pretrain_gpt.py --cuda-graph-scope attn mlp --seq-length 4096")
    assert d["cuda_graph_scope"] == ["attn", "mlp"] and d["seq_length"] == "4096"
    assert "nproc_per_node" not in d       # the launcher's own options are not the job's config
