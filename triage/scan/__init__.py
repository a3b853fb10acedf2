"""The scan stage: tagged lines -> observers -> a ScanResult (the inputs are triage.inputs' job, the
matching helpers triage.match's).

    results    Match, ErrorBlock, LauncherExit, ScanResult
    state      Stream, InputState, View, Event, Core: what the observers share
    observer   the observer protocol, Feeder, anchor helpers
    attempts, launcher, forms, followups, blocks, rules   the core observers
    blockview, blockscan, prepare, pool, geometry, prefetch   the block driver: context, per-input loop,
               per-block C work, worker processes, plain files' blocks, read-ahead
    live       the incremental driver (triage watch)
    jobfacts   a log's first and last times, hosts and engine
    engine     Engine: wiring and the two drivers (scan, scan_paths)

The names below are the package's public face, loaded on first use (triage.patterns imports
triage.match.rx while the engine imports triage.patterns' types, so nothing is imported eagerly).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "Engine": "engine", "ScanResult": "results", "Match": "results", "ErrorBlock": "results",
    "LauncherExit": "results", "Observer": "observer", "Feeder": "observer", "lit": "observer", "rxa": "observer",
    "Line": "..inputs.sources", "InputError": "..inputs.sources", "iter_inputs": "..inputs.sources",
    "read_lines": "..inputs.sources", "make_line": "..inputs.sources", "expand_paths": "..inputs.sources",
    "LAUNCHERS": "..inputs.launchers", "INNER_RANKS": "..inputs.launchers", "Launcher": "..inputs.launchers",
    "InnerRank": "..inputs.launchers", "RankReader": "..inputs.ranks", "split_prefix": "..inputs.ranks",
    "inner_rank": "..inputs.ranks",
}
__all__ = ["ErrorBlock", "Engine", "Feeder", "INNER_RANKS", "InnerRank", "InputError", "LAUNCHERS", "Launcher",
           "LauncherExit", "Line", "Match", "Observer", "RankReader", "ScanResult", "expand_paths", "inner_rank",
           "iter_inputs", "lit", "make_line", "read_lines", "rxa", "split_prefix"]

if TYPE_CHECKING:
    from ..inputs.launchers import INNER_RANKS, LAUNCHERS, InnerRank, Launcher
    from ..inputs.ranks import RankReader, inner_rank, split_prefix
    from ..inputs.sources import InputError, Line, expand_paths, iter_inputs, make_line, read_lines
    from .engine import Engine
    from .observer import Feeder, Observer, lit, rxa
    from .results import ErrorBlock, LauncherExit, Match, ScanResult


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home if home.startswith(".") else f".{home}", __name__), name)
