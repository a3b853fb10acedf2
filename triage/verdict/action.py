"""What to do next (issue 43): every verdict carries an action a scheduler or a platform team can act on,
from the pattern files' `action` -- stop (deterministic: a config assertion, a capture-illegal op; a
retry burns GPU hours), drain-node then retry (a GPU or node fault: the host named where the log names
it), retry (a transient network or storage fault), change-config (out of memory, capture memory) --
and `stop` for the same root cause in two attempts of one job in a row with no progress between them
(no iteration past those the attempt before reached)."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..kinds import HEALTHY, UNEXPLAINED
from ..record import record
from ..scan.jobfacts import hosts_in
from .types import AttemptVerdict, Finding

NONE, RETRY, STOP = "none", "retry", "stop"
_WHY = {
    "stop": "deterministic: the same config and code fail the same way, a retry burns GPU hours; fix it first",
    "drain-node": "a GPU or node fault: take the node out of the pool, then retry on another",
    "retry": "transient (network, storage, a peer that went away): retry as is",
    "change-config": "the run needs another setting (memory, graph scope): change it, then retry",
}


@record(frozen=True)
class PriorAttempt:
    """The attempt before this one, analysed from its own files (fleet, `analyze --attempt` with a store)."""
    attempt: int
    signature: Optional[str]      # its verdict's signature (the store's, fleet's group key)
    reached: Optional[int]        # the highest iteration its log reached (None: no step line, or unknown)


def no_progress(signature: Optional[str], reached: Optional[int], prior: Optional[PriorAttempt]) -> bool:
    """The same root cause as the attempt before, with no iteration past the one it reached (an attempt
    that printed no step line made none; one that got further keeps its root cause's action)."""
    if prior is None or not signature or signature != prior.signature:
        return False
    return not (reached is not None and (prior.reached is None or reached > prior.reached))


def decide_action(outcome: str, primary: Optional[Finding], attempts: Sequence[AttemptVerdict] = (),
                  progressed: bool = False, signature: Optional[str] = None, reached: Optional[int] = None,
                  prior: Optional[PriorAttempt] = None, failure_action: str = "") -> Tuple[str, str, Optional[str]]:
    """(action, why, host) of a verdict.  PROGRESSED: the last attempt got past the iterations the one
    before reached (then the same root cause again is not yet a reason to stop).  PRIOR: the attempt
    before, from its own files; SIGNATURE and REACHED: this verdict's signature and highest iteration.
    FAILURE_ACTION: what the failure form of an unexplained failure's first line says (failure_forms.yaml
    `action`: a script or a command that is not there fails the same way on a retry)."""
    if outcome == HEALTHY:
        return NONE, "the job did not fail", None
    if no_progress(signature, reached, prior):
        assert prior is not None
        got = (f"iteration {reached} again, no further than attempt {prior.attempt}" if reached is not None
               else "no iteration at all")
        return STOP, (f"the same root cause as attempt {prior.attempt} ({signature}), and this attempt reached "
                      f"{got}: a retry fails again"), None
    if (len(attempts) >= 2 and attempts[-1].primary is not None and attempts[-1].primary == attempts[-2].primary
            and not progressed):
        return STOP, (f"the same root cause ({attempts[-1].primary}) in attempts {attempts[-2].attempt} and "
                      f"{attempts[-1].attempt}, with no iteration past the attempt before: a retry fails again"), None
    if outcome == UNEXPLAINED and failure_action:
        why = "no known pattern, but the first failure's line says so: " + _WHY.get(failure_action, "")
        return failure_action, why, None
    if outcome == UNEXPLAINED or primary is None or not primary.action:
        return RETRY, "no known root cause: one retry (the same failure again means stop and look)", None
    host = None
    if primary.action == "drain-node":
        hosts = hosts_in(e.text for e in primary.evidence)
        host = hosts[0] if hosts else None
    return primary.action, _WHY.get(primary.action, ""), host
