"""Issue 42, rules the real releases enforce, before launch: on a real Megatron Bridge 0.6.2 config
(tests/fixtures/configs/real/bridge-0.6.2/good/moe-te-attn.yaml, made by the real software) with the
overrides a user would give, `check-config` rejects what megatron-core 0.16-0.19 asserts at start-up."""
import os

from inproc import run

HERE = os.path.dirname(os.path.abspath(__file__))
MOE = os.path.join(HERE, "fixtures", "configs", "real", "bridge-0.6.2", "good", "moe-te-attn.yaml")
ENV = {**os.environ, "TRIAGE_DB": ""}


def _check(*overrides):
    return run(["check-config", MOE, *overrides], env=ENV)


def test_the_real_config_is_clean():
    r = _check()
    assert r.returncode == 0, r.stdout


def test_modules_beside_a_full_iteration_graph_are_rejected():
    """megatron-core 0.18+: 'cuda_graph_modules must be empty when cuda_graph_impl="full_iteration".'"""
    r = _check("model.cuda_graph_impl=full_iteration", "model.cuda_graph_modules=[attn]",
               "rerun_state_machine.check_for_nan_in_loss=false")
    assert r.returncode == 1 and "invalid-graph-option: cuda_graph_modules must be empty" in r.stdout, r.stdout
    ok = _check("model.cuda_graph_impl=full_iteration", "rerun_state_machine.check_for_nan_in_loss=false")
    assert "cuda_graph_modules must be empty" not in ok.stdout


def test_an_mlp_scope_on_an_all_moe_model_is_rejected():
    """megatron-core 0.16-0.19: 'mlp cuda graph is only supported for dense layers, but not found in the model.'
    (moe_layer_freq 1, its default, on a 4-expert model)."""
    r = _check("model.cuda_graph_scope=[attn,mlp]")
    assert r.returncode == 1 and "scope-not-in-model: mlp cuda graph is only supported for dense layers" in r.stdout
    ok = _check("model.cuda_graph_scope=[attn,mlp]", "model.moe_layer_freq=2")
    assert "mlp cuda graph is only supported" not in ok.stdout


def test_a_launch_script_against_a_full_yaml_lists_only_what_it_gives(tmp_path):
    """Issue 42: a launch line (a real bash -x trace of torchrun, tests/fixtures/configs/real/launch/) gives
    only its flags: every other key of the full YAML is not given, never "changed to None" (522 rows before)."""
    import json
    launch = os.path.join(HERE, "fixtures", "configs", "real", "launch", "trace-torchrun.log")
    sample = os.path.join(os.path.dirname(HERE), "examples", "sample_job.log")
    r = run(["analyze", sample, "--config", launch, "--baseline-config", MOE, "--format", "json"], env=ENV)
    d = json.loads(r.stdout)
    keys = {c["key"]: (c["old"], c["new"]) for c in d["diff"]}
    assert keys["cuda_graph_impl"] == ("transformer_engine", "local") and len(keys) <= 6, keys
    assert all(new is not None for _, new in keys.values()), keys
    r = run(["diff", MOE, launch], env=ENV)
    assert r.returncode == 1 and len(r.stdout.splitlines()) <= 6 and "(unset)" not in r.stdout, r.stdout


def test_an_undecided_rule_says_how_to_give_what_it_needs():
    """A real launch trace gives only its flags: the rules it cannot decide say which keys they need and
    how to give them (issue 42)."""
    import json
    launch = os.path.join(HERE, "fixtures", "configs", "real", "launch", "trace-torchrun.log")
    r = run(["check-config", launch, "--format", "json"], env=ENV)
    und = json.loads(r.stdout)["undecided"]
    assert und and all(u["how"].startswith("--") and all(f"{k.replace('env.', '')}=VALUE" in u["how"]
                                                        for k in u["keys"]) for u in und), und
    text = run(["check-config", launch], env=ENV).stdout
    assert "to decide them, give --set" in text
