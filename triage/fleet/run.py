"""Fleet triage: many jobs analysed at once, their verdicts stored and grouped by signature.

`analyse_jobs` runs one analysis per job in worker processes (patterns loaded once per worker,
never an interpreter per job); `view` groups verdict records -- those of this run, or the store's
over a period -- into the grouped view `triage fleet` prints: per signature the count, first and
last seen, the jobs and the known ticket; unexplained failures grouped the same way; healthy jobs
counted.  Rendering (text, json, markdown, html) lives in fleet_report.
"""
from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import TriageError
from ..kinds import HEALTHY, PITFALL, UNEXPLAINED
from ..procs import as_worker, cores, hold_signals, release_signals
from .store import Record, Store, StoreError, content_hash, day, known_match, record_of

JOBS_SHOWN = 200           # job ids listed per group at most (the rest are counted)
CHART_SIGNATURES = 8       # signatures drawn in the per-day chart; the rest are "other"


@dataclass(frozen=True)
class Job:
    job_id: str                             # jobid.identify: a slurm-<id>.out name's id, else the path
    path: str
    pattern_dirs: Tuple[str, ...] = ()      # --patterns, for the worker that analyses it
    attempt: int = 0
    report: Optional[str] = None            # --reports: the path its HTML report is written to (fleet_reports)


def job_at(path: str) -> Job:
    """The job whose log is PATH, its id from the log's name or path (never from this process's
    environment: fleet runs outside the jobs).  A path under torchrun's attempt_N/ (--log-dir keeps each
    restart there) is attempt N of the job the path above it names (issue 43: attempts of one job)."""
    import re

    from ..inputs.sources import attempt_from_path
    from ..jobid import identify
    ident = identify([path], use_env=False)
    full = path if "://" in path else os.path.abspath(path)
    n = attempt_from_path(full)
    if n is None:
        return Job(ident.job_id, path, attempt=ident.attempt)
    job_id = ident.job_id if ident.source != "path" else re.sub(r"/attempt_\d+(?:/.*)?$", "", full)
    return Job(job_id, path, attempt=n)


@dataclass
class JobResult:
    job: Job
    record: Optional[Record]
    error: Optional[str] = None
    report_error: Optional[str] = None      # --reports: why its report was not written
    reached: Optional[int] = None           # the highest iteration its log reached (issue 43: no progress)


class FleetError(TriageError):
    """A fleet argument that cannot be used: one line for the user."""


# --- which jobs ----------------------------------------------------------------------------------
def log_like(name: str) -> bool:
    """A file that reads as a log (the suffixes a job directory's logs have, or none), not an
    expected-result .json, a README or a MANIFEST.tsv beside them."""
    from ..inputs.names import COMPRESSED, LOG_SUFFIXES
    n = name.lower()
    for c in COMPRESSED:
        if n.endswith(c):
            n = n[: -len(c)]
            break
    return n.endswith(LOG_SUFFIXES) or "." not in n


def _children(d: str, skipped: Optional[List[str]] = None) -> List[Job]:
    """The jobs of a --jobs-in directory: each child directory, and each log-like child file that is
    no triage report (SKIPPED gets those: triage never reads its own output)."""
    from ..inputs import remote
    if remote.is_url(d):                # a prefix: each child prefix or log-like object
        return [Job(u, u) for u, is_dir in remote.children(d) if is_dir or log_like(u.rsplit("/", 1)[-1])]
    if not os.path.isdir(d):
        raise FleetError(f"--jobs-in {d!r} is not a directory")
    try:
        names = sorted(n for n in os.listdir(d) if not n.startswith("."))
    except OSError as e:
        raise FleetError(f"cannot list --jobs-in {d!r}: {e.strerror or e}") from None
    from ..inputs.ourreports import report_file
    paths = [os.path.join(d, n) for n in names]
    files = [p for p in paths if os.path.isfile(p) and log_like(os.path.basename(p))]
    reports = {p for p in files if report_file(p)}
    if skipped is not None:
        skipped.extend(sorted(reports))
    return [job_at(p) for p in paths if os.path.isdir(p) or (p in files and p not in reports)]


