"""One triaged log (`Analysis`): the scan's facts and the analysers' results, and the verdict,
decided by one explicit call (`Analysis.decide`) once every analyser has run."""
from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..record import record
from ..scan.jobfacts import LogFacts
from .action import PriorAttempt
from .decide import decide
from .job import JobInfo
from .types import Case, ConfigAnalysis, Finding, FirstFailure, TimelineEvent, Unmatched, Verdict


@record
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
    log_facts: LogFacts = field(default_factory=LogFacts)   # the log's first/last timestamps, its hosts (scan)
    job: Optional[JobInfo] = None              # which job it is (the report's header): job.job_info, once identified
    engine: Optional[str] = None               # the stack the log is of (engine.py): the advice fits it
    # an unexplained failure with its last good log: the lines only the failed run printed (novelty.py)
    novel_lines: List[Any] = field(default_factory=list)
    # blame not settled: the single-variable runs that separate the candidate graph changes (bisect.py)
    bisect: List[Any] = field(default_factory=list)
    # store.content_hash of the inputs, hashed as the scan read them (pipeline.Options(content_hash=True));
    # None: not asked for, or an input was not read whole (the store then reads the inputs itself)
    content_hash: Optional[str] = None
    reached: Optional[int] = None              # the highest iteration the log's last attempt reached (steps.StepLog)
    _verdict: Optional[Verdict] = field(default=None, repr=False)

    @property
    def attempts(self) -> int:
        return len(self.earlier) + 1

    def decide(self, analysers: Sequence[Finding] = (), progressed: bool = False,
               prior: Optional[PriorAttempt] = None) -> Verdict:
        """Decide the verdict, once, from the log's findings and the analysers' (step times);
        PROGRESSED: a restarted job's last attempt got past the iterations of the one before; PRIOR:
        the attempt before, analysed from its own files (its signature and highest iteration)."""
        if self._verdict is not None:
            raise RuntimeError("the verdict is decided once: decide() was called before")
        self._verdict = decide(self.case, analysers, self.earlier, progressed, self.reached, prior)
        self.case.ranks_fn = None      # it holds the whole scan; the verdict asked it what it needed
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
