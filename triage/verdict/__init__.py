"""The verdict stage: a scan -> findings -> ONE verdict, then blame and the step-time analysis.

A finding is one (pitfall, event) of an attempt: the same failure on 1024 ranks is one finding
with count 1024 and a rank list.  `analyse` turns a scan into an `Analysis` holding what the log
shows (findings with the roles their rules give, error blocks no pattern explains, the timeline);
analysers (step times) add their findings to it; the verdict -- outcome, primary, roles, first
failing rank, first failure, summary -- is decided ONCE, by `Analysis.decide`, after every
analyser ran.

    types        Evidence, Finding, Case, Verdict (and its exit codes), ...; the caps on what is kept
    fingerprint  masking what varies between ranks and jobs; a finding's fingerprint
    grouping     matches -> findings (occurrences, events, evidence); make_finding for analysers
    unexplained  error blocks no pattern explains: continuations, messages, unmatched signatures
    crashes      evidence outside the patterns that a process or the job died; the first crash
    hangs        who a hang waits for: silent ranks, lost peers, the Flight Recorder
    roles        roles and the primary; an unexplained error that came before a generic primary
    summary      the verdict's one-line summary (a hang's too)
    decide       the verdict rules, per attempt: decide -> Verdict
    timeline     the report's per-rank timeline
    analysis     Analysis: one triaged log and its verdict, decided once
    analyse      gather(scan) -> Analysis, per attempt (analyse: decided from the log alone); matched lines the
                 scan dropped
    blame        rank the config changes since the last good run by the findings implicating them
    steps        step times: steady state, noise-aware comparison, the step-time verdict

triage/findings.py, triage/blame.py and triage/steps.py remain as compatibility faces re-exporting
the names code imported from them; patch settings on the module that owns them.
"""
from .analyse import analyse, gather
from .analysis import Analysis
from .blame import Suspect, blame
from .decide import decide
from .grouping import make_finding
from .steps import StepLog, assess, compare
from .types import (
    EXIT_FOUND,
    EXIT_OK,
    EXIT_UNEXPLAINED,
    Case,
    ConfigAnalysis,
    Evidence,
    Finding,
    FirstFailure,
    Verdict,
)

__all__ = ["EXIT_FOUND", "EXIT_OK", "EXIT_UNEXPLAINED", "Analysis", "Case", "ConfigAnalysis", "Evidence", "Finding",
           "FirstFailure", "StepLog", "Suspect", "Verdict", "analyse", "assess", "blame", "compare", "decide",
           "gather", "make_finding"]
