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
- an analyser's finding (a step-time verdict) is primary only when the log shows no failure;
- among generic root causes, an error (not a timeout) on the rank the launcher names as root
  cause beats timeouts on other ranks, with or without timestamps;
- a verdict whose primary is a timeout, a hung watchdog or a lost peer is a hang: no rank "failed
  first"; the suspects are the ranks that logged nothing failing and the peers NCCL names.

The outcome is decided with the verdict: `pitfall` (a known root cause), `unexplained-failure` (the
job evidently failed -- a failing finding, an uncaught exception ending a traceback, `Fatal Python
error`, a launcher's failure summary, Slurm's task exit or cancel lines -- and no pattern explains
the root cause) or `healthy`.  A traceback counts as uncaught when its input ends within
TAIL_LINES lines of it (the process went on otherwise: an exception that was caught and logged).

Everything kept is bounded, whatever the log size: EVIDENCE_MAX evidence lines per finding
(`count` counts its occurrences, `matched_lines` and `rank_counts` its log lines, those the scan
only counted included), TIMELINE_MAX timeline events, UNMATCHED_MAX unexplained error signatures.
"""
from __future__ import annotations

import hashlib
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .engine import ErrorBlock, Match, ScanResult
from .kinds import Kind, Role, Severity
from .patterns import Pattern
from .rx import TIMEOUT, lazy, search

if TYPE_CHECKING:  # pragma: no cover - annotations only (blame and config import this module's types)
    from .blame import Suspect
    from .config import Change, Violation

EVIDENCE_MAX = 6       # evidence lines kept per finding (the first ones, each with its context)
TIMELINE_MAX = 500     # timeline events kept (the first of each rank and pitfall, then evenly spread)
UNMATCHED_MAX = 50     # unexplained error blocks kept: the first of each distinct masked signature
OCCURRENCE_GAP = 40    # matches of one pattern this close in one rank's stream are one occurrence
TAIL_LINES = 40        # a traceback this close to the end of its input ended the process (uncaught)
LOGGED_TAIL = 5        # ... or this close, when a log record ("ERROR ...: msg") introduces it (logging.exception)
CONT_GAP = 4           # a continuation block ("Last error:", C++ frames) this close after its message
SAME_BURST_S = 30.0    # failures this close in time are one burst: the most specific one is primary
FAILING: Tuple[Role, ...] = ("root-cause", "cascade")
OUTCOMES = ("healthy", "pitfall", "unexplained-failure")
_ROLE_RANK: Dict[Role, int] = {"root-cause": 0, "cascade": 1, "info": 2}

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
    severity: Severity
    kind: Kind
    role: Role
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
    waits: bool = False           # its lines show ranks waiting for others (pattern `waits`), not failing
    cascade_verb: str = ""        # the pattern's `cascade_verb`
    hang_summary: str = ""        # the pattern's `hang.summary` / `hang.silent`
    hang_silent: str = ""

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
    rule_role: Role               # the rule's own role (for a line whose finding is not kept)
    source: str
    line: int


@dataclass
class FirstFailure:
    """An error no pattern explains that came first; the generic findings are its cascade."""
    rank: Optional[int]
    source: str
    line: int
    message: str                  # the error line itself (an exception line, never a frame or caret)
    explained: bool = False
    lines: List[str] = field(default_factory=list)   # the error block
    kind: str = "error"           # uncaught-exception | fatal-python-error | srun | slurm | launcher | error


@dataclass
class Crash:
    """Evidence, outside the patterns, that a process or the job died: see `crashes`."""
    kind: str                     # uncaught-exception | fatal-python-error | srun | slurm | launcher-exit
    rank: Optional[int]
    source: str
    line: int
    message: str
    lines: List[str]
    order: Tuple[float, int]
    weight: int = 0               # 0 a process's own error, 1 a launcher's report, 2 a scheduler's cancel


@dataclass
class HangSuspect:
    """A likely culprit of a hang: a rank that logged nothing failing, or a peer NCCL names."""
    rank: Optional[int]
    peer: Optional[str]
    because: str


@dataclass
class FlightRecorder:
    """PyTorch Flight Recorder dump lines seen in the log (ProcessGroupNCCL's dump on a timeout)."""
    ranks: List[int]
    evidence: List[Evidence]


@dataclass
class AttemptVerdict:
    attempt: int
    primary: Optional[str]
    first_failing_rank: Optional[int]
    summary: str


# exit status of each outcome (the CLI's contract, README "Exit codes"); --fail-on refines it
EXIT_OK, EXIT_FOUND, EXIT_UNEXPLAINED = 0, 1, 3
OUTCOME_EXIT = {"healthy": EXIT_OK, "pitfall": EXIT_FOUND, "unexplained-failure": EXIT_UNEXPLAINED}


@dataclass(frozen=True)
class Verdict:
    """What the log says, decided once (`decide`) after every analyser ran: everything that reports,
    the exit code, the store record and fleet groups read.  Frozen: nothing re-derives or changes it."""
    outcome: str                  # healthy | pitfall | unexplained-failure (OUTCOMES)
    primary: Optional[Finding]
    findings: Tuple[Finding, ...]  # every finding with its decided role, the primary first
    first_rank: Optional[int]     # None for a hang: the first rank to time out did not fail first
    first_rank_by: Optional[str]  # how the first failing rank was established (None: no such rank)
    summary: str
    title: str                    # one line: the primary's title, or the first failure's message
    signature: Optional[str]      # one per job: pitfall id + title, or the masked unexplained error
    first_failure: Optional[FirstFailure] = None
    attempts: Tuple[AttemptVerdict, ...] = ()      # one per attempt of a restarted job
    hang: bool = False            # the primary is a timeout, a hung watchdog or a lost peer
    hang_suspects: Tuple[HangSuspect, ...] = ()
    flight_recorder: Optional[FlightRecorder] = None
    cascade: Tuple[str, ...] = ()  # the fingerprints of the root cause's cascade findings, in order

    @property
    def failed(self) -> bool:
        return self.outcome != "healthy"

    def roles(self) -> Dict[str, Role]:
        return {f.fingerprint: f.role for f in self.findings}

    def exit_code(self, fail_on: str = "error") -> int:
        """The exit status under --fail-on error|warning|never (README "Exit codes")."""
        if fail_on == "never":
            return EXIT_OK
        code = OUTCOME_EXIT.get(self.outcome, EXIT_FOUND)
        if code != EXIT_FOUND and fail_on == "error":
            return code
        if fail_on == "warning":
            if code:
                return code
            return EXIT_FOUND if any(f.severity in ("warning", "error", "critical") for f in self.findings) else EXIT_OK
        sevs = {f.severity for f in self.findings if f.role in FAILING}
        if self.primary is not None:
            sevs.add(self.primary.severity)
        return EXIT_FOUND if sevs & {"error", "critical"} else EXIT_OK


@dataclass
class Case:
    """What one attempt of the log shows: the inputs of its verdict."""
    findings: List[Finding]                    # roles as their rules give them (decide works on copies)
    blocks: List[ErrorBlock]                   # error blocks no pattern explains
    launcher_root_rank: Optional[int] = None
    # ranks with any line: a second pass over the inputs, so asked for only when a hang needs them
    ranks_fn: Optional[Callable[[], List[int]]] = field(default=None, repr=False)
    crashes: List[Crash] = field(default_factory=list)    # the job died here, whatever the patterns say
    peers: List[HangSuspect] = field(default_factory=list)   # peers / ranks that NCCL or gloo say went away
    flight_recorder: Optional[FlightRecorder] = None
    ended: bool = False                        # an earlier attempt (the job restarted after it)


@dataclass
class ConfigAnalysis:
    config: Dict[str, Any]                     # the run's canonical config
    violations: List["Violation"]              # the config rules it breaks
    diff: Optional[List["Change"]] = None      # changes since the baseline (None: no baseline)
    suspects: List["Suspect"] = field(default_factory=list)


@dataclass
class Analysis:
    """One triaged log: the scan's facts and the analysers' results, as plain typed fields, and the
    verdict, decided by ONE explicit call (`decide`) once every analyser has run.  Its fields are
    read through `verdict` (the shortcuts below read it too); reading it before it is decided is a
    programming error, never a silent provisional answer."""
    lines: int
    sources: List[str]
    case: Case                                 # the last attempt (the headline)
    earlier: List[Case] = field(default_factory=list)       # earlier attempts of a restarted job
    unmatched: List[Unmatched] = field(default_factory=list)
    unmatched_omitted: int = 0                 # distinct signatures beyond UNMATCHED_MAX
    timeline: List[TimelineEvent] = field(default_factory=list)
    timeline_omitted: int = 0                  # matched lines not in `timeline` (over the cap, or only counted)
    launcher_root_rank: Optional[int] = None
    config: Optional[ConfigAnalysis] = None
    step_times: Dict[str, Any] = field(default_factory=dict)
    versions: Dict[str, str] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    known: Optional[Dict[str, Any]] = None     # the known issue of this verdict (store.known_info), given a store
    _verdict: Optional[Verdict] = field(default=None, repr=False)

    @property
    def attempts(self) -> int:
        return len(self.earlier) + 1

    def decide(self, analysers: Sequence[Finding] = ()) -> Verdict:
        """Decide the verdict, once, from the log's findings and the analysers' (step times)."""
        if self._verdict is not None:
            raise RuntimeError("the verdict is decided once: decide() was called before")
        self._verdict = decide(self.case, analysers, self.earlier)
        return self._verdict

    @property
    def verdict(self) -> Verdict:
        if self._verdict is None:
            raise RuntimeError("the verdict is read before it is decided: call Analysis.decide() after "
                               "every analyser ran")
        return self._verdict

    # shortcuts to the verdict's fields
    @property
    def primary(self) -> Optional[Finding]:
        return self.verdict.primary

    @property
    def findings(self) -> Tuple[Finding, ...]:
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

    @property
    def outcome(self) -> str:
        return self.verdict.outcome


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
        rule="step-time analysis (triage/steps.py)")


