"""The report formats and `render`, which makes any of them from an analysis."""
from __future__ import annotations

from types import MappingProxyType
from typing import Optional, Sequence

from ..findings import Analysis
from ..redact import redact, redact_obj
from .contract import json_text, report_dict, to_dict
from .html import render_html
from .jira import render_jira
from .junit import render_junit
from .markdown import render_markdown
from .text import render_text

FORMATS = ("text", "json", "markdown", "html", "junit", "jira")
SUFFIX_FORMAT = MappingProxyType({".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html",
                                  ".htm": "html", ".txt": "text", ".xml": "junit", ".jira": "jira", ".wiki": "jira"})


def text_report(a: Analysis, redact_secrets: bool = True) -> str:
    """The text report: the view of the report dict at its first level (the terminal's report is not
    cut to the JSON's size), redacted as the JSON is, then as a whole (a key block spans lines)."""
    d = to_dict(a)
    if not redact_secrets:
        return render_text(d)
    return redact(render_text(redact_obj(d)))


def render(a: Analysis, fmt: str, redact_secrets: bool = True,
           pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """Render an analysis; secrets are redacted unless redact_secrets is False.  PITFALL_IDS (junit):
    the ids of the pattern catalog that was checked (`[p.id for p in pats]`); default: the shipped one."""
    if fmt == "text":
        return text_report(a, redact_secrets)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    d = report_dict(a, redact_secrets)
    if fmt == "json":
        return json_text(d)
    if fmt == "markdown":
        return render_markdown(d)
    if fmt == "html":
        return render_html(d)
    if fmt == "junit":
        return render_junit(d, pitfall_ids)
    return render_jira(d)
