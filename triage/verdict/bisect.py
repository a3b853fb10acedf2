"""A bisect plan when the cause is not settled (issue 42): the smallest sequence of single-variable runs
that separates the candidate graph changes -- graphs off first (is it the graphs at all?), then each
changed graph setting back to the last good run's value, the most suspect first, the last candidate
needing no run of its own -- each as paste-able overrides in the spelling of the stack the config came
from (Megatron Bridge `model.KEY=VALUE`, Megatron-LM flags, `vllm serve` / SGLang `launch_server` flags,
else check-config's `KEY=VALUE`)."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ..config import GRAPH_KEYS, Config
from ..config.engines import engine_flag, graphs_on
from ..record import record
from .types import Suspect

_GRAPHS_ON = ("local", "transformer_engine")
# an engine's "graphs off" setting (config.engines): vLLM's --enforce-eager, SGLang's --disable-cuda-graph
_OFF = {"vllm": ("enforce_eager", True), "sglang": ("disable_cuda_graph", True)}


@record
class BisectRun:
    step: int
    why: str
    set: Dict[str, Any]          # canonical key -> the value this run takes
    overrides: List[str]         # the same, as the stack spells it on a command line

    def as_dict(self) -> Dict[str, Any]:
        return {"step": self.step, "why": self.why, "set": dict(self.set), "overrides": list(self.overrides)}


def _value(v: Any, sep: str) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return sep.join(str(x) for x in v) if sep == " " else "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


def _short(v: Any) -> str:
    """A value for prose: a long list (vLLM's 67 capture sizes) as its ends and its length."""
    if isinstance(v, (list, tuple)) and len(v) > 8:
        return f"[{v[0]}, {v[1]}, ..., {v[-1]}] ({len(v)} values)"
    return _value(v, ",")


def spelled(key: str, value: Any, cfg: Config) -> str:
    """KEY=VALUE as the stack CFG came from writes it on a command line."""
    fw = str(cfg.get("framework") or "")
    flag = engine_flag(fw, key, value)
    if flag is not None:
        return flag
    modules = cfg.get("scope_spelling") == "cuda_graph_modules" or str(cfg.get("mcore_version") or "").startswith(
        ("0.19", "0.2"))              # megatron-core 0.19 renamed the scope cuda_graph_modules
    if key == "cuda_graph_scope" and modules:
        key = "cuda_graph_modules"
    if fw == "bridge":
        return f"model.{key}={_value(value, ',')}"
    if fw == "megatron-lm":
        flag = key
        if isinstance(value, bool):
            return f"--{flag.replace('_', '-')}" if value else f"--no-{flag.replace('_', '-')}"
        return f"--{flag.replace('_', '-')} {_value(value, ' ')}".rstrip()
    return f"{key}={_value(value, ',')}"


def candidates(suspects: Sequence[Suspect]) -> List[Suspect]:
    """The graph changes blame does not settle between, most suspect first: two or more blamed graph
    settings, a tie at the top with a graph setting in it, or -- nothing blamed (an unexplained failure) --
    every graph setting that changed; [] when blame settles it or no graph setting changed."""
    blamed = [s for s in suspects if not s.unrelated]
    graph = [s for s in blamed if s.key in GRAPH_KEYS]
    tie = len(blamed) >= 2 and blamed[0].score == blamed[1].score
    if len(graph) >= 2 or (tie and graph):
        return graph
    if not blamed:
        return [s for s in suspects if s.key in GRAPH_KEYS]
    return []


def bisect_plan(new: Config, suspects: Sequence[Suspect]) -> List[BisectRun]:
    """The runs that separate the candidates (none when blame settles it, or no graph setting changed)."""
    cands = candidates(suspects)
    if not cands:
        return []
    runs: List[BisectRun] = []
    if new.get("cuda_graph_impl") in _GRAPHS_ON or graphs_on(new):
        off = _OFF.get(str(new.get("framework")), ("cuda_graph_impl", "none"))
        runs.append(BisectRun(1, "graphs off: if this run is fine, the failure needs CUDA graphs (one of the graph "
                                 "settings below); if it fails too, no graph setting is the cause",
                              {off[0]: off[1]}, [spelled(off[0], off[1], new)]))
    for s in cands[:-1] if len(cands) > 1 else cands:
        change = {s.key: s.old}
        runs.append(BisectRun(len(runs) + 1, f"{s.key} back to the last good run's value: if this run is fine, "
                                             f"{s.key} ({_short(s.old)} -> {_short(s.new)}) is the cause",
                              change, [spelled(s.key, s.old, new)]))
    if len(cands) > 1:
        last = cands[-1]
        runs[-1].why += f"; if every run above fails, {last.key} is the cause (no run of its own needed)"
    return runs
