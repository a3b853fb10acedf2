"""Report stage: text, json, markdown, jira, junit and html renderings of one analysis.

    contract      the JSON contract (to_dict), its size levels and the redacted report dict
    view          the view of a report that every other rendering is made from: typed, frozen
                  dataclasses (ReportView, FindingView, ...), built once from an analysis by build_view
                  (its report dict made once) or from a stored report dict by load_view
    parts         a new report field declared once: its JSON key and value and its section
    text, markdown, jira, junit, html, check_config
                  the renderings, each of the view alone; formats: FORMATS, render(analysis, format)
                  and render_view(view, format)
    comment       the ticket comment's structure, written once: markdown and jira are a Dialect each
    util          helpers the renderings share (clipped text of any value)
The caps on what is kept and shown are triage/caps.py's.

The names below are imported lazily (PEP 562 __getattr__): `from triage.report import render` loads
formats.py, not every rendering (a text report never loads the markdown, HTML or JUnit modules).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..caps import CLIP, EVIDENCE_MAX, LINE_CLIP, MAX_FINDINGS, MAX_ROWS, MD_LIMIT, TEXT_MAX_ITEMS
    from .check_config import render_check_config_markdown
    from .contract import (
        FINDINGS_MAX,
        LEVELS,
        MAX_JSON_BYTES,
        SCHEMA_VERSION,
        SERIES_MAX,
        SUMMARY_MAX,
        Caps,
        finding_dict,
        json_text,
        render_json,
        report_dict,
        report_json,
        to_dict,
    )
    from .formats import FORMATS, SUFFIX_FORMAT, render, render_view, text_report
    from .html import HTML_SECTIONS, render_html
    from .jira import render_jira
    from .junit import JUNIT_UNEXPLAINED, render_junit
    from .markdown import render_markdown
    from .text import known_line, render_text
    from .view import VERSION_LABELS, FindingView, ReportView, build_view, finding_view, load_view

# name -> the module (relative to this package) that defines it
_LAZY = {
    "CLIP": "..caps", "EVIDENCE_MAX": "..caps", "LINE_CLIP": "..caps", "MAX_FINDINGS": "..caps", "MAX_ROWS": "..caps",
    "MD_LIMIT": "..caps", "TEXT_MAX_ITEMS": "..caps", "render_check_config_markdown": ".check_config",
    "FINDINGS_MAX": ".contract", "LEVELS": ".contract", "MAX_JSON_BYTES": ".contract", "SCHEMA_VERSION": ".contract",
    "SERIES_MAX": ".contract", "SUMMARY_MAX": ".contract", "Caps": ".contract", "finding_dict": ".contract",
    "json_text": ".contract", "render_json": ".contract", "report_dict": ".contract",
    "report_json": ".contract", "to_dict": ".contract",
    "FORMATS": ".formats", "SUFFIX_FORMAT": ".formats", "render": ".formats", "render_view": ".formats",
    "text_report": ".formats",
    "HTML_SECTIONS": ".html", "render_html": ".html", "render_jira": ".jira", "JUNIT_UNEXPLAINED": ".junit",
    "render_junit": ".junit", "render_markdown": ".markdown", "known_line": ".text", "render_text": ".text",
    "VERSION_LABELS": ".view", "FindingView": ".view", "ReportView": ".view",
    "build_view": ".view", "finding_view": ".view", "load_view": ".view",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value         # looked up once
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CLIP", "EVIDENCE_MAX", "FINDINGS_MAX", "FORMATS", "HTML_SECTIONS", "JUNIT_UNEXPLAINED", "LEVELS", "LINE_CLIP",
    "MAX_FINDINGS", "MAX_JSON_BYTES", "MAX_ROWS", "MD_LIMIT", "SCHEMA_VERSION", "SERIES_MAX", "SUFFIX_FORMAT",
    "SUMMARY_MAX", "TEXT_MAX_ITEMS", "VERSION_LABELS", "Caps", "FindingView", "ReportView", "build_view",
    "finding_dict", "finding_view", "json_text", "known_line", "load_view", "render", "render_check_config_markdown",
    "render_html", "render_jira", "render_json", "report_json",
    "render_junit", "render_markdown", "render_text", "render_view",
    "report_dict", "text_report", "to_dict",
]
