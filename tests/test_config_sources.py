"""Issue 20: real config sources read right -- Bridge's serialised enums, launch lines, version
defaults, environment from env dumps only, like compared with like, relatedness.

The launch-line and message forms below are the ones the real software prints (sources named per
test); the generated real files (run_config.yaml, arguments blocks, Configuration Summaries) are
exercised in tests/test_real_configs.py."""
import json
import os
import subprocess
import sys

import pytest

from triage.config import (Unknown, build_config, canonical, check, config_from_lines, decode, diff, enum_name,
                           flatten, parse_cmdline, undecided, unknown_values)
from triage.config import load_config
from triage.config.launch import is_launch_line, parse_launch
from triage.patterns import builtin_dir, load_dir
from triage.inputs.sources import Line
import inproc  # noqa: E402

PATS = load_dir(builtin_dir())


def lines_of(text):
    return [Line(t, "x.log", i + 1, None, None, t) for i, t in enumerate(text.splitlines())]


def run(args, stdin=None):
    return inproc.run(args, input=stdin)       # in-process: tests/inproc.py


def enum(cls, v):
    return {"_target_": f"megatron.core.transformer.enums.{cls}", "_call_": True, "_args_": [v]}


# --- Bridge's serialised enums (megatron/training/config/yaml_utils.py _enum_representer) ----------

def test_enum_values_map_to_names_by_class():
    assert enum_name("megatron.core.transformer.enums.CudaGraphScope", 2) == "attn"
    assert enum_name("megatron.core.transformer.enums.CudaGraphModule", 2) == "mlp"     # not attn: 0.18+ renumbered
    assert enum_name("megatron.core.transformer.enums.AttnBackend", 5) == "auto"
    assert enum_name("megatron.core.enums.Fp8Recipe", "delayed") == "delayed"


def test_an_unknown_enum_value_is_unknown_never_guessed():
    for v in (enum_name("megatron.core.transformer.enums.CudaGraphScope", 9),
              enum_name("megatron.core.transformer.enums.NoSuchEnum", 1)):
        assert isinstance(v, Unknown)
    # full_iteration_inference (8) exists from 0.17 on: in a 0.16 log it is no member
    assert enum_name("megatron.core.transformer.enums.CudaGraphScope", 8) == "full_iteration_inference"
    assert isinstance(enum_name("megatron.core.transformer.enums.CudaGraphScope", 8, "0.16.1"), Unknown)


def test_decode_dtypes_functions_and_nested_lists():
    v = decode({"a": [enum("CudaGraphScope", 2), enum("CudaGraphScope", 5)],
                "d": {"_target_": "torch.bfloat16", "_call_": False},
                "f": {"_target_": "torch.nn.functional.gelu", "_call_": False}})
    assert v == {"a": ["attn", "moe_router"], "d": "torch.bfloat16", "f": "torch.nn.functional.gelu"}
    c = canonical(flatten({"model": {"params_dtype": {"_target_": "torch.bfloat16", "_call_": False}}}))
    assert c["params_dtype"] == "bf16"


def test_check_config_reads_enum_scopes_and_reports_unknown_values(tmp_path):
    cfg = {"model": {"cuda_graph_impl": "transformer_engine", "use_te_rng_tracker": True,
                     "cuda_graph_scope": [enum("CudaGraphScope", 2), enum("CudaGraphScope", 3)]},
           "rng": {"te_rng_tracker": True}, "train": {"train_iters": 10}}
    p = tmp_path / "run_config.yaml"
    import yaml
    p.write_text(yaml.safe_dump(cfg))
    r = run(["check-config", str(p), "--format", "json"])
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["config"]["cuda_graph_scope"] == ["attn", "mlp"] and d["violations"] == [] and d["unknown"] == []
    cfg["model"]["cuda_graph_scope"].append(enum("CudaGraphScope", 42))
    p.write_text(yaml.safe_dump(cfg))
    r = run(["check-config", str(p)])
    assert r.returncode == 0 and "unknown value: cuda_graph_scope: CudaGraphScope(42)" in r.stdout, r.stdout


def test_scope_and_modules_are_one_key():
    a = canonical(flatten({"model": {"cuda_graph_modules": [enum("CudaGraphModule", 1)], "cuda_graph_scope": []}}))
    b = canonical({"cuda_graph_scope": "attn"})
    assert a["cuda_graph_scope"] == ["attn"] and diff(a, b) == []
    assert "scope_and_modules_both_set" not in a


