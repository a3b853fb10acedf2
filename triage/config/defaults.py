"""Version defaults: what a setting left out of a partial config is, by the release that ran.

The table is data (defaults.yaml, with the source file and line of each release); a config read from
an echoed launch line or Bridge's Configuration Summary gets the defaults of the megatron-core
version the log prints.  Without a version the config is marked incomplete (`config_complete:
False`), so a rule on a setting the log does not show is undecided rather than read as off.
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, Dict, List, Optional

from .keys import Config, canonical

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "defaults.yaml")


@lru_cache(maxsize=1)
def table() -> Dict[str, List[Dict[str, Any]]]:
    import yaml  # on the first config with a release to fill in, not at start-up
    with open(_TABLE, encoding="utf-8") as f:
        data: Dict[str, List[Dict[str, Any]]] = yaml.safe_load(f)
    return data


def release(kind: str, version: Optional[str]) -> Optional[Dict[str, Any]]:
    """The table entry of `kind` ('megatron-lm' or 'mcore-transformer-config') for a version."""
    if not version:
        return None
    minor = ".".join(str(version).split(".")[:2])
    for entry in table().get(kind, []):
        if minor in entry["versions"]:
            return entry
    return None


def apply_defaults(cfg: Config, kind: Optional[str] = "megatron-lm") -> Config:
    """A partial config with the defaults of its release filled in (`kind`: the table of defaults.yaml,
    None for none); `config_complete: False` marks that what is still absent is unknown."""
    from .rules import rule_holds_when  # rules imports keys; keep the import graph one-way
    out = dict(cfg)
    entry = release(kind, cfg.get("mcore_version")) if kind else None
    out["config_complete"] = False
    if entry is None:
        return out
    for k, v in canonical(dict(entry["defaults"])).items():
        out.setdefault(k, v)
    for d in entry.get("derived", []):        # what validation itself turns on, whatever the flags said
        if rule_holds_when(out, d["when"]):
            out.update(d["set"])
    out["defaults_of"] = f"megatron-core {cfg.get('mcore_version')}"
    return out
