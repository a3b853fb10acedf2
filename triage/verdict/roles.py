"""Who failed first: the roles of an attempt's findings and its primary (`assign_roles`), and an
error no pattern explains that came before a generic primary (`unexplained_first`).

- a rule's own role (`cascade` / `info`) is kept;
- a `generic` pattern (watchdog timeout, NCCL error) is a cascade when any specific
  root-cause finding exists, and otherwise only its earliest finding is the root cause;
- the primary is the root-cause finding of highest priority, earliest first;
- among generic root causes, an error (not a timeout) on the rank the launcher names as root
  cause beats timeouts on other ranks, with or without timestamps;
- an error no pattern explains that came before a generic primary on another rank is the
  first failure (primary null, the generic findings its cascade).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..match.rx import lazy, search
from ..scan.results import ErrorBlock
from .types import FAILING, SAME_BURST_S, Crash, Finding
from .unexplained import _block_order, exception_line


def _covers(f: Finding, rank: Optional[int]) -> bool:
    return rank is not None and (f.rank == rank or rank in f.ranks)


def _waiting(f: Finding) -> bool:
    """A finding that shows ranks waiting for others (timed out, watchdog hung, peer gone), not failing."""
    return f.generic and f.waits


def assign_roles(findings: List[Finding], launcher_rank: Optional[int] = None) -> Optional[Finding]:
    """Set cascade roles (in place) and return the primary finding.  LAUNCHER_RANK, the rank the
    launcher names as root cause, breaks ties the times cannot: an error there (not a timeout)
    beats the timeouts of other ranks, timestamped or not."""
    specific = [f for f in findings if f.role == "root-cause" and not f.generic]
    generic = [f for f in findings if f.role == "root-cause" and f.generic]
    if specific:
        for f in generic:
            f.role = "cascade"
        candidates = specific
    elif generic:
        generic.sort(key=lambda f: f.order)
        first = generic[0]
        if launcher_rank is not None and not (_covers(first, launcher_rank) and not _waiting(first)):
            named = [f for f in generic if _covers(f, launcher_rank) and not _waiting(f)
                     and (f.order[0] == float("inf") or f.order[0] - first.order[0] <= SAME_BURST_S)]
            if named:
                first = named[0]
        if first.rank is None and not first.ranks:
            # a rank-less line (NCCL prints its WARN lines without the launcher's prefix) yields to
            # the same failure on a named rank in the same burst: that rank is what a user acts on
            ranked = [f for f in generic if f.pitfall == first.pitfall and f.ranks
                      and (f.order[0] == float("inf") or first.order[0] == float("inf")
                           or f.order[0] - first.order[0] <= SAME_BURST_S)]
            if ranked:
                first = ranked[0]
        for f in generic:
            if f is not first:
                f.role = "cascade"
        candidates = [first]
    else:
        return None
    # Earliest failure first; among failures of one burst (or without times), the most specific --
    # and the one on the launcher's root-cause rank when the launcher names one of them.
    cands = sorted(candidates, key=lambda f: f.order)
    t0 = cands[0].order[0]
    burst = [f for f in cands if f.order[0] == float("inf") or f.order[0] - t0 <= SAME_BURST_S]
    named = [f for f in burst if _covers(f, launcher_rank)]
    return sorted(named or burst, key=lambda f: (-f.priority, f.order))[0]


def unexplained_first(primary: Optional[Finding], blocks: List[ErrorBlock], launcher_rank: Optional[int],
                      findings: Sequence[Finding] = (),
                      crashes: Sequence[Crash] = ()) -> Optional[Tuple[ErrorBlock, str]]:
    """An error no pattern explains that came before a generic primary (a watchdog timeout, a lost
    peer) on another rank -- or on the rank the launcher names as root cause -- is the real first
    failure; the generic findings are its cascade.  Which came first, by the best evidence there is
    (see _before): timestamps; line order within one input; across inputs, an uncaught exception that
    ended its rank's output while the other ranks waited."""
    if primary is None or not primary.generic:
        return None
    cands = [b for b in blocks if b.rank is not None and b.rank not in primary.ranks]
    if launcher_rank is not None and not (_covers(primary, launcher_rank) and not _waiting(primary)):
        named = [b for b in cands if b.rank == launcher_rank]
        if named:
            return min(named, key=_block_order), "the launcher (torchrun) names it"
    waiting = {r for f in findings if f.role in FAILING and _waiting(f) for r in f.ranks}
    fatal = {(c.source, c.line) for c in crashes if c.kind in ("uncaught-exception", "fatal-python-error")}
    earlier = [(b, why) for b in cands for why in [_before(b, primary, waiting, fatal)] if why]
    return min(earlier, key=lambda x: _block_order(x[0])) if earlier else None


_KILLED = lazy(r"SignalException|KeyboardInterrupt|got signal: ")


def _before(b: ErrorBlock, primary: Finding, waiting: set, fatal: set) -> Optional[str]:
    """Whether error block B came before the generic PRIMARY's first line.
    - both have a time: the times say;
    - the same input (one interleaved log, one rank's file): line order -- a launcher writes its
      children's lines as they arrive, a process its own in order;
    - different inputs (per-rank files) and no time to compare: an uncaught exception (or a fatal
      Python error) that ended its rank's output, on a rank that did not itself wait, while the
      other ranks waited: they waited for it.  A process killed by a signal (torchrun's
      SignalException, Ctrl-C) did not fail first: it was stopped."""
    pt = primary.order[0]
    if b.order_ts is not None and pt != float("inf"):
        return "its timestamp is earlier than the first timeout's" if b.order_ts < pt else None
    if b.source == primary.source:
        return "it comes before the first timeout in the same stream" if b.start < primary.line else None
    if (b.source, b.start) not in fatal or b.rank in waiting:
        return None
    exc = exception_line(b.lines) or ""
    if search(_KILLED, exc[:300]):
        return None
    return "its uncaught error ended its output while the other ranks waited for it"