def find_jobs(paths: Sequence[str], jobs_in: Sequence[str] = (), skipped: Optional[List[str]] = None) -> List[Job]:
    """Each PATH is one job (a file or a per-rank directory); each child of a --jobs-in DIR is one
    job (hidden entries and triage's own reports skipped: SKIPPED gets the reports).  A job named
    twice is analysed once."""
    from ..inputs import remote
    jobs: List[Job] = [j for d in jobs_in for j in _children(d, skipped)]
    for p in paths:
        if p == "-":
            raise FleetError("triage fleet reads jobs from files and directories, not stdin")
        if remote.is_url(p):
            if not remote.exists(p):
                raise FleetError(f"no such file or directory: {p!r}")
        else:
            from ..inputs.sources import not_there
            why = not_there(p)
            if why:
                raise FleetError(why)
        jobs.append(job_at(p))
    seen = set()
    out = []
    for j in jobs:
        key = remote.key(j.path) if remote.is_url(j.path) else os.path.realpath(j.path)
        if key not in seen:
            seen.add(key)
            out.append(j)
    if not out:
        raise FleetError("no jobs: give job paths or --jobs-in DIR (a directory of job logs or per-job directories)")
    return out


def stop_no_progress(results: Sequence["JobResult"]) -> List[Dict[str, Any]]:
    """Issue 43: the attempts of one job (the same job id, consecutive attempts) that failed with the same
    root cause as the attempt before, with no iteration past the one it reached: stop the job (a retry
    fails again).  An attempt that got further is not listed (its root cause's action stands)."""
    from ..verdict.action import PriorAttempt, no_progress
    by_job: Dict[str, Dict[int, JobResult]] = defaultdict(dict)
    for r in results:
        if r.record is not None:
            by_job[r.job.job_id][r.record.attempt] = r
    out: List[Dict[str, Any]] = []
    for job_id, attempts in sorted(by_job.items()):
        for n in sorted(attempts):
            prev, cur = attempts.get(n - 1), attempts[n]
            rec = cur.record
            if prev is None or prev.record is None or rec is None or rec.outcome == HEALTHY:
                continue
            prior = PriorAttempt(n - 1, prev.record.group_signature, prev.reached)
            if no_progress(rec.group_signature, cur.reached, prior):
                out.append({"job": job_id, "attempts": [n - 1, n], "signature": rec.group_signature,
                            "reached": [prev.reached, cur.reached], "action": "stop",
                            "why": f"the same root cause in attempts {n - 1} and {n} with no iteration past the one "
                                   f"attempt {n - 1} reached: a retry fails again"})
    return out


# --- analysing them ------------------------------------------------------------------------------
def analyse_job(job: Job, pats: Sequence[Any]) -> JobResult:
    """One job's verdict record; an input that cannot be read is an error result, never a raise."""
    from ..config import ConfigError
    from ..inputs.sources import InputError
    from ..patterns import PatternError
    from ..pipeline import Options, triage
    try:
        a = triage([job.path], Options(pats=tuple(pats), content_hash=True))
        from ..jobid import JobIdentity
        from ..verdict.job import job_info
        ident = JobIdentity(job.job_id, job.attempt)
        a.job = job_info(a, ident)           # the job header: the record's hosts and log span, the report's
        digest = a.content_hash or content_hash([job.path])     # hashed in the scan's read, else read again
        result = JobResult(job, record_of(a, [job.path], ident, digest), reached=a.reached)
        if job.report:
            result.report_error = _write_report(a, job.report, pats)
        return result
    except (InputError, PatternError, ConfigError) as e:
        return JobResult(job, None, str(e)[:500])
    except Exception as e:  # noqa: BLE001 -- one odd job never stops the fleet
        return JobResult(job, None, f"internal error: {type(e).__name__}: {str(e)[:300]}")


