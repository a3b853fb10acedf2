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


def _shows_env(cfg: Config) -> bool:
    return any(k.startswith("env.") for k in cfg)


def diff(old: Config, new: Config, partial: bool = False) -> List[Change]:
    """Changed canonical keys.  With partial=True (a side read from a log, which shows only part of
    the config) a key present on one side only is unknown, not changed -- except environment keys."""
    out = []
    keys = (set(old) | set(new)) - NOT_CONFIG
    if partial:
        # an environment variable one side does not show is unset there when that side showed its
        # environment (an env dump lists every variable); a side that shows none says nothing of it
        env_old, env_new = _shows_env(old), _shows_env(new)
        keys = {k for k in keys if (k in old and k in new)
                or ((k.startswith("env.") or k == "expandable_segments") and (k in old or env_old)
                    and (k in new or env_new))}
    for k in sorted(keys):
        a, b = old.get(k), new.get(k)
        if a != b:
            out.append(Change(k, a, b))
    return out
