"""Failure forms (issue 40): the declared list of evidence that a job failed, whatever the cause
(triage/scan/failure_forms.yaml), and the observer that finds the regex forms in the one scan.

A hit is kept as a LauncherExit with its form's id (and `tail`: the lines its input may go on after
it); the verdict reads it as a crash (verdict/analyse.py), so a log holding one is never healthy."""
from __future__ import annotations

import functools
import re
from itertools import chain
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union, cast

from .. import tables
from ..errors import TriageError
from ..inputs.sources import Line
from ..match.literals import derive_literals
from ..match.rx import LazyRx, lazy, search
from ..record import record
from .observer import Observer, core_observer, lit, rxa
from .results import LauncherExit
from .state import Core, Event

# a line waiting for a `tail` form (FailureForms.pend): (form, source, line number, rank, text, seq, time, the
# text the form reads)
Pending = Tuple["FailureForm", str, int, Optional[int], str, int, float, str]
PENDING_MAX = 256           # lines of a `tail` form waiting to be tried (FailureForms._defer)
FORMS = "scan/failure_forms"     # the table (triage/tables.py): triage/scan/failure_forms.yaml as written
_FIELDS = {"id", "what", "regex", "anchor", "anchor_rx", "raw", "tail", "source", "fires", "healthy", "builtin", "not",
           "prefilter", "own", "action"}
ACTIONS = ("stop", "retry", "drain-node", "change-config")     # a form's `action` (verdict/action.py's)


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
    tail: int = 0                   # > 0: counts only when its input ends within `tail` lines of it (of the
    #                                 error block it opens): 1 = nothing after it
    builtin: str = ""
    negative: Optional[LazyRx] = None   # `not`: a line that also matches this is no failure
    prefilter: Optional["re.Pattern[str]"] = None  # a cheap stdlib regex every match of `regex` holds
    own: bool = False               # the failing process's own report (looked to before a launcher's exit line)
    action: str = ""                # what to do when its line is an unexplained failure's first (ACTIONS)


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
    if d.get("action", "") not in ("",) + ACTIONS:
        raise TriageError(f"{where}: 'action' is one of {', '.join(ACTIONS)}")
    tail = d.get("tail", 0)
    if not isinstance(tail, int) or tail < 0:
        raise TriageError(f"{where}: 'tail' is a number of lines")
    return FailureForm(id=d["id"], what=" ".join(d["what"].split()), source=d["source"], fires=d["fires"],
                       healthy=d["healthy"], regex=lazy(d["regex"]) if d.get("regex") else None,
                       anchor=d.get("anchor") or d.get("anchor_rx") or "", anchor_is_rx=bool(d.get("anchor_rx")),
                       raw=bool(d.get("raw")), tail=tail, builtin=str(d.get("builtin") or ""),
                       negative=lazy(d["not"]) if d.get("not") else None,
                       prefilter=re.compile(d["prefilter"]) if d.get("prefilter") else None, own=bool(d.get("own")),
                       action=str(d.get("action") or ""))


@functools.lru_cache(maxsize=None)
def failure_forms() -> Tuple[FailureForm, ...]:
    """Every declared form, in the file's order."""
    data = tables.load(FORMS)
    forms = tuple(_form(d, i) for i, d in enumerate((data or {}).get("forms") or []))
    ids = [x.id for x in forms]
    if len(set(ids)) != len(ids):
        raise TriageError("failure_forms.yaml: duplicate form ids")
    return forms


def _prefilter(f: FailureForm) -> Tuple[str, ...]:
    """The literals one of which every line F's regex matches holds; () when none is derived."""
    return _literals_of(f.regex)


def _literals_of(rx: Optional[LazyRx]) -> Tuple[str, ...]:
    """The literals one of which every text RX matches holds; () when none is derived (or RX is None)."""
    if rx is None or rx.flags & re.IGNORECASE or "(?i" in rx.pattern:
        return ()
    return tuple(derive_literals(rx.pattern)[0])


class _Later:
    """Lines K to M - 1 of a run taken whole, waiting for a `tail` form (FailureForms.pend_run): ITEM(x) makes the
    x-th's Pending when it is tried (before the block's end: ITEM reads the block)."""
    __slots__ = ("item", "k", "m")

    def __init__(self, item: Callable[[int], Pending], k: int, m: int):
        self.item, self.k, self.m = item, k, m


