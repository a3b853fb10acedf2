"""The verdict, decided once (`decide`) per attempt: primary, roles, first failing rank and how it
was established, first failure, hang suspects, outcome, summary, title and signature.

The outcome: `pitfall` (a known root cause), `unexplained-failure` (the job evidently failed -- a
failing finding, an uncaught exception ending a traceback, `Fatal Python error`, a launcher's
failure summary, Slurm's task exit or cancel lines -- and no pattern explains the root cause) or
`healthy`.  An analyser's finding (a step-time verdict) is primary only when the log shows no
failure.  A verdict whose primary is a timeout, a hung watchdog or a lost peer is a hang: no rank
"failed first"; the suspects are the ranks that logged nothing failing and the peers NCCL names.
"""
from __future__ import annotations

from dataclasses import field, replace
from typing import Dict, List, Optional, Sequence, Tuple

from ..kinds import HEALTHY, PITFALL, UNEXPLAINED, Role
from ..record import record
from ..redact import redact
from ..scan.results import ErrorBlock
from .action import PriorAttempt, decide_action
from .collectives import culprit, with_dumps
from .crashes import first_crash, form_action
from .frtrace import first_disagreement
from .groupkey import unexplained_signatures
from .hangs import _hang_suspects
from .roles import _waiting, assign_roles, unexplained_first
from .summary import _cascade_clause, _hang_summary, _summary
from .types import FAILING, AttemptVerdict, Case, Finding, FirstFailure, HangDetail, HangSuspect, Verdict
from .unexplained import _block_kind, _block_message

_ROLE_RANK: Dict[Role, int] = {"root-cause": 0, "cascade": 1, "info": 2}


@record
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
    failure_form: str = ""        # the failure form of the first crash's line (failure_forms.yaml), "" for none


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
    for f in d.log:                 # one root cause per verdict: what accompanied or followed it is its cascade
        if f is not p and f.role == "root-cause":
            f.role = "cascade"
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
        d.failure_form = crash.form
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
    for f in extra:                 # a step-time finding that is not the root cause is an observation
        if f is not d.primary and f.role == "root-cause":
            f.role = "info"
    findings = d.log + extra
    findings.sort(key=lambda f: (f is not d.primary, _ROLE_RANK[f.role], -f.priority, f.order))
    outcome = PITFALL if d.primary is not None else UNEXPLAINED if log_failed else HEALTHY
    return _verdict(d, outcome, tuple(findings), case)


def _verdict(d: _Draft, outcome: str, findings: Tuple[Finding, ...], case: Case) -> Verdict:
    p, ff = d.primary, d.first_failure
    title = p.title if p is not None else (ff.message if ff is not None and outcome != HEALTHY else d.summary)
    # the signature is redacted as the store, the fleet view and the known-issue table redact it (mask
    # redacts before it masks; once more after the cut, which could leave `password=<red`): one
    # signature wherever it is shown, stored or looked up.  An unexplained failure's is its group key
    # (groupkey.py: the exception type and the top in-app frame), its masked error line kept as the
    # message signature
    message_signature: Optional[str] = None
    if p is not None:                 # the pattern's title is fixed text: nothing in it varies by job
        signature: Optional[str] = redact(f"{p.pitfall}: {' '.join(p.title.split())}")
    elif outcome == UNEXPLAINED:
        signature, message_signature = unexplained_signatures(ff.lines if ff is not None else (),
                                                              ff.message if ff is not None else d.summary)
    else:
        signature = None
    return Verdict(outcome=outcome, primary=p, findings=findings, first_rank=d.first_rank,
                   first_rank_by=d.first_rank_by if d.first_rank is not None else None, summary=d.summary,
                   title=" ".join(title.split())[:300], signature=signature, first_failure=ff, hang=d.hang,
                   hang_suspects=tuple(d.suspects), flight_recorder=case.flight_recorder,
                   hang_detail=_hang_detail(case, d) if outcome != HEALTHY else None,
                   cascade=tuple(f.fingerprint for f in findings if f.role == "cascade"),
                   message_signature=message_signature,
                   failure_action=form_action(d.failure_form) if outcome == UNEXPLAINED else "")


def _logged_ranks(d: _Draft) -> List[int]:
    """The ranks the verdict's findings and first failure name (what a crash's wavefront needs: the
    crashed rank)."""
    out = {r for f in d.log for r in (f.ranks or ([f.rank] if f.rank is not None else [])) if r is not None}
    for r in (d.first_rank, d.first_failure.rank if d.first_failure is not None else None):
        if r is not None:
            out.add(r)
    return sorted(out)


def _hang_detail(case: Case, d: _Draft) -> Optional[HangDetail]:
    """The hang's wavefront from the timeout and watchdog lines (collectives.py) and the Flight Recorder
    dumps (frtrace.py), or None.  The default group's silent ranks are every rank the log shows (the
    scan's ranks_fn, which reads the inputs again) only in a hang; after a crash they are the ranks the
    findings name (a 256 MiB log read again cost 6 s on 16 cores)."""
    fr = first_disagreement(case.dumps) if case.dumps else None
    if not case.collectives and fr is None:
        return None
    fn = case.ranks_fn if d.hang else (lambda: _logged_ranks(d))
    cap = case.capture
    if cap is not None:            # a capture after the hang's first line in the same input is not before it
        first = min((o.line for o in case.collectives if o.source == cap.source), default=None)
        if first is not None and cap.line > first:
            cap = None
    h = culprit(case.collectives, fn if fn is not None else (lambda: []), cap) if case.collectives else None
    return with_dumps(h, fr, cap) if fr is not None else h


def decide(case: Case, analysers: Sequence[Finding] = (), earlier: Sequence[Case] = (),
           progressed: bool = False, reached: Optional[int] = None, prior: Optional[PriorAttempt] = None) -> Verdict:
    """The verdict of a log: primary, roles, first failing rank, first failure, outcome and summary,
    decided here and nowhere else.  CASE is the last attempt (the headline), ANALYSERS the findings
    of the analysers (step times), EARLIER the earlier attempts of a restarted job (each gets its
    own verdict, in `attempts`); PROGRESSED: the last attempt got further than the one before (action);
    REACHED: the highest iteration of the last attempt; PRIOR: the attempt before, from its own files."""
    v = _decide_attempt(case, analysers)
    if not earlier:
        return _with_action(v, progressed, reached, prior)
    n = len(earlier) + 1
    per = [_decide_attempt(c, ()) for c in earlier] + [v]
    return _with_action(replace(v, attempts=tuple(AttemptVerdict(i + 1, x.primary.pitfall if x.primary else None,
                                                                 x.first_rank, x.summary) for i, x in enumerate(per)),
                                summary=f"attempt {n} of {n}: " + v.summary), progressed, reached, prior)


def _with_action(v: Verdict, progressed: bool = False, reached: Optional[int] = None,
                 prior: Optional[PriorAttempt] = None) -> Verdict:
    """V with its action (action.py): decided here, with the rest of the verdict."""
    action, why, host = decide_action(v.outcome, v.primary, v.attempts, progressed, v.signature, reached, prior,
                                      v.failure_action)
    return replace(v, action=action, action_why=why, action_host=host)
