"""Findings stage: dedup matches across ranks, fingerprint, and decide the verdict once.

A finding is one (pitfall, masked message) pair: the same failure on 1024 ranks is
one finding with count 1024 and a rank list.  `analyse` turns a scan into an `Analysis`
holding what the log shows (findings with the roles their rules give, error blocks no
pattern explains, the timeline); analysers (step times) add their findings to it; the
verdict -- primary, roles, first failing rank, first failure, summary -- is decided ONCE,
by `decide`, the first time it is read.  Roles:
- a rule's own role (`cascade` / `info`) is kept;
- a `generic` pattern (watchdog timeout, NCCL error) is a cascade when any specific
  root-cause finding exists, and otherwise only its earliest finding is the root cause;
- the primary is the root-cause finding of highest priority, earliest first;
- an error no pattern explains that came before a generic primary on another rank is the
  first failure (primary null, the generic findings its cascade);
- an analyser's finding (a step-time verdict) is primary only when the log shows no failure.

Everything kept is bounded, whatever the log size: EVIDENCE_MAX evidence lines per finding
(`count` counts its occurrences, `matched_lines` and `rank_counts` its log lines, those the scan
only counted included), TIMELINE_MAX timeline events, UNMATCHED_MAX unexplained error signatures.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple


from .engine import ErrorBlock, Match, ScanResult
from .rx import TIMEOUT, lazy

if TYPE_CHECKING:  # pragma: no cover - annotations only (blame and config import this module's types)
    from .blame import Suspect
    from .config import Change, Violation

EVIDENCE_MAX = 6       # evidence lines kept per finding (the first ones, each with its context)
TIMELINE_MAX = 500     # timeline events kept (the first of each rank and pitfall, then evenly spread)
UNMATCHED_MAX = 50     # unexplained error blocks kept: the first of each distinct masked signature
OCCURRENCE_GAP = 40    # matches of one pattern this close in one rank's stream are one occurrence
SAME_BURST_S = 30.0    # failures this close in time are one burst: the most specific one is primary
FAILING = ("root-cause", "cascade")
_ROLE_RANK = {"root-cause": 0, "cascade": 1, "info": 2}

_MASKS = [
    # NCCL's "host:pid:tid [dev]" prefix and hostnames: the same failure on another node is the same
    (lazy(r"(?m)^(?:\[[^\]]*\] )?[\w.\-]+:\d+:\d+ \[\d+\]"), "<host>:<pid>:<tid> [<dev>]"),
    (lazy(r"\b(?:host|hostname|node)\s*[:=]\s*[\w.\-]+"), "host: <host>"),
    (lazy(r"(?:/[\w.\-+@]+)+/?|[A-Za-z]:\\[\w\\.\-]+"), "<path>"),
    (lazy(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b"), "<hex>"),
    (lazy(r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),
    (lazy(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+"), "<time>"),
    (lazy(r"\b(?:rank|Rank|RANK)\s*[:=]?\s*\d+"), "rank <n>"),
    (lazy(r"\d+(?:\.\d+)?"), "<n>"),
    (lazy(r"\s+"), " "),
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


# --------------------------------------------------------------------------------------------
# types


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
    count: int                    # occurrences (a failure's lines on one rank are one occurrence)
    ranks: List[int]
    evidence: List[Evidence]      # the first EVIDENCE_MAX lines, never every occurrence
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
    rank_counts: Dict[int, int] = field(default_factory=dict)   # matched log lines per rank
    matched_lines: int = 0        # matched log lines in all (those the scan only counted included)

    @property
    def ranks_text(self) -> str:
        return rank_ranges(self.ranks)


@dataclass
class Unmatched:
    source: str
    line: int
    rank: Optional[int]
    ranks: List[int]
    count: int                    # ranks (or rank-less inputs) that printed this signature
    lines: List[str]
    fingerprint: str


@dataclass
class TimelineEvent:
    rank: Optional[int]
    t: Optional[float]
    seq: int
    pitfall: str
    fingerprint: str              # of the finding it belongs to: its role comes from the verdict
    rule_role: str                # the rule's own role (for a line whose finding is not kept)
    source: str
    line: int


@dataclass
class FirstFailure:
    """An error no pattern explains that came first; the generic findings are its cascade."""
    rank: Optional[int]
    source: str
    line: int
    message: str
    explained: bool = False


@dataclass
class AttemptVerdict:
    attempt: int
    primary: Optional[str]
    first_failing_rank: Optional[int]
    summary: str


@dataclass
class Verdict:
    primary: Optional[Finding]
    findings: List[Finding]       # every finding with its decided role, the primary first
    first_rank: Optional[int]
    summary: str
    first_failure: Optional[FirstFailure] = None
    attempts: List[AttemptVerdict] = field(default_factory=list)   # one per attempt of a restarted job

    @property
    def failed(self) -> bool:
        return self.primary is not None or any(f.role in FAILING for f in self.findings)

    def roles(self) -> Dict[str, str]:
        return {f.fingerprint: f.role for f in self.findings}


@dataclass
class Case:
    """What one attempt of the log shows: the inputs of its verdict."""
    findings: List[Finding]                    # roles as their rules give them (decide works on copies)
    blocks: List[ErrorBlock]                   # error blocks no pattern explains
    launcher_root_rank: Optional[int] = None
    ranks_seen: List[int] = field(default_factory=list)   # ranks with any line (fetched only for a hang)


@dataclass
class ConfigAnalysis:
    config: Dict[str, Any]                     # the run's canonical config
    violations: List["Violation"]              # the config rules it breaks
    diff: Optional[List["Change"]] = None      # changes since the baseline (None: no baseline)
    suspects: List["Suspect"] = field(default_factory=list)


class VerdictDecided(RuntimeError):
    """Analyser findings added after the verdict was read (it is decided once)."""


@dataclass
class Analysis:
    """One triaged log.  The scan's facts and the analysers' results are plain typed fields;
    the verdict is decided by `decide` the first time any of its fields is read."""
    lines: int
    sources: List[str]
    case: Case                                 # the last attempt (the headline)
    earlier: List[Case] = field(default_factory=list)       # earlier attempts of a restarted job
    unmatched: List[Unmatched] = field(default_factory=list)
    unmatched_omitted: int = 0                 # distinct signatures beyond UNMATCHED_MAX
    timeline: List[TimelineEvent] = field(default_factory=list)
    timeline_omitted: int = 0                  # matched lines not in `timeline` (over the cap, or only counted)
    launcher_root_rank: Optional[int] = None
    analyser_findings: List[Finding] = field(default_factory=list)
    config: Optional[ConfigAnalysis] = None
    step_times: Dict[str, Any] = field(default_factory=dict)
    versions: Dict[str, str] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    _verdict: Optional[Verdict] = field(default=None, repr=False)

    @property
    def attempts(self) -> int:
        return len(self.earlier) + 1

    def add_findings(self, extra: Sequence[Finding]) -> None:
        """Add analyser findings (step-time verdicts); only before the verdict is decided."""
        if self._verdict is not None:
            raise VerdictDecided("analyser findings must be added before the verdict is read")
        self.analyser_findings.extend(extra)

    @property
    def verdict(self) -> Verdict:
        if self._verdict is None:
            self._verdict = decide(self.case, self.analyser_findings, self.earlier)
        return self._verdict

    @property
    def decided(self) -> bool:
        return self._verdict is not None

    # the verdict's fields, for readers of an analysis
    @property
    def primary(self) -> Optional[Finding]:
        return self.verdict.primary

    @property
    def findings(self) -> List[Finding]:
        return self.verdict.findings

    @property
    def first_rank(self) -> Optional[int]:
        return self.verdict.first_rank

    @property
    def summary(self) -> str:
        return self.verdict.summary

    @property
    def first_failure(self) -> Optional[FirstFailure]:
        return self.verdict.first_failure

    @property
    def failed(self) -> bool:
        return self.verdict.failed


# --------------------------------------------------------------------------------------------
# grouping matches into findings


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
        per_rank: Dict[int, int] = {}
        for m in ms + extra[fp]:
            if m.line.rank is not None:
                per_rank[m.line.rank] = per_rank.get(m.line.rank, 0) + 1
        out.append(Finding(
            pitfall=p.id, title=p.title, severity=p.severity, kind=p.kind, role=first.role,
            rank=first.line.rank, source=first.line.source, line=first.line.lineno, count=len(ms),
            ranks=sorted(per_rank), evidence=ev, fingerprint=fp, priority=p.priority, generic=_is_generic(first),
            order=_order(first), pattern_path=p.path, implicates=p.implicates,
            explanation=p.explanation, fix=p.fix, references=p.references, rule=first.rule.source_text,
            rank_counts=dict(sorted(per_rank.items())), matched_lines=len(ms) + len(extra[fp]),
        ))
    return out


def make_finding(p, evidence: List[Evidence], message: str) -> Finding:
    """A finding produced by an analyser (not a log line), e.g. the step-time comparison."""
    first = evidence[0] if evidence else Evidence("<analysis>", 0, None, message)
    ev = [Evidence("<triage>", 0, None, message)] + evidence[:EVIDENCE_MAX - 1]
    return Finding(
        pitfall=p.id, title=p.title, severity=p.severity, kind=p.kind, role="root-cause", rank=None,
        source=first.source, line=first.line, count=1, ranks=[], evidence=ev,
        fingerprint=fingerprint(p.id, message.split(":", 2)[1] if message.count(":") >= 2 else p.id),
        priority=p.priority, generic=p.generic, order=(float("inf"), 1 << 62), pattern_path=p.path,
        implicates=p.implicates, explanation=p.explanation, fix=p.fix, references=p.references,
        rule="step-time analysis (triage/steps.py)")


# --------------------------------------------------------------------------------------------
# the verdict


def assign_roles(findings: List[Finding]) -> Optional[Finding]:
    """Set cascade roles (in place) and return the primary finding."""
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


def _decide_attempt(case: Case, analysers: Sequence[Finding]) -> Verdict:
    """The rules for one attempt (see the module docstring); works on copies of the findings."""
    log = [replace(f) for f in case.findings]
    primary = assign_roles(log)
    first_rank = primary.rank if primary else None
    first_failure: Optional[FirstFailure] = None
    ub = unexplained_first(primary, case.blocks, case.launcher_root_rank)
    if ub is not None and primary is not None:
        for f in log:
            if f.role == "root-cause":
                f.role = "cascade"
        primary, first_rank = None, ub.rank
        msg = _block_message(ub)
        first_failure = FirstFailure(ub.rank, ub.source, ub.start, msg)
        summary = (f"rank {ub.rank} failed first with an error no pattern explains ({msg})"
                   + _cascade_clause(log, [ub.rank]))
    elif primary is not None:
        silent: List[int] = []
        if primary.generic:
            erred = _erred(log, case.blocks)
            if erred:
                silent = sorted(set(case.ranks_seen) - erred)
        summary = _summary(primary, log, silent)
    elif case.launcher_root_rank is not None and not any(f.role in FAILING for f in log):
        first_rank = case.launcher_root_rank
        own = [b for b in case.blocks if b.rank == first_rank]
        if own:
            b = min(own, key=_block_order)
            summary = (f"rank {b.rank} failed first (the launcher, torchrun, names it) with an error no pattern "
                       f"explains ({_block_message(b)})")
        else:
            summary = (f"no known pitfall in this log; the launcher (torchrun) reports rank {first_rank} "
                       f"as the first failure: look at (or paste) that rank's output")
    else:
        summary = _summary(None, log)
    # an analyser's finding (step times) never outranks a failure the log shows
    extra = [replace(f) for f in analysers]
    top = assign_roles(extra)
    log_failed = primary is not None or first_rank is not None or any(f.role in FAILING for f in log)
    if top is not None and not log_failed:
        primary, first_rank = top, top.rank
        summary = _summary(top, log + extra)
    findings = log + extra
    findings.sort(key=lambda f: (f is not primary, _ROLE_RANK[f.role], -f.priority, f.order))
    return Verdict(primary, findings, first_rank, summary, first_failure)


def decide(case: Case, analysers: Sequence[Finding] = (), earlier: Sequence[Case] = ()) -> Verdict:
    """The verdict of a log: primary, roles, first failing rank, first failure and summary, decided
    here and nowhere else.  CASE is the last attempt (the headline), ANALYSERS the findings of the
    analysers (step times), EARLIER the earlier attempts of a restarted job (each gets its own
    verdict, in `attempts`)."""
    v = _decide_attempt(case, analysers)
    if earlier:
        n = len(earlier) + 1
        per = [_decide_attempt(c, ()) for c in earlier] + [v]
        v.attempts = [AttemptVerdict(i + 1, x.primary.pitfall if x.primary else None, x.first_rank, x.summary)
                      for i, x in enumerate(per)]
        v.summary = f"attempt {n} of {n}: " + v.summary
    return v


# --------------------------------------------------------------------------------------------
# what the scan shows


def _unmatched(blocks: List[ErrorBlock], limit: int = UNMATCHED_MAX) -> Tuple[List[Unmatched], int]:
    """The first block of each distinct masked signature, with the ranks (or rank-less inputs) that
    printed it; at most LIMIT of them, plus how many signatures were left out."""
    by_fp: Dict[str, Unmatched] = {}
    streams: Dict[str, set] = {}
    masked: Dict[str, str] = {}
    for b in sorted(blocks, key=_block_order):
        stream = (b.source if b.rank is None else None, b.rank)
        sig = []
        for x in b.lines:
            m = masked.get(x)
            if m is None:
                m = masked[x] = mask(x)
            sig.append(m)
        fp = hashlib.sha1("\n".join(sig).encode("utf-8", "replace")).hexdigest()[:12]
        u = by_fp.get(fp)
        if u is None:
            by_fp[fp] = Unmatched(b.source, b.start, b.rank, [b.rank] if b.rank is not None else [], 1,
                                  list(b.lines), fp)
            streams[fp] = {stream}
        elif stream not in streams[fp]:
            streams[fp].add(stream)
            u.count += 1
            if b.rank is not None:
                u.ranks.append(b.rank)
    out = list(by_fp.values())
    return out[:limit], max(0, len(out) - limit)


def timeline(matches: List[Match], limit: int = TIMELINE_MAX) -> Tuple[List[TimelineEvent], int]:
    """Per-rank events for the report's timeline, one per log line (its most telling match).  Over
    LIMIT events, the first event of each rank and pitfall is kept (up to half of LIMIT) and the
    rest is sampled evenly; returns the events and how many were left out."""
    one: List[Match] = []
    seen = set()
    for m in sorted(matches, key=lambda m: (m.seq, m.role == "info", -m.pattern.priority)):
        k = (m.line.source, m.line.lineno)
        if k not in seen:
            seen.add(k)
            one.append(m)
    keep = list(range(len(one)))
    if len(one) > limit:
        firsts: Dict[Tuple[object, str], int] = {}
        for i, m in enumerate(one):
            firsts.setdefault((m.line.rank if m.line.rank is not None else m.line.source, m.pattern.id), i)
        chosen = set(sorted(firsts.values())[:limit // 2])
        rest = [i for i in range(len(one)) if i not in chosen]
        room = limit - len(chosen)
        chosen.update(rest[(k * len(rest)) // room] for k in range(room))
        keep = sorted(chosen)
    events = [TimelineEvent(m.line.rank, m.order_ts, m.seq, m.pattern.id, fingerprint(m.pattern.id, m.line.text),
                            m.role, m.line.source, m.line.lineno) for m in (one[i] for i in keep)]
    return events, len(one) - len(events)


def _erred(findings: List[Finding], blocks: List[ErrorBlock]) -> set:
    """Ranks that logged an error (a hang's culprits are the ranks that did not)."""
    return {r for f in findings if f.role != "info" for r in f.ranks} | {b.rank for b in blocks}


def _hang_possible(case: Case) -> bool:
    """Whether the verdict can ask which ranks logged nothing: only when the log's own primary is a
    generic failure (a timeout) and some rank erred.  scan.ranks_seen costs a second pass over the
    inputs, so analyse fetches it only then."""
    log = [replace(f) for f in case.findings]
    p = assign_roles(log)
    return p is not None and p.generic and bool(_erred(log, case.blocks))


def _add_dropped(cases: List[Case], dropped: Dict[Tuple[str, Optional[int], str], int]) -> int:
    """Count the matched lines the scan did not keep (a message repeated beyond its cap; keyed by
    pattern, rank and text, or an empty text once too many distinct ones were dropped) in the
    finding of the same fingerprint -- the last attempt's first, as the scan does not say which
    attempt a dropped line was in.  A rank seen only in dropped lines joins the finding's ranks
    (with one occurrence).  Returns the lines counted."""
    by_fp: Dict[str, Finding] = {}
    by_pid: Dict[str, List[Finding]] = {}
    for c in reversed(cases):
        for f in c.findings:
            by_fp.setdefault(f.fingerprint, f)
            by_pid.setdefault(f.pitfall, []).append(f)
    total = 0
    for (pid, rank, text), n in dropped.items():
        if text:
            f = by_fp.get(fingerprint(pid, text))
        else:
            cands = by_pid.get(pid) or []
            f = next((x for x in cands if rank in x.ranks), cands[0] if cands else None)
        if f is None:
            continue
        f.matched_lines += n
        total += n
        if rank is not None:
            if rank not in f.rank_counts:
                f.count += 1
                f.ranks = sorted(set(f.ranks) | {rank})
            f.rank_counts = dict(sorted({**f.rank_counts, rank: f.rank_counts.get(rank, 0) + n}.items()))
    return total


def analyse(scan: ScanResult) -> Analysis:
    """What a scan shows, per attempt; a log with restarts is triaged per attempt and the last
    attempt is the headline.  The verdict is decided when first read (after analysers add theirs)."""
    last = scan.attempts - 1
    by_group: Dict[int, List[Match]] = {}
    for m in scan.matches:
        by_group.setdefault(m.group, []).append(m)
    blocks_by_group: Dict[int, List[ErrorBlock]] = {}
    for b in scan.blocks:
        blocks_by_group.setdefault(b.group, []).append(b)
    cases = [Case(_group(by_group.get(g, [])), blocks_by_group.get(g, [])) for g in range(scan.attempts)]
    dropped = _add_dropped(cases, getattr(scan, "dropped", None) or {})
    head = cases[last]
    head.launcher_root_rank = scan.launcher_root_rank
    if _hang_possible(head):
        head.ranks_seen = list(scan.ranks_seen)
    unmatched, unmatched_omitted = _unmatched(head.blocks)
    events, events_omitted = timeline(by_group.get(last, []))
    notes = [f"regex switched off after repeated timeouts (fix the pattern): {r[:120]}" for r in scan.disabled_rules]
    return Analysis(lines=scan.lines, sources=scan.sources, case=head, earlier=cases[:last],
                    unmatched=unmatched, unmatched_omitted=unmatched_omitted,
                    timeline=events, timeline_omitted=events_omitted + dropped,
                    launcher_root_rank=scan.launcher_root_rank, notes=notes)