# --- launch lines ----------------------------------------------------------------------------------

# Megatron Bridge scripts/training/launch_with_sbatch.sh (v0.6.0..HEAD): echo "Executing: $CMD"
BRIDGE_EXEC = ("Executing: torchrun --nproc_per_node=8 --nnodes=2 --node_rank=$SLURM_PROCID "
               "--master_addr=$(scontrol show hostname $SLURM_NODELIST | head -n1) --master_port=29500 "
               "/opt/Megatron-Bridge/scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config --step gpt "
               "model.cuda_graph_impl=transformer_engine model.cuda_graph_modules=[attn,mlp]")


@pytest.mark.parametrize("line", [
    BRIDGE_EXEC,
    "+ torchrun --nproc-per-node 8 pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp",
    "++ srun -l --export=ALL,NCCL_GRAPH_REGISTER=0 python -m torch.distributed.run --nproc_per_node 8 "
    "pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp",
    "NCCL_GRAPH_REGISTER=0 python -u pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp",
    "+ bash -c 'uv run --no-sync python pretrain_gpt.py --cuda-graph-impl transformer_engine "
    "--cuda-graph-scope attn mlp'",
])
def test_launch_line_forms(line):
    assert is_launch_line(line)
    cfg = canonical(parse_cmdline(line))
    assert cfg["cuda_graph_impl"] == "transformer_engine" and cfg["cuda_graph_scope"] == ["attn", "mlp"], cfg
    assert not any(k in cfg for k in ("nproc_per_node", "nnodes", "master_port", "export"))


def test_launch_env_assignments_are_environment():
    _, env = parse_launch("++ srun -l --export=ALL,NCCL_GRAPH_REGISTER=0 python x.py --a 1")
    assert env["NCCL_GRAPH_REGISTER"] == "0"
    c = config_from_lines(lines_of("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun train.py "
                                   "--cuda-graph-impl local"))
    assert c["expandable_segments"] is True and c["cuda_graph_impl"] == "local"


@pytest.mark.parametrize("line", [
    "AssertionError: --no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration",
    "usage: pretrain_gpt.py [-h] [--num-layers NUM_LAYERS]",
    "python: can't open file '/x/pretrain_gpt.py': [Errno 2] No such file or directory",
    "srun: error: node-1: task 3: Exited with exit code 1",
])
def test_not_launch_lines(line):
    assert config_from_lines(lines_of(line)).get("cuda_graph_impl") is None
    assert not is_launch_line(line) or not parse_launch(line)[0]


def test_bridge_announced_command_on_the_next_line():
    # Bridge's examples/*/slurm_pretrain.sh: echo "Executing command..."; echo "$CMD"
    log = ("Executing command...\nuv run --no-sync python /opt/Megatron-Bridge/scripts/training/run_recipe.py "
           "--recipe qwen3_8b_pretrain_config model.cuda_graph_impl=local model.cuda_graph_scope=[full_iteration] "
           "rerun_state_machine.check_for_nan_in_loss=true\n======================================")
    c = config_from_lines(lines_of(log))
    assert c["cuda_graph_impl"] == "local" and c["cuda_graph_scope"] == ["full_iteration"]
    assert [v.pitfall for v in check(c, PATS)] == ["full-iteration-nan-check"]


def test_an_arguments_block_wins_over_the_command_line():
    log = ("+ torchrun pretrain_gpt.py --moe-layer-freq '([0]+[1]*3)' --cuda-graph-impl local\n"
           "------------------------ arguments ------------------------\n"
           "  cuda_graph_impl ................................. transformer_engine\n"
           "  moe_layer_freq .................................. [0, 1, 1, 1]\n"
           "-------------------- end of arguments ---------------------\n")
    c = config_from_lines(lines_of(log))
    assert c["cuda_graph_impl"] == "transformer_engine" and c["moe_layer_freq"] == [0, 1, 1, 1]
    assert "config_complete" not in c


def test_list_flag_equals_the_parsed_list():
    a = canonical(parse_cmdline("torchrun pretrain_gpt.py --moe-layer-freq '([0]+[1]*3)'"))
    b = config_from_lines(lines_of("------------------------ arguments ------------------------\n"
                                   "  moe_layer_freq .................................. [0, 1, 1, 1]\n"
                                   "-------------------- end of arguments ---------------------"))
    assert a["moe_layer_freq"] == b["moe_layer_freq"] == [0, 1, 1, 1]
    assert canonical({"moe_layer_freq": "[1]*100000000"})["moe_layer_freq"] == "[1]*100000000"   # bounded


