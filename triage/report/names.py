"""The report formats' names and file suffixes: what the CLI's options need, without importing a
rendering (report.formats re-exports them; fleet_report its FLEET_FORMATS)."""
from __future__ import annotations

from types import MappingProxyType

FORMATS = ("text", "json", "markdown", "html", "junit", "jira")
SUFFIX_FORMAT = MappingProxyType({".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html",
                                  ".htm": "html", ".txt": "text", ".xml": "junit", ".jira": "jira", ".wiki": "jira"})
FLEET_FORMATS = ("text", "json", "markdown", "html")
