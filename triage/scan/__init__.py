"""The scan stage: inputs -> tagged lines -> observers -> a ScanResult.

    sources    files, directories, stdin, compressed inputs -> blocks of whole lines / tagged Lines
    text       one line's normalisation (ANSI, progress bars, control characters, clipping)
    launchers  the launcher table: rank prefixes and in-message rank forms, declared once
    ranks      every rank matcher (str and bytes), generated from the launcher table
    rx         catalog regexes with a timeout, the risky-regex check
    anchors    one multi-pattern (Hyperscan) search per block
    results    Match, ErrorBlock, LauncherExit, ScanResult
    state      Stream, InputState, View, Event, Core: what the observers share
    observer   the observer protocol, Feeder, anchor helpers
    attempts, launcher, followups, blocks, rules   the core observers
    blockview, blockscan, prepare, pool            the block driver: context, per-input loop, per-block
                                                   C work, worker processes
    engine     Engine: wiring and the two drivers (scan, scan_paths)

The names below are the package's public face, loaded on first use (triage.patterns imports
triage.scan.rx while the engine imports triage.patterns' types, so nothing is imported eagerly).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "Engine": "engine", "ScanResult": "results", "Match": "results", "ErrorBlock": "results",
    "LauncherExit": "results", "Observer": "observer", "Feeder": "observer", "lit": "observer", "rxa": "observer",
    "Line": "sources", "InputError": "sources", "iter_inputs": "sources", "read_lines": "sources",
    "make_line": "sources", "expand_paths": "sources", "LAUNCHERS": "launchers", "INNER_RANKS": "launchers",
    "Launcher": "launchers", "InnerRank": "launchers", "RankReader": "ranks", "split_prefix": "ranks",
    "inner_rank": "ranks",
}
__all__ = ["ErrorBlock", "Engine", "Feeder", "INNER_RANKS", "InnerRank", "InputError", "LAUNCHERS", "Launcher",
           "LauncherExit", "Line", "Match", "Observer", "RankReader", "ScanResult", "expand_paths", "inner_rank",
           "iter_inputs", "lit", "make_line", "read_lines", "rxa", "split_prefix"]

if TYPE_CHECKING:
    from .engine import Engine
    from .launchers import INNER_RANKS, LAUNCHERS, InnerRank, Launcher
    from .observer import Feeder, Observer, lit, rxa
    from .ranks import RankReader, inner_rank, split_prefix
    from .results import ErrorBlock, LauncherExit, Match, ScanResult
    from .sources import InputError, Line, expand_paths, iter_inputs, make_line, read_lines


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
