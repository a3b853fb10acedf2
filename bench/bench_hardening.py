"""Benchmark: the hostile inputs of issue 23 ("time and memory bounded by the input size, not by its
shape"), each run through `python -m triage` in a subprocess; prints wall time and peak RSS per case
against the target (5 s, 200 MB).  A script, not a test (tests/test_hardening2_bounds.py checks the
behaviour on small versions of the same inputs).

    python bench/bench_hardening.py [--scale 1.0] [--only NAME[,NAME...]] [--timeout 300] [--root DIR]

--scale shrinks (or grows) every generated input (0.1: a tenth of the sizes, to measure a slow
build cheaply); --root runs another checkout's triage (a "before" tree).  Every input is SYNTHETIC,
generated in a temp dir and deleted afterwards.  Peak RSS is the triage process's own
(resource.getrusage(RUSAGE_CHILDREN) of a fresh interpreter that runs only that case).
"""
import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # this checkout's triage
TARGET_S = 5.0
TARGET_MB = 200.0
MIB = 1 << 20

CLEANUP_WARNING = ("[W1203 07:12:01.123456789 ProcessGroupNCCL.cpp:1250] Warning: WARNING: destroy_process_group() "
                   "was not called before program exit, which can leak resources. (function operator())\n")
RUNTIME_ERROR = b"RuntimeError: the data loader worker raised an error\n"
# bytes the control-byte anchor looks for (prepare._CTRL_RX), none of them a newline
CTRL = bytes(list(range(0x01, 0x09)) + [0x0b, 0x0c] + list(range(0x0e, 0x20)) + [0x7f])
AA_PATTERN = """id: user-aa
title: an overlapping alternation under a quantifier
severity: error
kind: runtime
match:
  - regex: 'Fatal widget error'
    literal: 'Fatal widget error'
    context:
      - regex: '(a|aa)+$'
        literal: 'aaaa'
        window: 1000
references: [{source: bench}]
explanation: x
fix: x
examples:
  match: ["aaaa\\nFatal widget error"]
  no_match: ["nothing"]
"""