def _write_report(a: Any, path: str, pats: Sequence[Any]) -> Optional[str]:
    """Write the job's HTML report (render, as `triage analyze` does) to PATH; why not, or None."""
    from ..report import render
    from .job_reports import write_report
    try:
        write_report(path, render(a, "html", pitfall_ids=[p.id for p in pats]))
    except OSError as e:
        return f"cannot write {path!r}: {e.strerror or e}"
    except Exception as e:  # noqa: BLE001 -- the job's verdict stands without its report
        return f"cannot write {path!r}: internal error: {type(e).__name__}: {str(e)[:200]}"
    return None


@functools.lru_cache(maxsize=4)
def catalog(pattern_dirs: Tuple[str, ...]) -> List[Any]:
    """The catalog plus PATTERN_DIRS, loaded once per process (a worker's cache)."""
    from ..patterns import load_all
    return load_all(pattern_dirs)


def _init_worker(pattern_dirs: Sequence[str]) -> None:
    as_worker()                                      # the parent handles Ctrl-C and stops the pool
    os.environ["TRIAGE_JOBS"] = "1"                  # no worker pool inside a worker
    catalog(tuple(pattern_dirs))                     # patterns compiled once per worker, up front


def analyse_in_worker(job: Job) -> JobResult:
    return analyse_job(job, catalog(job.pattern_dirs))


def default_workers() -> int:
    return cores()


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")


def _pool(n: int, pattern_dirs: Sequence[str]) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(n, mp_context=_context(), initializer=_init_worker, initargs=(list(pattern_dirs),))


def _died(job: Job) -> JobResult:
    return JobResult(job, None, "the worker process analysing this job died (killed, out of memory, or a crash "
                                "in native code); the other jobs were analysed")


def _submit(ex: ProcessPoolExecutor, work: Callable[[Job], JobResult], jobs: Dict[int, Job]) -> Dict[Any, int]:
    """JOBS submitted to EX ({future: key}).  The first submission forks the workers: Ctrl-C and SIGTERM
    are held meanwhile, so a worker takes its own handlers (procs.as_worker) before it gets one."""
    held = hold_signals()
    try:
        return {ex.submit(work, j): k for k, j in jobs.items()}
    finally:
        release_signals(held)


def _alone(job: Job, pattern_dirs: Sequence[str], work: Callable[[Job], JobResult]) -> JobResult:
    """One job in a worker of its own: a job that kills its worker is an error result, never a hang."""
    with _pool(1, pattern_dirs) as ex:
        try:
            (f,) = _submit(ex, work, {0: job})
            return f.result()
        except BrokenProcessPool:
            return _died(job)


def analyse_jobs(jobs: Sequence[Job], pattern_dirs: Sequence[str] = (), workers: int = 0,
                 tick: Optional[Callable[[int], None]] = None,
                 work: Callable[[Job], JobResult] = analyse_in_worker) -> Iterator[JobResult]:
    """Analyse JOBS on `workers` processes (0: all cores); yields results as they finish.
    `tick(done)` is called after each job.  When a worker process dies, the jobs not finished yet
    are analysed again one per fresh worker, so only the job that kills its worker is lost (an
    error result naming it)."""
    from ..patterns import load_all
    n = workers or default_workers()
    n = max(1, min(n, len(jobs)))
    if n == 1 and work is analyse_in_worker:
        pats = load_all(pattern_dirs)
        for i, j in enumerate(jobs, 1):
            r = analyse_job(j, pats)
            if tick:
                tick(i)
            yield r
        return
    load_all(pattern_dirs)       # a bad --patterns is one error here, not one per worker
    jobs = [dataclasses.replace(j, pattern_dirs=tuple(pattern_dirs)) for j in jobs]
    done = 0
    left: Dict[int, Job] = dict(enumerate(jobs))
    ex = _pool(n, pattern_dirs)
    try:
        futures = _submit(ex, work, left)
        for f in as_completed(futures):
            try:
                r = f.result()
            except BrokenProcessPool:
                break
            left.pop(futures[f], None)
            done += 1
            if tick:
                tick(done)
            yield r
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    for k in sorted(left):       # after a worker died: the rest one by one, each in a fresh worker
        done += 1
        r = _alone(left[k], pattern_dirs, work)
        if tick:
            tick(done)
        yield r


