"""The config an inference engine prints at start-up: its CUDA-graph settings as config keys, so that
blame and the bisect plan (issue 42) work for vLLM and SGLang logs as for Megatron's.

What the engines print (read in the released wheels):
- vLLM, every engine: `Initializing a V1 LLM engine (v0.10.2) with config: model='...', ...,
  enforce_eager=False, ..., compilation_config={"level":3,...,"cudagraph_mode":[2,1],...,
  "cudagraph_capture_sizes":[512,...],...}` (vllm 0.10.2 v1/engine/core.py:76 logs VllmConfig.__str__,
  config/__init__.py:3709-3739; compilation_config is CompilationConfig.__repr__: pydantic JSON of the
  set fields, CUDAGraphMode by value: NONE 0, PIECEWISE 1, FULL 2, FULL_DECODE_ONLY [2,0],
  FULL_AND_PIECEWISE [2,1], config/compilation.py:35-44); the V0 engine's `Initializing a V0 LLM
  engine (v...) with config: ...` (engine/llm_engine.py:222) and 0.6's `Initializing an LLM engine
  (v0.6.3.post1) with config: ...` print the same `key=value, ` list.
- vLLM's serve entry point: `non-default args: {'model': '...', 'enforce_eager': True}` (a Python dict,
  vllm 0.10.2 entrypoints/utils.py:328).
- SGLang: `server_args=ServerArgs(model_path='...', ..., cuda_graph_max_bs=160, cuda_graph_bs=None,
  disable_cuda_graph=False, disable_cuda_graph_padding=False, ...)` (sglang 0.5.2
  srt/entrypoints/engine.py:124 and :739, `logger.info(f"{server_args=}")`: the dataclass repr;
  fields in srt/server_args.py:331-334).

Canonical keys (ENGINE_KEYS): vLLM `enforce_eager`, `cudagraph_mode` (the mode's name),
`cudagraph_capture_sizes`, `disable_custom_all_reduce`; SGLang `disable_cuda_graph`,
`cuda_graph_max_bs`, `cuda_graph_bs`, `disable_cuda_graph_padding`, `mem_fraction_static`,
`enable_torch_compile`; both: `tensor_model_parallel_size`, and `vllm_version` for vLLM.
"""
from __future__ import annotations

import ast
import json
import math
from typing import Any, Dict, Optional, Tuple

from ..match.rx import finditer, lazy, search

MAX_LINE = 64 * 1024            # a config line longer than this is read only this far
_VLLM = lazy(r"Initializing an? (?:V[01] )?LLM engine \(v([\w.+-]+)\) with config: ")
_NON_DEFAULT = lazy(r"non-default args: (\{.*\})\s*$")
_SGLANG = lazy(r"server_args=ServerArgs\(")
# key=value of a repr: a quoted string, a bracketed list, or anything up to the next ", key=" / ")"
_PAIR = lazy(r"(?:^|, )(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|[^,()\[\]{}]*)")
_MODES = {"0": "NONE", "1": "PIECEWISE", "2": "FULL", "[2, 0]": "FULL_DECODE_ONLY", "[2,0]": "FULL_DECODE_ONLY",
          "[2, 1]": "FULL_AND_PIECEWISE", "[2,1]": "FULL_AND_PIECEWISE"}

# what each engine's line gives: its key there -> the canonical key
VLLM_KEYS = {"enforce_eager": "enforce_eager", "disable_custom_all_reduce": "disable_custom_all_reduce",
             "tensor_parallel_size": "tensor_model_parallel_size"}
SGLANG_KEYS = {"disable_cuda_graph": "disable_cuda_graph", "cuda_graph_max_bs": "cuda_graph_max_bs",
               "cuda_graph_bs": "cuda_graph_bs", "disable_cuda_graph_padding": "disable_cuda_graph_padding",
               "mem_fraction_static": "mem_fraction_static", "enable_torch_compile": "enable_torch_compile",
               "disable_custom_all_reduce": "disable_custom_all_reduce", "tp_size": "tensor_model_parallel_size"}
