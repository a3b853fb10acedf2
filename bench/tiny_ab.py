"""The tiny log's wall under several trees, alternating (perf_counter, ms): median, min and quartiles of each (prints
numbers; each tree its own cache directory, run as `python -P` with PYTHONPATH=TREE).

    python bench/tiny_ab.py TREE... [-n 30] [--log examples/sample_job.log]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+")
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--log", default="examples/sample_job.log")
    a = ap.parse_args()
    got = {t: [] for t in a.trees}
    for _ in range(a.n):
        for t in a.trees:
            env = dict(os.environ, PYTHONPATH=t, TRIAGE_CACHE_DIR="/tmp/tc-tiny-" + os.path.basename(os.path.realpath(t)))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-P", "-m", "triage", "analyze", a.log, "--format", "json"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            got[t].append((time.perf_counter() - t0) * 1e3)
    for t in a.trees:
        v = sorted(got[t])
        print(f"== tiny log {t}: median {statistics.median(v):.1f} ms, min {v[0]:.1f}, q1 {v[len(v) // 4]:.1f}, "
              f"q3 {v[3 * len(v) // 4]:.1f}")


if __name__ == "__main__":
    main()
