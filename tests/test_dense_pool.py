"""Issue 44's tenth pass: an input under the pool's size (pool.POOL_MIN_BYTES) that is dense in work -- a storm of
one error on every rank, tracebacks, every line a step record -- gets workers (engine._dense samples it); a sparse
one of the same size does not, nor one too small (pool.DENSE_POOL_MIN_BYTES), nor any with too few workers to parse
its hit lines (prepare.PARSE_MIN_WORKERS).  Either way the report is the one scanned without workers.

Logs: a synthetic layout (lines repeated to size), real wordings (ProcessGroupNCCL, Megatron's step line, NCCL
INFO, CPython's traceback)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from triage.scan import engine, pool
from triage.patterns import load_all

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")

WATCHDOG = ("[rank{r}]:[E1203 06:40:{s:02d}.080183771 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=1048576, "
            "NumelOut=1048576, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
INFO = ("[rank{r}]:node-0:24310:24310 [{r}] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f3a9da00000 recvbuff "
        "0x7f3a9da00000 count 1 datatype 1 op 0 root 0 comm 0x55d0c8a0 [nranks=8] stream 0x55d0cfb0")
STEP = (" [2026-12-03 06:40:{s:02d}.930146] iteration {n:8d}/ 5000000 | consumed samples: {c:12d} | elapsed time "
        "per iteration (ms): 5135.9 | learning rate: 3.000000E-04 | global batch size:  1024 | lm loss: "
        "1.049559E+01 | loss scale: 1.0 | grad norm: 1.047 | number of skipped iterations:   0 |")
TB = ["[rank{r}]:Traceback (most recent call last):",
      '[rank{r}]:  File "/usr/lib/python3.12/site-packages/torch/distributed/c10d.py", line 2501, in all_reduce',
      "[rank{r}]:    work = group.allreduce([tensor], opts)",
      "[rank{r}]:RuntimeError: NCCL communicator was aborted on rank {r}. (attempt {n})"]


def _write(path, size, line_of):
    out, n, total = [], 0, 0
    while total < size:
        for x in line_of(n):
            out.append(x)
            total += len(x) + 1
        n += 1
    path.write_text("\n".join(out) + "\n")
    return str(path)


def _storm(n):
    return [WATCHDOG.format(r=n % 8, s=n % 60, n=n // 64)]


def _sparse(n):
    return [INFO.format(r=n % 8, n=n)]


def _steps(n):
    return [STEP.format(s=n % 60, n=n, c=n * 1024)]


def _tracebacks(n):
    return [INFO.format(r=n % 8, n=n)] * 6 + [x.format(r=n % 8, n=n) for x in TB]


def _jobs(monkeypatch, paths, jobs):
    """The workers the scan of PATHS would start with JOBS (engine._plan, as scan_paths calls it)."""
    monkeypatch.setenv("TRIAGE_JOBS", str(jobs))
    eng = engine.Engine(load_all())
    from triage.pipeline import Seen
    _, obs, _ = eng.wire(Seen().observers())
    return engine._plan(paths, 0, 0, eng.anchor_set_of(obs), engine._batchers(obs))[1]


@pytest.mark.parametrize("shape,size,jobs,pooled", [
    (_storm, 5 << 20, 4, True),
    (_tracebacks, 9 << 20, 4, True),
    (_steps, 9 << 20, 4, True),
    (_sparse, 9 << 20, 4, False),          # (no work: a line no anchor hits)
    (_storm, 3 << 20, 4, False),           # (under DENSE_POOL_MIN_BYTES)
    (_storm, 5 << 20, 2, False),           # (one worker: it would not parse the hit lines)
])
def test_a_small_input_dense_in_work_gets_workers(monkeypatch, tmp_path, shape, size, jobs, pooled):
    assert size < pool.POOL_MIN_BYTES
    p = _write(tmp_path / "a.log", size, shape)
    k = _jobs(monkeypatch, [p], jobs)
    assert (k > 0) == pooled, (shape.__name__, size, jobs, k)
    if pooled:
        assert k == jobs - 1


def test_the_report_of_a_small_dense_input_is_the_one_without_workers(tmp_path):
    """The CLI on a 5 MiB storm (workers: the density) and on the same with workers refused (TRIAGE_JOBS=1): the
    same JSON report."""
    p = _write(tmp_path / "storm.log", 5 << 20, lambda n: _storm(n) + (_sparse(n) if n % 5 == 0 else []))
    out = {}
    for jobs in ("1", "4"):
        env = dict(os.environ, TRIAGE_JOBS=jobs, TRIAGE_CACHE_DIR=str(tmp_path / "cache"))
        env.pop("TRIAGE_POOL_MIN_BYTES", None)
        r = subprocess.run([sys.executable, "-m", "triage", "analyze", p, "--format", "json", "-o",
                            str(tmp_path / f"r{jobs}.json"), "--force"], env=env, capture_output=True, text=True)
        assert r.returncode in (0, 1, 2, 3), r.stderr
        d = json.loads((tmp_path / f"r{jobs}.json").read_text())
        d["job"].pop("analysed_at", None)
        out[jobs] = d
    assert out["1"] == out["4"]
    assert out["4"]["findings"], out["4"].keys()


def _production(n):
    """A production log's mix: NCCL INFO lines and, every 27th, a step line."""
    return [INFO.format(r=n % 8, n=n)] + ([STEP.format(s=n % 60, n=n, c=n * 1024)] if n % 27 == 0 else [])