STORE_BATCH = 200          # verdicts stored per transaction


def store_verdicts(db: Optional[str], records: Sequence[Record]) -> Tuple[
        Optional[Dict[str, Tuple[int, float, float]]], Optional[List[Dict[str, Any]]], Optional[str]]:
    """Store RECORDS (in batches) and read what the view needs from the store: (seen, known, None);
    a store that fails is (None, None, the warning line to print after the view), never a raise."""
    stored = 0
    try:
        with Store(db) as st:
            for i in range(0, len(records), STORE_BATCH):
                st.record_many(records[i:i + STORE_BATCH])
                stored = min(len(records), i + STORE_BATCH)
            return st.seen(signatures=[r.signature for r in records if r.signature]), st.known_list(), None
    except StoreError as e:
        what = ("the verdicts were not recorded" if not stored else
                f"{stored} of {len(records)} verdicts were recorded" if stored < len(records) else
                "the verdicts were recorded, first/last seen and known issues are this run's only")
        return None, None, f"triage: warning: {e}; {what}"


def stored_signatures(db: Optional[str], signatures: Sequence[str]) -> Tuple[Optional[set], Optional[str]]:
    """The SIGNATURES the store already holds (read before this run's verdicts are stored), or
    (None, why) when the store cannot be read."""
    try:
        with Store(db) as st:
            return set(st.seen(signatures=[s for s in signatures if s])), None
    except StoreError as e:
        return None, str(e)


def failed_gates(records: Sequence[Record], fail_on: Sequence[str], before: Optional[set]) -> List[str]:
    """What fails the pipeline (`--fail-when`): `new`, a failing job's signature the store never held
    before this run (BEFORE); `unexplained`, a job that failed with no pattern explaining why."""
    out = []
    if "new" in fail_on and before is not None:
        new = sorted({r.signature for r in records
                      if r.signature and r.outcome != HEALTHY and r.signature not in before})
        if new:
            out.append(f"--fail-when new: {len(new)} signature(s) never seen before in the store: "
                       + "; ".join(x[:120] for x in new[:5]) + (" ..." if len(new) > 5 else ""))
    if "unexplained" in fail_on:
        n = sum(1 for r in records if r.outcome == UNEXPLAINED)
        if n:
            out.append(f"--fail-when unexplained: {n} job(s) failed with no pattern explaining why")
    return out


# --- the grouped view ----------------------------------------------------------------------------
def iso(ts: Optional[float]) -> Optional[str]:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)) if ts else None


