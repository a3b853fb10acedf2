"""Canonical config keys: map any era's / spelling's keys and values to one canonical config.

Canonical keys are listed in PATTERNS.md (selftest.canonical_keys() derives them from this module).
"""
from __future__ import annotations

import ast
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import TriageError
from ..match.rx import finditer, lazy
from .engines import ENGINE_GRAPH_KEYS, ENGINE_KEYS
from .enums import Unknown, decode

Config = Dict[str, Any]


class ConfigError(TriageError):
    """A config file cannot be read or understood."""


SCOPES = ("full_iteration", "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba")
IMPLS = ("none", "local", "transformer_engine")
_SCOPE_RX = lazy(r"(?<![A-Za-z0-9])(full_iteration_inference|full_iteration|moe_preprocess|moe_router|attn|mlp|moe|mamba|full)(?![A-Za-z0-9_])")  # noqa: E501 - a regex reads best on one line

# last-component aliases -> canonical key
ALIASES = {
    "cuda_graph_modules": "cuda_graph_scope",
    "te_rng_tracker": "use_te_rng_tracker",
    "check_for_nan_in_loss_and_grad": "check_for_nan_in_loss",
    "cuda_graph_warmup_steps": "cuda_graph_warmup_steps",
    "cpu_offloading": "cpu_offloading",
    "micro_batch_size": "micro_batch_size",
    "seq_length": "seq_length",
}
# Keys kept by their last component (known model/training fields); everything else keeps its dotted path.
KNOWN = {
    "cuda_graph_impl", "cuda_graph_scope", "cuda_graph_warmup_steps", "use_te_rng_tracker",
    "check_for_nan_in_loss", "check_for_nan_in_grad", "recompute_granularity", "recompute_method",
    "recompute_num_layers", "recompute_modules", "num_moe_experts", "moe_expert_capacity_factor",
    "moe_pad_expert_input_to_capacity", "moe_token_dispatcher_type", "moe_router_padding_for_fp8",
    "moe_shared_expert_intermediate_size", "delay_wgrad_compute", "gradient_accumulation_fusion",
    "add_bias_linear", "add_qkv_bias", "overlap_moe_expert_parallel_comm", "cpu_offloading",
    "fine_grained_activation_offloading", "attention_dropout", "hidden_dropout", "seq_length",
    "micro_batch_size", "variable_seq_lengths", "pipeline_model_parallel_size", "te_version",
    "mcore_version", "torch_version", "enable_cuda_graph", "external_cuda_graph", "moe_layer_freq",
    "moe_input_jitter_eps", "inference_cuda_graph_scope", "tensor_model_parallel_size",
    "expert_model_parallel_size", "context_parallel_size", "sequence_parallel", "fp8", "bf16",
    "global_batch_size", "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
    "framework", "deprecated_flags_with_impl", "deprecated_flags_both", "scope_and_modules_both_set", "num_layers",
    "hidden_size", "ffn_hidden_size", "num_attention_heads", "transformer_impl", "params_dtype",
    "autocast_dtype", "pipeline_dtype", "fp16", "num_experts",
    # facts about the config itself (META): where it came from and how much of it is known
    "config_complete", "env_known", "defaults_of", "graphs_captured",
}
# Facts about where a config came from, not settings: never a change, never a suspect.
META = {"framework", "config_complete", "env_known", "defaults_of", "graphs_captured", "scope_spelling"}
# A key triage works out from a setting the user wrote -> that setting: one change, shown as written.
DERIVED_FROM = {"expandable_segments": "env.PYTORCH_CUDA_ALLOC_CONF"}
# Facts triage works out from other keys (canonical), never a setting with a release default: absent is off.
DERIVED = META | {"expandable_segments", "deprecated_flags_with_impl", "deprecated_flags_both",
                  "scope_and_modules_both_set"}
# Megatron-LM's --num-experts is megatron-core's num_moe_experts
ALIASES["num_experts"] = "num_moe_experts"
# vLLM's and SGLang's capture settings (config.engines) are graph settings too
GRAPH_KEYS = ("cuda_graph_impl", "cuda_graph_scope", "cuda_graph_warmup_steps") + ENGINE_GRAPH_KEYS
KNOWN |= set(ENGINE_KEYS)
ENV_KEYS = ("PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER", "CUDA_DEVICE_MAX_CONNECTIONS",
            "NCCL_NVLS_ENABLE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN",
            "CUDA_LAUNCH_BLOCKING", "NCCL_DEBUG", "TORCH_NCCL_BLOCKING_WAIT")