def test_dtypes_compare_by_meaning():
    a = canonical({"model.params_dtype": "torch.bfloat16", "model.autocast_dtype": "bfloat16"})
    b = canonical({"params_dtype": "bf16", "autocast_dtype": "torch.bfloat16"})
    assert diff(a, b) == []


# --- version defaults ------------------------------------------------------------------------------

FULL_ITER = "+ torchrun --nproc-per-node 8 pretrain_gpt.py --cuda-graph-impl local --cuda-graph-scope full_iteration"


def test_command_line_with_a_version_gets_that_releases_defaults():
    c = config_from_lines(lines_of("megatron-core 0.16.1\n" + FULL_ITER))
    assert c["check_for_nan_in_loss"] is True and c["defaults_of"] == "megatron-core 0.16.1"
    assert c["use_te_rng_tracker"] is True       # validate_args turns it on with graphs (transformer_impl TE)
    assert sorted(v.pitfall for v in check(c, PATS)) == ["full-iteration-nan-check"]


def test_command_line_without_a_version_leaves_the_default_unknown():
    c = config_from_lines(lines_of(FULL_ITER))
    assert c["config_complete"] is False and "check_for_nan_in_loss" not in c
    assert check(c, PATS) == []                                  # not off, not on: undecided
    assert "full-iteration-nan-check" in {u.pitfall for u in undecided(c, PATS)}
    c2 = config_from_lines(lines_of(FULL_ITER + " --no-check-for-nan-in-loss-and-grad"))
    assert c2["check_for_nan_in_loss"] is False and "full-iteration-nan-check" not in {
        u.pitfall for u in undecided(c2, PATS)}


def test_local_transformer_impl_keeps_the_tracker_off_in_0_15():
    c = config_from_lines(lines_of("megatron_core==0.15.3\n+ torchrun x.py --cuda-graph-impl local "
                                   "--transformer-impl local"))
    assert c["use_te_rng_tracker"] is False
    # ...which Megatron-LM's argument path allows: its own tracker is then graph-safe
    # (initialize.py use_cudagraphable_rng); Bridge's provider asserts on the same settings
    assert "te-rng-tracker-missing" not in {v.pitfall for v in check(c, PATS)}
    assert "te-rng-tracker-missing" in {v.pitfall for v in check(dict(c, framework="bridge"), PATS)}


def test_bridge_override_of_one_tracker_spelling_says_nothing_of_the_other():
    c = config_from_lines(lines_of(BRIDGE_EXEC + " model.use_te_rng_tracker=false"))
    assert "use_te_rng_tracker" not in c
    assert "te-rng-tracker-missing" not in {v.pitfall for v in check(c, PATS)}


# --- environment: env dumps only -------------------------------------------------------------------

ADVICE = [
    # torch c10/cuda/CUDACachingAllocator.cpp OOM message
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 "
    "GiB of which 1.2 GiB is free. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
    # c10/cuda/CUDAException.cpp
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    # megatron-core cuda_graphs.py TECudaGraphHelper (0.16+)
    "AssertionError: Setting NCCL_GRAPH_REGISTER=0 to avoid illegal memory access when using CUDA Graph with "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
]


@pytest.mark.parametrize("line", ADVICE)
def test_advice_text_is_not_environment(line):
    c = config_from_lines(lines_of(line))
    assert not any(k.startswith("env.") for k in c) and "expandable_segments" not in c


@pytest.mark.parametrize("line,key,value", [
    ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "env.PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
    ("+ export NCCL_GRAPH_REGISTER=0", "env.NCCL_GRAPH_REGISTER", "0"),
    ("export CUDA_DEVICE_MAX_CONNECTIONS=1", "env.CUDA_DEVICE_MAX_CONNECTIONS", "1"),
    ("declare -x NCCL_NVLS_ENABLE=\"0\"", "env.NCCL_NVLS_ENABLE", "0"),
    ("node1:123:123 [0] NCCL INFO NCCL_GRAPH_REGISTER set by environment to 0.", "env.NCCL_GRAPH_REGISTER", "0"),
])
def test_env_dump_lines_are_environment(line, key, value):
    assert config_from_lines(lines_of(line))[key] == value