# --------------------------------------------------------------------------------------------
# the verdict


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
    cranks = sorted({r for f in casc for r in f.ranks if r not in first_ranks})
    kinds = sorted({f.pitfall for f in casc})
    verbs = sorted({f.cascade_verb or "failed as a cascade" for f in casc})
    verb = verbs[0] if len(verbs) == 1 else "failed as a cascade"
    if cranks:
        plural = "s" if len(cranks) > 1 else ""
        return f"; {len(cranks)} rank{plural} ({rank_ranges(cranks)}) then {verb} ({', '.join(kinds)})"
    return f"; followed by {sum(f.count for f in casc)} cascade error(s) ({', '.join(kinds)})"


def _block_order(b: ErrorBlock) -> Tuple[float, int]:
    return (b.order_ts if b.order_ts is not None else float("inf"), b.seq)


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


_CARET = lazy(r"^\s*[~^]+\s*$")
_NOT_A_MESSAGE = lazy(r'^\s*File "[^"]*", line \d+|^\s*(?:frame )?#\d+[: ]|^Last error:|^Exception raised from |'
                      r"^Traceback \(most recent call last\):|^\s*$")


def exception_line(lines: Sequence[str]) -> Optional[str]:
    """The exception line of a traceback block (its last one: a chained or wrapped error ends with
    the one that was raised), never a frame, a source line or a caret line."""
    from .engine import EXC_LINE
    for ln in reversed(lines):
        if EXC_LINE.match(ln) and not _CARET.match(ln):
            return ln
    return None


