"""Config stage: load run configs from files and logs, map them to canonical keys, diff, check rules.

Sources understood:
- Megatron Bridge `run_config.yaml` (nested sections model./train./rng./rerun_state_machine./ddp./...),
  plain YAML or JSON, OmegaConf-style dotted overrides (`model.cuda_graph_impl=local`);
- inside logs: Megatron-LM's `---- arguments ----` block, Bridge's `------- Task Configuration -------`
  YAML block (<= v0.3) and `Configuration Summary (Non-Default Values vs Megatron Core)` block
  (>= v0.4), an echoed command line (`--cuda-graph-impl transformer_engine --cuda-graph-scope attn`),
  and environment lines (`PYTORCH_CUDA_ALLOC_CONF=...`, NCCL's `... set by environment to ...`).
Canonical keys are listed in PATTERNS.md.  Rules are evaluated declaratively; nothing is eval'ed.
"""
from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import regex
import yaml

from .anchors import Anchor
from .patterns import ConfigRule, Pattern
from .rx import TIMEOUT, lazy
from .sources import Line

Config = Dict[str, Any]


class ConfigError(Exception):
    """A config file cannot be read or understood."""


SCOPES = ("full_iteration", "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba")
IMPLS = ("none", "local", "transformer_engine")
_SCOPE_RX = lazy(r"(?<![A-Za-z0-9])(full_iteration_inference|full_iteration|moe_preprocess|moe_router|attn|mlp|moe|mamba|full)(?![A-Za-z0-9_])")

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
    "framework", "deprecated_flags_with_impl", "deprecated_flags_both", "scope_and_modules_both_set", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
}
GRAPH_KEYS = ("cuda_graph_impl", "cuda_graph_scope", "cuda_graph_warmup_steps")
ENV_KEYS = ("PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER", "CUDA_DEVICE_MAX_CONNECTIONS",
            "NCCL_NVLS_ENABLE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN",
            "CUDA_LAUNCH_BLOCKING", "NCCL_DEBUG", "TORCH_NCCL_BLOCKING_WAIT")


