"""What a scan returns: the matches, the error blocks no pattern explained, the deaths a
launcher reports, and the scan's own counts (ScanResult)."""
from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Set, Tuple

from ..inputs.sources import Line
from ..record import record
from .jobfacts import LogFacts

if TYPE_CHECKING:
    from ..kinds import Role
    from ..patterns import MatchRule, Pattern

StreamKey = Tuple[str, Optional[int]]


@record
class Match:
    pattern: Pattern
    rule: MatchRule
    line: Line
    seq: int                      # order of the line in the whole scan
    order_ts: Optional[float]     # the line's time, or the last time seen before it in its stream
    context: List[Line] = field(default_factory=list)   # lines that satisfied `context` requirements
    group: int = 0                # the attempt (restart segment) it belongs to
    before: List[Line] = field(default_factory=list)    # a few lines before it in its stream
    after: List[Line] = field(default_factory=list)     # and after it

    @property
    def role(self) -> Role:
        return self.rule.role


@record
class ErrorBlock:
    source: str
    rank: Optional[int]
    start: int
    end: int
    lines: List[str]
    seq: int
    order_ts: Optional[float]
    explained: bool = False
    group: int = 0
    intro: str = ""          # a traceback's line before it in its stream ("Exception ignored in: ...")
    exc_line: int = 0        # a traceback's exception line (its line number; 0: not reached), which the
    #                          "lines after it" of the crash rule count from (message lines may follow it)
    logged: bool = False     # a traceback a logger printed (its lines carry a log record's header: vLLM's
    #                          "ERROR 12-04 07:00:05 [core.py:1759] Traceback ...") -- a caught one


@record
class ScanResult:
    matches: List[Match]
    blocks: List[ErrorBlock]
    lines: int
    sources: List[str]
    launcher_root_rank: Optional[int] = None
    launcher_summaries: List[Tuple[str, int]] = field(default_factory=list)   # (input, root-cause rank)
    attempts: int = 1
    disabled_rules: List[str] = field(default_factory=list)
    # matches not kept (Core.add_match): (pattern id, rank, text of the first one) -> count;
    # the text fingerprints like the kept ones of the same message ("" when past MAX_DROPPED_KEYS)
    dropped: Dict[Tuple[str, Optional[int], str], int] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)        # about the inputs (unreadable, capped, ...)
    exits: List["LauncherExit"] = field(default_factory=list)   # deaths the launcher / shell reports
    bytes: int = 0                                        # bytes read (block driver)
    anchor_engine: str = ""                               # "hyperscan" or "re" (block driver)
    regex_timeouts: int = 0                               # catalog regex searches cut off by rx.TIMEOUT
    ranks_fn: Optional[Callable[[], Set[int]]] = field(default=None, repr=False)
    facts: LogFacts = field(default_factory=LogFacts)    # first/last timestamps and hosts (job header)
    # scan order number (seq) of each input's last line, when the inputs' seqs are not contiguous
    # (the live driver numbers input i from i * SEQ_STRIDE); None: worked out from `lines` (crashes._input_ends)
    input_ends: Optional[Dict[str, int]] = field(default=None, repr=False)
    # store.content_hash of the inputs, hashed as the block driver read them (scan_paths(content_hash=True));
    # None when not asked for or an input was not read whole (digest.py)
    content_hash: Optional[str] = None
    _ranks: Optional[List[int]] = field(default=None, repr=False)

    @property
    def ranks_seen(self) -> List[int]:
        """Ranks with any line in the last attempt.  The block driver works them out only when
        asked (a second C-level pass over the inputs; only hang verdicts need them)."""
        if self._ranks is None:
            self._ranks = sorted(self.ranks_fn()) if self.ranks_fn is not None else []
        return self._ranks



@record
class LauncherExit:
    source: str
    line: int
    rank: Optional[int]
    text: str
    seq: int
    order_ts: Optional[float]
    group: int = 0
    form: str = ""       # a failure form's id (triage/scan/failure_forms.yaml); "" for the launcher's own
    tail: int = 0        # > 0: evidence only when its input ends within this many lines of it