def block_message(lines: Sequence[str], source: str = "", end: int = 0) -> str:
    """The error line of a block: a traceback's exception line, else the first line that is a
    message (not a frame, a caret line or a `Last error:` continuation)."""
    exc = exception_line(lines)
    if exc is not None:
        return exc[:200]
    for ln in lines:
        if not _NOT_A_MESSAGE.match(ln) and not _CARET.match(ln) and not _CODE_ECHO.match(ln):
            return ln[:200]
    where = f" near {source}:{end}" if source else ""
    return f"an exception whose traceback runs past the lines the scanner keeps of it; its message is{where}"


def _block_message(b: ErrorBlock) -> str:
    return block_message(b.lines, b.source, b.end)


_CODE_ECHO = lazy(r"^\s{4,}\S")     # an indented source line under a frame


def _block_kind(b: ErrorBlock) -> str:
    first = b.lines[0] if b.lines else ""
    if first.startswith(_TB_HEAD):
        return "uncaught-exception"
    if first.startswith("Fatal Python error:"):
        return "fatal-python-error"
    return "error"


def first_crash(case: Case) -> Optional[Crash]:
    """The crash that came first: on the launcher's root-cause rank when it names one, else the
    earliest process error, else the earliest launcher / scheduler report."""
    if not case.crashes:
        return None
    # a death torchrun or the shell reports only stands in when nothing else shows the failure
    crashes = [c for c in case.crashes if c.kind != "launcher-exit"] or case.crashes
    named = [c for c in crashes if c.rank is not None and c.rank == case.launcher_root_rank]
    pool = named or crashes
    return min(pool, key=lambda c: (c.weight, c.order))


def _hang_suspects(case: Case, log: List[Finding]) -> List[HangSuspect]:
    """Ranks that logged nothing failing (when any rank did), then the peers NCCL / gloo name."""
    out: List[HangSuspect] = []
    erred = _erred(log, case.blocks)
    if erred:
        for r in sorted(set(case.ranks_fn() if case.ranks_fn is not None else ()) - erred):
            out.append(HangSuspect(r, None, "logged no error or timeout while other ranks waited for it"))
    seen = {(s.rank, s.peer) for s in out}
    for p in case.peers:
        if (p.rank, p.peer) not in seen and not (p.rank is not None and p.rank in erred and p.peer is None):
            seen.add((p.rank, p.peer))
            out.append(p)
    return out


