"""The verdict's one-line summary: who failed first with what, then the cascade that followed;
a hang's names who waited and who the culprits likely are (the pattern's `hang.summary` /
`hang.silent`, its cascades' `cascade_verb`)."""
from __future__ import annotations

from typing import List, Optional, Sequence

from .types import Finding, HangSuspect, rank_ranges


def _summary(primary: Optional[Finding], findings: List[Finding]) -> str:
    if primary is None:
        return "no known pitfall found"
    if primary.kind == "perf" and primary.evidence:
        s = f"{primary.pitfall}: " + primary.evidence[0].text.replace("triage: ", "", 1)
    elif primary.rank is not None and len(primary.ranks) > 1:
        s = (f"{len(primary.ranks)} ranks ({primary.ranks_text}) failed with {primary.pitfall} ({primary.title}), "
             f"rank {primary.rank} first")
    elif primary.rank is not None:
        s = f"rank {primary.rank} failed first with {primary.pitfall} ({primary.title})"
    else:
        s = f"{primary.pitfall} ({primary.title}) at {primary.source}:{primary.line}"
    return s + _cascade_clause(findings, primary.ranks or [primary.rank])


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def _hang_summary(primary: Finding, rs: Sequence[int], suspects: List[HangSuspect]) -> str:
    """A hang's verdict: who waited (ranks RS; never "failed first"), and who the culprits likely are.
    The head is the pattern's `hang.summary`."""
    n = len(rs)
    who = f"rank {rs[0]}" if n == 1 else f"{n} ranks ({rank_ranges(rs)})" if rs else "a rank"
    whose = f"rank {rs[0]}'s" if n == 1 else f"{n} ranks' ({rank_ranges(rs)})" if rs else "a rank's"
    template = primary.hang_summary or "{who} waited for other ranks ({id}): a hang"
    head = template.format(who=who, whose=whose, its=_plural(n, "its", "their"), id=primary.pitfall)
    silent = [s.rank for s in suspects if s.peer is None and s.rank is not None]
    peers = [s for s in suspects if s.peer is not None or s.rank not in silent]
    parts = []
    if silent:
        never = primary.hang_silent or "exited or hung first"
        parts.append(f"rank{_plural(len(silent), '', 's')} {rank_ranges(silent)} logged no error and {never}: "
                     f"the likely culprit{_plural(len(silent), '', 's')} (stuck or dead) -- look at "
                     f"{_plural(len(silent), 'its', 'their')} output")
    if peers:
        names = ", ".join(s.peer if s.peer is not None else f"rank {s.rank}" for s in peers[:5])
        parts.append(f"NCCL names the peer{_plural(len(peers), '', 's')} that went away: {names}")
    if not parts:
        parts.append("no rank in this log failed first; the culprit is a rank whose output is missing "
                     "or that logged no timeout")
    return head + "; " + "; ".join(parts)


def _cascade_clause(findings: List[Finding], first_ranks: Sequence[Optional[int]]) -> str:
    """'; 7 ranks (0-4,6-7) then timed out (nccl-watchdog-timeout)' for the cascades of a first failure."""
    casc = [f for f in findings if f.role == "cascade"]
    if not casc:
        return ""
    firsts = set(first_ranks)
    cranks = sorted({r for f in casc for r in f.ranks if r not in firsts})
    kinds = sorted({f.pitfall for f in casc})
    verbs = sorted({f.cascade_verb or "failed as a cascade" for f in casc})
    verb = verbs[0] if len(verbs) == 1 else "failed as a cascade"
    if cranks:
        plural = "s" if len(cranks) > 1 else ""
        return f"; {len(cranks)} rank{plural} ({rank_ranges(cranks)}) then {verb} ({', '.join(kinds)})"
    return f"; followed by {sum(f.count for f in casc)} cascade error(s) ({', '.join(kinds)})"
