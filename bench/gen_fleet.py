"""Generate a directory of job logs for `triage fleet` (bench/bench_fleet.py, tests/test_fleet.py).

    python bench/gen_fleet.py OUT_DIR [--jobs 500] [--size 1M] [--seed 0]

Each job is one file OUT_DIR/job-NNNNN.log of about SIZE bytes: an 8-rank Megatron-LM run's healthy
log, then (for most jobs) a failure.  The mix, by job number modulo 10:
  0-3  illegal memory access on a rank, NCCL watchdog timeouts on the others  -> illegal-memory-access
  4-5  CUDA out of memory in a run with CUDA graphs captured                 -> capture-memory-overhead
  6    moe and moe_router graph scopes set together                          -> moe-scope-conflict
  7    a failure no pattern explains (a dtype mismatch in graph replay)      -> unexplained-failure
  8-9  healthy (no failure)
What is real and what is not: the healthy part is SYNTHETIC (bench/gen_biglog.py writes it in the
formats Megatron-LM, torchrun and NCCL print); the failure blocks are copied from real logs in
tests/fixtures/logs/real/ (gen_biglog's rank-5 illegal-memory-access block, gpu/oom_plain.log,
mcore-0.16.1/moe_and_moe_router_scopes.log, gpu/mcore_local_replay.log), with only the failing rank
(a `[rankN]:` prefix) and the job's start time changed per job.  Output is deterministic per seed.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from datetime import timedelta
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_biglog  # noqa: E402

REAL = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "logs", "real")
TAILS = {
    "oom": os.path.join(REAL, "gpu", "oom_plain.log"),
    "moe": os.path.join(REAL, "mcore-0.16.1", "moe_and_moe_router_scopes.log"),
    "unexplained": os.path.join(REAL, "gpu", "mcore_local_replay.log"),
}
EXPECTED = {"ima": "illegal-memory-access", "oom": "capture-memory-overhead", "moe": "moe-scope-conflict",
            "unexplained": "unexplained-failure", "healthy": None}


def kind_of(i: int) -> str:
    k = i % 10
    return "ima" if k < 4 else "oom" if k < 6 else "moe" if k == 6 else "unexplained" if k == 7 else "healthy"


def _tail(kind: str, rank: int) -> str:
    with open(TAILS[kind], encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    return "".join(f"[rank{rank}]: {ln}\n" for ln in lines)


def write_job(path: str, i: int, size: int, seed: int = 0) -> str:
    """Write job I to PATH; return its kind."""
    kind = kind_of(i)
    rnd = random.Random(seed * 1_000_003 + i)
    start = gen_biglog.START + timedelta(minutes=37 * i)
    with open(path, "w", encoding="ascii", errors="replace", newline="\n", buffering=gen_biglog.FLUSH_BYTES) as f:
        log = gen_biglog.Log(f)
        job = gen_biglog.Job(log, rnd)
        job.t = start
        job.startup()
        while log.size < size - gen_biglog.TAIL_RESERVE:
            job.iteration(False)
        if kind == "ima":
            job.failure()
        log.flush()
        if kind in TAILS:
            f.write(_tail(kind, rnd.randrange(gen_biglog.RANKS)))
    return kind


def make_jobs(out_dir: str, jobs: int, size: int, seed: int = 0) -> Dict[str, str]:
    """Write JOBS job logs into OUT_DIR; return {path: kind}."""
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for i in range(jobs):
        p = os.path.join(out_dir, f"job-{i:05d}.log")
        out[p] = write_job(p, i, size, seed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--size", default="1M", help="bytes per job (K/M suffixes)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    kinds = make_jobs(a.out_dir, a.jobs, gen_biglog.parse_size(a.size), a.seed)
    total = sum(os.path.getsize(p) for p in kinds)
    counts: Dict[str, int] = {}
    for k in kinds.values():
        counts[k] = counts.get(k, 0) + 1
    print(f"wrote {len(kinds)} jobs ({total / 1e6:.0f} MB) to {a.out_dir}: "
          + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
