"""Helpers shared by the renderers of the report view: every value, whatever its type, as one
clipped line of text.  The limits the views and comments keep to are triage/caps.py's."""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Dict, List, Optional

from ..caps import CLIP, DIFF_CLIP
from ..lazyre import lazy_re
from ..verdict.types import rank_ranges

# what could end a line, move the cursor or reorder the text where a report is shown: C0 and C1 controls
# (a tab aside), Unicode's line and paragraph separators, the bidirectional overrides and isolates
_CONTROL = lazy_re("[\x01-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\n": "\\n", "\x0b": "\\v", "\x0c": "\\f", "\x1b": "\\e"}


def _escape(m: "re.Match[str]") -> str:
    c = m.group(0)
    return _SHORT.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def one_line(t: str) -> str:
    """T as one line: a control character written as its escape (`\\n`, `\\x07`, `\\u2028`), so that a
    file name such as `rank_0.log<newline>PRIMARY fake` cannot start a line of its own in a report."""
    return t if t.isprintable() else _CONTROL.sub(_escape, t)


def clip(x: Any, n: int = CLIP) -> str:
    """Any value as one clipped line of text (a carriage return and NUL dropped, other control
    characters escaped: see one_line)."""
    if x is None:
        return ""
    t = x if isinstance(x, str) else str(x)
    t = one_line(t.replace("\r", "").replace("\x00", ""))
    if len(t) > n:
        t = t[:n] + f"… [+{len(t) - n} chars]"
    return t


def shown_value(v: Any, n: int = 4000) -> str:
    """A config value as a reader writes it, never a Python repr: a plain string bare (quoted as JSON
    when empty or padded, or when it reads as another type), lists and dicts as compact JSON,
    true/false, and (unset) for no value."""
    if v is None:
        return "(unset)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        plain = v and v == v.strip() and v.lower() not in ("true", "false", "(unset)")
        return clip(v if plain else json.dumps(v, ensure_ascii=False), n)
    if isinstance(v, (list, dict, tuple)):
        try:
            return clip(json.dumps(v, ensure_ascii=False, default=str), n)
        except (TypeError, ValueError):
            return clip(str(v), n)
    return clip(str(v), n)


def change_line(key: str, old: Any, new: Any, redact_fn: Callable[[str], str], n: int = DIFF_CLIP) -> str:
    """`key: old -> new` (values as shown_value writes them) for `triage diff`'s text: each value
    redacted as the value of KEY (`KEY: VALUE`, whole), then clipped to N characters."""
    def side(v: Any) -> str:
        head = f"{key}: "
        r = redact_fn(head + shown_value(v, 1 << 20))
        return clip(r[len(head):] if r.startswith(head) else r, n)
    return f"{key}: {side(old)} -> {side(new)}"


def value_text(x: Any, n: int = 200) -> str:
    """A config value as text: lists and dicts as compact JSON, None as unset."""
    if x is None:
        return "(unset)"
    if isinstance(x, (list, dict, tuple)):
        try:
            return clip(json.dumps(x, ensure_ascii=False, default=str), n)
        except (TypeError, ValueError):
            pass
    return clip(x, n)


def int_or_none(x: Any) -> Any:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def finite_num(x: Any) -> Optional[float]:
    """X as a finite float (a number, or text that reads as one); None for anything else (a bool too)."""
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def finite_int(x: Any) -> Optional[int]:
    """finite_num(X) as an int (truncated)."""
    v = finite_num(x)
    return int(v) if v is not None else None


def as_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else []


def as_dict(x: Any) -> Dict[Any, Any]:
    return x if isinstance(x, dict) else {}


def dicts(x: Any) -> List[Dict[str, Any]]:
    return [e for e in as_list(x) if isinstance(e, dict)]


def rank_text(x: Any) -> str:
    r = int_or_none(x)
    return "?" if r is None else str(r)


def ranks_text(x: Any) -> str:
    if isinstance(x, (list, tuple)):
        try:
            return clip(rank_ranges([r for r in x if isinstance(r, int)]), 200)
        except Exception:  # pragma: no cover - defensive
            return ""
    return clip(x, 200)


def loc(src: Any, line: Any) -> str:
    src = clip(src, 200) or "?"
    return f"{src}:{line}" if int_or_none(line) is not None else src


def fit_blocks(head: str, blocks: List[str], foot: str, limit: int, note: Callable[[int], str]) -> str:
    """HEAD, then each of BLOCKS that still fits under LIMIT characters (NOTE(n) says that n did
    not), then FOOT; cut short as a last resort."""
    out = head
    omitted = 0
    reserve = len(foot) + 200
    for blk in blocks:
        if len(out) + 2 + len(blk) + reserve > limit:
            omitted += 1
            continue
        out += "\n\n" + blk
    if omitted:
        out += "\n\n" + note(omitted)
    out += "\n\n" + foot + "\n"
    if len(out) > limit:   # only with a pathological head (should not happen: every field is clipped)
        out = out[:limit - 80] + "\n\n_(truncated to the comment size limit)_\n"
    return out
