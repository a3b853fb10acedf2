"""The report formats and `render`, which makes any of them from an analysis."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Optional, Sequence

from ..redact import redact, redact_obj
from .contract import report_json, to_dict
from .names import BY_NAME, FORMATS, SUFFIX_FORMAT

if TYPE_CHECKING:
    from ..verdict.analysis import Analysis

__all__ = ["FORMATS", "SUFFIX_FORMAT", "render", "text_report"]


def text_report(a: Analysis, redact_secrets: bool = True) -> str:
    """The text report: the view of the report dict at its first level (the terminal's report is not
    cut to the JSON's size), redacted as the JSON is, then as a whole (a key block spans lines)."""
    from .text import render_text  # with the view: a JSON report needs neither
    d = to_dict(a)
    if not redact_secrets:
        return render_text(d)
    return redact(render_text(redact_obj(d)))


def render(a: Analysis, fmt: str, redact_secrets: bool = True,
           pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """Render an analysis; secrets are redacted unless redact_secrets is False.  PITFALL_IDS (junit):
    the ids of the pattern catalog that was checked (`[p.id for p in pats]`); default: the shipped one.
    The format's module is imported when asked for (names.REGISTRY)."""
    if fmt == "text":
        return text_report(a, redact_secrets)
    f = BY_NAME.get(fmt)
    if f is None:
        raise ValueError(f"unknown format {fmt!r}")
    d, text = report_json(a, redact_secrets)
    if fmt == "json":
        return text
    fn = getattr(importlib.import_module(f".{f.module}", __package__), f.function)
    return fn(d, pitfall_ids) if fmt == "junit" else fn(d)
