"""The report formats and `render`, which makes any of them from an analysis: its view (view.build_view:
the report dict made once, what the verdict decided taken from the verdict), then the format's
rendering of that view (`render_view`)."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Optional, Sequence

from ..redact import redact
from .contract import json_text, report_json
from .names import BY_NAME, FORMATS, SUFFIX_FORMAT

if TYPE_CHECKING:
    from ..verdict.analysis import Analysis
    from .view import ReportView

__all__ = ["FORMATS", "SUFFIX_FORMAT", "render", "render_view", "text_report"]


def text_report(a: Analysis, redact_secrets: bool = True) -> str:
    """The text report: the view of the report dict at its first level (the terminal's report is not
    cut to the JSON's size), redacted as the JSON is, then as a whole (a key block spans lines)."""
    return render(a, "text", redact_secrets)


def render(a: Analysis, fmt: str, redact_secrets: bool = True,
           pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """Render an analysis; secrets are redacted unless redact_secrets is False.  PITFALL_IDS (junit):
    the ids of the pattern catalog that was checked (`[p.id for p in pats]`); default: the shipped one.
    The format's module is imported when asked for (names.REGISTRY); a JSON report is the contract's
    text, made without the view (it loads no rendering)."""
    if fmt not in BY_NAME:
        raise ValueError(f"unknown format {fmt!r}")
    if fmt == "json":
        return report_json(a, redact_secrets)[1]
    from .view import build_view
    return render_view(build_view(a, redact_secrets, whole=fmt == "text"), fmt, pitfall_ids)


def render_view(v: ReportView, fmt: str, pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """Report view V in format FMT (the JSON: the text of the dict the view was made from)."""
    f = BY_NAME.get(fmt)
    if f is None:
        raise ValueError(f"unknown format {fmt!r}")
    if fmt == "json":
        return v.json or json_text(v.data)
    fn = getattr(importlib.import_module(f".{f.module}", __package__), f.function)
    if fmt == "text":       # redacted as the JSON is, then as a whole (a key block spans lines)
        return redact(fn(v)) if v.redacted else fn(v)
    return fn(v, pitfall_ids) if fmt == "junit" else fn(v)