@dataclass
class _Draft:
    """A verdict being decided (decide's working state; the result is the frozen Verdict)."""
    log: List[Finding]
    primary: Optional[Finding] = None
    first_rank: Optional[int] = None
    first_rank_by: Optional[str] = None
    first_failure: Optional[FirstFailure] = None
    summary: str = ""
    hang: bool = False
    suspects: List[HangSuspect] = field(default_factory=list)


def _by_order(f: Finding) -> str:
    return "its timestamp is the earliest" if f.order[0] != float("inf") else "the earliest failure the log shows"


def _unexplained_first(d: _Draft, case: Case, ub: ErrorBlock, why: str) -> None:
    for f in d.log:
        if f.role == "root-cause":
            f.role = "cascade"
    msg = _block_message(ub)
    d.primary, d.first_rank, d.first_rank_by = None, ub.rank, why
    d.first_failure = FirstFailure(ub.rank, ub.source, ub.start, msg, lines=list(ub.lines), kind=_block_kind(ub))
    d.summary = (f"rank {ub.rank} failed first with an error no pattern explains ({msg})"
                 + _cascade_clause(d.log, [ub.rank]))


def _known_primary(d: _Draft, case: Case) -> None:
    p = d.primary
    assert p is not None
    if not _waiting(p):
        d.first_rank = p.rank
        if p.rank is not None:
            named = case.launcher_root_rank is not None and p.rank == case.launcher_root_rank
            d.first_rank_by = "the launcher (torchrun) names it" if named else _by_order(p)
        d.summary = _summary(p, d.log)
        return
    d.hang = True                   # the first rank to time out did not fail first
    d.suspects = _hang_suspects(case, d.log)
    waiting = sorted({r for f in d.log if f.role in FAILING and _waiting(f)
                      for r in (f.ranks or ([f.rank] if f.rank is not None else []))})
    d.summary = _hang_summary(p, waiting, d.suspects) + _cascade_clause([f for f in d.log if not _waiting(f)], waiting)


def _no_known_primary(d: _Draft, case: Case) -> None:
    crash = first_crash(case)
    lr = case.launcher_root_rank
    if crash is not None:
        d.first_rank = crash.rank if crash.rank is not None else lr
        if d.first_rank is not None:
            d.first_rank_by = (f"its {crash.kind.replace('-', ' ')} is the first crash" if crash.rank is not None
                               else "the launcher (torchrun) names it")
        d.first_failure = FirstFailure(crash.rank, crash.source, crash.line, crash.message, lines=list(crash.lines),
                                       kind=crash.kind)
        who = f"rank {d.first_rank} failed first" if d.first_rank is not None else "the job failed"
        by = " (the launcher, torchrun, names it)" if lr is not None and d.first_rank == lr else ""
        d.summary = (f"{who}{by} with an error no pattern explains ({crash.message[:200]})"
                     + _cascade_clause(d.log, [d.first_rank]))
    elif lr is not None:
        d.first_rank, d.first_rank_by = lr, "the launcher (torchrun) names it"
        d.summary = (f"no known pitfall in this log; the launcher (torchrun) reports rank {lr} as the first "
                     f"failure: look at (or paste) that rank's output" + _cascade_clause(d.log, [lr]))
    elif any(f.role in FAILING for f in d.log):
        kinds = sorted({f.pitfall for f in d.log if f.role in FAILING})
        d.summary = (f"the job failed, but this log holds only follow-on errors ({', '.join(kinds)}) "
                     f"and not the failure that caused them: look for the first rank's own output")
    else:
        d.summary = _summary(None, d.log)


def _decide_attempt(case: Case, analysers: Sequence[Finding]) -> Verdict:
    """The rules for one attempt (see the module docstring); works on copies of the findings."""
    d = _Draft([replace(f) for f in case.findings])
    d.primary = assign_roles(d.log, case.launcher_root_rank)
    first = unexplained_first(d.primary, case.blocks, case.launcher_root_rank, d.log, case.crashes)
    if first is not None and d.primary is not None:
        _unexplained_first(d, case, *first)
    elif d.primary is not None:
        _known_primary(d, case)
    else:
        _no_known_primary(d, case)
    log_failed = (d.primary is not None or d.first_rank is not None or d.first_failure is not None
                  or any(f.role in FAILING for f in d.log) or bool(case.crashes)
                  or case.launcher_root_rank is not None)
    # an analyser's finding (step times) never outranks a failure the log shows
    extra = [replace(f) for f in analysers]
    top = assign_roles(extra)
    if top is not None and not log_failed:
        d.primary, d.first_rank, d.first_rank_by = top, top.rank, None
        d.summary = _summary(top, d.log + extra)
    findings = d.log + extra
    findings.sort(key=lambda f: (f is not d.primary, _ROLE_RANK[f.role], -f.priority, f.order))
    outcome = "pitfall" if d.primary is not None else "unexplained-failure" if log_failed else "healthy"
    return _verdict(d, outcome, tuple(findings), case)