def _fill(path: str, line: bytes, size: int, gz: bool = False) -> None:
    """LINE repeated to SIZE bytes (written a MiB at a time)."""
    n = max(1, size // len(line))
    per = max(1, min(n, MIB // len(line)))
    chunk = line * per
    with (gzip.open(path, "wb") if gz else open(path, "wb")) as f:
        done = 0
        while done < n:
            k = min(per, n - done)
            f.write(chunk if k == per else line * k)
            done += k


def _ctrl_line(path: str, size: int) -> None:
    with open(path, "wb") as f:
        f.write(b"[rank0]: starting\n")
        f.write((CTRL * (size // len(CTRL) + 1))[:size] + b"\n")
        f.write(b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")


def _big_scalar(path: str, size: int) -> None:
    with open(path, "w") as f:
        f.write("model:\n  cuda_graph_impl: local\n  note: \"" + "x" * size + "\"\n")


# each case: (name, make(dir, scale) -> the triage command line)
def retry(d: str, s: float) -> List[str]:
    p = os.path.join(d, "retry.log")
    _fill(p, b"ERROR: retrying\n", int(16 * MIB * s))
    return ["analyze", p]


def runtime_errors(d: str, s: float) -> List[str]:
    p = os.path.join(d, "rterr.log")
    _fill(p, RUNTIME_ERROR, int(30e6 * s))
    return ["analyze", p]


def runtime_errors_gz(d: str, s: float) -> List[str]:
    """12 MB of such lines, gzipped."""
    p = os.path.join(d, "rterr.log.gz")
    _fill(p, RUNTIME_ERROR, int(12e6 * s), gz=True)
    return ["analyze", p]


def ctrl_1mib(d: str, s: float) -> List[str]:
    p = os.path.join(d, "ctrl1.log")
    _ctrl_line(p, int(MIB * s))
    return ["analyze", p]


def ctrl_4mib(d: str, s: float) -> List[str]:
    p = os.path.join(d, "ctrl4.log")
    _ctrl_line(p, int(4 * MIB * s))
    return ["analyze", p]


def cleanup(d: str, s: float) -> List[str]:
    p = os.path.join(d, "cleanup.log")
    _fill(p, CLEANUP_WARNING.encode(), max(1, int(20_000 * s)) * len(CLEANUP_WARNING))
    return ["analyze", p]


def tensor(d: str, s: float) -> List[str]:
    """Lines holding the literal of the shipped `Tensor mismatch at ...` regexes many times and never
    the words after it: the old `.*(...)` searched to the end of the line from each one."""
    p = os.path.join(d, "tensor.log")
    _fill(p, (" - Tensor mismatch at args[0]:" * 500)[:15_000].encode() + b"\n", int(3e6 * s))
    return ["analyze", p]


def user_aa(d: str, s: float) -> List[str]:
    """A user pattern whose context regex is (a|aa)+$, on pairs of a match line and a line of a's
    (each checked for every match still waiting for its context).  Refused now: exit 2."""
    pdir = os.path.join(d, "pats")
    os.makedirs(pdir)
    with open(os.path.join(pdir, "aa.yaml"), "w") as f:
        f.write(AA_PATTERN)
    p = os.path.join(d, "aa.log")
    _fill(p, b"Fatal widget error\n" + b"a" * 1000 + b"b\n", int(40_000 * s))
    return ["analyze", p, "--patterns", pdir]


def config_scalar(d: str, s: float) -> List[str]:
    p = os.path.join(d, "big.yaml")
    _big_scalar(p, int(15 * MIB * s))
    log = os.path.join(d, "ok.log")
    with open(log, "w") as f:
        f.write("[rank0]: hello\n")
    return ["analyze", log, "--config", p]


def diff_scalar(d: str, s: float) -> List[str]:
    p = os.path.join(d, "big.yaml")
    _big_scalar(p, int(15 * MIB * s))
    old = os.path.join(d, "old.yaml")
    with open(old, "w") as f:
        f.write("model:\n  cuda_graph_impl: local\n  note: short\n")
    return ["diff", old, p]


CASES: List[Tuple[str, Callable[[str, float], List[str]]]] = [
    ("retry-16MiB", retry), ("runtimeerror-30MB", runtime_errors), ("runtimeerror-12MB.gz", runtime_errors_gz),
    ("ctrl-line-1MiB", ctrl_1mib), ("ctrl-line-4MiB", ctrl_4mib), ("cleanup-20k", cleanup),
    ("tensor-mismatch-3MB", tensor), ("user-(a|aa)+$-40KB", user_aa), ("config-scalar-15MiB", config_scalar),
    ("diff-scalar-15MiB", diff_scalar)]


def run(args: List[str], timeout: float, root: str = ROOT) -> Dict[str, object]:
    """One triage command in a subprocess: exit code, wall time, peak RSS, output size, last error line."""
    env = dict(os.environ, PYTHONPATH=root)
    cmd = [sys.executable, "-m", "triage"] + args + (["--format", "json"] if args[0] == "analyze" else [])
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, timeout=timeout)
        rc: object = p.returncode
        out = len(p.stdout)
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] if p.returncode >= 2 else []
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout", 0, []
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"rc": rc, "wall": wall, "rss_mb": peak_kb / 1024, "out": out, "err": err}


def _isolated(args: List[str], timeout: float, root: str) -> Dict[str, object]:
    """run() in a fresh interpreter, so that RUSAGE_CHILDREN's peak is this case's alone."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[4]); import bench_hardening as b; "
            "print(json.dumps(b.run(json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3])))")
    p = subprocess.run([sys.executable, "-c", code, json.dumps(args), str(timeout), root,
                        os.path.dirname(os.path.abspath(__file__))], capture_output=True, text=True)
    if p.returncode != 0:
        return {"rc": "bench-error", "wall": 0.0, "rss_mb": 0.0, "out": 0, "err": [p.stderr.strip()[-200:]]}
    r: Dict[str, object] = json.loads(p.stdout)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--root", default=ROOT, help="the checkout whose triage runs (default: this one)")
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x}
    print(f"targets: {TARGET_S:g} s, {TARGET_MB:g} MB a case; scale {a.scale:g}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':24} {'input':>9} {'rc':>7} {'wall s':>8} {'peak MB':>8} {'out KB':>8}  verdict")
    for name, make in CASES:
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as d:
            args = make(d, a.scale)
            size = sum(os.path.getsize(x) for x in args if os.path.isfile(x))
            r = _isolated(args, a.timeout, a.root)
        wall, rss = float(r["wall"]), float(r["rss_mb"])       # type: ignore[arg-type]
        verdict = "ok" if wall <= TARGET_S and rss <= TARGET_MB and r["rc"] != "timeout" else "OVER"
        if r["err"]:
            verdict += f"  ({r['err'][0][:70]})"                # type: ignore[index]
        print(f"{name:24} {size / 1e6:8.1f}M {r['rc']!s:>7} {wall:8.2f} {rss:8.0f} "
              f"{int(r['out']) / 1024:8.0f}  {verdict}", flush=True)      # type: ignore[call-overload]


if __name__ == "__main__":
    main()
