"""Diff two canonical configs."""
from __future__ import annotations

from typing import Any, List

from ..record import record
from .keys import META, Config


@record
class Change:
    key: str
    old: Any
    new: Any


NOT_CONFIG = META   # facts about where a config came from, not settings


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
