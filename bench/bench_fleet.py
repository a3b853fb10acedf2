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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--size", default="1M")
    ap.add_argument("--loop-jobs", type=int, default=0, help="jobs timed in the shell loop (0: all)")
    ap.add_argument("--dir", default=None, help="job directory (generated if empty or missing)")
    ap.add_argument("-j", "--workers", type=int, default=0)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="triage-bench-fleet-")
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
    from triage.store import Store
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