def _with_storm_in_middle(n):
    """The production mix with a storm of watchdog timeouts in its middle (the sample at DENSE_AT 0.5 is dense)."""
    return _storm(n) if 28_000 <= n < 36_000 else _production(n)


@pytest.mark.parametrize("shape,jobs,want", [
    (_production, 16, 14),                 # light: the reader's core left (pool.READER_CORES)
    (_with_storm_in_middle, 16, 14),       # (one dense sample: still light, the middle one decides)
    (_production, 8, 7),                   # (under READER_CORES: every core but the scanner's)
    (_storm, 16, 15),                      # dense in work: every worker
    (_tracebacks, 16, 15),
    (_steps, 16, 15),                      # (a step line on every line)
])
def test_a_big_input_light_in_work_leaves_the_readers_core(monkeypatch, tmp_path, shape, jobs, want):
    """Issue 44's nineteenth pass: from READER_CORES cores on, a big input light in work (engine._light) gets one
    worker fewer, its core the scanner's reader thread's; one dense in work gets every worker."""
    monkeypatch.setattr(pool, "POOL_MIN_BYTES", 4 << 20)
    p = _write(tmp_path / "a.log", 12 << 20, shape)
    assert _jobs(monkeypatch, [p], jobs) == want
    if shape is _with_storm_in_middle:          # (its middle sample is the storm's: the other two tell)
        eng = engine.Engine(load_all())
        from triage.pipeline import Seen
        _, obs, _ = eng.wire(Seen().observers())
        got = engine._samples([p], eng.anchor_set_of(obs), engine._batchers(obs))
        assert got[1] * (1 << 20) > engine.LIGHT_WORK * 10 > max(got[0], got[2]) * (1 << 20) * 10


def test_light_is_told_by_the_biggest_inputs_middle_sample(tmp_path):
    eng = engine.Engine(load_all())
    from triage.pipeline import Seen
    _, obs, _ = eng.wire(Seen().observers())
    aset, batchers = eng.anchor_set_of(obs), engine._batchers(obs)
    prod = _write(tmp_path / "prod.log", 2 << 20, _production)
    storm = _write(tmp_path / "storm.log", 1 << 20, _storm)
    assert engine._light([prod], aset, batchers)
    assert not engine._light([storm], aset, batchers)
    assert not engine._light([str(tmp_path / "missing.log")], aset, batchers)     # (nothing read: not light)


def test_the_report_with_the_readers_core_left_is_the_one_without_workers(tmp_path):
    """-j 16 on a light input (14 workers) and -j 1: the same JSON report."""
    p = _write(tmp_path / "prod.log", 6 << 20, lambda n: _production(n) + (_storm(n) if n % 997 == 0 else []))
    out = {}
    for jobs in ("1", "16"):
        env = dict(os.environ, TRIAGE_JOBS=jobs, TRIAGE_CACHE_DIR=str(tmp_path / "cache"),
                   TRIAGE_POOL_MIN_BYTES=str(1 << 20))
        r = subprocess.run([sys.executable, "-m", "triage", "analyze", p, "--format", "json", "-o",
                            str(tmp_path / f"r{jobs}.json"), "--force"], env=env, capture_output=True, text=True)
        assert r.returncode in (0, 1, 2, 3), r.stderr
        d = json.loads((tmp_path / f"r{jobs}.json").read_text())
        d.get("job", {}).pop("analysed_at", None)
        out[jobs] = d
    assert out["1"] == out["16"]
    assert out["1"]["findings"]
