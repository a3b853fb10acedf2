"""The scanner's own CPU on one log, without the workers competing for the cores (issue 44's seventh pass).

Each TREE runs `triage analyze LOG -j JOBS` once with every block's prepared result (a pool worker's, as the scanner
takes it: engine._prepared, and what its anchor pass told) recorded to a file; then replays the log N times with the
same plan and blocks but no worker, its results in place of the workers' (the trees alternating), and the thread CPU of the scanner's `_InputScan.block` is printed (best and
median, ms), with whether each replay's JSON is its recorded run's.  On a machine of few cores the workers of a pooled run share them
with the scanner, and a profile of it measures their competition; here it runs alone, on the very results it would
take.  PYTHONHASHSEED is
fixed for both (a worker's rule searches are used only for a line whose text hashes as in the worker).  Prints
numbers only (not a test).

    python bench/scanner_replay.py LOG [-n 5] [-j 4] [--tree OLD_TREE] [--tree .]
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(mode: str, log: str, store: str, jobs: str, out: str) -> None:
    """Run triage in this process: record each block's prepared result, or replay them and print block()'s CPU."""
    import triage.cli
    import triage.scan.blockscan as blockscan
    import triage.scan.engine as engine
    real = engine._prepared
    if mode == "record":
        got: list = []

        def record(*a, **k):
            r = real(*a, **k)
            facts = a[8] if len(a) > 8 else k.get("facts")     # (what the block's anchor pass told: BlockFacts)
            got.append((r, None if facts is None else (set(facts.found), list(facts.normed))))
            return r
        engine._prepared = record
    else:
        with open(store, "rb") as f:
            it = iter(pickle.load(f))

        def replay(*a, **k):
            r, told = next(it)
            facts = a[8] if len(a) > 8 else k.get("facts")
            if facts is not None and told is not None:
                facts.found.update(told[0])
                facts.normed.extend(told[1])
            return r
        engine._prepared = replay

        class NoPool:               # (the recorded run's plan and blocks, ramped as a pool's, with no worker)
            broken = False

            def get(self, *a):
                return None

            def close(self):
                pass
        engine._start_pool = lambda *a, **k: NoPool()
        spent = [0.0]
        block = blockscan._InputScan.block

        def timed(self, *a, **k):
            c = time.thread_time()
            try:
                return block(self, *a, **k)
            finally:
                spent[0] += time.thread_time() - c
        blockscan._InputScan.block = timed
    sys.argv = ["triage", "analyze", log, "--format", "json", "-j", jobs, "-o", out, "--force"]
    try:
        triage.cli.main()
    except SystemExit:
        pass
    if mode == "record":
        with open(store, "wb") as f:
            pickle.dump(got, f, -1)
    else:
        print(f"{spent[0] * 1e3:.1f}")


def _same(a: str, b: str) -> bool:
    docs = []
    for p in (a, b):
        with open(p) as f:
            d = json.load(f)
        d.get("job", {}).pop("analysed_at", None)
        docs.append(d)
    return docs[0] == docs[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("-n", type=int, default=5, help="replays per tree (default 5)")
    ap.add_argument("-j", "--jobs", default="4", help="-j of the recorded run (default 4: 3 workers, who parse)")
    ap.add_argument("--tree", action="append", help="a tree to replay (PYTHONPATH; default: this one)")
    ap.add_argument("--_child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._child:
        _child(a._child[0], a.log, a._child[1], a.jobs, a._child[2])
        return
    trees = a.tree or [os.path.dirname(HERE)]
    tmp = tempfile.mkdtemp(prefix="triage-replay-")
    env = dict(os.environ, PYTHONHASHSEED="0")
    me = os.path.abspath(__file__)
    files = {}
    for i, t in enumerate(trees):            # (each tree its own workers' results: what it sends, it reads)
        store, ref = os.path.join(tmp, f"prepared-{i}.pkl"), os.path.join(tmp, f"recorded-{i}.json")
        files[t] = (store, ref)
        subprocess.run([sys.executable, me, a.log, "-j", a.jobs, "--_child", "record", store, ref],
                       env=dict(env, PYTHONPATH=os.path.abspath(t)), cwd=os.path.abspath(t), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"# {a.log}: each tree's run with -j {a.jobs} recorded, then replayed at -j 1; the scanner's block() CPU, "
          f"{a.n} replays a tree (ms)")
    print("| tree | best | median | the recorded JSON |\n|---|---|---|---|")
    results: dict = {t: [] for t in trees}
    same = {t: True for t in trees}
    for _ in range(a.n):                     # (the trees alternate: a machine's load drifts)
        for t in trees:
            store, ref = files[t]
            out = os.path.join(tmp, "replay.json")
            r = subprocess.run([sys.executable, me, a.log, "-j", a.jobs, "--_child", "replay", store, out],
                               env=dict(env, PYTHONPATH=os.path.abspath(t)), cwd=os.path.abspath(t),
                               capture_output=True, text=True)
            try:
                results[t].append(float(r.stdout.strip().splitlines()[-1]))
            except (IndexError, ValueError):
                print(f"# {t}: replay failed: {r.stderr.strip().splitlines()[-1:]}")
                continue
            same[t] = same[t] and _same(ref, out)
    for t in trees:
        v = results[t]
        if v:
            print(f"| {t} | {min(v):.1f} | {statistics.median(v):.1f} | {'same' if same[t] else 'differs'} |")


if __name__ == "__main__":
    main()
