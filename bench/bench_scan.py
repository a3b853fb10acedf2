"""Benchmark: scan throughput of `triage analyze` on a large generated log (prints numbers).

    python bench/bench_scan.py [--lines N]

The log mixes healthy Megatron step lines, NCCL INFO lines, rank prefixes, ANSI colours and a few
real failure lines; it is generated in a temp dir and deleted afterwards.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's triage

from triage.scan.engine import Engine
from triage.verdict.analyse import analyse
from triage.patterns import load_all
from triage.pipeline import Seen

HEALTHY = [
    " [2026-12-03 06:42:22.923456] iteration {i:8d}/  100000 | consumed samples: {s:12d} | elapsed time per iteration (ms): 4800.2 | learning rate: 5.000000E-05 | global batch size:   256 | lm loss: 9.412345E+00 | loss scale: 1.0 | grad norm: 4.812 |",
    "[rank{r}]:host-{r}:4242:4242 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "\x1b[32mINFO\x1b[0m 2026-12-03 06:42:22,923 data loader: fetched batch {i}",
    "[default{r}]:  warnings.warn(",
]
FAIL = [
    "[rank3]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "[rank1]:[E1203 07:12:11.426415540 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    n = ap.parse_args().lines
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "big.log")
        with open(p, "w") as f:
            for i in range(n):
                f.write(HEALTHY[i % 4].format(i=i, s=i * 256, r=i % 8) + "\n")
                if i % 200_000 == 199_999:
                    f.write(FAIL[(i // 200_000) % 2] + "\n")
        size = os.path.getsize(p)
        t0 = time.perf_counter()
        pats = load_all()
        t1 = time.perf_counter()
        seen = Seen()
        a = analyse(Engine(pats).scan_paths([p], extra=seen.observers()))     # what `triage analyze` runs
        t2 = time.perf_counter()
    print(f"lines            {n:,}")
    print(f"bytes            {size / 1e6:.1f} MB")
    print(f"patterns loaded  {len(pats)} in {t1 - t0:.3f} s")
    print(f"scan+analyse     {t2 - t1:.2f} s  ({n / (t2 - t1):,.0f} lines/s, {size / 1e6 / (t2 - t1):.1f} MB/s)")
    print(f"primary          {a.primary.pitfall if a.primary else None}; findings {len(a.findings)}")


if __name__ == "__main__":
    main()
