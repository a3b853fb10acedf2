"""The events `triage watch` emits: one JSON object per line (--format jsonl, schema
`triage schema watch-event`) or one text line each.

Every event has `event` (root-cause | cascade | hang-suspected | healthy-progress | waiting | ended), `time`
(UTC, ISO 8601) and `elapsed_s` (seconds since watch started).  Fields are only ever added.
"""
from __future__ import annotations

import json
import time
from typing import Any, Dict, List, Optional

from ..redact import redact, redact_obj

KINDS = ("root-cause", "cascade", "hang-suspected", "healthy-progress", "waiting", "ended")


def _now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def base(kind: str, elapsed: float) -> Dict[str, Any]:
    return {"event": kind, "time": _now_iso(), "elapsed_s": round(elapsed, 3)}


def finding_fields(f: Any) -> Dict[str, Any]:
    return {"pitfall": f.pitfall, "title": f.title, "severity": f.severity, "rank": f.rank,
            "ranks": list(f.ranks), "at": f"{f.source}:{f.line}" if f.source else None,
            "line": f.evidence[0].text[:300] if f.evidence else None, "fingerprint": f.fingerprint}


def verdict_fields(a: Any, fail_on: str) -> Dict[str, Any]:
    """The verdict of analysis A as event fields (the same names as analyze's JSON where they exist)."""
    v = a.verdict
    out: Dict[str, Any] = {"outcome": v.outcome, "exit_code": v.exit_code(fail_on), "summary": v.summary,
                           "title": v.title, "signature": v.signature, "rank": v.first_rank,
                           "rank_by": v.first_rank_by, "hang": v.hang}
    p = v.primary
    out["pitfall"] = p.pitfall if p is not None else None
    out["severity"] = p.severity if p is not None else None
    if p is not None:
        out["at"] = f"{p.source}:{p.line}" if p.source else None
        out["line"] = p.evidence[0].text[:300] if p.evidence else None
    elif v.first_failure is not None:
        ff = v.first_failure
        out["at"] = f"{ff.source}:{ff.line}"
        out["line"] = ff.message[:300]
    else:
        out["at"] = out["line"] = None
    return out


def to_json(ev: Dict[str, Any]) -> str:
    return json.dumps(redact_obj(ev), sort_keys=False, default=str)


def _steps(steps: Dict[str, int], limit: int = 16) -> str:
    items = list(steps.items())
    s = " ".join(f"{r}:{n}" for r, n in items[:limit])
    return s + (f" ... (+{len(items) - limit} ranks)" if len(items) > limit else "")


def _rank(r: Optional[int]) -> str:
    return f"rank {r}: " if r is not None else ""


def to_text(ev: Dict[str, Any]) -> str:
    """One line per event (an alert a person reads)."""
    k = ev["event"]
    at = f" -- {ev['at']}" if ev.get("at") else ""
    if k == "root-cause":
        what = ev.get("pitfall") or ev.get("outcome")
        sev = f" [{ev['severity']}]" if ev.get("severity") else ""
        rev = " (revised)" if ev.get("revised") else ""
        line = (f"triage watch: ROOT CAUSE{rev} after {ev['elapsed_s']:.1f}s: {_rank(ev.get('rank'))}{what}{sev} "
                f"{ev.get('title') or ''}{at}")
    elif k == "cascade":
        line = (f"triage watch: cascade: {_rank(ev.get('rank'))}{ev.get('pitfall')} ({ev.get('title')}) on ranks "
                f"{ev.get('ranks_text') or '-'}{at}")
    elif k == "hang-suspected":
        sus = ", ".join(str(r) for r in ev.get("suspects") or []) or "none stands out"
        line = (f"triage watch: HANG SUSPECTED: no rank advanced for {ev['stalled_s']:.0f}s (stall window "
                f"{ev['stall_s']:.0f}s); ranks that advanced least: {sus}; last steps {_steps(ev['last_step'])}")
    elif k == "healthy-progress":
        st = f" (step {ev['step_s']:.2f}s)" if ev.get("step_s") else ""
        line = f"triage watch: healthy: last steps {_steps(ev['last_step']) or '-'}{st}"
    elif k == "waiting":
        line = waiting_text(ev.get("missing") or [])
    else:
        code = (f"the verdict's exit {ev.get('exit_code')} (the process exits by the signal)"
                if ev.get("reason") == "interrupted" else f"exit {ev.get('exit_code')}")
        line = f"triage watch: ended ({ev.get('reason')}): {ev.get('summary') or ev.get('outcome')}; {code}"
    return redact(line)


def waiting_text(missing: List[str]) -> str:
    """The heartbeat before a line was read: never "healthy"."""
    if missing:
        names = ", ".join(repr(p) for p in missing[:5]) + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else "")
        return f"triage watch: waiting for {names} to appear"
    return "triage watch: nothing logged yet"


def schema_kinds() -> List[str]:
    return list(KINDS)
