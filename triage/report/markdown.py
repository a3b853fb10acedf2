"""The markdown report: a ticket comment (GitHub / GitLab / Jira), verdict first, details collapsed."""
from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any, List, Sequence

from ..caps import MD_LIMIT
from .comment import Dialect, evidence_lines, render_comment
from .util import clip

if TYPE_CHECKING:
    from .view import ReportView

__all__ = ["MARKDOWN", "code_span", "details", "evidence_lines", "fenced", "md_text", "render_markdown"]


def md_text(t: Any) -> str:
    """Text outside code: HTML-escaped and markdown punctuation backslash-escaped, one line."""
    t = html.escape(clip(t, 4000), quote=False).replace("\n", " ")
    return "".join("\\" + ch if ch in "\\`*_[]|~" else ch for ch in t)


def code_span(t: Any) -> str:
    """Inline code span that survives backticks and table pipes."""
    t = clip(t, 400).replace("\n", " ").replace("|", "\\|")
    run = max((len(r) for r in re.findall(r"`+", t)), default=0)
    fence = "`" * (run + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or not t else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def fenced(lines: List[str]) -> str:
    """A fenced code block that no fence inside LINES can end."""
    body = "\n".join(lines)
    run = max((len(r) for r in re.findall(r"`{3,}|~{3,}", body)), default=0)
    f = "`" * max(3, run + 1)
    return f"{f}text\n{body}\n{f}"


def details(summary: str, body: str) -> str:
    """A collapsed block."""
    return f"<details><summary>{html.escape(summary)}</summary>\n\n{body}\n\n</details>"


def _link(label: Any, href: Any) -> str:
    href = (href or "").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
    return f"[{md_text(label)}](<{href}>)" if href else md_text(label)


def _cells(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


MARKDOWN = Dialect(
    text=md_text, plain=lambda t: f"{t}", mono=code_span, plain_mono=lambda t: f"{t}", command=code_span,
    bold=lambda s: f"**{s}**", small=lambda s: f"<sub>{s}</sub>", heading=lambda n, s: "#" * n + " " + s,
    row=lambda label, value: f"| {label} | {value} |",
    header_row=lambda cells: _cells(cells) + "\n|" + "---|" * len(cells), table_row=_cells,
    code_block=fenced, link=_link, details=details, head_table=("| | |", "|---|---|"), para="\n\n", bullet="- ")


def render_markdown(v: ReportView, limit: int = MD_LIMIT) -> str:
    """A ticket comment (GitHub / GitLab / Jira) on report view V: verdict first, details collapsed, under
    LIMIT chars."""
    return render_comment(MARKDOWN, v, limit)
