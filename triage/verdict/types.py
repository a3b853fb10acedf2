"""The verdict stage's types: what a log shows (Evidence, Finding, Unmatched, TimelineEvent,
Crash, HangSuspect, FlightRecorder, Case, ConfigAnalysis), what is decided of it (FirstFailure,
AttemptVerdict, Verdict and its exit codes), and the caps on what is kept of a log.

Everything kept is bounded, whatever the log size: EVIDENCE_MAX evidence lines per finding
(`count` counts its occurrences, `matched_lines` and `rank_counts` its log lines, those the scan
only counted included), TIMELINE_MAX timeline events, UNMATCHED_MAX unexplained error signatures.
"""
from __future__ import annotations

from dataclasses import asdict, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..kinds import HEALTHY, PITFALL, UNEXPLAINED, Kind, Role, Severity
from ..kinds import OUTCOMES as _OUTCOMES
from ..record import record
from ..scan.results import ErrorBlock

if TYPE_CHECKING:  # pragma: no cover - annotations only (blame and config import this module's types)
    from ..config import Change, Violation


from ..caps import EVIDENCE_MAX, TIMELINE_MAX, UNMATCHED_MAX  # noqa: E402,F401 - the one set of caps

SAME_BURST_S = 30.0    # failures this close in time are one burst: the most specific one is primary
FAILING: Tuple[Role, ...] = ("root-cause", "cascade")
OUTCOMES = _OUTCOMES


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


@record
class Evidence:
    source: str
    line: int
    rank: Optional[int]
    text: str
    before: List[str] = field(default_factory=list)
    after: List[str] = field(default_factory=list)
    before_lines: List[int] = field(default_factory=list)   # line numbers of `before` / `after`
    after_lines: List[int] = field(default_factory=list)


@record
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
    # per-engine advice of its pattern (issue 40: patterns/*.yaml `advice`), and the settings the fix
    # names as the log's engine spells them (set with the fix when the log is that engine's: engine.py)
    advice: Dict[str, Any] = field(default_factory=dict)
    settings: List[str] = field(default_factory=list)
    action: str = ""              # its pattern's action (patterns/*.yaml, issue 43)

    @property
    def ranks_text(self) -> str:
        return rank_ranges(self.ranks)


@record
class Unmatched:
    source: str
    line: int
    rank: Optional[int]
    ranks: List[int]
    count: int                    # ranks (or rank-less inputs) that printed this signature
    lines: List[str]
    fingerprint: str


@record
class TimelineEvent:
    rank: Optional[int]
    t: Optional[float]
    seq: int
    pitfall: str
    fingerprint: str              # of the finding it belongs to: its role comes from the verdict
    rule_role: Role               # the rule's own role (for a line whose finding is not kept)
    source: str
    line: int


@record
class FirstFailure:
    """An error no pattern explains that came first; the generic findings are its cascade."""
    rank: Optional[int]
    source: str
    line: int
    message: str                  # the error line itself (an exception line, never a frame or caret)
    explained: bool = False
    lines: List[str] = field(default_factory=list)   # the error block
    kind: str = "error"           # uncaught-exception | fatal-python-error | srun | slurm | launcher | error


@record
class Crash:
    """Evidence, outside the patterns, that a process or the job died: see `crashes`."""
    kind: str                     # uncaught-exception | fatal-python-error | srun | slurm | launcher-exit
    rank: Optional[int]
    source: str
    line: int
    message: str
    lines: List[str]
    order: Tuple[float, int]
    weight: int = 0               # 0 a process's own error, 1 a launcher's report, 2 a scheduler's cancel or an
    #                               `own` form's line, 3 another failure form's line (crashes.FORM_WEIGHT): the
    #                               lower, the more it is looked to
    form: str = ""                # the failure form whose line it is (failure_forms.yaml), "" for none


@record
class HangSuspect:
    """A likely culprit of a hang: a rank that logged nothing failing, or a peer NCCL names."""
    rank: Optional[int]
    peer: Optional[str]
    because: str


@record
class FlightRecorder:
    """PyTorch Flight Recorder dump lines seen in the log (ProcessGroupNCCL's dump on a timeout)."""
    ranks: List[int]
    evidence: List[Evidence]


