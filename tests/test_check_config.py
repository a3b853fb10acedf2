"""check-config predicts every reference-card constraint from a config alone (shipped rules)."""
import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")
TE = ["cuda_graph_impl=transformer_engine", "use_te_rng_tracker=True"]
LOCAL_FULL = ["cuda_graph_impl=local", "cuda_graph_scope=full_iteration", "use_te_rng_tracker=True",
              "check_for_nan_in_loss=False"]
MOE = ["num_moe_experts=8", "moe_expert_capacity_factor=1.0", "moe_pad_expert_input_to_capacity=True"]


def check(args, env=()):
    r = CliRunner().invoke(cli, ["check-config", *args, *[f"--env={e}" for e in env], "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    d = json.loads(r.output)
    assert (r.exit_code == 1) == bool(d["violations"])
    return {v["pitfall"] for v in d["violations"]}


@pytest.mark.parametrize("args,env,expected", [
    (["cuda_graph_impl=transformer_engine", "cuda_graph_scope=attn"], [], "te-rng-tracker-missing"),
    (["model.cuda_graph_impl=local", "rng.te_rng_tracker=False", "model.use_te_rng_tracker=False"], [], "te-rng-tracker-missing"),
    (LOCAL_FULL[:3] + ["rerun_state_machine.check_for_nan_in_loss=True"], [], "full-iteration-nan-check"),
    (TE + ["cuda_graph_scope=full_iteration"], [], "full-iteration-requires-local"),
    (TE + MOE + ["cuda_graph_scope=[attn,moe,moe_router]"], [], "moe-scope-conflict"),
    (TE + MOE + ["cuda_graph_scope=[attn,moe_preprocess]"], [], "moe-preprocess-without-router"),
    (TE + ["num_moe_experts=8", "cuda_graph_scope=[attn,moe]"], [], "dropless-moe-scope"),
    (TE + ["cuda_graph_scope=attn"], ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"], "nccl-graph-register-expandable"),
    (TE + ["cuda_graph_scope=attn", "cpu_offloading=True"], [], "cpu-offload-incompatible"),
    (TE + MOE + ["cuda_graph_scope=[attn,moe_router]", "recompute_granularity=selective", "recompute_modules=[moe]"], [],
     "moe-recompute-router-scope"),
    (TE + ["cuda_graph_scope=mlp", "recompute_granularity=full", "recompute_num_layers=1"], [],
     "full-recompute-needs-full-iteration"),
    (TE + ["cuda_graph_scope=attn", "delay_wgrad_compute=True", "te_version=2.9.0"], [], "delay-wgrad-constraints"),
    (TE + ["cuda_graph_scope=attn", "delay_wgrad_compute=True", "gradient_accumulation_fusion=False"], [], "delay-wgrad-constraints"),
    (TE + ["cuda_graph_scope=attn", "delay_wgrad_compute=True", "add_qkv_bias=True"], [], "delay-wgrad-constraints"),
    (TE + ["cuda_graph_scope=attn", "variable_seq_lengths=True"], [], "dynamic-shapes"),
    (TE + ["cuda_graph_scope=[attn,moe_router]"], [], "scope-not-in-model"),
    (TE + ["cuda_graph_scope=attention"], [], "invalid-graph-option"),
    (["cuda_graph_impl=cudagraph", "use_te_rng_tracker=True"], [], "invalid-graph-option"),
])
def test_each_card_constraint_is_predicted(args, env, expected):
    assert expected in check(args, env)


@pytest.mark.parametrize("args,env", [
    (TE + ["cuda_graph_scope=[attn,mlp]"], []),
    (TE + MOE + ["cuda_graph_scope=[attn,moe_router,moe_preprocess]"], []),
    (LOCAL_FULL, ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "NCCL_GRAPH_REGISTER=0"]),
    (LOCAL_FULL + ["recompute_granularity=full", "recompute_num_layers=1"], []),
    (["cuda_graph_impl=none", "cpu_offloading=True"], []),
    (TE + ["cuda_graph_scope=attn", "delay_wgrad_compute=True", "te_version=2.12.0",
          "add_bias_linear=False"], []),
])
def test_valid_configs_pass(args, env):
    assert check(args, env) == set()


def test_delay_wgrad_te_version_is_framework_aware(tmp_path):
    base = TE + ["cuda_graph_scope=attn", "delay_wgrad_compute=True", "te_version=2.11.0", "add_bias_linear=False"]
    assert "delay-wgrad-constraints" not in check(base)              # megatron-core: TE >= 2.10 suffices
    assert "delay-wgrad-constraints" in check(base + ["framework=bridge"])   # Bridge asks for TE >= 2.12


def test_bridge_run_config_file_and_env_flag():
    assert check([os.path.join(CFG, "good_run_config.yaml")]) == set()
    assert check([os.path.join(CFG, "bad_run_config.yaml")]) == {"moe-scope-conflict", "dropless-moe-scope"}
    assert "nccl-graph-register-expandable" in check([os.path.join(CFG, "bad_flat.yaml")])
    assert check([os.path.join(CFG, "good_flat.json")]) == set()


@pytest.mark.parametrize("args,expected", [
    (["enable_cuda_graph=True", "cuda_graph_impl=local", "use_te_rng_tracker=True"], "deprecated-graph-flags"),
    (["enable_cuda_graph=True", "external_cuda_graph=True", "use_te_rng_tracker=True"], "deprecated-graph-flags"),
    (TE + ["cuda_graph_scope=[full,attn]"], "invalid-graph-option"),
    (TE + ["cuda_graph_scope=[attn]", "cuda_graph_modules=[attn]"], "deprecated-graph-flags"),
])
def test_megatron_core_flag_rules(args, expected):
    assert expected in check(args)


def test_enable_cuda_graph_alone_is_fine():
    assert check(["enable_cuda_graph=True", "use_te_rng_tracker=True"]) == set()
