"""Which job a report is about (issue 24): its id and attempt (jobid.identify), the hosts its log
names, the time span the log itself prints (never a file's mtime: a copied log is "today"), when it
was analysed and by which triage.  Every report's header shows it; the store keeps the hosts and
the span (store.record_of), and a job's date is its log's last timestamp."""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..lazyre import lazy_re
from ..record import record
from ..scan.jobfacts import HOSTS_MAX, LogFacts, hosts_in

NODELIST_MAX = 200
_NODELIST = lazy_re(r"[A-Za-z0-9.\-_\[\],]{1,%d}" % NODELIST_MAX)     # Slurm's "node-[1-4,7],gpu-9"


@record(frozen=True)
class JobInfo:
    """The report's job header.  Times are epoch seconds (UTC); None when the log prints none."""
    job_id: str
    attempt: int
    id_source: str                        # where the id came from: option | env:VAR | name | path | stdin
    hosts: Tuple[str, ...]                # the first HOSTS_MAX hosts the log names (Slurm's node list first)
    hosts_more: int                       # distinct hosts beyond them
    log_start: Optional[float]            # the log's first and last timestamps
    log_end: Optional[float]
    analysed_at: float
    triage_version: str
    several_jobs: Optional[Dict[str, Any]] = None   # the inputs look like several jobs (several_jobs)


# Inputs whose logs fall in time ranges this far apart are not one job's: a requeued job waits hours,
# not days, and one job's ranks log at the same time (issue 45: a directory of unrelated logs read as
# one job spanning 473 days).
JOBS_APART_S = 3 * 86400
JOB_IDS_SHOWN = 20


def several_jobs(spans: Sequence[Tuple[float, float]], paths: Sequence[str] = (),
                 job_ids: Sequence[str] = (), commands: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
    """The inputs' time ranges SPANS (each input's first and last timestamp), merged where they overlap
    or lie less than JOBS_APART_S apart; two or more ranges, two or more Slurm job ids the logs name
    (JOB_IDS), or inputs whose first launch lines start different scripts (COMMANDS) are several jobs:
    what to say, else None."""
    ids = sorted(set(job_ids), key=lambda x: (len(x), x))
    ranges: List[List[float]] = []
    for a, b in sorted(spans):
        if ranges and a - ranges[-1][1] < JOBS_APART_S:
            ranges[-1][1] = max(ranges[-1][1], b)
        else:
            ranges.append([a, b])
    scripts = sorted(set(commands))
    if len(ranges) < 2 and len(ids) < 2 and len(scripts) < 2:
        return None
    gap = max((ranges[i + 1][0] - ranges[i][1] for i in range(len(ranges) - 1)), default=0.0)
    span = ranges[-1][1] - ranges[0][0] if ranges else 0.0
    dirs = sorted({p for p in paths if p != "-" and os.path.isdir(p)})
    how = (f"triage fleet run --jobs-in {dirs[0]}" if len(dirs) == 1 else "triage fleet run LOG_OR_DIR...")
    why = []
    if len(ranges) >= 2:
        why.append(f"their logs fall in {len(ranges)} time ranges up to {gap / 86400:.0f} days apart "
                   f"({span / 86400:.0f} days in all)")
    if len(ids) >= 2:
        why.append(f"they name {len(ids)} Slurm job ids ({', '.join(ids[:4])}{', ...' if len(ids) > 4 else ''})")
    if len(scripts) >= 2:
        why.append(f"they launch {len(scripts)} different scripts ({', '.join(scripts[:4])}"
                   f"{', ...' if len(scripts) > 4 else ''})")
    msg = (f"the inputs look like several jobs: {' and '.join(why)}, and one verdict mixes them (cascades of "
           f"another job's failure); triage each job on its own, or all of them with `{how}` (one job per file "
           "or directory)")
    return {"time_ranges": max(1, len(ranges)), "largest_gap_days": round(gap / 86400, 1),
            "span_days": round(span / 86400, 1), "job_ids": ids[:JOB_IDS_SHOWN], "scripts": scripts[:JOB_IDS_SHOWN],
            "fleet": how, "message": msg}


def _evidence_texts(a: Any) -> Sequence[str]:
    """The lines of the verdict's evidence and first failure (they name hosts past the log's ends)."""
    if getattr(a, "_verdict", None) is None:
        return ()
    out = [e.text for f in a.findings for e in f.evidence]
    if a.first_failure is not None:
        out += list(a.first_failure.lines)
    return out


def job_info(a: Any, identity: Any, env: Optional[Mapping[str, str]] = None,
             now: Optional[float] = None, paths: Sequence[str] = ()) -> JobInfo:
    """The job header of analysis A (verdict.Analysis), whose identity is IDENTITY
    (jobid.JobIdentity); its times are the log's own (the scan read them), never a file's mtime.
    Run inside a Slurm job (its id from SLURM_JOB_ID), the job's SLURM_JOB_NODELIST, as Slurm
    writes it, comes first in the hosts."""
    from .. import __version__
    env = os.environ if env is None else env
    facts = LogFacts()
    nodelist = env.get("SLURM_JOB_NODELIST", "").strip() if str(identity.source).startswith("env:SLURM") else ""
    if nodelist and _NODELIST.fullmatch(nodelist):
        facts.add_hosts([nodelist])
    facts.merge(getattr(a, "log_facts", None) or LogFacts())
    facts.add_hosts(hosts_in(str(t) for t in _evidence_texts(a)[:200]))
    return JobInfo(job_id=str(identity.job_id), attempt=int(identity.attempt), id_source=str(identity.source),
                   hosts=tuple(facts.hosts[:HOSTS_MAX]), hosts_more=facts.hosts_more,
                   log_start=facts.start, log_end=facts.end,
                   analysed_at=time.time() if now is None else now, triage_version=__version__,
                   several_jobs=several_jobs(facts.spans, paths, sorted(facts.job_ids), sorted(facts.commands)))
