"""Compatibility face: the findings and verdict stage lives in the triage.verdict package (one
module per job: types, fingerprint, grouping, unexplained, crashes, hangs, roles, summary, decide,
timeline, analysis, analyse).  This module re-exports the names code imported from
triage.findings; patch settings (TAIL_LINES, EVIDENCE_MAX, ...) on the module that owns them."""
from .verdict.analyse import analyse
from .verdict.analysis import Analysis
from .verdict.crashes import LOGGED_TAIL, TAIL_LINES, crash_of, first_crash
from .verdict.decide import decide
from .verdict.fingerprint import fingerprint, mask
from .verdict.grouping import OCCURRENCE_GAP, EventKinds, event_kind, make_finding, match_waits
from .verdict.hangs import FR_ANALYSE, FR_DUMPS, MAX_TEXT
from .verdict.roles import assign_roles, unexplained_first
from .verdict.timeline import timeline
from .verdict.types import (
    EVIDENCE_MAX,
    EXIT_FOUND,
    EXIT_OK,
    EXIT_UNEXPLAINED,
    FAILING,
    OUTCOME_EXIT,
    OUTCOMES,
    SAME_BURST_S,
    TIMELINE_MAX,
    UNMATCHED_MAX,
    AttemptVerdict,
    Case,
    ConfigAnalysis,
    Crash,
    Evidence,
    Finding,
    FirstFailure,
    FlightRecorder,
    HangSuspect,
    TimelineEvent,
    Unmatched,
    Verdict,
    rank_ranges,
)
from .verdict.unexplained import CONT_GAP, block_message, exception_line, logged_tracebacks, merge_continuations

__all__ = ["EVIDENCE_MAX", "TIMELINE_MAX", "UNMATCHED_MAX", "OCCURRENCE_GAP", "TAIL_LINES", "LOGGED_TAIL", "CONT_GAP",
           "SAME_BURST_S", "FAILING", "OUTCOMES", "mask", "fingerprint", "rank_ranges", "Evidence", "Finding",
           "Unmatched", "TimelineEvent", "FirstFailure", "Crash", "HangSuspect", "FlightRecorder", "AttemptVerdict",
           "EXIT_OK", "EXIT_FOUND", "EXIT_UNEXPLAINED", "OUTCOME_EXIT", "Verdict", "Case", "ConfigAnalysis", "Analysis",
           "match_waits", "event_kind", "EventKinds", "make_finding", "assign_roles", "unexplained_first",
           "exception_line", "block_message", "first_crash", "decide", "merge_continuations", "crash_of",
           "logged_tracebacks", "MAX_TEXT", "FR_DUMPS", "FR_ANALYSE", "timeline", "analyse"]