# --- value normalisation ----------------------------------------------------------
def parse_scalar(v: Any) -> Any:
    """'True' -> True, '3' -> 3, 'None' -> None, "['attn']" -> ['attn'] (without eval)."""
    if not isinstance(v, str):
        return v
    s = v.strip()
    low = s.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if s in ("None", "null", "Null", "NULL", "~", ""):   # lower-case "none" is a value (cuda_graph_impl)
        return None
    if regex.fullmatch(r"[+-]?\d+", s):
        return int(s)
    if regex.fullmatch(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?", s):
        return float(s)
    if (s.startswith("[") and s.endswith("]")) or (s.startswith("(") and s.endswith(")")):
        inner = s[1:-1].strip()
        if not inner:
            return []
        if "<" in inner and "CudaGraph" in inner:
            return [m.group(1) for m in _SCOPE_RX.finditer(inner, timeout=TIMEOUT)]
        return [parse_scalar(x.strip().strip("'\"")) for x in inner.split(",") if x.strip()]
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def norm_scope(v: Any) -> List[str]:
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        items = [str(x) for x in v]
    else:
        items = [str(v)]
    out: List[str] = []
    for it in items:
        found = [m.group(1) for m in _SCOPE_RX.finditer(it, timeout=TIMEOUT)]
        if not found and it.strip(" '\"[]"):
            found = [x.strip(" '\"[]") for x in regex.split(r"[,\s]+", it) if x.strip(" '\"[]")]  # unknown name: keep it
        for f in found:
            if f not in out:
                out.append(f)
    return out


def _scope_order(name: str) -> Tuple[int, str]:
    return (SCOPES.index(name), "") if name in SCOPES else (len(SCOPES), name)


def canonical(flat: Dict[str, Any]) -> Config:
    """Flat {dotted key: value} (any era / spelling) -> canonical config."""
    out: Config = {}
    rng = []
    lasts = {k.rsplit(".", 1)[-1].replace("-", "_") for k, v in flat.items() if v not in (None, [], "", "[]", "None")}
    scope_and_modules = "cuda_graph_scope" in lasts and "cuda_graph_modules" in lasts
    for k, v in flat.items():
        if k.startswith("env."):
            out[k] = None if v is None else str(v)
            continue
        last = k.rsplit(".", 1)[-1].replace("-", "_")
        v = parse_scalar(v)
        if last in ("te_rng_tracker", "use_te_rng_tracker"):
            rng.append(bool(v))
            continue
        key = ALIASES.get(last, last)
        first = k.split(".", 1)[0]
        if key in KNOWN or (first in BRIDGE_SECTIONS and k.count(".") == 1):
            out[key] = v            # Bridge's optimizer.lr is Megatron-LM's lr
        else:
            out[k.replace("-", "_")] = v
    if rng:
        out["use_te_rng_tracker"] = any(rng)   # model.use_te_rng_tracker and rng.te_rng_tracker are OR-synced
    if "cuda_graph_scope" in out:
        # order does not matter to megatron-core: keep one canonical order so a reorder is no diff
        out["cuda_graph_scope"] = sorted(norm_scope(out["cuda_graph_scope"]), key=_scope_order)
    if isinstance(out.get("recompute_modules"), list):
        out["recompute_modules"] = sorted(str(x) for x in out["recompute_modules"])
    impl = out.get("cuda_graph_impl")
    if isinstance(impl, str):
        impl = impl.split(".")[-1].strip().lower()      # "CudaGraphImpl.local"
        out["cuda_graph_impl"] = impl
    if impl == "full_iteration":                           # megatron-core main: impl full_iteration
        out["cuda_graph_impl"] = "local"
        out["cuda_graph_scope"] = ["full_iteration"] + [s for s in out.get("cuda_graph_scope", []) if s != "full_iteration"]
    enable, external = out.pop("enable_cuda_graph", None) is True, out.pop("external_cuda_graph", None) is True
    if enable and external:
        out["deprecated_flags_both"] = True           # "enable_cuda_graph and external_cuda_graph cannot be enabled at the same time."
    if impl not in (None, "none") and (enable or external):
        out["deprecated_flags_with_impl"] = True      # "Do not use enable_cuda_graph or external_cuda_graph with cuda_graph_impl."
    if scope_and_modules:
        out["scope_and_modules_both_set"] = True      # 0.19+: "cuda_graph_scope and cuda_graph_modules cannot be set together."
    if impl in (None, "none") and enable:             # the deprecated flags become the impl they stand for
        out["cuda_graph_impl"] = "local"
    elif impl in (None, "none") and external:
        out["cuda_graph_impl"] = "transformer_engine"
    alloc = out.get("env.PYTORCH_CUDA_ALLOC_CONF")
    if alloc is not None:
        out["expandable_segments"] = bool(regex.search(r"expandable_segments\s*:\s*True", alloc))
    return out


BRIDGE_SECTIONS = {"model", "train", "rng", "rerun_state_machine", "ddp", "optimizer", "checkpoint", "logger",
                   "dataset", "scheduler", "mixed_precision", "comm_overlap", "tokenizer"}


def framework_of(data: Any) -> Optional[str]:
    """A nested config with Bridge's top-level sections is a Megatron Bridge config."""
    if isinstance(data, dict) and len(BRIDGE_SECTIONS & {str(k) for k in data}) >= 2 and isinstance(data.get("model"), dict):
        return "bridge"
    return None


def flatten(d: Any, prefix: str = "", _seen: Optional[set] = None) -> Dict[str, Any]:
    """Nested mapping -> {dotted key: value}; cycles (YAML aliases) and depth are bounded."""
    out: Dict[str, Any] = {}
    seen = _seen if _seen is not None else set()
    if not isinstance(d, dict) or id(d) in seen or prefix.count(".") > 30:
        return out
    seen = seen | {id(d)}
    for k, v in d.items():
        k = str(k)
        if k == "env" and isinstance(v, dict):
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


class _LenientLoader(yaml.SafeLoader):
    """SafeLoader that reads unknown tags (OmegaConf / python objects) as plain data."""


def _unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_LenientLoader.add_multi_constructor("", _unknown)  # type: ignore[arg-type]


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


# --- config from log lines ----------------------------------------------------------
_ARGS_START = lazy(r"^-{10,} arguments -{10,}$")
_ARGS_END = lazy(r"^-{10,} end of arguments -{10,}$")
_ARG_LINE = lazy(r"^\s+(\S+) \.{2,} (.*)$")
_TASK_START = lazy(r"^-{3,} Task Configuration -{3,}$")
_TASK_END = lazy(r"^-{10,}$")
_SUMMARY_START = lazy(r"^Configuration Summary \(Non-Default Values vs Megatron Core\)")
_SUMMARY_SECTION = lazy(r"^\[(\w+)\] Non-default values")
_SUMMARY_LINE = lazy(r"^\s{2}(\w+): (.*?)(?:\s{2}\(Mcore default: .*\))?$")
_ENV_LINE = lazy(
    r"(?<![A-Za-z0-9_])(" + "|".join(ENV_KEYS) + r")(?:\s*=\s*|\s+set by environment to\s+)(['\"]?)([^\s'\"]+)\2"
)
# an echoed command line names a launcher or a script; error messages that mention flags do not count
_CMDLINE = lazy(r"(?:^|[\s/+'\"])(?:python\d*(?:\.\d+)?|torchrun|srun|mpirun|deepspeed|accelerate|uv)\s|\.py\b|\.sh\b")
_EXC_TEXT = lazy(r"(?:Error|Exception|Warning):|\bshould be set\b|\bmust\b|\bnot supported\b")
_CMD_FLAG = lazy(r"--cuda[-_]graph[-_](?:impl|scope|modules)|--enable[-_]cuda[-_]graph|--external[-_]cuda[-_]graph")
_VERSION_LINES = [
    ("torch_version", lazy(r"\b(?:torch|pytorch)(?:\s+version|\.__version__)?\s*(?:==|[:=])?\s*v?(\d+\.\d+\.\d+(?:[a-z]+\d*)?(?:\+\w+)?)", regex.I)),
    ("te_version", lazy(r"transformer[_ -]engine(?:[_-]torch|[_-]cu\d+)?(?:\s+version)?\s*(?:==|[:=])?\s*v?(\d+\.\d+(?:\.\d+)?(?:\.dev\w*|\+\w+)?)", regex.I)),
    ("mcore_version", lazy(r"megatron[_-]core(?:\s+version)?\s*(?:==|[:=])?\s*v?(\d+\.\d+\.\d+(?:rc\d+)?)", regex.I)),
    ("nccl_version", lazy(r"NCCL version:? (\d+\.\d+\.\d+[\w.+-]*)")),
    ("cuda_version", lazy(r"CUDA Version:?\s*(\d+\.\d+)|torch\.version\.cuda\s*[:=]\s*(\d+\.\d+)|\+cu(\d{3,})")),
    ("driver_version", lazy(r"Driver Version:?\s*(\d+\.\d+(?:\.\d+)?)|cudaDriverVersion (\d+)")),
]
VERSION_KEYS = tuple(k for k, _ in _VERSION_LINES)


_OVERRIDE_TOK = lazy(r"^[+~]?[A-Za-z_][\w]*(?:\.[\w]+)+=")


MULTI_VALUE_FLAGS = {"cuda_graph_scope", "cuda_graph_modules", "recompute_modules", "data_path",
                     "train_data_path", "valid_data_path", "test_data_path", "moe_layer_freq"}


def parse_cmdline(text: str) -> Dict[str, Any]:
    """Flags of an echoed command line: `--cuda-graph-scope attn moe_router --te-rng-tracker`."""
    try:
        toks = shlex.split(text, posix=True)
    except ValueError:
        toks = text.split()
    out: Dict[str, Any] = {}
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.startswith("--") and len(t) > 2:
            name = t[2:]
            if "=" in name:
                name, val = name.split("=", 1)
                out[name.replace("-", "_")] = val
                i += 1
                continue
            vals = []
            j = i + 1
            while j < len(toks) and not toks[j].startswith("--") and not _OVERRIDE_TOK.match(toks[j]):
                vals.append(toks[j])
                j += 1
            key = name.replace("-", "_")
            if not vals:
                if key.startswith("no_"):
                    out[key[3:]] = False
                else:
                    out[key] = True
            elif key in MULTI_VALUE_FLAGS:
                out[key] = [x for v in vals for x in v.split(",") if x]
            else:
                out[key] = vals[0]          # the rest is positional (e.g. the script after --nproc-per-node 8)
                j = i + 2
            i = j
        elif _OVERRIDE_TOK.match(t):                                   # Hydra/OmegaConf override
            k, v = t.split("=", 1)
            out[k] = v
            i += 1
        else:
            i += 1
    return out


class LogConfigCollector:
    """Fed every line of a log (in one pass with the engine); collects the config it shows."""

    def __init__(self) -> None:
        self.flat: Dict[str, Any] = {}
        self._mode: Optional[str] = None
        self._buf: List[str] = []
        self._section = ""
        self.found: List[str] = []   # which kinds of config were seen (for the report)
        self.versions: Dict[str, str] = {}   # software versions the log mentions

    # anchors (anchors.Anchor) of every line `feed` reacts to while it is in no block: block
    # starts, environment keys, graph flags of an echoed command line, version lines
    ANCHORS = [
        Anchor(r"-{10} arguments -{10}", 0, regex=True), Anchor(r"-{3} Task Configuration -{3}", 0, regex=True),
        Anchor("Configuration Summary (Non-Default Values vs Megatron Core)", 0),
        *[Anchor(k, 0) for k in ENV_KEYS],
        Anchor(r"--cuda[-_]graph[-_](?:impl|scope|modules)|--enable[-_]cuda[-_]graph|--external[-_]cuda[-_]graph",
               0, regex=True),
        Anchor(r"\b(?:torch|pytorch)(?:[ \t]+version|\.__version__)?[ \t]*(?:==|[:=])?[ \t]*v?\d+\.\d+\.\d+", 0,
               ignore_case=True, regex=True),
        Anchor(r"transformer[_ -]engine", 0, ignore_case=True, regex=True),
        Anchor(r"megatron[_-]core", 0, ignore_case=True, regex=True),
        Anchor("NCCL version", 0), Anchor("CUDA Version", 0), Anchor("torch.version.cuda", 0),
        Anchor(r"\+cu\d{3}", 0, regex=True), Anchor("Driver Version", 0), Anchor("cudaDriverVersion", 0),
    ]

    def following(self) -> bool:
        """Inside an arguments / task configuration / summary block: every line matters."""
        return self._mode is not None

    def feed(self, line: Line) -> None:
        text = line.text
        mode = self._mode
        if mode == "args":
            if _ARGS_END.match(text):
                self._mode = None
                return
            m = _ARG_LINE.match(text)
            if m:
                self.flat.setdefault(m.group(1), m.group(2))
            return
        if mode == "task":
            if _TASK_END.match(text):
                self._end_task()
                return
            if len(self._buf) < 20000:
                self._buf.append(line.raw if line.raw.startswith(text) else text)
            return
        if mode == "summary":
            if text.startswith("=" * 20) and self._section:
                self._mode = None
                return
            m = _SUMMARY_SECTION.match(text)
            if m:
                self._section = m.group(1)
                return
            if text.startswith("Other Configuration Values"):
                self._section = "other"
                return
            m = _SUMMARY_LINE.match(text)
            if m:
                self.flat.setdefault(f"{self._section}.{m.group(1)}", m.group(2))
                return
            if text.strip() and not text.startswith(" ") and not text.startswith("="):
                self._mode = None
            return
        if "---" in text:
            if _ARGS_START.match(text):
                self._mode = "args"
                self.flat.setdefault("framework", "megatron-lm")
                self.found.append("megatron-lm arguments block")
                return
            if _TASK_START.match(text):
                self._mode = "task"
                self.flat.setdefault("framework", "bridge")
                self._buf = []
                self.found.append("bridge task configuration")
                return
        if "Configuration Summary" in text and _SUMMARY_START.match(text):
            self._mode = "summary"
            self._section = ""
            self.flat.setdefault("framework", "bridge")
            self.found.append("bridge configuration summary")
            return
        if "=" in text or "set by environment" in text:
            for m in _ENV_LINE.finditer(text, timeout=TIMEOUT):
                self.flat.setdefault(f"env.{m.group(1)}", m.group(3).rstrip(".,;"))
        if "--" in text and _CMD_FLAG.search(text, timeout=TIMEOUT) and _CMDLINE.search(text, timeout=TIMEOUT) \
                and not _EXC_TEXT.search(text, timeout=TIMEOUT):
            for k, v in parse_cmdline(text).items():
                self.flat.setdefault(k, v)
            self.found.append("command line")
        if "ersion" in text or "torch" in text or "+cu" in text or "megatron" in text or "ngine" in text:
            for key, rx in _VERSION_LINES:
                if key not in self.versions:
                    m = rx.search(text[:300], timeout=TIMEOUT)
                    if m:
                        self.versions[key] = next(g for g in m.groups() if g)
                        if key in ("torch_version", "te_version", "mcore_version"):
                            self.flat.setdefault(key, self.versions[key])

    def _end_task(self) -> None:
        self._mode = None
        try:
            data = parse_config_text("\n".join(self._buf), "YAML", "task configuration")
        except ConfigError:              # a log's block that is no readable YAML is just skipped
            data = None
        if isinstance(data, dict):
            for k, v in flatten(data).items():
                self.flat.setdefault(k, v)
        self._buf = []

    def config(self) -> Config:
        if self._mode == "task":
            self._end_task()
        return canonical(self.flat)


def config_from_lines(lines: Iterable[Line]) -> Config:
    c = LogConfigCollector()
    for ln in lines:
        c.feed(ln)
    return c.config()


def tee(lines: Iterable[Line], collector: LogConfigCollector) -> Iterator[Line]:
    for ln in lines:
        collector.feed(ln)
        yield ln


# --- config files ------------------------------------------------------------------
CONFIG_MAX_BYTES = 16 << 20      # a YAML/JSON config bigger than this is refused
CONFIG_MAX_VALUES = 1_000_000    # values a config may expand to (YAML aliases re-used count again)
CONFIG_MAX_DEPTH = 100           # nesting of a config


class _TooBig(Exception):
    pass


def _expansion(data: Any) -> None:
    """Raise _TooBig when `data` expands beyond the limits: a YAML "billion laughs" document
    holds few nodes but aliases that multiply; walking it as the rest of triage would hang."""
    budget = [CONFIG_MAX_VALUES]

    def walk(v: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooBig(f"expands to more than {CONFIG_MAX_VALUES:,} values (YAML alias expansion?)")
        if depth > CONFIG_MAX_DEPTH:
            raise _TooBig(f"is nested deeper than {CONFIG_MAX_DEPTH} levels")
        if isinstance(v, dict):
            for k, x in v.items():
                walk(k, depth + 1)
                walk(x, depth + 1)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, depth + 1)
    walk(data, 0)


def parse_config_text(text: str, kind: str, where: str) -> Any:
    """Parse a YAML or JSON document within bounded time and memory; ConfigError otherwise."""
    try:
        data = json.loads(text) if kind == "JSON" else yaml.load(text, Loader=_LenientLoader)  # noqa: S506
        _expansion(data)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{where}: not valid {kind}: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(f"{where}: {kind} nested too deeply to read") from None
    except _TooBig as e:
        raise ConfigError(f"{where}: {kind} {e}") from None
    return data


def load_config(path: str) -> Config:
    """A YAML/JSON config file, or a log (its arguments/config blocks are read)."""
    if not os.path.isfile(path):
        raise ConfigError(f"no such config file: {path!r}")
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise ConfigError(f"cannot read {path!r}: {e.strerror or e}") from None
    looks_like_log = path.endswith((".log", ".out", ".err", ".gz", ".txt")) or head[:2] == b"\x1f\x8b"
    if not looks_like_log:
        try:
            size = os.path.getsize(path)
            if size > CONFIG_MAX_BYTES:
                raise ConfigError(f"{path}: {size:,} bytes; a config file may hold at most "
                                  f"{CONFIG_MAX_BYTES >> 20} MiB")
            with open(path, "rb") as fb:
                raw = fb.read(CONFIG_MAX_BYTES + 1)
        except OSError as e:
            raise ConfigError(f"cannot read {path!r}: {e.strerror or e}") from None
        if b"\x00" in raw[:1 << 16]:
            raise ConfigError(f"{path}: a binary file, not a YAML/JSON config or a log")
        data = parse_config_text(raw.decode("utf-8", errors="replace"), "JSON" if path.endswith(".json") else "YAML",
                                 path)
        if isinstance(data, dict):
            cfg = canonical(flatten(data))
            fw = framework_of(data)
            if fw:
                cfg.setdefault("framework", fw)
            return cfg
        if data is not None and not isinstance(data, str):
            raise ConfigError(f"{path}: a config must be a mapping, got {type(data).__name__}")
    from .sources import read_lines
    cfg = config_from_lines(read_lines(path))
    if not cfg:
        raise ConfigError(f"{path}: found no configuration in it (no mapping, arguments block or config summary)")
    return cfg


def build_config(paths: Sequence[str] = (), overrides: Sequence[str] = (), env: Sequence[str] = ()) -> Config:
    flat: Dict[str, Any] = {}
    cfg: Config = {}
    for p in paths:
        cfg.update(load_config(p))
    flat.update(parse_overrides(overrides))
    for e in env:
        if "=" not in e:
            raise ConfigError(f"--env {e!r} is not KEY=VALUE")
        k, v = e.split("=", 1)
        flat[f"env.{k.strip()}"] = v
    merged = dict(cfg)
    merged.update(canonical(flat))
    return canonical(merged)


# --- rules ---------------------------------------------------------------------------
def _version(v: Any) -> Tuple[int, ...]:
    nums = regex.findall(r"\d+", str(v))[:3]
    return tuple(int(n) for n in nums) + (0,) * (3 - len(nums))


def _cond(cfg: Config, cond: Dict[str, Any]) -> bool:
    key = cond["key"]
    op, arg = next((k, v) for k, v in cond.items() if k != "key")
    present = key in cfg and cfg[key] is not None
    v = cfg.get(key)
    if op == "set":
        return present == bool(arg)
    if op == "unset":
        return (not present) == bool(arg)
    if op == "falsy":
        return (not v) == bool(arg)
    if op == "truthy":
        return bool(v) == bool(arg)
    if op in ("ne", "not_in", "not_contains") and not present:
        return True    # an absent key differs from any value
    if not present:
        return False
    if op == "eq":
        return _eq(v, arg)
    if op == "ne":
        return not _eq(v, arg)
    args = arg if isinstance(arg, list) else [arg]
    if op == "in":
        return any(_eq(v, a) for a in args)
    if op == "not_in":
        return not any(_eq(v, a) for a in args)
    if op == "contains":
        return _contains(v, arg)
    if op == "not_contains":
        return not _contains(v, arg)
    if op == "contains_any":
        return any(_contains(v, a) for a in args)
    if op == "has_other_than":
        items = v if isinstance(v, (list, tuple)) else [v]
        return any(not any(_eq(x, a) for a in args) for x in items)
    try:
        if op == "gt":
            return float(v) > float(arg)
        if op == "lt":
            return float(v) < float(arg)
    except (TypeError, ValueError):
        return False
    if op == "version_lt":
        return _version(v) < _version(arg)
    if op == "version_ge":
        return _version(v) >= _version(arg)
    return False


def _eq(v: Any, a: Any) -> bool:
    if isinstance(v, str) or isinstance(a, str):
        return str(v).lower() == str(a).lower()
    return v == a


def _contains(v: Any, a: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_eq(x, a) for x in v)
    return str(a) in str(v)


def rule_holds(cfg: Config, rule: ConfigRule) -> bool:
    return all(_cond(cfg, c) for c in rule.when)


@dataclass
class Violation:
    pitfall: str
    keys: List[str]
    message: str
    fix: str


def check(cfg: Config, patterns: Sequence[Pattern]) -> List[Violation]:
    out = []
    for p in patterns:
        for r in p.config_rules:
            if rule_holds(cfg, r):
                out.append(Violation(p.id, list(r.keys), r.message, r.fix or p.fix))
    return out


@dataclass
class Change:
    key: str
    old: Any
    new: Any


NOT_CONFIG = {"framework"}   # facts about where a config came from, not settings


def diff(old: Config, new: Config, partial: bool = False) -> List[Change]:
    """Changed canonical keys.  With partial=True (a side read from a log, which shows only part of
    the config) a key present on one side only is unknown, not changed -- except environment keys."""
    out = []
    keys = (set(old) | set(new)) - NOT_CONFIG
    if partial:
        keys = {k for k in keys if (k in old and k in new) or k.startswith("env.") or k == "expandable_segments"}
    for k in sorted(keys):
        a, b = old.get(k), new.get(k)
        if a != b:
            out.append(Change(k, a, b))
    return out