def view(records: Sequence[Record], seen: Optional[Dict[str, Tuple[int, float, float]]] = None,
         known: Optional[Sequence[Dict[str, Any]]] = None, errors: Sequence[JobResult] = (),
         since: Optional[float] = None, until: Optional[float] = None, daily: bool = False,
         jobs_shown: int = JOBS_SHOWN, reports: Optional[Dict[str, str]] = None,
         stop: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    """Group verdict RECORDS by signature.  `seen`: store-wide (count, first, last) per signature
    (first/last seen then span the whole store, not only these records); `known`: the known-issue
    table; `since`: the start of the period (signatures first seen in it are marked new);
    `daily`: add per-day counts per signature (for the chart); `reports`: {job label: link to its
    report} (--reports): each group gets `reports`, the links of its jobs listed."""
    from ..verdict.groupkey import message_signature
    seen = seen or {}
    table = {k["key"]: k for k in (known or ())}
    outcomes = Counter(r.outcome for r in records)
    by_sig: Dict[Tuple[str, str], List[Record]] = defaultdict(list)
    for r in records:
        if r.outcome in (PITFALL, UNEXPLAINED):
            by_sig[(r.outcome, r.group_signature)].append(r)
    groups: List[Dict[str, Any]] = []
    unexplained: List[Dict[str, Any]] = []
    for (outcome, sig), rs in by_sig.items():
        rs.sort(key=lambda r: (r.job_time, r.job_id, r.attempt))
        first, last = rs[0].job_time, rs[-1].job_time
        if sig in seen:
            first, last = min(first, seen[sig][1]), max(last, seen[sig][2])
        # an unexplained group also goes by its jobs' message signatures (a known issue keyed by one)
        also = (list(dict.fromkeys(r.message_signature or message_signature(r.title) for r in rs[:50]))
                if outcome != PITFALL else [])
        k = known_match(list(table.values()), sig, rs[0].primary, also=also)
        ranks = Counter(r.first_failing_rank for r in rs if r.first_failing_rank is not None)
        g = {
            "signature": sig, "primary": rs[0].primary, "title": rs[0].title, "count": len(rs),
            "first_seen": iso(first), "last_seen": iso(last),
            "seen_total": max(seen[sig][0], len(rs)) if sig in seen else len(rs),
            "jobs": [r.label for r in rs[:jobs_shown]], "jobs_omitted": max(0, len(rs) - jobs_shown),
            "first_failing_ranks": {str(k2): v for k2, v in sorted(ranks.items())},
            "blamed": sorted({r.blamed for r in rs if r.blamed}),
            "known": {"url": k["url"], "title": k["title"]} if k else None,
            "new": bool(since is not None and first >= since),
        }
        if reports is not None:
            g["reports"] = {r.label: reports[r.label] for r in rs[:jobs_shown] if r.label in reports}
        (groups if outcome == PITFALL else unexplained).append(g)
    order = lambda g: (-g["count"], g["signature"])  # noqa: E731
    groups.sort(key=order)
    unexplained.sort(key=order)
    out: Dict[str, Any] = {
        "jobs": len(records) + len(errors),
        "outcomes": {k: outcomes.get(k, 0) for k in (PITFALL, UNEXPLAINED, HEALTHY)},
        "healthy": outcomes.get("healthy", 0),
        "groups": groups,
        "unexplained": unexplained,
        "errors": [{"job": e.job.path, "error": e.error} for e in errors],
        "period": {"since": iso(since), "until": iso(until)},
    }
    if errors:
        out["outcomes"]["error"] = len(errors)
    if stop:                                 # issue 43: jobs whose attempts make no progress (stop_no_progress)
        out["stop"] = list(stop)[:jobs_shown]
    if daily:
        out["daily"] = per_day(records, [g["signature"] for g in groups + unexplained])
    return out


def per_day(records: Sequence[Record], order: Sequence[str]) -> Dict[str, Any]:
    """{"days": [...], "series": [{"signature", "counts"}]}: failing jobs per day per signature, the
    CHART_SIGNATURES most frequent kept, the rest summed as "other"."""
    failing = [r for r in records if r.outcome in (PITFALL, UNEXPLAINED)]
    if not failing:
        return {"days": [], "series": []}
    lo = min(r.job_time for r in failing)
    hi = max(r.job_time for r in failing)
    days: List[str] = []
    t = lo - (lo % 86400)
    while t <= hi and len(days) < 400:
        days.append(day(t))
        t += 86400
    idx = {d: i for i, d in enumerate(days)}
    top = list(order[:CHART_SIGNATURES])
    series: Dict[str, List[int]] = {s: [0] * len(days) for s in top}
    other = [0] * len(days)
    for r in failing:
        i = idx.get(day(r.job_time))
        if i is None:
            continue
        sig = r.group_signature
        (series[sig] if sig in series else other)[i] += 1
    out = [{"signature": s, "counts": series[s]} for s in top]
    if any(other):
        out.append({"signature": "other", "counts": other})
    return {"days": days, "series": out}


def parse_since(text: str, now: Optional[float] = None) -> float:
    """'7d', '12h', '30m', '2w' or a date 'YYYY-MM-DD' -> epoch seconds."""
    import calendar
    import re
    now = time.time() if now is None else now
    t = text.strip()
    m = re.fullmatch(r"(\d{1,6})\s*([mhdw])", t)
    if m:
        return now - int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
    try:
        return float(calendar.timegm(time.strptime(t, "%Y-%m-%d")))
    except ValueError:
        raise FleetError(f"--since {text!r}: give a period (7d, 12h, 2w) or a date (YYYY-MM-DD)") from None