def _verdict(d: _Draft, outcome: str, findings: Tuple[Finding, ...], case: Case) -> Verdict:
    p, ff = d.primary, d.first_failure
    title = p.title if p is not None else (ff.message if ff is not None and outcome != "healthy" else d.summary)
    if p is not None:                 # the pattern's title is fixed text: nothing in it varies by job
        signature: Optional[str] = f"{p.pitfall}: {' '.join(p.title.split())}"
    elif outcome == "unexplained-failure":
        signature = f"unexplained-failure: {mask(ff.message if ff is not None else d.summary)[:200]}"
    else:
        signature = None
    return Verdict(outcome=outcome, primary=p, findings=findings, first_rank=d.first_rank,
                   first_rank_by=d.first_rank_by if d.first_rank is not None else None, summary=d.summary,
                   title=" ".join(title.split())[:300], signature=signature, first_failure=ff, hang=d.hang,
                   hang_suspects=tuple(d.suspects), flight_recorder=case.flight_recorder,
                   cascade=tuple(f.fingerprint for f in findings if f.role == "cascade"))


def decide(case: Case, analysers: Sequence[Finding] = (), earlier: Sequence[Case] = ()) -> Verdict:
    """The verdict of a log: primary, roles, first failing rank, first failure, outcome and summary,
    decided here and nowhere else.  CASE is the last attempt (the headline), ANALYSERS the findings
    of the analysers (step times), EARLIER the earlier attempts of a restarted job (each gets its
    own verdict, in `attempts`)."""
    v = _decide_attempt(case, analysers)
    if not earlier:
        return v
    n = len(earlier) + 1
    per = [_decide_attempt(c, ()) for c in earlier] + [v]
    return replace(v, attempts=tuple(AttemptVerdict(i + 1, x.primary.pitfall if x.primary else None, x.first_rank,
                                                    x.summary) for i, x in enumerate(per)),
                   summary=f"attempt {n} of {n}: " + v.summary)


# --------------------------------------------------------------------------------------------
# evidence of a failure that no pattern explains, and of who a hang waits for

_TB_HEAD = "Traceback (most recent call last):"
_C10_TRAILER = "Exception raised from "
# CPython's PyErr_WriteUnraisable (a __del__ or a callback at shutdown): printed, ignored, not fatal
_UNRAISABLE = "Exception ignored in"
# a block that only continues the message above it (NCCL's "Last error:", a C++ exception's trailer)
_CONT_HEAD = lazy(r"^(?:Last error:|Exception raised from |frame #\d+|terminate called after|  what\(\): |"
                  r"nccl[A-Z]\w*: )")
