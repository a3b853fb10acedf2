"""The shapes pastes come in (issue 40): a paste hard-wrapped at a fixed width (a terminal or a web
page cut every long line at, say, 116 columns, mid-word) has its wrapped lines joined back before
anything is matched."""
from __future__ import annotations

from collections import Counter
from typing import List, Optional, Tuple

from ..lazyre import lazy_re

PASTE_MAX = 4 << 20       # bytes: only an input this small (read whole in one block) is looked at
MIN_WIDTH = 60            # columns: a narrower "width" is a log's own short lines
MIN_WRAPPED = 3           # lines cut at exactly the width
# the start of a log record: a launcher / logger prefix (srun's task id), a date, a glog header, a level,
# a traceback, an exception line
_TABLE = "|+=-*#"          # a table's or a box's first character (its rows all start with it)
_NEW_RECORD = lazy_re(r"\d{1,6}: |\[[^\]\s][^\]]{0,80}\]|\d{4}-\d\d-\d\d[ T]|[IWEF]\d{4} \d\d:|"
                      r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|[a-z][\w.-]*: (?:error|info|warning)\b|"
                      r"Traceback \(most|\S+:\d+:\d+ \[\d+\] NCCL |\s+File \"|"
                      r"[A-Za-z_][\w.]*(?:Error|Exception|Warning): ")


def _width(lines: List[str]) -> Optional[int]:
    """The column every long line of LINES was cut at, when they look hard-wrapped: no line is longer,
    at least MIN_WRAPPED lines have exactly that length (not counting separator lines of one repeated
    character), and most of them go on in a line that starts no record of its own."""
    if len(lines) < MIN_WRAPPED + 1:
        return None
    lens = Counter(len(s) for s in lines if len(s) >= MIN_WIDTH and len(set(s.strip())) > 1)
    if not lens:
        return None
    width = max(len(s) for s in lines)
    exact = lens.get(width, 0)
    if width < MIN_WIDTH or width > 1000 or exact < MIN_WRAPPED:
        return None
    # a wrapped line goes on in the next one, mid-record: most lines of the width are followed by a
    # line that does not start a new record (a log's own lines of one length are whole records)
    pairs = [(s, lines[i + 1]) for i, s in enumerate(lines[:-1]) if len(s) == width]
    goes_on = sum(1 for s, x in pairs if _goes_on(s, x))
    return width if goes_on * 3 >= len(pairs) * 2 else None


def _goes_on(line: str, nxt: str) -> bool:
    """NXT can be the rest of LINE cut at the width: it is not empty, starts no record of its own (a
    prefix, a date, a level, ...), and is no copy of LINE's template (a log's fixed-width lines, such
    as Megatron's padded iteration lines, repeat their start)."""
    if not nxt or nxt[:6] == line[:6] or (nxt[0] == line[:1] and nxt[0] in _TABLE):
        return False                 # (a table's rows, a template's copies start alike)
    return not _NEW_RECORD.match(nxt.lstrip())


def unwrap(data: bytes) -> Optional[Tuple[bytes, int, int]]:
    """DATA (a whole input) with its hard-wrapped lines joined, the width and the lines joined; None
    when it does not look hard-wrapped."""
    if len(data) > PASTE_MAX or b"\n" not in data:
        return None
    text = data.decode("utf-8", "replace")
    lines = text.replace("\r\n", "\n").split("\n")
    width = _width(lines)
    if width is None:
        return None
    out: List[str] = []
    joined = 0
    cont, prev = False, ""
    for s in lines:
        if cont and _goes_on(prev, s):
            out[-1] += s
            joined += 1
        else:
            out.append(s)            # (a line of the width that was whole: the next one is a record of its own)
        cont, prev = len(s) == width, s
    return ("\n".join(out)).encode("utf-8"), width, joined


def wrapped_note(label: str, width: int, joined: int) -> str:
    return (f"{label} is a paste hard-wrapped at {width} columns: {joined:,} wrapped line(s) joined before "
            "matching (line numbers count the joined lines)")
