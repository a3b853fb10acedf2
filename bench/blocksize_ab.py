"""A pooled scan's wall by the block size's cap (pool.MAX_POOL_BLOCK and sources.BLOCK_SIZE, both set; before the
eighteenth pass the pool's cap was BLOCK_SIZE, 2 MiB): the scanner's work per block (taking a
worker's result, its reader's tail) against the workers' cache, on big inputs.  Alternating, each a fresh process,
this tree, `-j J`; prints the wall of each run and the best and median per cap (numbers only, not a test).

    python bench/blocksize_ab.py LOG... [--caps 2,4,8] [-n 3] [-j 16]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = ("import sys, triage.inputs.sources as S, triage.scan.pool as P; S.BLOCK_SIZE = int(sys.argv[1]) << 20; "
         "P.MAX_POOL_BLOCK = S.BLOCK_SIZE; import triage.cli; "
         "sys.argv = ['triage'] + sys.argv[2:]; triage.cli.main()")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--caps", default="2,4,8")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("-j", default="16")
    a = ap.parse_args()
    caps = [int(c) for c in a.caps.split(",")]
    env = dict(os.environ, PYTHONPATH=ROOT, TRIAGE_CACHE_DIR=os.environ.get("TRIAGE_CACHE_DIR", "/tmp/tc-bs"))
    for log in a.logs:
        got = {c: [] for c in caps}
        subprocess.run([sys.executable, "-P", "-c", CHILD, "2", "analyze", log, "--format", "json", "-j", a.j],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)   # (the caches warm)
        for _ in range(a.n):
            for c in caps:
                t = time.perf_counter()
                subprocess.run([sys.executable, "-P", "-c", CHILD, str(c), "analyze", log, "--format", "json", "-j",
                                a.j], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                got[c].append(time.perf_counter() - t)
        size = os.path.getsize(log)
        for c in caps:
            v = got[c]
            print(f"{os.path.basename(log)} ({size:,} B) cap {c} MiB -j {a.j}: " + " ".join(f"{x:.3f}" for x in v)
                  + f"  best {min(v):.3f} s ({size / min(v) / 1e6:,.0f} MB/s), median {statistics.median(v):.3f}")


if __name__ == "__main__":
    main()
