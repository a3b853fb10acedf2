"""The report formats, one registry (yamllint's `{ID: module}` style, issue 41): each format's name, the
module and function that render it (imported when asked for: a text or JSON report loads none of the
others), its file suffixes and whether `triage fleet` writes it.  What the CLI's options need, without
importing a rendering (report.formats renders from it)."""
from __future__ import annotations

from types import MappingProxyType
from typing import Tuple

from ..record import record


@record(frozen=True)
class Format:
    name: str
    module: str                 # triage.report.<module>
    function: str               # its render function: (report view) -> str, or (view, pitfall ids) for junit
    suffixes: Tuple[str, ...]   # the -o file suffixes that choose it
    fleet: bool = False         # a format of the fleet view too


REGISTRY: Tuple[Format, ...] = (
    Format("text", "text", "render_text", (".txt",), fleet=True),
    Format("json", "contract", "json_text", (".json",), fleet=True),       # (formats.render_view: the view's JSON)
    Format("markdown", "markdown", "render_markdown", (".md", ".markdown"), fleet=True),
    Format("html", "html", "render_html", (".html", ".htm"), fleet=True),
    Format("junit", "junit", "render_junit", (".xml",)),
    Format("jira", "jira", "render_jira", (".jira", ".wiki")),
)
BY_NAME = MappingProxyType({f.name: f for f in REGISTRY})
FORMATS = tuple(f.name for f in REGISTRY)
SUFFIX_FORMAT = MappingProxyType({sfx: f.name for f in REGISTRY for sfx in f.suffixes})
FLEET_FORMATS = tuple(f.name for f in REGISTRY if f.fleet)
