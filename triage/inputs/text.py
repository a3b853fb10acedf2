"""One line's text as every stage sees it: ANSI codes, carriage-return progress bars and control
characters removed, over-long lines clipped."""
from __future__ import annotations

from typing import List, Optional

from ..caps import CLIP_MARK, MAX_LINE
from ..lazyre import lazy_re

__all__ = ["CLIP_MARK", "MAX_LINE", "clip_keeping_error", "normalise"]

# anchored or linear: the stdlib `re` (pattern-catalog regexes always run with rx's timeout)
CSI_RX = r"\x1b\[[0-9;?]*[ -/]*[@-~]"                   # (sources.without_gaps' too)
ANSI_RX = CSI_RX + r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
_ANSI = lazy_re(ANSI_RX)
_CTRL = lazy_re(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# a word of a failure, looked for past the part of an over-long line that is kept anyway (issue 40:
# an error at character 200,000 of a line was cut off unseen)
_LATE = lazy_re(r"Error|ERROR|error|Exception|FATAL|NCCL WARN|Traceback|failed|out of memory|illegal|Killed")


def clip_keeping_error(text: str, cap: int) -> str:
    """TEXT (longer than CAP characters) cut to about CAP: its head, and, when a failure word stands
    past the last quarter of the cap, a window from just before that word (the characters between
    are said to be left out); else its first CAP characters."""
    m = _LATE.search(text, cap - cap // 4)
    if m is None or m.start() < cap:
        return text[:cap]
    head = cap // 4
    at = max(head, m.start() - cap // 8)
    gap = f" …[{at - head:,} characters not kept]… "
    return text[:head] + gap + text[at:at + cap - head - len(gap)]


def normalise(text: str) -> str:
    """Strip ANSI codes, keep the last carriage-return segment, drop control chars, clip."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    if len(text) > MAX_LINE:
        text = clip_keeping_error(text, MAX_LINE) + CLIP_MARK
    if not text.isprintable():
        text = _CTRL.sub("", text)
    return text


def progress_updates(raw: str) -> Optional[List[str]]:
    """The updates of a progress bar written to a file (NeMo / Lightning's: CR-separated, each with a step record,
    `train_step_timing`) that the scanner reads as lines of their own, the rest of the line left out; None for
    any other line.  RAW: a physical line without its newline (a CRLF end's CR is no separator)."""
    if "\r" not in raw or "train_step_timing" not in raw:
        return None
    if raw.endswith("\r") and "\r" not in raw[:-1]:
        return None
    return [seg for seg in raw.split("\r") if "train_step_timing" in seg]