_FATAL_PY = lazy(r"^Fatal Python error: ")
# Slurm src/srun/launch.c: error("%s: %s %s: Exited with exit code %d" | "%s%s" (strsignal, core) |
# "Out Of Memory", hosts, "task"/"tasks", task ids) printed as "srun: error: ..."
_SRUN = lazy(r"^srun: error: (\S+): (tasks?) ([\d,\-\[\]]+): (.+?)\s*$")
# Slurm src/slurmd/slurmstepd/req.c: "*** JOB %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***", ...
_SLURM_END = lazy(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ (?:CANCELLED AT \S+ DUE (?:TO|to) .+?|FAILED \(.*?\)) \*\*\*")
_CLEAN_EXIT = lazy(r"^(?:builtins\.)?SystemExit(?:: 0)?\s*$")
# a peer that went away, as NCCL (socket / IB / proxy service) and gloo name it
_PEER_ADDR = lazy(r"Connection closed by remote peer (\S+)|Connection closed by peer \[([^\]]+)\]:(\d+)|"
                  r"Got completion from peer (\S+) with|Call to recv from (\S+) failed")
_PEER_LOCAL = lazy(r"Connection closed by localRank (\d+)")   # NCCL proxy service thread
# PyTorch ProcessGroupNCCL's Flight Recorder dump on a timeout / watchdog hang
_FLIGHT = lazy(r"Received a dump signal|[Ff]light [Rr]ecorder|dump debug info|dumping debug info")


def _matched_lines(matches: List[Match]) -> Dict[Tuple[str, Optional[int]], List[int]]:
    """The line numbers of the matched lines per (input, rank) stream, sorted."""
    matched: Dict[Tuple[str, Optional[int]], List[int]] = {}
    for m in matches:
        matched.setdefault((m.line.source, m.line.rank), []).append(m.line.lineno)
    for v in matched.values():
        v.sort()
    return matched


def _follows_a_match(b: ErrorBlock, matched: Dict[Tuple[str, Optional[int]], List[int]]) -> bool:
    """Block B starts within CONT_GAP lines after a matched line of its stream (or of its rank-less input)."""
    for key in {(b.source, b.rank), (b.source, None)}:
        ls = matched.get(key)
        if ls:
            i = bisect_left(ls, b.start)
            if i and b.start - ls[i - 1] <= CONT_GAP:
                return True
    return False


def merge_continuations(blocks: List[ErrorBlock], matches: List[Match]) -> List[ErrorBlock]:
    """Blocks that only continue a message -- NCCL's `Last error:` and the line after it, a C++
    exception's `Exception raised from` trailer and its frames -- are part of the message above
    them: of the finding whose matched line they follow (dropped here: the finding's evidence shows
    them), or of the error block they follow (merged into it).  Returns copies, in scan order."""
    matched = _matched_lines(matches)
    out: List[ErrorBlock] = []
    last: Dict[Tuple[str, Optional[int]], ErrorBlock] = {}
    for b in sorted(blocks, key=lambda b: b.seq):
        key = (b.source, b.rank)
        if b.lines and _CONT_HEAD.match(b.lines[0]):
            if _follows_a_match(b, matched):
                continue
            prev = last.get(key)
            if prev is not None and 0 < b.start - prev.end <= CONT_GAP:
                prev.lines = (prev.lines + b.lines)[:2 * EVIDENCE_MAX * 10]
                prev.end = b.end
                continue
        nb = replace(b, lines=list(b.lines))
        out.append(nb)
        last[key] = nb
    return out


def _input_ends(scan: ScanResult) -> Dict[str, Optional[int]]:
    """The scan order number (seq) of each input's last line where the scan shows it: a line's seq is
    the lines of the inputs before it plus its line number, and the last input ends the scan."""
    base: Dict[str, int] = {}
    for m in scan.matches:
        base.setdefault(m.line.source, m.seq - m.line.lineno)
    for b in scan.blocks:
        base.setdefault(b.source, b.seq - b.start)
    srcs = list(scan.sources)
    ends: Dict[str, Optional[int]] = {}
    for i, src in enumerate(srcs):
        ends[src] = scan.lines if i == len(srcs) - 1 else base.get(srcs[i + 1])
    return ends


def crash_of(b: ErrorBlock, after: Optional[int], ended: bool = False, named: bool = False,
             logged: bool = False) -> Optional[Crash]:
    """What block B says about the job dying: an uncaught exception (a traceback that ends the
    process: its input ends within TAIL_LINES lines, AFTER, of it -- LOGGED_TAIL when a log record
    introduces it, as logging.exception prints a caught one -- or the attempt ENDED, or the launcher
    NAMED its rank), `Fatal Python error`, srun's report of a task that exited non-zero or died of a
    signal, slurmstepd's cancel line; None for anything else (an error line a process logged and
    went on, a traceback it caught and printed, SystemExit(0))."""
    lines = b.lines
    first = lines[0] if lines else ""
    order = _block_order(b)
    if _FATAL_PY.match(first):
        return Crash("fatal-python-error", b.rank, b.source, b.start, first[:200], list(lines), order, 0)
    m = _SRUN.match(first)
    if m:
        what = m.group(4)
        if what == "Completed" or what.startswith("Exited with exit code 0"):
            return None
        rank = b.rank
        if rank is None and m.group(2) == "task" and m.group(3).isdigit():
            rank = int(m.group(3))         # a Slurm task id: the rank when srun starts one task per rank
        return Crash("srun", rank, b.source, b.start, first[:200], list(lines), order, 1)
    if search(_SLURM_END, first[:300]):
        return Crash("slurm", b.rank, b.source, b.start, first[:200], list(lines), order, 2)
    left = None if (ended or named) else after      # lines the input went on for after the block
    if first.startswith(_TB_HEAD):
        exc = exception_line(lines)
        if (exc is not None and _CLEAN_EXIT.match(exc)) or b.intro.startswith(_UNRAISABLE):
            return None                    # a clean exit, or one CPython reports and ignores
        if left is not None and left > (LOGGED_TAIL if logged else TAIL_LINES):
            return None                    # the process went on: a caught exception it printed
        return Crash("uncaught-exception", b.rank, b.source, b.start, block_message(lines, b.source, b.end),
                     list(lines), order, 0)
    return _cpp_trailer_crash(b, order, left is not None and left > TAIL_LINES)


def _cpp_trailer_crash(b: ErrorBlock, order: Tuple[float, int], went_on: bool) -> Optional[Crash]:
    """A C++ exception's trailer (c10::Error: "Exception raised from X at F:N") where the input
    ends: a truncated paste of a process that died of it, as a traceback would be."""
    lines = b.lines
    trailer = next((k for k, ln in enumerate(lines[:3]) if ln.startswith(_C10_TRAILER)), None)
    if trailer is None or went_on:
        return None
    prev = lines[trailer - 1] if trailer else ""
    msg = prev if prev and exception_line([prev]) else lines[trailer].replace(" (most recent call first):", "")
    return Crash("uncaught-exception", b.rank, b.source, b.start, msg[:200], list(lines), order, 0)


_LOG_RECORD = lazy(r"(?:^|[\s\[|])(?:ERROR|CRITICAL|FATAL|WARNING|EXCEPTION)(?:[\]:|]|\s)")


def logged_tracebacks(blocks: List[ErrorBlock]) -> set:
    """Ids of the traceback blocks that a log record of their own stream introduces (the line just
    before them: "2026-12-03 14:54:45,023 ERROR train: skipping a bad sample", as logging.exception
    and logger.error(..., exc_info=True) print a caught exception)."""
    out = set()
    prev: Dict[Tuple[str, Optional[int]], ErrorBlock] = {}
    for b in sorted(blocks, key=lambda b: b.seq):
        key = (b.source, b.rank)
        p = prev.get(key)
        if (p is not None and b.lines and b.lines[0].startswith(_TB_HEAD) and p.lines
                and not p.lines[0].startswith(_TB_HEAD) and 0 < b.start - p.end <= CONT_GAP
                and search(_LOG_RECORD, p.lines[-1][:300])):
            out.add(id(b))
        prev[key] = b
    return out


def _peers(matches: List[Match], blocks: List[ErrorBlock]) -> List[HangSuspect]:
    """Peers that NCCL or gloo report gone (a closed socket, a failed proxy operation)."""
    texts: List[Tuple[Optional[int], str]] = [(m.line.rank, m.line.text) for m in matches
                                              if "peer" in m.line.text or "localRank" in m.line.text]
    texts += [(b.rank, x) for b in blocks for x in b.lines if "peer" in x or "localRank" in x]
    out: List[HangSuspect] = []
    seen = set()
    for rank, text in texts:
        who = f"rank {rank}" if rank is not None else "a rank"
        m = search(_PEER_ADDR, text[:MAX_TEXT])
        if m:
            peer = m.group(1) or (f"{m.group(2)}:{m.group(3)}" if m.group(2) else None) or m.group(4) or m.group(5)
            if peer and peer not in seen:
                seen.add(peer)
                out.append(HangSuspect(None, peer.rstrip(".,;"), f"{who} lost its connection to it: {text[:160]}"))
            continue
        m = search(_PEER_LOCAL, text[:MAX_TEXT])
        if m and f"localRank {m.group(1)}" not in seen:
            peer = f"localRank {m.group(1)}"
            seen.add(peer)
            out.append(HangSuspect(None, peer, f"{who}'s NCCL proxy lost its connection to it: {text[:160]}"))
    return out[:20]


def _flight_recorder(matches: List[Match]) -> Optional[FlightRecorder]:
    ranks = set()
    ev: List[Evidence] = []
    for m in matches:
        if search(_FLIGHT, m.line.text[:MAX_TEXT]):
            if m.line.rank is not None:
                ranks.add(m.line.rank)
            if len(ev) < EVIDENCE_MAX:
                ev.append(Evidence(m.line.source, m.line.lineno, m.line.rank, m.line.text))
    return FlightRecorder(sorted(ranks), ev) if ev else None


MAX_TEXT = 2000
# Where PyTorch's Flight Recorder dumps go and what reads them (torch 2.13.0: DebugInfoWriter::getWriter
# in libtorch_cpu.so; the analyser is the `torchfrtrace` console script of the torch wheel).
FR_DUMPS = ("each rank writes <prefix><rank> on its own node; <prefix> is $TORCH_FR_DUMP_TEMP_FILE, else "
            "$TORCH_NCCL_DEBUG_INFO_TEMP_FILE, else ${XDG_CACHE_HOME:-~/.cache}/torch/comm_lib_trace_rank_ "
            "(torch 2.13); the buffer holds TORCH_FR_BUFFER_SIZE (TORCH_NCCL_TRACE_BUFFER_SIZE) entries, "
            "2000 by default, 0 turns it off")
FR_ANALYSE = ("torchfrtrace <folder holding every rank's dump> -p comm_lib_trace_rank_ "
              "(python -m torch.distributed.flight_recorder.fr_trace; -j prints each rank's entries)")


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


def timeline(matches: List[Match], fps: Dict[Tuple[str, str], str], kinds: EventKinds,
             limit: int = TIMELINE_MAX) -> Tuple[List[TimelineEvent], int]:
    """Per-rank events for the report's timeline, one per log line (its most telling match), each
    naming the finding it belongs to (FPS: the fingerprint of each (pitfall, event kind), from
    _group), so an event's role is its finding's.  Over LIMIT events, the first event of each rank
    and pitfall is kept (up to half of LIMIT) and the rest is sampled evenly; returns the events and
    how many were left out."""
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
    events = [TimelineEvent(m.line.rank, m.order_ts, m.seq, m.pattern.id,
                            fps.get((m.pattern.id, kinds.get(id(m), event_kind([m]))))
                            or fingerprint(m.pattern.id, m.line.text),
                            m.role, m.line.source, m.line.lineno) for m in (one[i] for i in keep)]
    return events, len(one) - len(events)


def _erred(findings: List[Finding], blocks: List[ErrorBlock]) -> set:
    """Ranks that logged an error (a hang's culprits are the ranks that did not)."""
    return {r for f in findings if f.role != "info" for r in f.ranks} | {b.rank for b in blocks}


def _dropped_into(by_fp: Dict[str, Finding], by_pid: Dict[str, List[Finding]], pid: str, rank: Optional[int],
                  text: str) -> Optional[Finding]:
    """The finding that dropped lines of (PID, RANK, TEXT) count in (see _add_dropped), if any."""
    if text:
        return by_fp.get(fingerprint(pid, text))
    cands = by_pid.get(pid) or []
    return next((x for x in cands if rank in x.ranks), cands[0] if cands else None)


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
    for (pid, rank, text), n in dropped.items():
        f = _dropped_into(by_fp, by_pid, pid, rank, text)
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


def analyse(scan: ScanResult, decide_now: bool = True) -> Analysis:
    """What a scan shows, per attempt; a log with restarts is triaged per attempt and the last
    attempt is the headline.  DECIDE_NOW: decide the verdict here, from the log alone; the pipeline
    passes False, runs its analysers (step times) and then calls Analysis.decide itself, once."""
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
    head = cases[last]
    head.launcher_root_rank = scan.launcher_root_rank
    ends = _input_ends(scan)
    for g, c in enumerate(cases):
        c.ended = g < last
        logged = logged_tracebacks(c.blocks)
        for b in c.blocks:
            end = ends.get(b.source)
            after = None if end is None else end - (b.seq + b.end - b.start)
            cr = crash_of(b, after, c.ended, named=c is head and b.rank is not None
                          and b.rank == scan.launcher_root_rank, logged=id(b) in logged)
            if cr is not None:
                c.crashes.append(cr)
        for x in getattr(scan, "exits", None) or []:      # a death torchrun or the shell reports
            if x.group == g:
                c.crashes.append(Crash("launcher-exit", x.rank, x.source, x.line, x.text[:200], [x.text],
                                       (x.order_ts if x.order_ts is not None else float("inf"), x.seq), 1))
        ms = by_group.get(g, [])
        c.peers = _peers(ms, c.blocks)
        c.flight_recorder = _flight_recorder(ms)
    head.ranks_fn = lambda: list(scan.ranks_seen)
    unmatched, unmatched_omitted = _unmatched(head.blocks)
    events, events_omitted = timeline(by_group.get(last, []), grouped[last][1], grouped[last][2])
    notes = [f"regex switched off after repeated timeouts (fix the pattern): {r[:120]}" for r in scan.disabled_rules]
    a = Analysis(lines=scan.lines, sources=scan.sources, case=head, earlier=cases[:last],
                 unmatched=unmatched, unmatched_omitted=unmatched_omitted,
                 timeline=events, timeline_omitted=events_omitted + dropped,
                 launcher_root_rank=scan.launcher_root_rank, notes=notes)
    if decide_now:
        a.decide()
    return a
