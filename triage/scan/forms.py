"""Failure forms (issue 40): the declared list of evidence that a job failed, whatever the cause
(triage/scan/failure_forms.yaml), and the observer that finds the regex forms in the one scan.

A hit is kept as a LauncherExit with its form's id (and `tail`: the lines its input may go on after
it); the verdict reads it as a crash (verdict/analyse.py), so a log holding one is never healthy."""
from __future__ import annotations

import functools
import os
from typing import List, Optional, Tuple

import yaml

from ..errors import TriageError
from ..record import record
from .observer import Observer, lit, rxa
from .results import LauncherExit
from .rx import TIMEOUT, LazyRx, lazy
from .sources import Line
from .state import Core, Event

FORMS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "failure_forms.yaml")
_FIELDS = {"id", "what", "regex", "anchor", "anchor_rx", "raw", "tail", "source", "fires", "healthy", "builtin"}
MAX_HITS = 100          # form hits kept per scan (as launcher exits are)


@record(frozen=True)
class FailureForm:
    id: str
    what: str
    source: str
    fires: str                      # a log (one or more lines) the form must make a failed job
    healthy: str                    # a log it must leave healthy
    regex: Optional[LazyRx] = None  # None: a builtin form (matched by code: `builtin` says where)
    anchor: str = ""
    anchor_is_rx: bool = False
    raw: bool = False               # searched in the whole raw line (a logger's level in its header)
    tail: int = 0                   # > 0: counts only when its input ends within `tail` lines of it
    builtin: str = ""


def _form(d: object, i: int) -> FailureForm:
    where = f"failure_forms.yaml forms[{i}]"
    if not isinstance(d, dict) or set(d) - _FIELDS:
        raise TriageError(f"{where}: a mapping of {sorted(_FIELDS)}")
    for k in ("id", "what", "source", "fires", "healthy"):
        if not isinstance(d.get(k), str) or not d[k]:
            raise TriageError(f"{where}: '{k}' (text) is required")
    if bool(d.get("builtin")) == bool(d.get("regex")):
        raise TriageError(f"{where}: a form has a 'regex' or is 'builtin', one of them")
    if d.get("regex") and bool(d.get("anchor")) == bool(d.get("anchor_rx")):
        raise TriageError(f"{where}: a regex form has an 'anchor' (literal) or an 'anchor_rx', one of them")
    tail = d.get("tail", 0)
    if not isinstance(tail, int) or tail < 0:
        raise TriageError(f"{where}: 'tail' is a number of lines")
    return FailureForm(id=d["id"], what=" ".join(d["what"].split()), source=d["source"], fires=d["fires"],
                       healthy=d["healthy"], regex=lazy(d["regex"]) if d.get("regex") else None,
                       anchor=d.get("anchor") or d.get("anchor_rx") or "", anchor_is_rx=bool(d.get("anchor_rx")),
                       raw=bool(d.get("raw")), tail=tail, builtin=str(d.get("builtin") or ""))


@functools.lru_cache(maxsize=None)
def failure_forms() -> Tuple[FailureForm, ...]:
    """Every declared form, in the file's order."""
    with open(FORMS_FILE, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    forms = tuple(_form(d, i) for i, d in enumerate((data or {}).get("forms") or []))
    ids = [x.id for x in forms]
    if len(set(ids)) != len(ids):
        raise TriageError("failure_forms.yaml: duplicate form ids")
    return forms


class FailureForms(Observer):
    """The regex forms: a line that holds one is kept (Core.exits) with its form's id and tail."""

    def __init__(self, core: Core):
        self.core = core
        self.forms: List[FailureForm] = [f for f in failure_forms() if f.regex is not None]
        self.anchors = [rxa(f.anchor) if f.anchor_is_rx else lit(f.anchor) for f in self.forms]

    def feed(self, line: Line, ev: Event) -> None:
        if len(self.core.exits) >= MAX_HITS:
            return
        for f in self.forms:
            rx = f.regex
            assert rx is not None
            text = (line.raw or line.text) if f.raw else line.text
            if rx.search(text[:2000], timeout=TIMEOUT):
                self.core.exits.append(LauncherExit(line.source, line.lineno, line.rank, line.text[:300], ev.seq,
                                                    ev.view.last_ts(line, ev.st), ev.inp.attempt(line),
                                                    form=f.id, tail=f.tail))
                return