@record
class HangDetail:
    """The hang's wavefront (issue 43, collectives.py): the collective the others wait on in one process
    group and the ranks that never reached it, said in one sentence, with its evidence lines."""
    group: Optional[str]          # the group's description (TENSOR_MODEL_PARALLEL_GROUP, default_pg) or "PG <id>"
    kind: str                     # default | TP | PP | DP | EP | CP | TP+CP | TP+DP | TP+PP | other | unknown
    group_ranks: List[int]        # the global ranks the log shows in the group
    op: Optional[str]             # all_reduce, all_gather, ... (None: no line names it)
    seq: int                      # its sequence number in the group
    behind: List[int]             # the culprits: never enqueued it (the silent ones included)
    silent: List[int]             # of those, the ranks that printed nothing about the group
    waited: List[int]             # the ranks that timed out waiting on it
    waited_s: Optional[float]     # their timeout, seconds
    in_graph: bool                # CUDA graphs were captured before the hang
    sentence: str
    evidence: List[Evidence]
    source: str = "log"           # log | log+flight-recorder | flight-recorder


@record
class AttemptVerdict:
    attempt: int
    primary: Optional[str]
    first_failing_rank: Optional[int]
    summary: str


# exit status of each outcome (the CLI's contract, README "Exit codes"); --fail-on refines it
EXIT_OK, EXIT_FOUND, EXIT_UNEXPLAINED = 0, 1, 3
OUTCOME_EXIT = {HEALTHY: EXIT_OK, PITFALL: EXIT_FOUND, UNEXPLAINED: EXIT_UNEXPLAINED}


@record(frozen=True)
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
    signature: Optional[str]      # one per job: pitfall id + title, or the unexplained error's group key
    first_failure: Optional[FirstFailure] = None
    attempts: Tuple[AttemptVerdict, ...] = ()      # one per attempt of a restarted job
    hang: bool = False            # the primary is a timeout, a hung watchdog or a lost peer
    hang_suspects: Tuple[HangSuspect, ...] = ()
    flight_recorder: Optional[FlightRecorder] = None
    hang_detail: Optional[HangDetail] = None       # the wavefront (issue 43): who never reached what
    cascade: Tuple[str, ...] = ()  # the fingerprints of the root cause's cascade findings, in order
    # an unexplained failure's message-based signature (`unexplained-failure: <masked error line>`,
    # the signature before issue 24's grouping, groupkey.py); None for a pitfall or a healthy job
    message_signature: Optional[str] = None
    # what to do next (issue 43, action.py): stop | drain-node | retry | change-config | none, why, the host
    action: str = "none"
    action_why: str = ""
    action_host: Optional[str] = None
    # the action the failure form of an unexplained failure's first line says (failure_forms.yaml), "" for none
    failure_action: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome != HEALTHY

    def roles(self) -> Dict[str, Role]:
        return {f.fingerprint: f.role for f in self.findings}

    def alert_key(self) -> Optional[Tuple[Optional[str], Optional[str], Optional[int]]]:
        """What `triage watch` alerts on, decided here beside exit_code: the candidate root cause
        (signature, primary pitfall, first failing rank) of a failed job whose primary, if any, is of
        severity error or critical (the gate of exit_code under --fail-on error); None: no alert."""
        if not self.failed:
            return None
        p = self.primary
        if p is not None and p.severity not in ("error", "critical"):
            return None
        return (self.signature, p.pitfall if p is not None else None, self.first_rank)

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


@record
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
    collectives: List[Any] = field(default_factory=list)   # collectives.Observation of the timeout lines
    capture: Optional[Evidence] = None         # a CUDA graph capture line of the log (steps.StepLog)
    dumps: List[Any] = field(default_factory=list)   # inputs.frdump.FRDump: the job's Flight Recorder dumps
    ended: bool = False                        # an earlier attempt (the job restarted after it)


@record
class Suspect:
    """A changed config key, scored by what blames it."""
    key: str
    old: Any
    new: Any
    score: float
    because: List[str] = field(default_factory=list)     # the pitfalls that blame it
    unrelated: bool = False                               # score 0: nothing blames it
    evidence: List[str] = field(default_factory=list)    # why, in a few lines

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


@record
class ConfigAnalysis:
    config: Dict[str, Any]                     # the run's canonical config
    violations: List["Violation"]              # the config rules it breaks
    diff: Optional[List["Change"]] = None      # changes since the baseline (None: no baseline)
    suspects: List[Suspect] = field(default_factory=list)

    @property
    def blamed(self) -> Optional[Suspect]:
        """The top suspect: the first change something blames (blame ranks them), or None (issue 41: the
        store's blamed key and the report's blamed row both read this, never derive it again)."""
        return next((s for s in self.suspects if not s.unrelated), None)
