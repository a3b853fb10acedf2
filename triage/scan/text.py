"""One line's text as every stage sees it: ANSI codes, carriage-return progress bars and control
characters removed, over-long lines clipped."""
from __future__ import annotations

from ..caps import CLIP_MARK, MAX_LINE
from ..lazyre import lazy_re

__all__ = ["CLIP_MARK", "MAX_LINE", "normalise"]

# anchored or linear: the stdlib `re` (pattern-catalog regexes always run with rx's timeout)
_ANSI = lazy_re(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CTRL = lazy_re(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def normalise(text: str) -> str:
    """Strip ANSI codes, keep the last carriage-return segment, drop control chars, clip."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE] + CLIP_MARK
    if not text.isprintable():
        text = _CTRL.sub("", text)
    return text
