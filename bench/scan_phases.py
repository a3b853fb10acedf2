"""Where one `triage analyze` run's time goes, phase by phase: wall and the main thread's CPU for
start-up (imports, the catalog), the scan, the verdict and the report; the scanner's own work per
block (taking a worker's result, feeding the observers); the reader thread's and the workers' CPU.
With many workers the scanner's thread is the critical path: this says how long it is.  Prints
numbers only (not a test).

    python bench/scan_phases.py LOG [-n 3] [--format json] [-j N]     (-j: TRIAGE_JOBS)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run in a child: wraps the stages with timers (wall and this thread's CPU), then runs the CLI.
CHILD = r"""
import json, os, resource, sys, time
T = {}
EXEC = float(os.environ.get("SCAN_PHASES_EXEC", "0") or 0)   # the parent's time.time() just before it started us
T0 = (time.time(), time.perf_counter())
def mark(k):
    T[k] = (time.perf_counter(), time.thread_time())
mark("start")
import triage.cli, triage.pipeline as P, triage.report.formats as F
import triage.scan.engine as E, triage.scan.prefetch as PF, triage.scan.blockscan as BS, triage.scan.pool as PL
W = {}
def timed(owner, name, key):
    f = getattr(owner, name)
    def w(*a, **k):
        c, t = time.thread_time(), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            x = W.setdefault(key, [0.0, 0.0, 0])
            x[0] += time.thread_time() - c; x[1] += time.perf_counter() - t; x[2] += 1
    setattr(owner, name, staticmethod(w) if isinstance(vars(owner).get(name), staticmethod) else w)
def phase(owner, name, before, after):
    f = getattr(owner, name)
    def w(*a, **k):
        mark(before)
        try:
            return f(*a, **k)
        finally:
            mark(after)
    setattr(owner, name, w)
phase(E.Engine, "scan_paths", "scan", "scanned")
phase(F, "render", "render", "rendered")
timed(PL._Pool, "__init__", "workers started")
timed(PL._Pool, "get", "results taken")
timed(BS._InputScan, "block", "blocks fed")
GOT = []     # when each worker's result came, ms after the scan began
get = PL._Pool.get
def got(self, *a, **k):
    r = get(self, *a, **k)
    if r is not None:
        GOT.append((time.perf_counter() - T["scan"][0]) * 1e3)
    return r
PL._Pool.get = got
timed(PL._Pool, "close", "workers closed")
# the scan's own fixed parts (where a big input's time before the workers begin and after the last result goes)
timed(E.Engine, "wire", "observers wired")
timed(E.Engine, "anchor_set_of", "anchor set")
timed(E, "_plan", "blocks planned")
timed(E, "_close", "pool closed")
timed(E.Engine, "result", "scan result")
timed(E, "_warm", "warmer started")
# each worker's blocks: when it began preparing each (pread) and when it sent it, appended to a file per worker
import triage.scan.prepare as PR
TRACE = os.environ.get("SCAN_PHASES_TRACE", "")
if TRACE:
    began = [0.0]
    pb = PR.prepare_block
    def prep(*a, **k):
        if not began[0]:
            began[0] = time.perf_counter()
        return pb(*a, **k)
    PR.prepare_block = prep
    send = PL._Conn.send
    def sent(self, msg, *a):
        send(self, msg, *a)
        with open(f"{TRACE}.{os.getpid()}", "a") as f:
            f.write(f"{began[0] - T['scan'][0]:.6f} {time.perf_counter() - T['scan'][0]:.6f}\n")
        began[0] = 0.0
    PL._Conn.send = sent
reader = [0.0]
run = PF.Prefetched._run
def counted(self):
    c = time.thread_time()
    try:
        run(self)
    finally:
        reader[0] += time.thread_time() - c
PF.Prefetched._run = counted
sys.argv = ["triage"] + json.loads(sys.argv[1])
try:
    triage.cli.main()
except SystemExit:
    pass
mark("end")
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
lanes = []
if TRACE:
    import glob
    for fn in glob.glob(TRACE + ".*"):
        rows = [tuple(float(x) * 1e3 for x in l.split()) for l in open(fn)]
        os.unlink(fn)
        if rows:
            lanes.append((rows[0][0], rows[-1][1], sum(b - a for a, b in rows), len(rows)))
order = [k for k in ("start", "scan", "scanned", "render", "rendered", "end") if k in T]
out = {"phases": [(a + " -> " + b, (T[b][0] - T[a][0]) * 1e3, (T[b][1] - T[a][1]) * 1e3)
                  for a, b in zip(order, order[1:])],
       "inside the scan": {k: (v[1] * 1e3, v[0] * 1e3, v[2]) for k, v in W.items()},
       "exec -> start": (T0[0] - EXEC) * 1e3 if EXEC else None,
       "results at": (min(GOT), max(GOT), len(GOT)) if GOT else None,
       "lanes": sorted(lanes),
       "reader thread cpu": reader[0] * 1e3, "workers cpu": (ch.ru_utime + ch.ru_stime) * 1e3}
sys.stderr.write("PHASES " + json.dumps(out) + "\n")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--format", default="json")
    ap.add_argument("-j", "--jobs", default=None)
    a = ap.parse_args()
    # (a PYTHONPATH given first: another tree's triage measured with this script, as bench/device_session.sh does)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), ROOT) if p))
    if a.jobs:
        env["TRIAGE_JOBS"] = str(a.jobs)
    args = ["analyze", a.log, "--format", a.format, "-o", os.devnull, "--force"]
    for i in range(a.n):
        # (-P: the working directory is not put before PYTHONPATH, where a tree run from another would win)
        safe = ["-P"] if sys.version_info >= (3, 11) else []
        env["SCAN_PHASES_EXEC"] = repr(time.time())
        env["SCAN_PHASES_TRACE"] = f"/tmp/scan-phases-trace-{os.getpid()}"
        r = subprocess.run([sys.executable, *safe, "-c", CHILD, json.dumps(args)], env=env, capture_output=True,
                           text=True)
        line = [x for x in r.stderr.splitlines() if x.startswith("PHASES ")]
        if not line:
            print(f"run {i + 1}: no figures (rc {r.returncode}): {r.stderr.strip()[-300:]}")
            continue
        d = json.loads(line[-1][7:])
        ex, at = d.get("exec -> start"), d.get("results at")
        print(f"run {i + 1}:  " + (f"exec -> start wall {ex:.0f} ms  |  " if ex is not None else "") + "  |  ".join(f"{k} wall {w:.0f} ms, main cpu {c:.0f}" for k, w, c in d["phases"]))
        print("        scanner: " + "  |  ".join(f"{k} x{n}: wall {w:.0f} ms, cpu {c:.0f}"
                                               for k, (w, c, n) in d["inside the scan"].items())
              + f"  |  reader thread cpu {d['reader thread cpu']:.0f} ms  |  workers cpu {d['workers cpu']:.0f} ms"
              + (f"\n        workers' results: first {at[0]:.0f} ms, last {at[1]:.0f} ms after the scan began ({at[2]} results)"
                 if at else "")
              + ("".join(f"\n        worker lanes (first began, last sent, busy, blocks; ms after the scan began): "
                         f"began {min(x[0] for x in L):.0f}-{max(x[0] for x in L):.0f}, last sent "
                         f"{min(x[1] for x in L):.0f}-{max(x[1] for x in L):.0f}, busy {min(x[2] for x in L):.0f}-"
                         f"{max(x[2] for x in L):.0f}, blocks {min(x[3] for x in L)}-{max(x[3] for x in L)}"
                         for L in [d.get("lanes") or []] if L)))


if __name__ == "__main__":
    main()