def test_env_from_the_log_is_read_with_config_and_blamed(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("model:\n  cuda_graph_impl: transformer_engine\n  use_te_rng_tracker: true\n"
                    "  cuda_graph_scope: [attn]\ntrain:\n  train_iters: 10\n")
    base_log = tmp_path / "good.log"
    base_log.write_text("+ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False\ntraining ...\n")
    log = tmp_path / "bad.log"
    log.write_text("+ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                   "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    r = run(["analyze", str(log), "--config", str(good), "--baseline-config", str(good), "--baseline-log",
             str(base_log), "--format", "json"])
    d = json.loads(r.stdout)
    assert d["config"]["expandable_segments"] is True
    top = d["suspects"][0]
    assert top["key"] in ("expandable_segments", "env.PYTORCH_CUDA_ALLOC_CONF") and not top["unrelated"], d["suspects"]


# --- relatedness -----------------------------------------------------------------------------------

def test_schedule_keys_are_unrelated(tmp_path):
    from triage.verdict.blame import blame
    from triage.verdict.types import Finding
    old = canonical({"scheduler.lr_decay_iters": 100, "scheduler.wd_incr_steps": 800, "model.cuda_graph_impl": "none",
                     "train.train_iters": 100})
    new = canonical({"scheduler.lr_decay_iters": 200, "scheduler.wd_incr_steps": 1600,
                     "model.cuda_graph_impl": "none", "train.train_iters": 200})
    sus = blame(old, new, PATS, [], None)
    assert sus and all(s.unrelated and s.score == 0 for s in sus)


def test_build_config_env_marks_env_known():
    c = build_config(env=["NCCL_GRAPH_REGISTER=0"])
    assert c["env.NCCL_GRAPH_REGISTER"] == "0" and c["env_known"] is True
    assert unknown_values(c) == []


def test_gen_enum_table_script_is_kept_with_its_table():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    with open(os.path.join(root, "triage", "config", "enums.json"), encoding="utf-8") as f:
        data = json.load(f)
    assert any(r.startswith("megatron-core 0.16") for r in data["read"])
    assert any(r.startswith("megatron-bridge 0.6") for r in data["read"])
    assert os.path.exists(os.path.join(root, "scripts", "gen_enum_table.py"))


def test_a_graph_setting_of_a_run_that_got_faster_is_no_suspect():
    from triage.verdict.blame import blame
    from triage.verdict.grouping import make_finding
    by_id = {p.id: p for p in PATS}
    f = make_finding(by_id["graph-no-speedup"], [], "triage: CUDA graphs gave no steady-state speedup over eager: x")
    old = canonical({"model.cuda_graph_impl": "transformer_engine", "model.cuda_graph_scope": ["attn"],
                     "model.use_te_rng_tracker": True, "model.tensor_model_parallel_size": 1})
    new = dict(old, cuda_graph_scope=["attn", "mlp"], tensor_model_parallel_size=2)
    slower = {s.key: s for s in blame(old, new, PATS, [f], f)}
    assert not slower["cuda_graph_scope"].unrelated and slower["cuda_graph_scope"].score == 1.0
    # tensor parallelism is not what graph-no-speedup implicates: no "may change step time" guess
    assert slower["tensor_model_parallel_size"].unrelated
    faster = {s.key: s for s in blame(old, new, PATS, [f], f, faster=True)}
    assert faster["cuda_graph_scope"].unrelated and faster["cuda_graph_scope"].score == 0


# --- what a message implies --------------------------------------------------------------------

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "configs", "real")


def test_a_run_that_died_before_its_arguments_block_is_blamed_from_what_the_message_implies():
    """Megatron-LM 0.19.2 asserts in validate_args before printing the block; the good run printed it."""
    d = os.path.join(REAL, "megatron-lm-core-0.19.2")
    r = run(["analyze", os.path.join(d, "local-full-iteration-scope-nan-on-bad.log"), "--baseline-log",
             os.path.join(d, "local-full-iteration-scope-nan-off-good.log"), "--format", "json"])
    doc = json.loads(r.stdout)
    assert doc["primary"] == "full-iteration-nan-check"
    assert doc["suspects"][0]["key"] == "check_for_nan_in_loss" and not doc["suspects"][0]["unrelated"]
    assert any("implies check_for_nan_in_loss=True" in n for n in doc["notes"])


def test_implied_settings_never_override_what_the_log_shows(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("megatron-core 0.19.2\n+ torchrun pretrain_gpt.py --cuda-graph-impl local --cuda-graph-scope "
                   "full_iteration --no-check-for-nan-in-loss-and-grad\n"
                   "AssertionError: --no-check-for-nan-in-loss-and-grad should be set with "
                   "--cuda-graph-impl=full_iteration for training.\n")
    doc = json.loads(run(["analyze", str(log), "--format", "json"]).stdout)
    assert doc["config"]["check_for_nan_in_loss"] is False
    assert not any("implies" in n for n in doc.get("notes", []))


def test_real_bridge_run_config_enums_and_env_vars():
    """Megatron Bridge 0.6.2's own to_yaml: CudaGraphModule dicts with _name_, dtype dicts, env_vars."""
    from triage.config import load_config
    c = load_config(os.path.join(REAL, "bridge-0.6.2", "good", "te-attn-mlp.yaml"))
    assert c["cuda_graph_impl"] == "transformer_engine" and c["cuda_graph_scope"] == ["attn", "mlp"]
    assert c["params_dtype"] == "bf16" and c["use_te_rng_tracker"] is True
    assert c["env.NCCL_GRAPH_REGISTER"] == "0" and c["expandable_segments"] is True
    assert not any(k.endswith("_target_") or k.endswith("_call_") for k in c)
    assert unknown_values(c) == [] and "scope_and_modules_both_set" not in c
    full = load_config(os.path.join(REAL, "bridge-0.6.2", "good", "local-full-iteration-nan-off.yaml"))
    assert full["cuda_graph_impl"] == "local" and full["cuda_graph_scope"] == ["full_iteration"]
    assert full["check_for_nan_in_loss"] is False


# --- Megatron-LM's own argument names (issue 22) -----------------------------------------------------

# Keys rules read that no Megatron-LM argument carries, and why (every other key a rule reads must be
# read from a real Megatron-LM arguments block of both releases below)
NOT_MLM_ARGUMENTS = {
    "env.NCCL_GRAPH_REGISTER": "environment, from env dumps",
    "env.PYTORCH_CUDA_ALLOC_CONF": "environment, from env dumps",
    "expandable_segments": "read from env.PYTORCH_CUDA_ALLOC_CONF",
    "framework": "where the config came from",
    "mcore_version": "the version line the log prints, not an argument",
    "te_version": "the version line the log prints, not an argument",
    "torch_version": "the version line the log prints, not an argument",
    "deprecated_flags_both": "a flag set only when megatron-core's refused combination is present",
    "deprecated_flags_with_impl": "a flag set only when megatron-core's refused combination is present",
    "scope_and_modules_both_set": "a flag set only when megatron-core's refused combination is present",
}


def _rule_keys():
    keys = set()
    for p in PATS:
        keys.update(p.implicates or [])
        for r in p.config_rules or []:
            keys.update(c["key"] for c in r.when)
    return keys


@pytest.mark.parametrize("release", ["0.16.1", "0.19.2"])
def test_every_key_a_rule_reads_is_read_from_megatron_lm_arguments(release):
    """A walk of Megatron-LM's arguments (the block its own _print_args printed, real fixtures of two
    releases) for every key a rule reads: none is missing because Megatron-LM spells it otherwise
    (num_experts, te_rng_tracker, check_for_nan_in_loss_and_grad, cpu_offloading_num_layers)."""
    c = load_config(os.path.join(REAL, f"megatron-lm-core-{release}", "te-scope-good.log"))
    from triage.config.engines import ENGINE_KEYS       # vLLM's / SGLang's settings: no Megatron-LM argument
    missing = sorted(k for k in _rule_keys() - set(NOT_MLM_ARGUMENTS) - set(ENGINE_KEYS) if k not in c)
    assert missing == []
    assert c["check_for_nan_in_grad"] is True and c["cpu_offloading"] is False


def test_num_experts_in_an_arguments_block_is_an_moe_model():
    c = load_config(os.path.join(REAL, "megatron-lm-core-0.19.2", "moe-layer-freq-list.log"))
    assert c["num_moe_experts"] == 4 and "num_experts" not in c


def test_megatron_lm_cpu_offloading_is_its_layer_count():
    c = canonical({"cpu_offloading_num_layers": 2, "cuda_graph_impl": "transformer_engine"})
    assert c["cpu_offloading"] is True
    assert "cpu-offload-incompatible" in {v.pitfall for v in check(dict(c, cuda_graph_scope=["attn"]), PATS)}
    assert canonical({"cpu_offloading_num_layers": 0})["cpu_offloading"] is False
    assert canonical({"cpu_offloading": True, "cpu_offloading_num_layers": 0})["cpu_offloading"] is True
