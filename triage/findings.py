"""Findings stage: dedup matches across ranks, decide root cause vs cascade, fingerprint.

A finding is one (pitfall, masked message) pair: the same failure on 1024 ranks is
one finding with count 1024 and a rank list.  Roles:
- a rule's own role (`cascade` / `info`) is kept;
- a `generic` pattern (watchdog timeout, NCCL error) is a cascade when any specific
  root-cause finding exists, and otherwise only its earliest finding is the root cause;
- the primary is the root-cause finding of highest priority, earliest first.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import regex

from .engine import ErrorBlock, Match, ScanResult
from .rx import TIMEOUT

_MASKS = [
    # NCCL's "host:pid:tid [dev]" prefix and hostnames: the same failure on another node is the same
    (regex.compile(r"(?m)^(?:\[[^\]]*\] )?[\w.\-]+:\d+:\d+ \[\d+\]"), "<host>:<pid>:<tid> [<dev>]"),
    (regex.compile(r"\b(?:host|hostname|node)\s*[:=]\s*[\w.\-]+"), "host: <host>"),
    (regex.compile(r"(?:/[\w.\-+@]+)+/?|[A-Za-z]:\\[\w\\.\-]+"), "<path>"),
    (regex.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b"), "<hex>"),
    (regex.compile(r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),
    (regex.compile(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+"), "<time>"),
    (regex.compile(r"\b(?:rank|Rank|RANK)\s*[:=]?\s*\d+"), "rank <n>"),
    (regex.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (regex.compile(r"\s+"), " "),
]


def mask(text: str) -> str:
    """Mask the parts of a message that vary between ranks and jobs."""
    for rx, rep in _MASKS:
        text = rx.sub(rep, text, timeout=TIMEOUT)
    return text.strip()


def fingerprint(pitfall: str, text: str) -> str:
    return hashlib.sha1(f"{pitfall}\x00{mask(text)}".encode("utf-8", "replace")).hexdigest()[:12]


def rank_ranges(ranks: Sequence[int]) -> str:
    """[0,1,2,3,4,6,7] -> '0-4,6-7'."""
    rs = sorted(set(ranks))
    out: List[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ",".join(out)


@dataclass
class Evidence:
    source: str
    line: int
    rank: Optional[int]
    text: str
    before: List[str] = field(default_factory=list)
    after: List[str] = field(default_factory=list)
    before_lines: List[int] = field(default_factory=list)   # line numbers of `before` / `after`
    after_lines: List[int] = field(default_factory=list)


@dataclass
class Finding:
    pitfall: str
    title: str
    severity: str
    kind: str
    role: str
    rank: Optional[int]
    source: str
    line: int
    count: int
    ranks: List[int]
    evidence: List[Evidence]
    fingerprint: str
    priority: int
    generic: bool
    order: Tuple[float, int]
    pattern_path: str
    implicates: List[str]
    explanation: str
    fix: str
    references: List[Dict[str, str]]
    rule: str

    @property
    def ranks_text(self) -> str:
        return rank_ranges(self.ranks)


@dataclass
class Unmatched:
    source: str
    line: int
    rank: Optional[int]
    ranks: List[int]
    count: int
    lines: List[str]
    fingerprint: str


@dataclass
class Analysis:
    primary: Optional[Finding]
    findings: List[Finding]
    unmatched: List[Unmatched]
    first_rank: Optional[int]
    summary: str
    lines: int
    sources: List[str]
    attempts: int = 1
    launcher_root_rank: Optional[int] = None
    extra: Dict[str, object] = field(default_factory=dict)


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


OCCURRENCE_GAP = 40   # matches of one pattern this close in one rank's stream are one occurrence


def _occurrences(matches: List[Match]) -> List[List[Match]]:
    """Split matches into occurrences: the lines one failure prints on one rank (exception line,
    the CUDA hints after it, the watchdog's copy) are one occurrence, not several findings."""
    occ: List[List[Match]] = []
    last: Dict[Tuple[str, Optional[int], str], List[Match]] = {}
    for m in sorted(matches, key=lambda m: m.seq):
        k = (m.line.source, m.line.rank, m.pattern.id)
        cur = last.get(k)
        if cur is not None and cur[0].role == m.role and 0 <= m.line.lineno - cur[-1].line.lineno <= OCCURRENCE_GAP:
            cur.append(m)
            continue
        cur = [m]
        last[k] = cur
        occ.append(cur)
    return occ


def _group(matches: List[Match]) -> List[Finding]:
    groups: Dict[str, List[Match]] = {}
    extra: Dict[str, List[Match]] = {}
    for o in _occurrences(_one_per_line(matches)):
        fp = fingerprint(o[0].pattern.id, o[0].line.text)
        groups.setdefault(fp, []).append(o[0])
        extra.setdefault(fp, []).extend(o[1:])
    out = []
    for fp, ms in groups.items():
        ms.sort(key=_order)
        first = ms[0]
        p = first.pattern
        ev: List[Evidence] = []
        seen = set()
        for m in ms + extra[fp]:
            for ln in [m.line] + m.context:
                k = (ln.source, ln.lineno)
                if k not in seen and len(ev) < 6:
                    seen.add(k)
                    e = Evidence(ln.source, ln.lineno, ln.rank, ln.text)
                    if ln is m.line:
                        e.before = [x.text for x in m.before]
                        e.after = [x.text for x in m.after]
                        e.before_lines = [x.lineno for x in m.before]
                        e.after_lines = [x.lineno for x in m.after]
                    ev.append(e)
            if len(ev) >= 6:
                break
        ranks = sorted({m.line.rank for m in ms if m.line.rank is not None})
        out.append(Finding(
            pitfall=p.id, title=p.title, severity=p.severity, kind=p.kind, role=first.role,
            rank=first.line.rank, source=first.line.source, line=first.line.lineno, count=len(ms),
            ranks=ranks, evidence=ev, fingerprint=fp, priority=p.priority, generic=_is_generic(first),
            order=_order(first), pattern_path=p.path, implicates=p.implicates,
            explanation=p.explanation, fix=p.fix, references=p.references, rule=first.rule.source_text,
        ))
    return out


SAME_BURST_S = 30.0   # failures this close in time are one burst: the most specific one is primary


def assign_roles(findings: List[Finding]) -> Optional[Finding]:
    """Set cascade roles and return the primary finding."""
    specific = [f for f in findings if f.role == "root-cause" and not f.generic]
    generic = [f for f in findings if f.role == "root-cause" and f.generic]
    if specific:
        for f in generic:
            f.role = "cascade"
        candidates = specific
    elif generic:
        generic.sort(key=lambda f: f.order)
        for f in generic[1:]:
            f.role = "cascade"
        candidates = generic[:1]
    else:
        return None
    # Earliest failure first; among failures of one burst (or without times), the most specific.
    cands = sorted(candidates, key=lambda f: f.order)
    t0 = cands[0].order[0]
    burst = [f for f in cands if f.order[0] == float("inf") or f.order[0] - t0 <= SAME_BURST_S]
    return sorted(burst, key=lambda f: (-f.priority, f.order))[0]


def _unmatched(blocks: List[ErrorBlock]) -> List[Unmatched]:
    by_fp: Dict[str, Unmatched] = {}
    first_per_rank = set()
    for b in sorted(blocks, key=lambda b: ((b.order_ts if b.order_ts is not None else float("inf")), b.seq)):
        rk = (b.source if b.rank is None else None, b.rank)
        if rk in first_per_rank:
            continue
        first_per_rank.add(rk)
        masked = [mask(x) for x in b.lines]
        fp = hashlib.sha1("\n".join(masked).encode("utf-8", "replace")).hexdigest()[:12]
        u = by_fp.get(fp)
        if u is None:
            by_fp[fp] = Unmatched(b.source, b.start, b.rank, [b.rank] if b.rank is not None else [], 1, list(b.lines), fp)
        else:
            u.count += 1
            if b.rank is not None:
                u.ranks.append(b.rank)
    return list(by_fp.values())[:20]


_CASCADE_VERB = {"nccl-watchdog-timeout": "timed out", "nccl-error": "hit NCCL / collective errors"}


def _summary(primary: Optional[Finding], findings: List[Finding], silent: Sequence[int] = ()) -> str:
    if primary is None:
        return "no known pitfall found"
    if primary.generic and silent:
        who = f"rank {primary.rank}" if primary.rank is not None else "a rank"
        what = ("'s NCCL watchdog timed out waiting for a collective" if primary.pitfall == "nccl-watchdog-timeout"
                else " lost its collective peer")
        never = "never joined it" if primary.pitfall == "nccl-watchdog-timeout" else "exited or hung first"
        return (f"{who}{what} ({primary.pitfall}); "
                f"rank{'s' if len(silent) > 1 else ''} {rank_ranges(silent)} logged no error and {never}: "
                f"the likely culprit{'s' if len(silent) > 1 else ''} (stuck or dead) -- look at {'their' if len(silent) > 1 else 'its'} output")
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


def _cascade_clause(findings: List[Finding], first_ranks: Sequence[Optional[int]]) -> str:
    """'; 7 ranks (0-4,6-7) then timed out (nccl-watchdog-timeout)' for the cascades of a first failure."""
    casc = [f for f in findings if f.role == "cascade"]
    if not casc:
        return ""
    cranks = sorted({r for f in casc for r in f.ranks if r not in first_ranks})
    kinds = sorted({f.pitfall for f in casc})
    verbs = sorted({_CASCADE_VERB.get(k, "failed as a cascade") for k in kinds})
    verb = verbs[0] if len(verbs) == 1 else "failed as a cascade"
    if cranks:
        return f"; {len(cranks)} rank{'s' if len(cranks) > 1 else ''} ({rank_ranges(cranks)}) then {verb} ({', '.join(kinds)})"
    return f"; followed by {sum(f.count for f in casc)} cascade error(s) ({', '.join(kinds)})"


def _analyse_one(matches: List[Match], blocks: List[ErrorBlock]):
    findings = _group(matches)
    primary = assign_roles(findings)
    role_rank = {"root-cause": 0, "cascade": 1, "info": 2}
    findings.sort(key=lambda f: (f is not primary, role_rank[f.role], -f.priority, f.order))
    return primary, findings, _unmatched(blocks)


def make_finding(p, evidence: List[Evidence], message: str) -> Finding:
    """A finding produced by an analyser (not a log line), e.g. the step-time comparison."""
    first = evidence[0] if evidence else Evidence("<analysis>", 0, None, message)
    ev = [Evidence("<triage>", 0, None, message)] + evidence[:5]
    return Finding(
        pitfall=p.id, title=p.title, severity=p.severity, kind=p.kind, role="root-cause", rank=None,
        source=first.source, line=first.line, count=1, ranks=[], evidence=ev,
        fingerprint=fingerprint(p.id, message.split(":", 2)[1] if message.count(":") >= 2 else p.id),
        priority=p.priority, generic=p.generic, order=(float("inf"), 1 << 62), pattern_path=p.path,
        implicates=p.implicates, explanation=p.explanation, fix=p.fix, references=p.references,
        rule="step-time analysis (triage/steps.py)")


def add_findings(a: Analysis, extra: List[Finding]) -> None:
    """Merge analyser findings into an analysis and re-decide the primary."""
    if not extra:
        return
    a.findings.extend(extra)
    a.primary = assign_roles(a.findings)
    role_rank = {"root-cause": 0, "cascade": 1, "info": 2}
    a.findings.sort(key=lambda f: (f is not a.primary, role_rank[f.role], -f.priority, f.order))
    a.first_rank = a.primary.rank if a.primary else None
    a.summary = _summary(a.primary, a.findings)


TIMELINE_MAX = 4000


def timeline(matches: List[Match], findings: List[Finding]) -> List[Dict[str, object]]:
    """Per-rank events for the report's timeline: time (or order), rank, pitfall, role."""
    role = {f.fingerprint: f.role for f in findings}
    one = []
    seen = set()
    for m in sorted(matches, key=lambda m: (m.seq, m.role == "info", -m.pattern.priority)):
        k = (m.line.source, m.line.lineno)
        if k not in seen:            # one event per log line (the most telling match)
            seen.add(k)
            one.append(m)
    step = max(1, len(one) // TIMELINE_MAX)
    out = []
    for m in one[::step]:
        fp = fingerprint(m.pattern.id, m.line.text)
        out.append({"rank": m.line.rank, "t": m.order_ts, "seq": m.seq, "pitfall": m.pattern.id,
                    "role": role.get(fp, m.role), "source": m.line.source, "line": m.line.lineno})
    return out


def _block_order(b: ErrorBlock) -> Tuple[float, int]:
    return (b.order_ts if b.order_ts is not None else float("inf"), b.seq)


def unexplained_first(primary: Optional[Finding], blocks: List[ErrorBlock],
                      launcher_rank: Optional[int]) -> Optional[ErrorBlock]:
    """An error no pattern explains that came before a generic primary (a watchdog timeout, a lost
    peer) on another rank -- or on the rank the launcher names as root cause -- is the real first
    failure; the generic findings are its cascade."""
    if primary is None or not primary.generic:
        return None
    cands = [b for b in blocks if b.rank is not None and b.rank not in primary.ranks]
    if launcher_rank is not None:
        named = [b for b in cands if b.rank == launcher_rank]
        if named:
            return min(named, key=_block_order)
    earlier = [b for b in cands if b.order_ts is not None and primary.order[0] != float("inf")
               and b.order_ts < primary.order[0]]
    return min(earlier, key=_block_order) if earlier else None


def _block_message(b: ErrorBlock) -> str:
    from .engine import _EXC_LINE
    for ln in reversed(b.lines):
        if _EXC_LINE.match(ln):
            return ln[:200]
    return (b.lines[-1] if b.lines else "")[:200]


def analyse(scan: ScanResult) -> Analysis:
    """Triage a scan; a log with restarts is triaged per attempt and the last attempt is the headline."""
    last = scan.attempts - 1
    last_matches = [m for m in scan.matches if m.group == last]
    primary, findings, unmatched = _analyse_one(last_matches, [b for b in scan.blocks if b.group == last])
    erred = {r for f in findings if f.role != "info" for r in f.ranks} | {b.rank for b in scan.blocks if b.group == last}
    silent = sorted(set(scan.ranks_seen) - erred) if primary is not None and primary.generic and erred else []
    a = Analysis(primary=primary, findings=findings, unmatched=unmatched,
                 first_rank=primary.rank if primary else None, summary=_summary(primary, findings, silent),
                 lines=scan.lines, sources=scan.sources, attempts=scan.attempts,
                 launcher_root_rank=scan.launcher_root_rank)
    a.extra["timeline"] = timeline(last_matches, findings)
    if scan.disabled_rules:
        a.extra.setdefault("notes", []).extend(
            f"regex switched off after repeated timeouts (fix the pattern): {r[:120]}" for r in scan.disabled_rules)
    ub = unexplained_first(primary, [b for b in scan.blocks if b.group == last], scan.launcher_root_rank)
    if ub is not None and primary is not None:
        for f in findings:
            if f.role == "root-cause":
                f.role = "cascade"
        a.primary = None
        a.first_rank = ub.rank
        a.extra["first_failure"] = {"rank": ub.rank, "source": ub.source, "line": ub.start,
                                    "message": _block_message(ub), "explained": False}
        a.summary = (f"rank {ub.rank} failed first with an error no pattern explains ({_block_message(ub)})"
                     + _cascade_clause(findings, [ub.rank]))
    if a.primary is None and not any(f.role in ("root-cause", "cascade") for f in a.findings) \
            and scan.launcher_root_rank is not None and "first_failure" not in a.extra:
        a.first_rank = scan.launcher_root_rank
        own = [b for b in scan.blocks if b.group == last and b.rank == scan.launcher_root_rank]
        if own:
            b = min(own, key=_block_order)
            a.summary = (f"rank {b.rank} failed first (the launcher, torchrun, names it) with an error no pattern "
                         f"explains ({_block_message(b)})")
        else:
            a.summary = (f"no known pitfall in this log; the launcher (torchrun) reports rank {scan.launcher_root_rank} "
                         f"as the first failure: look at (or paste) that rank's output")
    if scan.attempts > 1:
        detail = []
        for g in range(scan.attempts):
            p, fs, _ = _analyse_one([m for m in scan.matches if m.group == g], [b for b in scan.blocks if b.group == g])
            detail.append({"attempt": g + 1, "primary": p.pitfall if p else None,
                           "first_failing_rank": p.rank if p else None, "summary": _summary(p, fs)})
        a.extra["attempts"] = detail
        a.summary = f"attempt {scan.attempts} of {scan.attempts}: " + a.summary
    return a
