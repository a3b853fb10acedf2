"""Bridge's serialised objects in run_config.yaml, read back as the values they stand for.

Megatron Bridge (megatron.training.config.yaml_utils, megatron-core 0.19+; Bridge's own copy
before) writes
- an enum as `{_target_: megatron.core.transformer.enums.CudaGraphScope, _call_: true, _args_: [2]}`
  (megatron-core 0.19+ adds `_name_: attn`, which is then taken as it is);
- a torch dtype as `{_target_: torch.bfloat16, _call_: false}`;
- a function or class as `{_target_: torch.nn.functional.gelu, _call_: false}`;
- a functools.partial as `{_target_: f, _partial_: true, _args_: [...], kw: ...}`.

An enum value maps to its member name through enums.json (scripts/gen_enum_table.py reads every
enum class of the released megatron-core / Megatron-LM and Megatron Bridge sources, per release).
A class or value the table does not know is an `Unknown` value, never a guessed name.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "enums.json")


class Unknown(str):
    """A value triage cannot name (an enum value no known release defines): shown as text, never
    compared as a setting; rules treat it as undecided."""

    __slots__ = ()


@lru_cache(maxsize=1)
def _classes() -> Dict[str, List[Dict[str, Any]]]:
    with open(_TABLE, encoding="utf-8") as f:
        data: Dict[str, List[Dict[str, Any]]] = json.load(f)["classes"]
    return data


def _minor(version: str) -> Tuple[str, ...]:
    return tuple(version.split(".")[:2])


def enum_name(target: str, value: Any, mcore_version: Optional[str] = None) -> str:
    """The member name of `target` (a dotted enum class) with value `value`; Unknown when no
    release defines it, or when releases disagree and the log names no version."""
    short = target.rsplit(".", 1)[-1]
    groups = _classes().get(target)
    if groups is None:
        return Unknown(f"{short}({value!r}): an enum class triage does not know")
    key = json.dumps(value)
    if mcore_version:
        for g in groups:
            if any(_minor(v) == _minor(mcore_version) for v in g["versions"]):
                name = g["members"].get(key)
                if name is not None:
                    return str(name)
                return Unknown(f"{short}({value!r}): not a member in {g['project']} {mcore_version}")
    names = {g["members"][key] for g in groups if key in g["members"]}
    if len(names) == 1:
        return str(names.pop())
    if not names:
        return Unknown(f"{short}({value!r}): no released {groups[0]['project']} defines this value")
    return Unknown(f"{short}({value!r}): means {' or '.join(sorted(names))} depending on the release")


def _dtype(target: str) -> str:
    return target   # 'torch.bfloat16': compared by meaning in keys.same_value


def decode(v: Any, mcore_version: Optional[str] = None, _depth: int = 0) -> Any:
    """Replace Bridge's `_target_` dicts (in lists and nested dicts too) by what they stand for."""
    if _depth > 40:
        return v
    if isinstance(v, list):
        return [decode(x, mcore_version, _depth + 1) for x in v]
    if not isinstance(v, dict):
        return v
    target = v.get("_target_")
    if not isinstance(target, str):
        return {k: decode(x, mcore_version, _depth + 1) for k, x in v.items()}
    args = v.get("_args_")
    if v.get("_call_") is True and isinstance(args, list) and len(args) == 1 and not v.get("_partial_") \
            and set(v) <= {"_target_", "_call_", "_args_", "_name_"}:
        if isinstance(v.get("_name_"), str):          # megatron-core 0.19+ writes the member name too
            return str(v["_name_"])
        if target.startswith("megatron."):
            return enum_name(target, args[0], mcore_version)
        return f"{target}({args[0]!r})"
    if target.startswith("torch.") and v.get("_call_") is False:
        return _dtype(target)
    if v.get("_call_") is False or v.get("_partial_"):
        return target                                  # a function, class or partial: its name
    # a dataclass Bridge serialised with its class (`logger: {_target_: ...LoggerConfig, ...}`): its fields
    return {k: decode(x, mcore_version, _depth + 1) for k, x in v.items() if k not in ("_call_", "_target_")}
