"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, fonts, images or
network), rendered by the jinja2 templates in triage/templates from the report view."""
from __future__ import annotations

import functools
import os
from typing import Any, Dict

from .. import __version__
from .view import build_view

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
HTML_SECTIONS = (("error", "Error"), ("hang", "Hang suspects"), ("flight-recorder", "Flight Recorder"),
                 ("fix", "Fix"), ("evidence", "Evidence"), ("findings", "Findings"), ("timeline", "Timeline"),
                 ("config", "Config"), ("steps", "Step times"), ("unmatched", "Unmatched"), ("versions", "Versions"),
                 ("patterns", "Patterns"))


@functools.lru_cache(maxsize=1)
def template_env() -> Any:
    """The jinja2 environment of the templates (made once; jinja2 is imported only for HTML)."""
    from jinja2 import Environment, FileSystemLoader
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True, lstrip_blocks=True)


def html_sections(v: Dict[str, Any]) -> Dict[str, bool]:
    """Which sections of the HTML report have something in them (the rest are left out, and so is
    their link in the nav)."""
    return {
        "error": not v["primary"] and v["first_failure"] is not None,
        "hang": bool(v["hang"] and v["hang_suspects"]),
        "flight-recorder": v["flight_recorder"] is not None,
        "fix": v["primary"] is not None, "evidence": v["primary"] is not None,
        "findings": bool(v["roots"] or v["cascades"] or v["infos"] or v["hidden_findings"]),
        "timeline": bool(v.get("timeline_svg")),
        "config": bool(v["violations"] or v["diff"] or v["diff_given"]),
        "steps": v["steps"] is not None,
        "unmatched": bool(v["unmatched"] or v["unmatched_more"]),
        "versions": v["versions_found"],
        "patterns": bool(v["patterns"]),
    }


def render_html(d: Dict[str, Any]) -> str:
    """One self-contained HTML file: inline CSS and SVG, no scripts, fonts, images or network."""
    from ..svg import step_chart_svg, timeline_svg
    v = build_view(d)
    d = d if isinstance(d, dict) else {}
    v["timeline_svg"] = timeline_svg(d.get("timeline"), d.get("first_failing_rank"))
    v["steps_svg"] = step_chart_svg(d.get("step_times"))
    v["version"] = __version__
    v["show"] = show = html_sections(v)
    v["nav"] = [(sid, label) for sid, label in HTML_SECTIONS if show[sid]]
    return str(template_env().get_template("report.html.j2").render(v=v))