def _newest_first(ring: List[Union[Pending, _Later]]) -> Iterator[Pending]:
    """The lines waiting in RING, newest first, each made as it is read."""
    for e in reversed(ring):
        if type(e) is _Later:
            yield from map(e.item, range(e.m - 1, e.k - 1, -1))
        else:
            yield cast(Pending, e)


@core_observer(40)
class FailureForms(Observer):
    """The regex forms: of the lines that hold one, the first and the last of each form (and attempt) are
    kept (Core.form_hits; ScanResult.exits at the end, with the form's id and tail) -- the first is the
    earliest failure, the last tells whether the input ends with it.  A repeat of a line between them
    changes neither: the scanner may skip runs of copies (skippable)."""
    skippable = True
    per_anchor = True           # the block driver says which forms' anchors hit a line (Event.anchored)

    def __init__(self, core: Core):
        self.core = core
        self.forms: List[FailureForm] = [f for f in failure_forms() if f.regex is not None]
        self.anchors = [rxa(f.anchor) if f.anchor_is_rx else lit(f.anchor) for f in self.forms]
        # each form's own prefilter, the plain text every match of its regex holds (an anchor of any form
        # wakes the observer for all; every line of a 4,096-rank storm holds a glog `E` header): one search
        # for any of them first -- a line with none is tried only with the forms that have none
        self.lits = [_prefilter(f) for f in self.forms]
        # the same for each form's `not` regex: a line holding none of its literals is not searched with it
        self.neg_lits = {id(f): _literals_of(f.negative) for f in self.forms if f.negative is not None}
        every = sorted({x for p in self.lits for x in p})
        self.any_lit = re.compile("|".join(map(re.escape, every))) if every else None
        # a `tail` form's lines after its first hit, not tried yet (see _defer), per (form, attempt), oldest first: each
        # a Pending, or the lines of a run taken whole not made yet (_Later, pend_run); how many lines in all
        self.pending: Dict[Tuple[str, int], List[Union[Pending, "_Later"]]] = {}
        self._waiting: Dict[Tuple[str, int], int] = {}

    def feed(self, line: Line, ev: Event) -> None:
        exits = self.core.exits
        if exits and exits[-1].line == line.lineno and exits[-1].source == line.source:
            return                      # (a death the launcher or the shell reports on this line: it is kept)
        cooked = line.text[:2000]
        raw = (line.raw or line.text)[:2000]
        hit = ev.anchored.get(id(self)) if ev.anchored is not None else None
        if hit is not None:             # only the forms whose own anchor hit the line (issue 44: a storm of glog
            ks = sorted(hit)            # E lines wakes the error-last-line form alone)
            for k in ks[:-1]:
                if self._try(self.forms[k], line, ev, cooked, raw):
                    return
            f = self.forms[ks[-1]]
            if not self._defer(f, line, ev, cooked, raw):
                self._try(f, line, ev, cooked, raw)
            return
        some = self.any_lit is not None and (self.any_lit.search(raw) is not None
                                             or (cooked not in raw and self.any_lit.search(cooked) is not None))
        for f, lits in zip(self.forms, self.lits):
            if lits and (not some or not any(x in (raw if f.raw else cooked) for x in lits)):
                continue
            if self._try(f, line, ev, cooked, raw):
                return

    def _try(self, f: FailureForm, line: Line, ev: Event, cooked: str, raw: str) -> bool:
        """Form F on LINE: kept when it matches (True)."""
        if not self._matches(f, raw if f.raw else cooked):
            return False
        self._hit(f, line, ev)
        return True

    def _matches(self, f: FailureForm, text: str) -> bool:
        assert f.regex is not None
        if f.prefilter is not None and f.prefilter.search(text) is None:
            return False                # (issue 44: c10's `frame #0: c10::Error::Error(` lines wake the
        if not search(f.regex, text, self.core.timeouts):   # error-last-line form's anchor; 0.9 us, not 7;
            return False                                     # a search cut off by the timeout: no match)
        if f.negative is not None:
            lits = self.neg_lits[id(f)]
            if (not lits or any(x in text for x in lits)) and search(f.negative, text, self.core.timeouts):
                return False
        return True

    def _defer(self, f: FailureForm, line: Line, ev: Event, cooked: str, raw: str) -> bool:
        """Keep LINE to try form F later (True), when F is the last form tried on it, a `tail` form
        whose first hit of this attempt is kept and the line has its own time: only the last of the
        lines F matches from here on is kept (it replaces the one before), so the lines are tried
        newest first, once PENDING_MAX wait or the block ends (block_done), and the newest that
        matches is the last hit -- the older ones are not tried at all (issue 44: in a storm of glog E
        lines every line was tried with the error-last-line form)."""
        if line.ts is None:                   # (a line without its own time would need a look back for
            return False                      # it now, whether it matches or not: dearer than the regex)
        key = self.deferring(f, ev.inp.attempt(line))
        if key is None:
            return False
        self.pend(key, (f, line.source, line.lineno, line.rank, line.text, ev.seq, line.ts,
                        raw if f.raw else cooked))
        return True

    def deferring(self, f: FailureForm, group: int) -> Optional[Tuple[str, int]]:
        """The key of form F's lines waiting in attempt GROUP when a line of its own time that F is the last
        form tried on is kept to try later (_defer), else None."""
        key = (f.id, group)
        return key if f.tail and self.core.form_hits.get(key) else None

    def pend(self, key: Tuple[str, int], item: Pending) -> None:
        """A line kept to try later (_defer; the block driver's runs of plain hit lines, blockscan._plain_run):
        (form, source, line number, rank, text, seq, time, the text the form reads)."""
        self.pending.setdefault(key, []).append(item)
        n = self._waiting[key] = self._waiting.get(key, 0) + 1
        if n >= PENDING_MAX:
            self._flush(key)

    def pend_run(self, key: Tuple[str, int], m: int, item: Callable[[int], Pending]) -> None:
        """pend() of the M lines of a run taken whole (blockscan._InputScan._plain_bulk), ITEM(k) the k-th's:
        flushed where pend() would flush, an item made only when it is tried (the lines left waiting at the run's
        end: _Later; issue 44, a storm's runs made ~230 items each that a newer line's match made needless)."""
        ring = self.pending.get(key, [])
        n = self._waiting.get(key, 0)
        k = 0
        while k < m:
            room = PENDING_MAX - n
            if m - k < room:
                ring.append(_Later(item, k, m))
                self.pending[key], self._waiting[key] = ring, n + m - k
                return
            # (the ring fills: the last of its lines the form matches is kept, the new ones tried first)
            self.pending.pop(key, None)
            self._waiting.pop(key, None)
            tried = (item(x) for x in range(k + room - 1, k - 1, -1))
            self._keep_last(key, chain(tried, _newest_first(ring)))
            ring, n = [], 0
            k += room

    def _flush(self, key: Tuple[str, int]) -> None:
        self._waiting.pop(key, None)
        self._keep_last(key, _newest_first(self.pending.pop(key, [])))

    def _keep_last(self, key: Tuple[str, int], latest_first: Iterable[Pending]) -> None:
        for f, source, lineno, rank, text, seq, ts, read in latest_first:
            if self._matches(f, read):
                self._keep(f, LauncherExit(source, lineno, rank, text[:300], seq, ts, key[1], form=f.id, tail=f.tail))
                return

    def block_done(self) -> None:
        for key in list(self.pending):
            self._flush(key)

    def _hit(self, f: FailureForm, line: Line, ev: Event) -> None:
        group = ev.inp.attempt(line)
        if (f.id, group) in self.pending:       # the lines waiting come before this one
            self._flush((f.id, group))
        self._keep(f, LauncherExit(line.source, line.lineno, line.rank, line.text[:300], ev.seq,
                                   ev.view.last_ts(line, ev.st), group, form=f.id, tail=f.tail))

    def _keep(self, f: FailureForm, x: LauncherExit) -> None:
        """X is F's first hit of its attempt, or the last one so far (the one before it no longer is)."""
        kept = self.core.form_hits.setdefault((f.id, x.group), [])
        if len(kept) < 2:
            kept.append(x)
        else:
            kept[1] = x
        self.core.form_seen += 1      # (watch: what the verdict reads changed)

    def finish(self) -> None:
        self.block_done()
        self.core.exits.extend(x for kept in self.core.form_hits.values() for x in kept)

