"""Jira wiki markup: the markdown comment's content, for Jira tickets."""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, List, Optional, Sequence

from ..caps import MD_LIMIT
from .comment import Dialect, render_comment
from .util import clip

if TYPE_CHECKING:
    from .view import ReportView

JIRA_ESCAPE = frozenset("*_-+^~?!{}[]#")     # markup characters: backslash-escaped
# backslash and pipe as character references: `\\` is a line break and `\\|` is unreliable in tables
JIRA_ENTITY = MappingProxyType({"\\": "&#92;", "|": "&#124;"})


def jira_text(t: Any, n: int = 4000) -> str:
    """Text outside {noformat}: one line, Jira markup neutralised (markup characters escaped, backslash
    and pipe as character references, an `&` that would start a character reference escaped too)."""
    t = re.sub(r"&(?=#?\w+;)", "&amp;", clip(t, n).replace("\n", " "))
    return "".join(JIRA_ENTITY.get(ch) or ("\\" + ch if ch in JIRA_ESCAPE else ch) for ch in t)


def _mono(t: Any, n: int = 400) -> str:
    """Inline monospace ({{...}}), its text escaped like any other."""
    t = jira_text(t, n)
    return "{{" + t + "}}" if t.strip() else "(none)"


def noformat(lines: List[str]) -> str:
    """A {noformat} block: literal text, except that a `{noformat` inside would end it."""
    body = "\n".join(re.sub(r"(?i)\{(noformat)", r"{ \1", x) for x in lines)
    return "{noformat}\n" + body + "\n{noformat}"


def _link(label: Any, href: Optional[str]) -> str:
    if not href:
        return jira_text(label)
    url = "".join(c if c.isascii() and c.isprintable() and c not in " |[]{}<>\"'\\^`" else
                  "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in href)
    return f"[{jira_text(label)}|{url}]"


def _row(cells: Sequence[str]) -> str:
    return "|" + "|".join(c if c.strip() else " " for c in cells) + "|"


JIRA = Dialect(
    text=jira_text, plain=jira_text, mono=_mono, plain_mono=_mono, command=lambda t: _mono(t, 1000),
    bold=lambda s: f"*{s}*", small=lambda s: f"_{s}_", heading=lambda n, s: f"h{n}. {s}",
    row=lambda label, value: f"||{label}|{value}|", header_row=lambda cells: "||" + "||".join(cells) + "||",
    table_row=_row, code_block=noformat, link=_link, details=lambda summary, body: f"h4. {summary}\n{body}",
    head_table=(), para="\n", bullet="* ")


def render_jira(v: ReportView, limit: int = MD_LIMIT) -> str:
    """The markdown ticket comment (render_markdown) in Jira wiki markup: h3./h4. headings, ||heading||
    tables, {noformat} log blocks, [title|url] links; every piece of log text is escaped or inside
    {noformat}.  Jira has no collapsed blocks: what markdown folds into <details> gets an h4. heading.
    Stays under LIMIT characters (Jira's comment limit), leaving out whole sections with a note."""
    return render_comment(JIRA, v, limit)
