"""The operators a config rule's condition may use (`{key: K, OP: ARG}`), a leaf table: patterns.py
validates rules against it and config/rules.py evaluates them, neither importing the other for it."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ..match.rx import lazy

# A condition is {key: K, OP: ARG}; an operator sees the key's value (None when the key is absent
# or null) and ARG.  An absent key differs from any value: ne / not_in / not_contains hold for it,
# every other comparison fails.
Operator = Callable[[Any, Any], bool]


def _eq(v: Any, a: Any) -> bool:
    if isinstance(v, str) or isinstance(a, str):
        return str(v).lower() == str(a).lower()
    return bool(v == a)


def _contains(v: Any, a: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_eq(x, a) for x in v)
    return str(a) in str(v)


def _listed(a: Any) -> List[Any]:
    return a if isinstance(a, list) else [a]


_DIGITS = lazy(r"\d+")      # (made from triage's cache: no `regex` import, match/rx.py)


def _version(v: Any) -> Tuple[int, ...]:
    nums = _DIGITS.findall(str(v))[:3]
    return tuple(int(n) for n in nums) + (0,) * (3 - len(nums))


def _number_cmp(v: Any, a: Any, greater: bool) -> bool:
    if v is None:
        return False
    try:
        x, y = float(v), float(a)
    except (TypeError, ValueError):
        return False
    return x > y if greater else x < y


def _has_other_than(v: Any, a: Any) -> bool:
    items = v if isinstance(v, (list, tuple)) else [v]
    return v is not None and any(not any(_eq(x, b) for b in _listed(a)) for x in items)


OPERATORS: Dict[str, Operator] = {
    "eq": lambda v, a: v is not None and _eq(v, a),
    "ne": lambda v, a: v is None or not _eq(v, a),
    "in": lambda v, a: v is not None and any(_eq(v, x) for x in _listed(a)),
    "not_in": lambda v, a: v is None or not any(_eq(v, x) for x in _listed(a)),
    "contains": lambda v, a: v is not None and _contains(v, a),
    "contains_any": lambda v, a: v is not None and any(_contains(v, x) for x in _listed(a)),
    "not_contains": lambda v, a: v is None or not _contains(v, a),
    "truthy": lambda v, a: bool(v) == bool(a),
    "falsy": lambda v, a: (not v) == bool(a),
    "set": lambda v, a: (v is not None) == bool(a),
    "unset": lambda v, a: (v is None) == bool(a),
    "gt": lambda v, a: _number_cmp(v, a, greater=True),
    "lt": lambda v, a: _number_cmp(v, a, greater=False),
    "version_lt": lambda v, a: v is not None and _version(v) < _version(a),
    "version_ge": lambda v, a: v is not None and _version(v) >= _version(a),
    "has_other_than": _has_other_than,
}
