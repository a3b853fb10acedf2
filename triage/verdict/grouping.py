"""Grouping matches into findings: one finding per (pitfall, event) of an attempt.

The lines one failure prints on one rank are one occurrence; a pitfall's failing occurrences are
one event, its waiting ones (the pattern's `waits`) another, its info lines a third -- one finding
each, across ranks, with its ranks, counts and the first EVIDENCE_MAX evidence lines.  Analysers
(the step-time comparison) make their findings with `make_finding`.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ..kinds import Role
from ..match.rx import search
from ..patterns import Pattern
from ..scan.results import Match
from .fingerprint import fingerprint
from .types import EVIDENCE_MAX, SAME_BURST_S, Evidence, Finding

OCCURRENCE_GAP = 40    # matches of one pattern this close in one rank's stream are one occurrence


def _order(m: Match) -> Tuple[float, int]:
    return (m.order_ts if m.order_ts is not None else float("inf"), m.seq)


def _one_per_line(matches: List[Match]) -> List[Match]:
    """A line that fires several patterns counts for the most specific (highest priority) one."""
    best: Dict[Tuple[str, int], int] = {}
    for m in matches:
        k = (m.line.source, m.line.lineno)
        best[k] = max(best.get(k, -1), m.pattern.priority)
    return [m for m in matches if m.pattern.priority == best[(m.line.source, m.line.lineno)]]


def _is_generic(m: Match) -> bool:
    return m.pattern.generic if m.rule.generic is None else m.rule.generic


def _occurrences(matches: List[Match]) -> List[List[Match]]:
    """Split matches into occurrences: the lines one failure prints on one rank (exception line,
    the CUDA hints after it, the watchdog's copy) are one occurrence, not several findings."""
    occ: List[List[Match]] = []
    last: Dict[Tuple[str, Optional[int], str, bool], List[Match]] = {}
    for m in sorted(matches, key=lambda m: m.seq):
        k = (m.line.source, m.line.rank, m.pattern.id, m.role == "info")
        cur = last.get(k)
        if cur is not None and 0 <= m.line.lineno - cur[-1].line.lineno <= OCCURRENCE_GAP:
            cur.append(m)
            continue
        cur = [m]
        last[k] = cur
        occ.append(cur)
    return occ


def match_waits(m: Match) -> bool:
    """Whether a matched line shows its rank waiting for others (the pattern's `waits`)."""
    w = m.pattern.waits
    if w is None or w is False or m.role == "info":
        return False
    return True if w is True else bool(search(w, m.line.text))


def event_kind(occurrence: Sequence[Match]) -> str:
    """The event an occurrence (one failure's lines on one rank) belongs to: a pitfall's failing
    occurrences are one event, its waiting ones (timeouts, a lost peer: any of its lines waits --
    the C++ trailer of an ncclRemoteError waits with it) another, its info lines a third -- one
    finding each per attempt."""
    if occurrence[0].role == "info":
        return "info"
    return "wait" if any(match_waits(m) for m in occurrence) else "fail"


EventKinds = Dict[int, str]      # id(match) -> the event kind of its occurrence (findings' timeline)


def _evidence(ms: List[Match]) -> List[Evidence]:
    ev: List[Evidence] = []
    seen = set()
    for m in ms:
        for ln in [m.line] + m.context:
            k = (ln.source, ln.lineno)
            if k not in seen and len(ev) < EVIDENCE_MAX:
                seen.add(k)
                e = Evidence(ln.source, ln.lineno, ln.rank, ln.text)
                if ln is m.line:
                    e.before = [x.text for x in m.before]
                    e.after = [x.text for x in m.after]
                    e.before_lines = [x.lineno for x in m.before]
                    e.after_lines = [x.lineno for x in m.after]
                ev.append(e)
        if len(ev) >= EVIDENCE_MAX:
            break
    return ev


def _representative(occs: List[List[Match]]) -> Match:
    """The finding's own line: its earliest root-cause line (else its earliest line) -- and a line
    without a rank (NCCL prints its WARN lines without the launcher's prefix) yields to a line of
    the same finding on a named rank in the same burst: that rank is what a user acts on."""
    ms = sorted((m for o in occs for m in o), key=_order)
    roots = [m for m in ms if m.role == "root-cause"] or ms
    rep = roots[0]
    if rep.line.rank is None:
        t0 = _order(rep)[0]
        ranked = [m for m in roots if m.line.rank is not None
                  and (t0 == float("inf") or _order(m)[0] == float("inf") or _order(m)[0] - t0 <= SAME_BURST_S)]
        if ranked:
            rep = ranked[0]
    return rep


def _group(matches: List[Match]) -> Tuple[List[Finding], Dict[Tuple[str, str], str], EventKinds]:
    """One finding per (pitfall, event) of an attempt: the timeouts of one hang on every rank are one
    finding with its ranks and counts, not a row per message.  Returns the findings, the
    fingerprint of each (pitfall, event kind) and each match's event kind (the timeline's events
    take both, so an event's role is its finding's)."""
    groups: Dict[Tuple[str, str], List[List[Match]]] = {}
    kinds: EventKinds = {}
    for o in _occurrences(_one_per_line(matches)):
        kind = event_kind(o)
        kinds.update((id(m), kind) for m in o)
        groups.setdefault((o[0].pattern.id, kind), []).append(o)
    out = []
    fps: Dict[Tuple[str, str], str] = {}
    for key, occs in groups.items():
        occs.sort(key=lambda o: _order(o[0]))
        rep = _representative(occs)
        p = rep.pattern
        # one line can be both a failing and an info line of a pattern (NCCL's WARN line): two findings
        fp = fingerprint(p.id, ("info: " if key[1] == "info" else "") + rep.line.text)
        fps[key] = fp
        every = [m for o in occs for m in o]
        per_rank: Dict[int, int] = {}
        for m in every:
            if m.line.rank is not None:
                per_rank[m.line.rank] = per_rank.get(m.line.rank, 0) + 1
        role: Role = "info" if key[1] == "info" else "root-cause" if rep.role == "root-cause" else "cascade"
        out.append(Finding(
            pitfall=p.id, title=p.title, severity=p.severity, kind=p.kind, role=role,
            rank=rep.line.rank, source=rep.line.source, line=rep.line.lineno, count=len(occs),
            ranks=sorted(per_rank), evidence=_evidence([rep] + [m for m in every if m is not rep]),
            fingerprint=fp, priority=p.priority, generic=_is_generic(rep),
            order=_order(rep), pattern_path=p.path, implicates=p.implicates,
            explanation=p.explanation, fix=p.fix, references=p.references, rule=rep.rule.source_text,
            rank_counts=dict(sorted(per_rank.items())), matched_lines=len(every), waits=key[1] == "wait",
            cascade_verb=p.cascade_verb, hang_summary=p.hang_summary, hang_silent=p.hang_silent,
            advice=dict(p.advice), action=p.action,
        ))
    return out, fps, kinds


def make_finding(p: Pattern, evidence: List[Evidence], message: str) -> Finding:
    """A finding produced by an analyser (not a log line), e.g. the step-time comparison."""
    first = evidence[0] if evidence else Evidence("<analysis>", 0, None, message)
    ev = [Evidence("<triage>", 0, None, message)] + evidence[:EVIDENCE_MAX - 1]
    return Finding(
        pitfall=p.id, title=p.title, severity=p.severity, kind=p.kind, role="root-cause", rank=None,
        source=first.source, line=first.line, count=1, ranks=[], evidence=ev,
        fingerprint=fingerprint(p.id, message.split(":", 2)[1] if message.count(":") >= 2 else p.id),
        priority=p.priority, generic=p.generic, order=(float("inf"), 1 << 62), pattern_path=p.path,
        implicates=p.implicates, explanation=p.explanation, fix=p.fix, references=p.references,
        rule="step-time analysis (triage/steps.py)", action=p.action)
