"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, fonts, images or
network), rendered by the jinja2 templates in triage/templates from the report view."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Dict, Mapping, Tuple

from .. import __version__
from .view import ReportView

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
HTML_SECTIONS = (("error", "Error"), ("wavefront", "Who never arrived"), ("hang", "Hang suspects"),
                 ("flight-recorder", "Flight Recorder"),
                 ("fix", "Fix"), ("evidence", "Evidence"), ("findings", "Findings"), ("timeline", "Timeline"),
                 ("config", "Config"), ("steps", "Step times"), ("unmatched", "Unmatched"), ("versions", "Versions"),
                 ("patterns", "Patterns"))


@functools.lru_cache(maxsize=1)
def template_env() -> Any:
    """The jinja2 environment of the templates (made once; jinja2 is imported only for HTML)."""
    from jinja2 import Environment, FileSystemLoader

    from .template_cache import template_cache  # compiled templates kept between runs
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True, lstrip_blocks=True,
                       bytecode_cache=template_cache())


@dataclass(frozen=True)
class HtmlPage:
    """What the HTML report adds to the view: its charts (Markup made by triage/svg.py), the version,
    which sections have something in them (`show`, by section id) and the nav's links."""
    timeline_svg: Any
    steps_svg: Any
    version: str
    show: Mapping[str, bool]
    nav: Tuple[Tuple[str, str], ...]


def html_sections(v: ReportView, timeline_svg: Any = None) -> Dict[str, bool]:
    """Which sections of the HTML report have something in them (the rest are left out, and so is
    their link in the nav)."""
    return {
        "error": not v.primary and v.first_failure is not None,
        "wavefront": v.wavefront is not None,
        "hang": bool(v.hang and v.hang_suspects),
        "flight-recorder": v.flight_recorder is not None,
        "fix": v.primary is not None, "evidence": v.primary is not None,
        "findings": bool(v.roots or v.cascades or v.infos or v.hidden_findings),
        "timeline": bool(timeline_svg),
        "config": bool(v.violations or v.diff or v.diff_given),
        "steps": v.steps is not None,
        "unmatched": bool(v.unmatched or v.unmatched_more),
        "versions": v.versions_found,
        "patterns": bool(v.patterns),
    }


def render_html(v: ReportView) -> str:
    """Report view V as one self-contained HTML file: inline CSS and SVG, no scripts, fonts, images or
    network."""
    from .svg import step_chart_svg, timeline_svg
    timeline = timeline_svg(v)
    show = html_sections(v, timeline)
    page = HtmlPage(timeline_svg=timeline, steps_svg=step_chart_svg(v), version=__version__,
                    show=MappingProxyType(show), nav=tuple((sid, label) for sid, label in HTML_SECTIONS if show[sid]))
    return str(template_env().get_template("report.html.j2").render(v=v, page=page))
