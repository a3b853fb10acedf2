"""What a scan shows, per attempt (`analyse`): findings, error blocks no pattern explains,
crashes, peers, the Flight Recorder, the timeline -- and the matched lines the scan dropped
(counted in their findings)."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Set, Tuple

from ..redact import redact_each
from ..scan.blocks import EXC_LINE
from ..scan.jobfacts import LogFacts
from ..scan.results import ErrorBlock, LauncherExit, Match, ScanResult
from .analysis import Analysis
from .collectives import observe
from .crashes import FORM_WEIGHT, OWN_FORM_WEIGHT, _input_ends, crash_of, own_forms
from .engine import fit_advice, log_engine
from .fingerprint import MaskMemo, fingerprint_redacted
from .grouping import _group
from .hangs import _flight_recorder, _peers
from .timeline import timeline
from .types import Case, Crash, Finding
from .unexplained import _unmatched, logged_tracebacks, merge_continuations


def _dropped_into(by_fp: Dict[str, Finding], by_pid: Dict[str, List[Finding]], pid: str, rank: Optional[int],
                  text: str, memo: MaskMemo, ranks: Callable[[Finding], Set[int]]) -> Optional[Finding]:
    """The finding that dropped lines of (PID, RANK, TEXT) count in (see _add_dropped), if any (MEMO:
    fingerprint's, for all the dropped texts; RANKS: a finding's ranks so far; TEXT: redacted, redact_each)."""
    if text:
        return by_fp.get(fingerprint_redacted(pid, text, memo))
    cands = by_pid.get(pid) or []
    return next((x for x in cands if rank in ranks(x)), cands[0] if cands else None)


class _RankTally:
    """The ranks and rank counts that dropped lines add to findings, kept per finding and sorted into
    each once (done): sorted again at every dropped line, a crash printed by 100,000 ranks took minutes."""

    def __init__(self) -> None:
        self._acc: Dict[int, Tuple[Finding, Set[int], Dict[int, int]]] = {}   # id(finding): it, ranks, counts
        self._grown: Set[int] = set()                                         # (those given a new rank)

    def _of(self, f: Finding) -> Tuple[Finding, Set[int], Dict[int, int]]:
        a = self._acc.get(id(f))
        if a is None:
            a = self._acc[id(f)] = (f, set(f.ranks), dict(f.rank_counts))
        return a

    def ranks(self, f: Finding) -> Set[int]:
        """F's ranks so far."""
        return self._of(f)[1]

    def add(self, f: Finding, rank: int, n: int) -> None:
        """N lines of RANK counted in F; a rank new to F is one more occurrence."""
        _, rs, rc = self._of(f)
        if rank not in rc:
            f.count += 1
            rs.add(rank)
            self._grown.add(id(f))
        rc[rank] = rc.get(rank, 0) + n

    def done(self) -> None:
        for f, rs, rc in self._acc.values():
            if id(f) in self._grown:
                f.ranks = sorted(rs)
            f.rank_counts = dict(sorted(rc.items()))


def _add_dropped(cases: List[Case], dropped: Dict[Tuple[str, Optional[int], str], int]) -> int:
    """Count the matched lines the scan did not keep (a message repeated beyond its cap; keyed by
    pattern, rank and text, or an empty text once too many distinct ones were dropped) in the
    finding of the same fingerprint -- the last attempt's first, as the scan does not say which
    attempt a dropped line was in.  A rank seen only in dropped lines joins the finding's ranks
    (with one occurrence).  Returns the lines counted."""
    by_fp: Dict[str, Finding] = {}
    by_pid: Dict[str, List[Finding]] = {}
    for c in reversed(cases):
        for cf in c.findings:
            by_fp.setdefault(cf.fingerprint, cf)
            by_pid.setdefault(cf.pitfall, []).append(cf)
    total = 0
    memo: MaskMemo = {}
    tally = _RankTally()
    redacted = redact_each([text for (_, _, text) in dropped if text])
    for (pid, rank, text), n in dropped.items():
        f = _dropped_into(by_fp, by_pid, pid, rank, redacted[text] if text else text, memo, tally.ranks)
        if f is None:
            continue
        f.matched_lines += n
        total += n
        if rank is not None:
            tally.add(f, rank, n)
    tally.done()
    return total


def _error_extent(b: ErrorBlock) -> int:
    """The lines after its first that still tell block B's error: exception lines, a traceback, its
    frames and indented lines (not the run's own lines a block may take in as a continuation)."""
    n = 0
    for ln in b.lines[1:]:
        if not (ln.startswith(("  File ", "    ", "\t", "Traceback")) or EXC_LINE.match(ln)):
            break
        n += 1
    return n


