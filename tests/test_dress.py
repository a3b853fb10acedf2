"""Issue 44's twentieth pass: how a log was captured is no part of its diagnosis.  A log written through a terminal
(`docker run -t`, `script`, a pod with `tty: true`: the line discipline ends every line with CRLF), with a colour
formatter's ANSI codes around its messages, or both, gives its plain twin's report -- real logs of every kind the
fixtures hold, and a big one through the pool, whose blocks are read without the CRs and the colours
(sources.without_gaps) by its workers and its scanner alike (before, every line of such a log took the scanner's
slowest path: ~3-4x a plain log's time at -j 2 here, and the scanner's work, which the workers do not share, 40x)."""
from __future__ import annotations

import glob
import json
import os
import random
import subprocess
import sys

import pytest

from triage.pipeline import triage
from triage.report.formats import render

REAL = os.path.join(os.path.dirname(__file__), "fixtures", "logs", "real")
DRESSES = ("crlf", "ansi", "tty")


def _dress(data: bytes, how: str, seed: int = 3) -> bytes:
    """DATA as a terminal gives it: CRLF line ends (crlf, tty) and, on half the lines, a colour around the line
    (ansi, tty: SGR codes, as a colouring logging formatter writes them on a tty)."""
    rnd = random.Random(seed)
    out = []
    for ln in data.split(b"\n"):
        if how in ("ansi", "tty") and ln and rnd.random() < 0.5:
            ln = b"\x1b[" + rnd.choice([b"32", b"1;31", b"33", b"0;36"]) + b"m" + ln + b"\x1b[0m"
        if how in ("crlf", "tty") and ln:
            ln += b"\r"
        out.append(ln)
    return b"\n".join(out)


def _report(path: str, root: str) -> dict:
    d = json.loads(render(triage([path]), "json"))
    d.get("job", {}).pop("analysed_at", None)
    return json.loads(json.dumps(d).replace(root, "ROOT"))


def _real_logs():
    out = []
    for p in sorted(glob.glob(os.path.join(REAL, "**", "*.log"), recursive=True)):
        data = open(p, "rb").read()
        if b"\r" in data or b"\x1b" in data or b"\x00" in data:
            continue        # (dressed already, or gapped: their own tests)
        out.append(p)
    return out


@pytest.mark.parametrize("how", DRESSES)
def test_a_terminals_dress_changes_no_report_of_a_real_log(tmp_path, how):
    """Every real fixture log (training and serving, per-rank directories, pastes) against its dressed twin at the
    same relative path: the same JSON report.  (A paste is dressed with CRLF only: a colour before `cat -n`'s line
    numbers is no paste anyone makes.)"""
    logs = _real_logs()
    assert len(logs) > 100
    plain, dressed = tmp_path / "plain", tmp_path / "dressed"
    checked = 0
    for p in logs:
        rel = os.path.relpath(p, REAL)
        if how != "crlf" and rel.startswith("pastes"):
            continue
        a, b = plain / rel, dressed / rel
        a.parent.mkdir(parents=True, exist_ok=True)
        b.parent.mkdir(parents=True, exist_ok=True)
        data = open(p, "rb").read()
        a.write_bytes(data)
        b.write_bytes(_dress(data, how))
        assert _report(str(b), str(dressed)) == _report(str(a), str(plain)), rel
        checked += 1
    assert checked > 100


STEP = ("[rank{r}]: [2026-12-03 06:{m:02d}:{s:02d}.100000] iteration {n:8d}/ 5000000 | consumed samples: {c:12d} | "
        "elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): 468.9 | learning rate: "
        "3.000000E-04 | global batch size:  1024 | lm loss: 1.056798E+01 | loss scale: 1.0 | grad norm: 1.309 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |")
INFO = ("[rank{r}]:node-0:2431{r}:2436{r} [{r}] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f3a2c000000 recvbuff "
        "0x7f3a2c000000 count 16777216 datatype 7 op 0 root 0 comm 0x55d0c8a0 [nranks=8] stream 0x55d0cfb0")
WARN = ("[rank{r}]:/usr/lib/python3.12/site-packages/torch/autograd/graph.py:869: UserWarning: The AccumulateGrad "
        "node's stream does not match the stream of the node that produced the incoming gradient.")