# the settings that decide what an engine captures (blame's and the bisect plan's graph settings)
ENGINE_GRAPH_KEYS = ("enforce_eager", "cudagraph_mode", "cudagraph_capture_sizes", "disable_cuda_graph",
                     "cuda_graph_max_bs", "cuda_graph_bs", "disable_cuda_graph_padding")
ENGINE_KEYS = tuple(sorted(set(VLLM_KEYS.values()) | set(SGLANG_KEYS.values()) | set(ENGINE_GRAPH_KEYS)
                           | {"vllm_version"}))
# a line worth parsing holds one of these (the config collector's anchors)
NEEDLES = (" with config: ", "non-default args: {", "server_args=ServerArgs(")


_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)   # hostile text: any


def _literal(text: str) -> Any:
    """ast.literal_eval of TEXT (a line's dict or list), or None: it is no literal, or a hostile one."""
    if len(text) > MAX_LINE:
        return None
    try:
        return ast.literal_eval(text)
    except _LITERAL_ERRORS:
        return None


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):     # (a cut line; [1,,2]; 60,000 brackets; a 5,000-digit int)
        return None


def _scalar(text: str) -> Any:
    text = text.strip()
    if text[:1] in "'\"[":
        v = _literal(text)
        return text.strip("'\"") if v is None else v
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    for kind in (int, float):
        try:
            v = kind(text)
        except ValueError:
            continue
        return v if kind is int or math.isfinite(v) else text     # (nan, inf: no JSON numbers)
    return text


def _pairs(text: str) -> Dict[str, Any]:
    return {m.group(1): _scalar(m.group(2)) for m in finditer(_PAIR, text[:MAX_LINE])}


def _compilation(text: str) -> Dict[str, Any]:
    """cudagraph_mode and cudagraph_capture_sizes of vLLM's `compilation_config={...}` (JSON; a cut line
    gives what its fields before the cut say)."""
    i = text.find("compilation_config=")
    if i < 0:
        return {}
    body = text[i + len("compilation_config="):MAX_LINE].strip()
    out: Dict[str, Any] = {}
    data = _parse_json(body)
    if isinstance(data, dict):
        mode, sizes = data.get("cudagraph_mode"), data.get("cudagraph_capture_sizes")
        if mode is not None:
            out["cudagraph_mode"] = _MODES.get(json.dumps(mode, separators=(",", ":")), str(mode))
        if isinstance(sizes, list):
            out["cudagraph_capture_sizes"] = sizes
        return out
    m = search(lazy(r'"cudagraph_mode":\s*(\[\s*\d\s*,\s*\d\s*\]|\d|"\w+")'), body)
    if m:
        out["cudagraph_mode"] = _MODES.get(m.group(1).replace(" ", ""), m.group(1).strip('"'))
    m = search(lazy(r'"cudagraph_capture_sizes":\s*(\[[\d,\s]*\])'), body)
    sizes = _parse_json(m.group(1)) if m else None
    if isinstance(sizes, list):
        out["cudagraph_capture_sizes"] = sizes
    return out


def _vllm_line(text: str) -> Optional[Dict[str, Any]]:
    m = search(_VLLM, text[:MAX_LINE])
    if not m:
        return None
    rest = text[m.end():]
    pairs = _pairs(rest.split("compilation_config=", 1)[0])
    out = {VLLM_KEYS[k]: v for k, v in pairs.items() if k in VLLM_KEYS}
    out.update(_compilation(rest))
    out["vllm_version"] = m.group(1)
    return out


