"""Benchmark `triage fleet --jobs-in DIR` against a shell loop of `triage analyze` (issue 14).

    python bench/bench_fleet.py [--jobs 500] [--size 1M] [--loop-jobs N] [--dir DIR] [-j N]

Generates DIR (bench/gen_fleet.py; kept when --dir is given and already holds the jobs), then:
  1. `triage fleet --jobs-in DIR --db <new SQLite file> --format json -q` once: wall time, jobs/s,
     peak RSS of the fleet process and its workers (resource.getrusage of the children: the
     largest one), and checks that the grouping is exact (each generated kind is one group of
     exactly its jobs);
  2. the shell loop `for f in DIR/*; do triage analyze "$f" --record --db <new file> --exit-zero -q; done`
     on the first --loop-jobs jobs (default: all), as jobs/s.
Prints both rates and the speed-up.  Run it on an otherwise idle machine: it measures wall time.

    python bench/bench_fleet.py --writers 32 [--records 50] [--writers-only]

adds (issue 24) "32 concurrent writers", on a new SQLite file and on a real PostgreSQL server
(tests/pgserver.py; skipped, saying why, when none can be started): (a) 32 `triage analyze --record`
processes started at once (32 job epilogs), (b) 32 processes each recording --records records through
the Store API; each prints the records expected and found (nothing lost), the wall time and the
p50/p99 latency (a: per process; b: per record).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_fleet  # noqa: E402
import gen_biglog  # noqa: E402


def triage_cmd() -> list:
    exe = shutil.which("triage")
    return [exe] if exe else [sys.executable, "-m", "triage"]


def _pct(xs: list, q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def _store_writer(args: tuple) -> list:
    """One writer process: N records through the Store API, the seconds each took."""
    db, w, n = args
    sys.path.insert(0, ROOT)
    from triage.fleet.store import Record, Store
    took = []
    with Store(db) as st:
        for i in range(n):
            r = Record(job_id=f"w{w}-{i}", job_time=time.time(), outcome="pitfall", primary="cuda-oom",
                       signature="cuda-oom: CUDA out of memory", title="t", first_failing_rank=i % 8, blamed=None,
                       summary="s", content_hash=f"{w}-{i}", triage_version="bench")
            t = time.perf_counter()
            st.record(r)
            took.append(time.perf_counter() - t)
    return took


def concurrent_writers(db: str, label: str, logs: list, writers: int, per_writer: int, env: dict) -> None:
    """(a) WRITERS `triage analyze --record` processes at once; (b) WRITERS Store API writers."""
    from triage.fleet.store import Store
    cmd = triage_cmd()
    Store(db).close()                     # the schema exists (first-open races: tests/test_store.py)
    t = time.perf_counter()
    procs = [(subprocess.Popen(cmd + ["analyze", logs[i % len(logs)], "--record", "--db", db, "--exit-zero", "-q",
                                      "--job-id", f"epilog-{i}"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True), time.perf_counter()) for i in range(writers)]
    lat, errs = [], 0
    for p, t0 in procs:
        _, err = p.communicate()
        lat.append(time.perf_counter() - t0)
        errs += bool(p.returncode or err.strip())
    wall = time.perf_counter() - t
    with Store(db) as st:
        found = len({r.job_id for r in st.records() if r.job_id.startswith("epilog-")})
    print(f"{label}: {writers} concurrent `triage analyze --record` processes: records expected {writers}, "
          f"found {found}{' (nothing lost)' if found == writers else ' LOST ' + str(writers - found)}, "
          f"{errs} with an error; wall {wall:.2f} s; per process p50 {_pct(lat, 50):.2f} s, p99 {_pct(lat, 99):.2f} s")
    import multiprocessing as mp
    t = time.perf_counter()
    with mp.get_context("spawn").Pool(writers) as pool:
        took = [x for xs in pool.map(_store_writer, [(db, w, per_writer) for w in range(writers)]) for x in xs]
    wall = time.perf_counter() - t
    with Store(db) as st:
        found = len({r.job_id for r in st.records() if r.job_id.startswith("w")})
    n = writers * per_writer
    print(f"{label}: {writers} concurrent Store API writers x {per_writer} records: records expected {n}, found "
          f"{found}{' (nothing lost)' if found == n else ' LOST ' + str(n - found)}; wall {wall:.2f} s "
          f"(incl. process start); per record p50 {_pct(took, 50) * 1e3:.1f} ms, p99 {_pct(took, 99) * 1e3:.1f} ms")


def writers_section(writers: int, per_writer: int, tmp: str, env: dict) -> None:
    """The "32 concurrent writers" section: SQLite, then a real PostgreSQL server."""
    d = os.path.join(tmp, "writers")
    logs = [os.path.join(d, f"job-{i:05d}.log") for i in range(8)]
    if not all(os.path.exists(p) for p in logs):
        gen_fleet.make_jobs(d, 8, 64 * 1024)
    concurrent_writers(os.path.join(tmp, "writers.db"), "SQLite", logs, writers, per_writer, env)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        import pgserver
    except ImportError as e:
        print(f"PostgreSQL: skipped ({e})")
        return
    srv, why = pgserver.start()
    if srv is None:
        print(f"PostgreSQL: skipped ({why})")
        return
    try:
        concurrent_writers(srv.createdb("bench_writers"), "PostgreSQL", logs, writers, per_writer, env)
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--size", default="1M")
    ap.add_argument("--loop-jobs", type=int, default=0, help="jobs timed in the shell loop (0: all)")
    ap.add_argument("--dir", default=None, help="job directory (generated if empty or missing)")
    ap.add_argument("-j", "--workers", type=int, default=0)
    ap.add_argument("--writers", type=int, default=0, help="also run the concurrent-writers section (e.g. 32)")
    ap.add_argument("--records", type=int, default=50, help="records per Store API writer (--writers)")
    ap.add_argument("--writers-only", action="store_true", help="only the concurrent-writers section")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="triage-bench-fleet-")
    if a.writers_only or a.writers:
        writers_section(a.writers or 32, a.records, tmp,
                        {k: v for k, v in os.environ.items() if k != "TRIAGE_DB"})
        if a.writers_only:
            shutil.rmtree(tmp, ignore_errors=True)
            return
    d = a.dir or os.path.join(tmp, "jobs")
    size = gen_biglog.parse_size(a.size)
    if not (os.path.isdir(d) and len(os.listdir(d)) == a.jobs):
        t = time.perf_counter()
        kinds = gen_fleet.make_jobs(d, a.jobs, size)
        print(f"generated {a.jobs} jobs of ~{size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s: {d}")
    else:
        kinds = {os.path.join(d, f"job-{i:05d}.log"): gen_fleet.kind_of(i) for i in range(a.jobs)}
    total = sum(os.path.getsize(p) for p in kinds)
    env = {k: v for k, v in os.environ.items() if k != "TRIAGE_DB"}
    cmd = triage_cmd()

    # 1. triage fleet
    db = os.path.join(tmp, "fleet.db")
    t = time.perf_counter()
    r = subprocess.run(cmd + ["fleet", "--jobs-in", d, "--db", db, "--format", "json", "-q", "-j", str(a.workers)],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    fleet_s = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"triage fleet failed: {r.stderr}")
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    v = json.loads(r.stdout)
    # exact grouping: the jobs of each generated kind share one signature, and no two kinds share one
    from triage.fleet.store import Store
    with Store(db) as st:
        sig = {rec.job_id: rec.signature or "healthy" for rec in st.records()}
    by_kind: dict = {}
    for p, k in kinds.items():
        by_kind.setdefault(k, Counter())[sig.get(p, "missing")] += 1
    exact = all(len(c) == 1 for c in by_kind.values()) and len({next(iter(c)) for c in by_kind.values()}) == len(by_kind)
    groups = len(v["groups"]) + len(v["unexplained"])
    sizes = sorted((g["count"] for g in v["groups"] + v["unexplained"]), reverse=True)
    print(f"triage fleet: {a.jobs} jobs, {total / 1e6:.0f} MB in {fleet_s:.1f} s = {a.jobs / fleet_s:.1f} jobs/s "
          f"({total / 1e6 / fleet_s:.0f} MB/s), peak RSS of one process {rss_mb:.0f} MB; "
          f"{groups} groups of {sizes} + {v['healthy']} healthy, grouping "
          f"{'exact' if exact else 'WRONG: ' + str(by_kind)}")

    # 2. a shell loop of triage analyze
    n = a.loop_jobs or a.jobs
    files = sorted(kinds)[:n]
    db2 = os.path.join(tmp, "loop.db")
    script = 'for f in "$@"; do $TRIAGE analyze "$f" --record --db "$DB" --exit-zero -q >/dev/null; done'
    t = time.perf_counter()
    subprocess.run(["bash", "-c", script, "loop"] + files, check=True, cwd=ROOT,
                   env=dict(env, TRIAGE=" ".join(cmd), DB=db2))
    loop_s = time.perf_counter() - t
    print(f"shell loop of triage analyze: {n} jobs in {loop_s:.1f} s = {n / loop_s:.2f} jobs/s")
    print(f"speed-up of triage fleet: {(a.jobs / fleet_s) / (n / loop_s):.1f}x")
    if not a.dir:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
