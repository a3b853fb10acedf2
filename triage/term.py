"""The text report on a terminal: colour (only on a TTY, never with NO_COLOR or TERM=dumb, or as
--color says) and prose wrapped to the terminal's width.  Applied to the finished text report, so a
file or a pipe gets the plain text, byte for byte."""
from __future__ import annotations

import os
from typing import IO, List, Optional

COLOR_CHOICES = ("auto", "always", "never")

_RESET = "\x1b[0m"
_STYLES = {
    "error": "\x1b[1;31m", "critical": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;36m",
    "unexplained": "\x1b[1;35m", "ok": "\x1b[1;32m", "label": "\x1b[1m", "dim": "\x1b[2m", "link": "\x1b[36m",
}
# lines of prose (label, then text) that are wrapped under their label
_PROSE = ("  why: ", "  fix: ", "  error: ", "triage: ", "  note: ", "  because: ", "known issue: ")


def use_color(mode: str = "auto", stream: Optional[IO[str]] = None) -> bool:
    """Whether to colour: `always`/`never` as given; `auto` only on a terminal, without NO_COLOR
    (https://no-color.org: any non-empty value) and not TERM=dumb."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):
        return False


def width(stream: Optional[IO[str]] = None) -> Optional[int]:
    """The terminal's width when STREAM is a terminal (None otherwise: no wrapping for a pipe)."""
    isatty = getattr(stream, "isatty", None)
    try:
        if not (isatty and isatty()):
            return None
    except (ValueError, OSError):
        return None
    import shutil  # (a terminal only)
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def wrap(text: str, cols: int) -> str:
    out: List[str] = []
    for line in text.split("\n"):
        head = next((p for p in _PROSE if line.startswith(p)), None)
        if head is None or len(line) <= cols:
            out.append(line)
            continue
        import textwrap  # only a long prose line on a terminal wraps
        indent = " " * len(head)
        out.extend(textwrap.wrap(line, cols, subsequent_indent=indent, break_long_words=True,
                                 break_on_hyphens=False) or [line])
    return "\n".join(out)


def _paint(s: str, style: str) -> str:
    return f"{_STYLES[style]}{s}{_RESET}"


_LABELS = ("  why: ", "  fix: ", "  evidence:", "  first seen:", "  rule: ", "  fingerprint: ")


def _primary_style(line: str) -> str:
    return next((s for s in ("critical", "warning", "info") if f"[{s}]" in line), "error")


def _style_line(line: str) -> str:
    if line.startswith("PRIMARY  "):
        return _paint(line, _primary_style(line))
    if line.startswith("UNEXPLAINED FAILURE"):
        return _paint(line, "unexplained")
    if line.startswith("triage: ") and "no known pitfall" in line and "fail" not in line:
        return _paint(line, "ok")
    if line.startswith("known issue: "):
        return _paint("known issue:", "label") + " " + _paint(line[len("known issue: "):], "link")
    if line.startswith(_LABELS):
        label, _, rest = line.partition(":")
        return _paint(label + ":", "label") + rest
    if line.isupper() and line.strip():
        return _paint(line, "label")
    if line.startswith("  cascade "):
        return _paint(line, "dim")
    return line


def colorize(text: str) -> str:
    """ANSI colour for the text report's headings and labels (the rest is left as it is)."""
    return "\n".join(_style_line(line) for line in text.split("\n"))


def for_terminal(text: str, stream: Optional[IO[str]], color: str = "auto") -> str:
    """TEXT as shown on STREAM: wrapped to its width and coloured when it is a terminal."""
    cols = width(stream)
    if cols:
        text = wrap(text, cols)
    if use_color(color, stream):
        text = colorize(text)
    return text
