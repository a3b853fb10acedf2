"""Version defaults: what a setting left out of a partial config is, by the release that ran.

The table is data (defaults.yaml, with the source file and line of each release); a config read from
an echoed launch line or Bridge's Configuration Summary gets the defaults of the megatron-core
version the log prints.  Without a version the config is marked incomplete (`config_complete:
False`), so a rule on a setting the log does not show is undecided rather than read as off.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from .. import tables
from .keys import Config, canonical
from .operators import OPERATORS


@lru_cache(maxsize=1)
def table() -> Dict[str, List[Dict[str, Any]]]:
    """defaults.yaml as a run reads it (its JSON, triage/tables.py: PyYAML's import and parse of it took
    44 ms of every run with a config to fill in, issue 44)."""
    data: Dict[str, List[Dict[str, Any]]] = tables.load("config/defaults")
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


def _holds(cfg: Config, cond: Dict[str, Any]) -> bool:
    """A `derived` condition (eq / in of the config-rule operators) on the config as filled in so far."""
    op, arg = next((k, v) for k, v in cond.items() if k != "key")
    fn = OPERATORS.get(op)
    return fn is not None and fn(cfg.get(cond["key"]), arg)


def apply_defaults(cfg: Config, kind: Optional[str] = "megatron-lm") -> Config:
    """A partial config with the defaults of its release filled in (`kind`: the table of defaults.yaml,
    None for none); `config_complete: False` marks that what is still absent is unknown."""
    out = dict(cfg)
    entry = release(kind, cfg.get("mcore_version")) if kind else None
    out["config_complete"] = False
    if entry is None:
        return out
    for k, v in canonical(dict(entry["defaults"])).items():
        out.setdefault(k, v)
    for d in entry.get("derived", []):        # what validation itself turns on, whatever the flags said
        if all(_holds(out, c) for c in d["when"]):
            out.update(d["set"])
    out["defaults_of"] = f"megatron-core {cfg.get('mcore_version')}"
    return out


_LABEL = {"megatron-lm": "Megatron-LM (megatron-core)", "mcore-transformer-config": "megatron-core",
          "megatron-bridge": "Megatron Bridge"}


def _span(versions: List[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"


def default_of(cfg: Config, key: str) -> Optional[Tuple[Any, str]]:
    """What a boolean setting that a whole config file leaves out is: (value, "False in megatron-core
    0.14-0.19"), by the release the config names (mcore_version), or, naming none, the value every
    listed release agrees on; None where the table does not know it (then the key is undecided)."""
    kinds = (["megatron-bridge", "mcore-transformer-config"] if cfg.get("framework") == "bridge" else
             ["megatron-lm"] if cfg.get("framework") == "megatron-lm" else
             ["mcore-transformer-config", "megatron-bridge", "megatron-lm"])
    for kind in kinds:
        entries = [e for e in table().get(kind, []) if key in e["defaults"]]
        if not entries:
            continue
        version = cfg.get("mcore_version") if kind != "megatron-bridge" else None
        if version:
            entry = release(kind, version)
            if entry is None or key not in entry["defaults"]:
                return None
            v = entry["defaults"][key]
            return (v, f"{v} in {_LABEL[kind]} {version}") if isinstance(v, bool) else None
        values = {repr(e["defaults"][key]) for e in entries}
        v = entries[0]["defaults"][key]
        if len(values) != 1 or not isinstance(v, bool):
            return None
        versions = [x for e in entries for x in e["versions"]]
        return v, f"{v} in {_LABEL[kind]} {_span(versions)}"
    return None
