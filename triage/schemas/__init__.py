"""JSON Schemas (draft 2020-12) of triage's machine-readable outputs, shipped as package data.

    analyze       triage analyze --format json       (triage.report.report_dict)
    check-config  triage check-config --format json
    diff          triage diff OLD NEW --format json
    fleet         triage fleet / triage fleet report --format json (triage.fleet.run.view)
    recheck       triage fleet recheck --format json        (triage.fleet.recheck.Recheck)
    known         triage known list --format json
    watch-event   triage watch --format jsonl (one event a line; triage.watch.events)

`triage schema NAME` prints one; tests/test_schemas.py validates every golden corpus output
against them.  The contract is "extend, never break": fields are only ever added, so the shipped
schemas let objects carry keys they do not describe; the tests check a strict variant (every
object closed) so that a key the code starts to emit must be described here as well.

"""
from __future__ import annotations

import json
from typing import Any, Dict, Tuple

from ..errors import TriageError

NAMES: Tuple[str, ...] = ("analyze", "check-config", "diff", "fleet", "recheck", "known", "watch-event")


class UnknownSchema(TriageError, KeyError, ValueError):
    """No schema of that name (the message lists the known names)."""

    def __str__(self) -> str:            # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


def _file(name: str) -> str:
    if name not in NAMES:
        raise UnknownSchema(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    return f"{name}.schema.json"


def text(name: str) -> str:
    """The schema NAME as shipped (JSON text)."""
    from importlib import resources  # ~10 ms of imports: only `triage schema` and the tests read one
    return resources.files(__name__).joinpath(_file(name)).read_text(encoding="utf-8")


def load(name: str) -> Dict[str, Any]:
    """The schema NAME as a dict (a fresh copy on every call)."""
    return json.loads(text(name))