FAIL = ["[rank5]:[E1203 07:59:59.063183771 ProcessGroupNCCL.cpp:1882] [PG ID 0 PG GUID 0(default_pg) Rank 5] "
        "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
        "encountered",
        "[rank5]:CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
        "[rank5]:Traceback (most recent call last):",
        '[rank5]:  File "/workspace/Megatron-LM/pretrain_gpt.py", line 288, in <module>',
        "[rank5]:RuntimeError: CUDA error: an illegal memory access was encountered"]


def _big(size: int) -> bytes:
    out, n, total = [], 0, 0
    while total < size:
        lines = [INFO.format(r=n % 8, n=n)]
        if n % 9 == 0:
            lines.append(WARN.format(r=n % 8))
        if n % 27 == 0:
            k = n // 27
            lines.append(STEP.format(r=7, m=(k // 60) % 60, s=k % 60, n=k, c=k * 1024, ms=5000 + k % 97 * 1.3))
        out.extend(lines)
        total += sum(len(x) + 1 for x in lines)
        n += 1
    return ("\n".join(out + FAIL) + "\n").encode()


def test_a_terminals_dress_changes_no_pooled_report(tmp_path):
    """A 6 MiB production-like log (real wordings: NCCL INFO, Megatron's step lines, a warning, the failure) and
    its dressed twins, through the pool (-j 4: three workers, who parse the hit lines) and without it (-j 1): one
    JSON report, the plain log's."""
    data = _big(6 << 20)
    out = {}
    for how in ("plain",) + DRESSES:
        d = tmp_path / how
        d.mkdir()
        p = d / "train.log"
        p.write_bytes(data if how == "plain" else _dress(data, how))
        for jobs in ("1", "4"):
            env = dict(os.environ, TRIAGE_JOBS=jobs, TRIAGE_CACHE_DIR=str(tmp_path / "cache"),
                       TRIAGE_POOL_MIN_BYTES=str(1 << 20))
            o = tmp_path / f"{how}-{jobs}.json"
            r = subprocess.run([sys.executable, "-m", "triage", "analyze", str(p), "--format", "json", "-o", str(o),
                                "--force"], env=env, capture_output=True, text=True)
            assert r.returncode == 1, r.stderr
            rep = json.loads(o.read_text())
            rep.get("job", {}).pop("analysed_at", None)
            out[how, jobs] = json.loads(json.dumps(rep).replace(str(d), "ROOT"))
    base = out["plain", "1"]
    assert base["primary"] == "illegal-memory-access" and base["first_failing_rank"] == 5, base["summary"]
    assert base["step_times"]["current"]["iterations"] > 1000
    for key, rep in out.items():
        assert rep == base, key


def test_a_hangs_ranks_read_by_parts_are_the_serial_reads(tmp_path, monkeypatch):
    """Issue 44's twentieth pass (scan/reread.py): the ranks of an input of one attempt read again by processes side
    by side, each its part cut at newlines and read in pieces of whole lines, are the serial read's -- launcher
    prefixes of several kinds, a per-rank file's own rank, ranks named inside lines, lines a terminal dressed, NUL
    runs; a file with a line longer than a piece, and a compressed one, are left to the serial read (None)."""
    import gzip

    from triage.scan import engine, reread
    monkeypatch.setattr(reread, "PARALLEL_MIN", 0)
    monkeypatch.setattr(reread, "PART_READ", 4096)
    rnd = random.Random(5)
    kinds = ["[rank{r}]:x step", "{r}: srun line", "[1,{r}]<stdout>:mpi", "plain line", "NCCL Rank {r} said",
             "\x1b[32m[rank{r}]: coloured\x1b[0m", "[default{r}]: tee'd", "(VllmWorker rank={r} pid=1) INFO x"]
    # (each line a rank of its own: a line cut or read twice shows in the set)
    lines = [rnd.choice(kinds).format(r=i) + " " + "x" * rnd.randrange(200) for i in range(3000)]
    lines[1500] += "\x00" * 40
    data = "\n".join(lines).encode() + b"\n"

    def serial(path, fr):
        monkeypatch.setenv("TRIAGE_JOBS", "1")
        got = engine._ranks_by_attempt([(str(path), fr, [(0, 0)], [path.stat().st_size])], {})
        monkeypatch.delenv("TRIAGE_JOBS")
        return got.get(0, set())

    for name, body, fr in (("a.log", data, None), ("rank_3.log", data, 3), ("crlf.log", _dress(data, "tty"), None)):
        p = tmp_path / name
        p.write_bytes(body)
        want = serial(p, fr)
        assert len(want) > 1500, len(want)
        for k in (2, 3, 7):
            assert reread.ranks_parallel(str(p), fr, p.stat().st_size, k) == want, (name, k)
    long = tmp_path / "long.log"
    long.write_bytes(data[:20000] + b"[rank9]: " + b"y" * 9000 + b"\n" + data[20000:])
    assert reread.ranks_parallel(str(long), None, long.stat().st_size, 4) is None
    gz = tmp_path / "b.log.gz"
    gz.write_bytes(gzip.compress(data))
    assert reread.ranks_parallel(str(gz), None, gz.stat().st_size, 4) is None


def _cli(args, env, stdin=None):
    return subprocess.run([sys.executable, "-m", "triage", "analyze", *args], env=env, capture_output=True,
                          stdin=stdin)


def test_a_big_log_on_a_pipe_is_read_as_its_file(tmp_path):
    """inputs/spool.py: a log piped to `triage analyze` past TRIAGE_SPOOL_MIN_BYTES is copied to a file of its own
    and read as one (by the pool: -j 4), labelled <stdin>: the JSON report of the file (but for the input's name and
    where the job id came from), and of the pipe read as a pipe (a smaller threshold than the log: not copied); the
    copy is gone after; with --max-bytes, the same note of where reading stopped."""
    data = _big(3 << 20)
    p = tmp_path / "train.log"
    p.write_bytes(data)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    base = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "cache"), TRIAGE_POOL_MIN_BYTES=str(1 << 20),
                TRIAGE_JOBS="4", TMPDIR=str(tmpdir))

    def rep(r):
        assert r.returncode == 1, r.stderr
        d = json.loads(r.stdout)
        d.get("job", {}).pop("analysed_at", None)
        return json.loads(json.dumps(d).replace(str(p), "<stdin>").replace('"id_source": "path"',
                                                                            '"id_source": "stdin"'))

    file_ = rep(_cli([str(p), "--format", "json"], base))
    for spool in (str(1 << 20), str(64 << 20)):
        env = dict(base, TRIAGE_SPOOL_MIN_BYTES=spool)
        with open(p, "rb") as f:
            piped = subprocess.Popen(["cat"], stdin=f, stdout=subprocess.PIPE)
            r = _cli(["--format", "json"], env, stdin=piped.stdout)
            piped.stdout.close()
            piped.wait()
        assert rep(r) == file_, spool
        assert list(tmpdir.iterdir()) == []
    notes = []
    for spool in (str(1 << 20), str(64 << 20)):
        env = dict(base, TRIAGE_SPOOL_MIN_BYTES=spool)
        with open(p, "rb") as f:
            piped = subprocess.Popen(["cat"], stdin=f, stdout=subprocess.PIPE)
            r = _cli(["--format", "json", "--max-bytes", str(2 << 20)], env, stdin=piped.stdout)
            piped.stdout.close()          # (cat then stops: the pipe's last reader gone)
            piped.wait()
        d = json.loads(r.stdout)
        notes.append([n for n in d.get("notes", []) + d.get("stats", {}).get("notes", []) if "max-bytes" in n])
    assert notes[0] == notes[1] and notes[0], notes


def test_a_pipe_that_cannot_be_copied_is_read_as_a_pipe(monkeypatch, tmp_path):
    """spooled_stdin: a pipe under SPOOL_MIN is put back whole (stdin reads it from its start); one whose copy
    fails (a full disk, after its first write) too: the bytes copied, then those read and not written, then the
    rest of the pipe."""
    import errno
    import io

    from triage.inputs import spool
    data = bytes(range(256)) * 20000 + b"\n"
    monkeypatch.setattr(spool, "SPOOL_MIN", 1 << 16)
    monkeypatch.setattr(spool, "COPY", 1 << 14)
    monkeypatch.setattr(spool.tempfile, "tempdir", str(tmp_path))

    def stdin(b):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(b)), encoding="utf-8"))

    stdin(data[:1000])
    assert spool.spooled_stdin() is None and sys.stdin.buffer.read() == data[:1000]
    writes = []
    real = os.write

    def full(fd, b):
        writes.append(len(b))
        if len(writes) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, b[:1000]) if len(writes) == 2 else real(fd, b)
    monkeypatch.setattr(spool.os, "write", full)
    stdin(data)
    assert spool.spooled_stdin() is None
    assert sys.stdin.buffer.read() == data
    assert list(tmp_path.iterdir()) == [] or all(not any(d.iterdir()) for d in tmp_path.iterdir())