_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
           "float32": "fp32", "float": "fp32", "fp32": "fp32", "float8_e4m3fn": "fp8_e4m3", "float64": "fp64"}
_DTYPE_RX = lazy(r"torch\.(bfloat16|float16|half|float32|float|float8_e4m3fn|float64)")


def same_dtype(v: Any) -> Any:
    """'torch.bfloat16', 'bfloat16' and 'bf16' mean one dtype: 'bf16' (other values unchanged)."""
    if isinstance(v, str):
        m = _DTYPE_RX.fullmatch(v.strip())
        name = m.group(1) if m else v.strip()
        return _DTYPES.get(name, v)
    return v


def int_or_text(text: str) -> Any:
    """The integer TEXT writes; TEXT itself when it has more digits than Python reads (4,300)."""
    try:
        return int(text)
    except ValueError:
        return text


# (module-level: made from triage's cache without the `regex` package's import, match/rx.py; a call of
# regex.fullmatch(PATTERN, s) imported it, ~10 ms of a run that reads a config)
_INT = lazy(r"[+-]?\d+")
_FLOAT = lazy(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_LIST_SEP = lazy(r"[,\s]+")
_EXPANDABLE = lazy(r"expandable_segments\s*:\s*True")


def parse_scalar(v: Any) -> Any:
    """'True' -> True, '3' -> 3, 'None' -> None, "['attn']" -> ['attn'] (without eval)."""
    if not isinstance(v, str) or isinstance(v, Unknown):
        return v
    s = v.strip()
    low = s.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if s in ("None", "null", "Null", "NULL", "~", ""):   # lower-case "none" is a value (cuda_graph_impl)
        return None
    if _INT.fullmatch(s):
        return int_or_text(s)
    if _FLOAT.fullmatch(s):
        return float(s)
    return _parse_text(s)


def _parse_text(s: str) -> Any:
    """A list ('[a, b]', a list expression '([0]+[1]*3)'), a quoted string, an enum's repr, or the text."""
    if (s.startswith("[") and s.endswith("]")) or (s.startswith("(") and s.endswith(")")):
        expr = list_expr(s)
        return expr if expr is not None else _parse_list(s[1:-1].strip())
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    m = _ENUM_REPR.fullmatch(s)
    if m:                                   # an enum's repr, as Bridge's Configuration Summary prints it
        return m.group(1)
    return s


def _parse_list(inner: str) -> List[Any]:
    """The items of "[a, 'b', 3]" (brackets removed); "[<CudaGraphScope.attn: 2>]" -> ['attn']."""
    if not inner:
        return []
    if "<" in inner and "CudaGraph" in inner:
        return [m.group(1) for m in finditer(_SCOPE_RX, inner)]
    return [parse_scalar(x.strip().strip("'\"")) for x in inner.split(",") if x.strip()]


_ENUM_REPR = lazy(r"<\w+\.(\w+): [^<>]{1,200}>")
_LIST_EXPR = lazy(r"[\[\]()\d\s,+*]+")


def list_expr(s: str) -> Optional[List[Any]]:
    """A Python list expression of ints as Megatron-LM's --moe-layer-freq takes it ('([0]+[1]*3)',
    '[1,0,1]') -> the list its arguments block prints ([0, 1, 1, 1]); None for anything else.
    Read with ast, never eval'ed; at most 100,000 items."""
    if len(s) > 2000 or not _LIST_EXPR.fullmatch(s):
        return None
    try:
        tree = ast.parse(s, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    try:
        out = _ints(tree.body, 0)
    except (ValueError, RecursionError):
        return None
    return out if isinstance(out, list) else None


def _ints(node: ast.AST, depth: int) -> Any:
    if depth > 50:
        raise ValueError("too deep")
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_ints(e, depth + 1) for e in node.elts]
        if any(isinstance(i, list) for i in items):
            raise ValueError("nested")
        return items
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        a, b = _ints(node.left, depth + 1), _ints(node.right, depth + 1)
        if isinstance(node.op, ast.Add) and isinstance(a, list) and isinstance(b, list):
            return a + b
        if isinstance(node.op, ast.Mult) and isinstance(a, list) != isinstance(b, list):
            lst, n = (a, b) if isinstance(a, list) else (b, a)
            if n < 0 or len(lst) * n > 100_000:
                raise ValueError("too long")
            return lst * n
        if not isinstance(a, list) and not isinstance(b, list):
            return a + b if isinstance(node.op, ast.Add) else a * b
    raise ValueError("not a list of ints")


def norm_scope(v: Any) -> List[str]:
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        items = [x if isinstance(x, Unknown) else str(x) for x in v]
    else:
        items = [str(v)]
    out: List[str] = []
    for it in items:
        if isinstance(it, Unknown):
            out.append(it)                  # an enum value no release names: kept as it is
            continue
        found = [m.group(1) for m in finditer(_SCOPE_RX, it)]
        if not found and it.strip(" '\"[]"):
            # an unknown name: keep it
            found = [x.strip(" '\"[]") for x in _LIST_SEP.split(it) if x and x.strip(" '\"[]")]
        for f in found:
            if f not in out:
                out.append(f)
    return out


def _scope_order(name: str) -> Tuple[int, str]:
    return (SCOPES.index(name), "") if name in SCOPES else (len(SCOPES), name)


def _empty(v: Any) -> bool:
    return v in (None, [], "", "[]", "None") or v == ()


def _key_value(k: str, v: Any) -> Tuple[str, Any]:
    """One flat setting -> (canonical key, value read by meaning)."""
    last = k.rsplit(".", 1)[-1].replace("-", "_")
    v = parse_scalar(v)
    if last.endswith("dtype") or last in ("bf16", "fp16"):
        v = same_dtype(v)
    key = "use_te_rng_tracker" if last == "te_rng_tracker" else ALIASES.get(last, last)
    first = k.split(".", 1)[0]
    if not (key in KNOWN or (first in BRIDGE_SECTIONS and k.count(".") == 1)):
        key = k.replace("-", "_")
    return key, v


def _unset(v: Any) -> bool:
    """Empty, or "full": megatron-core 0.19 counts cuda_graph_modules in ("full", None, []) as not set
    (transformer_config.py: 'cuda_graph_scope and cuda_graph_modules cannot be set together.')."""
    return _empty(v) or v == "full" or v == ["full"]


def canonical(flat: Dict[str, Any]) -> Config:
    """Flat {dotted key: value} (any era / spelling) -> canonical config."""
    out: Config = {}
    rng = []
    lasts = {k.rsplit(".", 1)[-1].replace("-", "_") for k, v in flat.items() if not _unset(v)}
    for k, v in flat.items():
        if k.startswith("env."):
            out[k] = None if v is None else str(v)
            continue
        key, v = _key_value(k, v)
        if key == "use_te_rng_tracker" and k.rsplit(".", 1)[-1] in ("te_rng_tracker", "use_te_rng_tracker"):
            rng.append(bool(v))
            continue
        if key in out and (_empty(v) or (_unset(v) and not _empty(out[key]))):
            continue                # cuda_graph_modules: [attn] and cuda_graph_scope: [] are one key, set
        out[key] = v                # (Bridge's optimizer.lr is Megatron-LM's lr)
    if rng:
        out["use_te_rng_tracker"] = any(rng)   # model.use_te_rng_tracker and rng.te_rng_tracker are OR-synced
    if "cuda_graph_scope" in out:
        # order does not matter to megatron-core: keep one canonical order so a reorder is no diff
        out["cuda_graph_scope"] = sorted(norm_scope(out["cuda_graph_scope"]), key=_scope_order)
    if isinstance(out.get("recompute_modules"), list):
        out["recompute_modules"] = sorted(str(x) for x in out["recompute_modules"])
    _graph_keys(out, scope_and_modules="cuda_graph_scope" in lasts and "cuda_graph_modules" in lasts)
    _derived(out, lasts)
    alloc = out.get("env.PYTORCH_CUDA_ALLOC_CONF")
    if alloc is not None:
        out["expandable_segments"] = bool(_EXPANDABLE.search(alloc))
    return out


def _derived(out: Config, lasts: set) -> None:
    """megatron-core settings Megatron-LM derives from one of its own arguments (an arguments block
    prints the argument, not the setting): --check-for-nan-in-loss-and-grad is both NaN checks;
    cpu_offloading = cpu_offloading_num_layers > 0 (megatron/training/arguments.py core_v0.16.1 L1236,
    core_v0.19.0 L1869: `if args.cpu_offloading_num_layers > 0: args.cpu_offloading = True`)."""
    if "check_for_nan_in_loss_and_grad" in lasts and "check_for_nan_in_grad" not in out \
            and "check_for_nan_in_loss" in out:
        out["check_for_nan_in_grad"] = out["check_for_nan_in_loss"]
    n = out.get("cpu_offloading_num_layers")
    if "cpu_offloading" not in out and isinstance(n, int) and not isinstance(n, bool):
        out["cpu_offloading"] = n > 0


def _graph_keys(out: Config, scope_and_modules: bool) -> None:
    """CUDA graph settings of every era -> cuda_graph_impl / cuda_graph_scope, plus the flags of
    combinations megatron-core refuses."""
    impl = out.get("cuda_graph_impl")
    if isinstance(impl, str):
        impl = impl.split(".")[-1].strip().lower()      # "CudaGraphImpl.local"
        out["cuda_graph_impl"] = impl
    if impl == "full_iteration":                           # megatron-core main: impl full_iteration
        out["cuda_graph_impl"] = "local"
        out["cuda_graph_scope"] = ["full_iteration"] + [s for s in out.get("cuda_graph_scope", [])
                                                        if s != "full_iteration"]
    enable, external = out.pop("enable_cuda_graph", None) is True, out.pop("external_cuda_graph", None) is True
    # "enable_cuda_graph and external_cuda_graph cannot be enabled at the same time."
    if enable and external:
        out["deprecated_flags_both"] = True
    # "Do not use enable_cuda_graph or external_cuda_graph with cuda_graph_impl."
    if impl not in (None, "none") and (enable or external):
        out["deprecated_flags_with_impl"] = True
    # 0.19+: "cuda_graph_scope and cuda_graph_modules cannot be set together."
    if scope_and_modules:
        out["scope_and_modules_both_set"] = True
    if impl in (None, "none") and enable:             # the deprecated flags become the impl they stand for
        out["cuda_graph_impl"] = "local"
    elif impl in (None, "none") and external:
        out["cuda_graph_impl"] = "transformer_engine"


BRIDGE_SECTIONS = {"model", "train", "rng", "rerun_state_machine", "ddp", "optimizer", "checkpoint", "logger",
                   "dataset", "scheduler", "mixed_precision", "comm_overlap", "tokenizer"}


def framework_of(data: Any) -> Optional[str]:
    """A nested config with Bridge's top-level sections is a Megatron Bridge config."""
    if isinstance(data, dict) and len(BRIDGE_SECTIONS & {str(k) for k in data}) >= 2 \
            and isinstance(data.get("model"), dict):
        return "bridge"
    return None


def flatten(d: Any, prefix: str = "", _seen: Optional[set] = None,
            mcore_version: Optional[str] = None) -> Dict[str, Any]:
    """Nested mapping -> {dotted key: value}; cycles (YAML aliases) and depth are bounded.  Bridge's
    serialised objects (`{_target_: ...CudaGraphScope, _args_: [2], _call_: true}`) become what they
    stand for (enums.decode)."""
    if _seen is None and not prefix:
        d = decode(d, mcore_version)
    out: Dict[str, Any] = {}
    seen = _seen if _seen is not None else set()
    if not isinstance(d, dict) or id(d) in seen or prefix.count(".") > 30:
        return out
    seen = seen | {id(d)}
    for k, v in d.items():
        k = str(k)
        if k in ("env", "env_vars") and not prefix and isinstance(v, dict):   # Bridge 0.6: env_vars
            for ek, ev in v.items():
                out[f"env.{ek}"] = ev
            continue
        p = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict) and not k.startswith("_"):
            out.update(flatten(v, p, seen))
        elif isinstance(v, (list, dict)) and _cyclic(v, seen):
            continue
        else:
            out[p] = v
    return out


def _cyclic(v: Any, seen: set, depth: int = 0) -> bool:
    if depth > 30 or id(v) in seen:
        return True
    if isinstance(v, dict):
        return any(_cyclic(x, seen | {id(v)}, depth + 1) for x in v.values())
    if isinstance(v, list):
        return any(_cyclic(x, seen | {id(v)}, depth + 1) for x in v)
    return False


def parse_overrides(items: Sequence[str]) -> Dict[str, Any]:
    """['model.cuda_graph_impl=local', 'env.NCCL_GRAPH_REGISTER=0'] -> flat dict."""
    out: Dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise ConfigError(f"override {it!r} is not KEY=VALUE")
        k, v = it.split("=", 1)
        k = k.strip().lstrip("+~")
        if not k:
            raise ConfigError(f"override {it!r} has an empty key")
        out[k] = v.strip()
    return out