def _exit_crashes(exits: List[LauncherExit], g: int, ends: Dict[str, Optional[int]],
                  blocks: List[ErrorBlock]) -> List[Crash]:
    """The crashes of attempt G that the launcher or the shell reports, and the failure forms' hits (one
    with a `tail` only when its input ends within that many lines of it -- of the error block it opens,
    when it opens one: the exception and message lines that continue it are the same error)."""
    out = []
    opened = {(b.source, b.start): _error_extent(b) for b in blocks}
    for x in exits:
        if x.group != g:
            continue
        end = ends.get(x.source)
        if x.tail and (end is None or end - (x.seq + opened.get((x.source, x.line), 0)) > x.tail - 1):
            continue
        out.append(Crash("error" if x.form else "launcher-exit", x.rank, x.source, x.line, x.text[:200], [x.text],
                         (x.order_ts if x.order_ts is not None else float("inf"), x.seq),
                         # a form is the last evidence looked to, but a process's own report of its end
                         # (an `own` form: the interpreter that found no script) comes before the launcher's
                         (OWN_FORM_WEIGHT if x.form in own_forms() else FORM_WEIGHT) if x.form else 1, x.form))
    return out


def analyse(scan: ScanResult) -> Analysis:
    """`gather` with the verdict decided from the log alone (no analysers: the step times, the config
    are pipeline.assemble's): for a library user and the tests."""
    a = gather(scan)
    a.decide()
    return a


def gather(scan: ScanResult) -> Analysis:
    """What a scan shows, per attempt; a log with restarts is triaged per attempt and the last
    attempt is the headline.  The verdict is not decided here: pipeline.assemble runs the analysers
    (step times) and then decides it, once (Analysis.decide)."""
    last = scan.attempts - 1
    by_group: Dict[int, List[Match]] = {}
    for m in scan.matches:
        by_group.setdefault(m.group, []).append(m)
    blocks_by_group: Dict[int, List[ErrorBlock]] = {}
    for b in scan.blocks:
        blocks_by_group.setdefault(b.group, []).append(b)
    grouped = [_group(by_group.get(g, [])) for g in range(scan.attempts)]
    cases = [Case(grouped[g][0], merge_continuations(blocks_by_group.get(g, []), by_group.get(g, [])))
             for g in range(scan.attempts)]
    dropped = _add_dropped(cases, getattr(scan, "dropped", None) or {})
    facts = getattr(scan, "facts", None) or LogFacts()
    engine = log_engine(facts, [f for c in cases for f in c.findings])
    for c in cases:
        fit_advice(c.findings, engine)
    head = cases[last]
    head.launcher_root_rank = scan.launcher_root_rank
    ends = _input_ends(scan)
    for g, c in enumerate(cases):
        c.ended = g < last
        logged = logged_tracebacks(c.blocks)
        for b in c.blocks:
            end = ends.get(b.source)
            # lines after the block: for a traceback, after its exception line (the message lines
            # that follow it are not the process going on, nor are they the block's)
            upto = b.exc_line if b.exc_line else b.end
            after = None if end is None else end - (b.seq + upto - b.start)
            cr = crash_of(b, after, c.ended, named=c is head and b.rank is not None
                          and b.rank == scan.launcher_root_rank, logged=id(b) in logged)
            if cr is not None:
                c.crashes.append(cr)
        c.crashes += _exit_crashes(getattr(scan, "exits", None) or [], g, ends, c.blocks)
        ms = by_group.get(g, [])
        c.peers = _peers(ms, c.blocks)
        c.flight_recorder = _flight_recorder(ms)
        c.collectives = observe(ms)
    fn = scan.ranks_fn                 # asked for only when a hang needs it; never the whole scan
    head.ranks_fn = (lambda: sorted(fn())) if fn is not None else None
    unmatched, unmatched_omitted = _unmatched(head.blocks)
    events, events_omitted = timeline(by_group.get(last, []), grouped[last][1], grouped[last][2])
    notes = [f"regex switched off after repeated timeouts or too much search time (fix the pattern): {r[:120]}"
             for r in scan.disabled_rules]
    a = Analysis(lines=scan.lines, sources=scan.sources, case=head, earlier=cases[:last],
                 unmatched=unmatched, unmatched_omitted=unmatched_omitted,
                 timeline=events, timeline_omitted=events_omitted + dropped,
                 launcher_root_rank=scan.launcher_root_rank, notes=notes, log_facts=scan.facts, engine=engine)
    return a