def _vllm_args(text: str) -> Optional[Dict[str, Any]]:
    m = search(_NON_DEFAULT, text[:MAX_LINE])
    data = _literal(m.group(1)) if m else None
    if not isinstance(data, dict):
        return None
    out = {VLLM_KEYS[k]: v for k, v in data.items() if k in VLLM_KEYS}
    comp = data.get("compilation_config")
    if isinstance(comp, dict):
        out.update(_compilation("compilation_config=" + json.dumps(comp, default=str)))
    sizes = data.get("cuda_graph_sizes")
    if isinstance(sizes, list):
        out.setdefault("cudagraph_capture_sizes", sizes)
    return out


def _sglang_line(text: str) -> Optional[Dict[str, Any]]:
    m = search(_SGLANG, text[:MAX_LINE])
    if not m:
        return None
    return {SGLANG_KEYS[k]: v for k, v in _pairs(text[m.end():]).items() if k in SGLANG_KEYS}


_LINES = ((" with config: ", "vllm", _vllm_line), ("non-default args: {", "vllm", _vllm_args),
          ("server_args=ServerArgs(", "sglang", _sglang_line))


def engine_config(text: str) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(framework, flat settings) of an engine's config line, or None for any other line."""
    for needle, fw, read in _LINES:
        if needle in text:
            got = read(text)
            if got is not None:
                return fw, got
    return None


def graphs_on(cfg: Dict[str, Any]) -> Optional[bool]:
    """Whether an engine config captures CUDA graphs (None: not an engine config, or not said)."""
    fw = cfg.get("framework")
    if fw == "vllm":
        if cfg.get("enforce_eager") is True or cfg.get("cudagraph_mode") == "NONE":
            return False
        return True if "enforce_eager" in cfg or "cudagraph_mode" in cfg else None
    if fw == "sglang":
        return None if "disable_cuda_graph" not in cfg else cfg["disable_cuda_graph"] is not True
    return None


def _json(v: Any) -> str:
    return json.dumps(v, separators=(", ", ": "))


def _vllm_flag(key: str, value: Any) -> Optional[str]:
    if key in ("cuda_graph_impl", "enforce_eager"):             # BooleanOptionalAction (arg_utils.py:205)
        on = value == "none" if key == "cuda_graph_impl" else value is True
        return "--enforce-eager" if on else "--no-enforce-eager"
    if key in ("cudagraph_mode", "cudagraph_capture_sizes"):
        return f"--compilation-config '{_json({key: value})}'"
    if key == "disable_custom_all_reduce":
        return "--disable-custom-all-reduce" if value else "--no-disable-custom-all-reduce"
    if key == "tensor_model_parallel_size":
        return f"--tensor-parallel-size {value}"
    return None


_SGLANG_SWITCHES = ("disable_cuda_graph", "disable_cuda_graph_padding", "enable_torch_compile",
                    "disable_custom_all_reduce")


def _sglang_flag(key: str, value: Any) -> Optional[str]:
    if key == "cuda_graph_impl":
        return "--disable-cuda-graph" if value == "none" else "(drop --disable-cuda-graph)"
    flag = "--" + ("tp-size" if key == "tensor_model_parallel_size" else key.replace("_", "-"))
    if key in _SGLANG_SWITCHES:
        return flag if value else f"(drop {flag})"              # store_true: off is the flag left out
    if key not in ("cuda_graph_bs", "cuda_graph_max_bs", "mem_fraction_static", "tensor_model_parallel_size"):
        return None
    if value is None:
        return f"(drop {flag})"
    return f"{flag} " + (" ".join(str(x) for x in value) if isinstance(value, list) else str(value))


def engine_flag(fw: str, key: str, value: Any) -> Optional[str]:
    """KEY=VALUE as the engine's command line spells it (vllm serve / python -m sglang.launch_server,
    flags of vllm 0.10.2 engine/arg_utils.py and sglang 0.5.2 srt/server_args.py); None where the key
    is none of the engine's."""
    if fw == "vllm":
        return _vllm_flag(key, value)
    if fw == "sglang":
        return _sglang_flag(key, value)
    return None
