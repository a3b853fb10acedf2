"""Issue 23, "a crash must never read as healthy": odd but real inputs (each test is built from a
case of the outside attack run, its big input generated here)."""
import gzip
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import inproc  # the CLI in this process: tests/inproc.py

from triage.inputs import sources as S

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(args, stdin=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "triage", *args], input=stdin, capture_output=True,
                          timeout=timeout, env=env)


def analyze_json(*paths, stdin=None):
    """A subprocess: for the inputs that once blocked forever (a FIFO, a growing file), its timeout."""
    r = run(["analyze", *map(str, paths), "--format", "json"], stdin=stdin)
    return r.returncode, json.loads(r.stdout)


def analyze_json_here(*paths):
    """The same in this process (tests/inproc.py), for inputs that are plain files."""
    r = inproc.run(["analyze", *map(str, paths), "--format", "json"])
    return r.returncode, json.loads(r.stdout)


CAUGHT = ("step {i}: caught and retried\nTraceback (most recent call last):\n"
          '  File "/srv/load.py", line 7, in fetch\n    return client.get(key)\n'
          "ConnectionResetError: [Errno 104] Connection reset by peer (try {i})\n")
CRASH = ("Traceback (most recent call last):\n  File \"/srv/train.py\", line 9, in <module>\n    main()\n"
         "ValueError: checkpoint shard 3 is corrupt\n")


@pytest.mark.parametrize("n", [499, 501, 3000])
def test_more_than_500_error_blocks_before_the_crash_keep_the_crash_and_say_so(tmp_path, n):
    """The attack case: 499 caught tracebacks gave exit 3, 501 exit 0 (the later blocks were dropped)."""
    p = tmp_path / "job.log"
    p.write_text("".join(CAUGHT.format(i=i) + "".join(f"iteration {i} ok\n" for _ in range(45))
                         for i in range(n)) + CRASH)
    rc, d = analyze_json_here(p)
    assert rc == 3 and d["first_failure"]["message"] == "ValueError: checkpoint shard 3 is corrupt"
    dropped = [x for x in d.get("notes", []) if "were only counted" in x]
    assert (n > 500) == bool(dropped)
    if n > 500:
        assert dropped[0].startswith(f"{n + 1 - 500:,} error blocks")


@pytest.mark.parametrize("after,failed", [(39, True), (40, True), (41, False), (60, False), (99, False)])
def test_a_caught_traceback_is_a_failure_only_within_40_lines_of_the_end(tmp_path, after, failed):
    """The README's rule (40 lines after the exception line); message lines that follow the
    exception line are no longer counted as the block's, which made 41-99 lines a failure."""
    p = tmp_path / "job.log"
    p.write_text(CAUGHT.format(i=0) + "".join(f"iteration {i} loss 1.0\n" for i in range(after)))
    rc, d = analyze_json_here(p)
    assert (rc == 3) == failed and (d["outcome"] == "unexplained-failure") == failed


def test_lone_cr_line_endings_are_lines(tmp_path):
    p = tmp_path / "mac.log"
    p.write_bytes(b"step 1 ok\rstep 2 ok\rRuntimeError: CUDA error: an illegal memory access was encountered\r")
    rc, d = analyze_json_here(p)
    assert rc == 1 and d["primary"] == "illegal-memory-access"
    assert any("lone carriage return" in n for n in d["notes"])


def test_progress_bar_carriage_returns_are_not_lone_crs():
    assert not S._lone_cr(b"epoch 1\r 10%|#\r 20%|##\nstep 2 ok\n")
    assert S._lone_cr(b"a\rb\rc\r")


def test_compression_on_a_slow_pipe_is_decided_from_enough_bytes():
    """The magic bytes arrive one at a time: a peek saw one byte and missed the gzip magic."""
    data = gzip.compress(b"step 1 ok\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    code = ("import sys,time\nd=sys.stdin.buffer.read()\nfor b in d[:4]:\n"
            "    sys.stdout.buffer.write(bytes([b])); sys.stdout.buffer.flush(); time.sleep(0.2)\n"
            "sys.stdout.buffer.write(d[4:]); sys.stdout.buffer.flush()\n")
    feeder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    env = dict(os.environ, PYTHONPATH=ROOT)
    tri = subprocess.Popen([sys.executable, "-m", "triage", "analyze", "-", "--format", "json"],
                           stdin=feeder.stdout, stdout=subprocess.PIPE, env=env)
    feeder.stdin.write(data)
    feeder.stdin.close()
    out, _ = tri.communicate(timeout=60)
    feeder.wait(timeout=10)
    assert tri.returncode == 1 and json.loads(out)["primary"] == "illegal-memory-access"


def test_a_fifo_in_a_job_directory_is_skipped_with_a_note_not_waited_on(tmp_path):
    (tmp_path / "rank_0.log").write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    os.mkfifo(tmp_path / "rank_1.log")
    rc, d = analyze_json(tmp_path)            # before: blocked forever opening the FIFO
    assert rc == 1 and d["primary"] == "illegal-memory-access"
    assert any("rank_1.log" in n and "FIFO" in n for n in d["notes"])


def test_a_fifo_named_on_the_command_line_is_read(tmp_path):
    fifo = tmp_path / "live.log"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(gzip.compress(b"RuntimeError: CUDA error: an illegal memory access was encountered\n"))
    t = threading.Thread(target=feed)
    t.start()
    rc, d = analyze_json(fifo)
    t.join(10)
    assert rc == 1 and d["primary"] == "illegal-memory-access"    # a compressed FIFO is decided too


def test_an_unreadable_subdirectory_gets_a_note(tmp_path, monkeypatch):
    """os.walk skipped it silently. (Root reads every directory, so the refusal is the OS's error
    raised for that directory; a non-root run below checks the real one.)"""
    (tmp_path / "rank_0.log").write_text("iteration 1 ok\n")
    sub = tmp_path / "node7"
    sub.mkdir()
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(sub):
            raise PermissionError(13, "Permission denied", str(sub))
        return real(path)
    monkeypatch.setattr(os, "scandir", scandir)
    notes = []
    assert S.expand_paths([str(tmp_path)], notes) == [str(tmp_path / "rank_0.log")]
    assert notes == [f"cannot read directory {str(sub)!r}: Permission denied (its logs were not triaged)"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_an_unreadable_subdirectory_gets_a_note_for_real(tmp_path):
    (tmp_path / "rank_0.log").write_text("iteration 1 ok\n")
    sub = tmp_path / "node7"
    sub.mkdir()
    (sub / "rank_1.log").write_text("x\n")
    sub.chmod(0)
    try:
        rc, d = analyze_json(tmp_path)
    finally:
        sub.chmod(0o755)
    assert rc == 0 and any("cannot read directory" in n for n in d["notes"])


def test_a_file_growing_faster_than_it_is_read_is_finished_with_a_note(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("".join(f"iteration {i} ok\n" for i in range(200_000)))
    stop = threading.Event()

    def grow():
        with open(p, "a") as f:
            while not stop.is_set():
                f.write("iteration x ok\n" * 20_000)
                f.flush()
    t = threading.Thread(target=grow, daemon=True)
    t.start()
    try:
        time.sleep(0.05)
        rc, d = analyze_json(p)               # before: never finished
    finally:
        stop.set()
        t.join(10)
    assert rc == 0
    assert any("grew while it was read" in n for n in d["notes"])


def test_a_fifo_in_a_patterns_directory_is_a_one_line_error_not_a_hang(tmp_path):
    pd = tmp_path / "patterns"
    pd.mkdir()
    os.mkfifo(pd / "x.yaml")
    log = tmp_path / "job.log"
    log.write_text("iteration 1 ok\n")
    r = run(["analyze", str(log), "--patterns", str(pd)], timeout=60)     # before: blocked forever
    err = r.stderr.decode()
    assert r.returncode == 2 and "not a regular file" in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_fuzz_targets_shapes_run_clean_once(tmp_path, monkeypatch):
    """fuzz/fuzz_triage.py's issue-23 shapes (truncated archives of each kind, a FIFO in a directory and
    named as an input), run once here without atheris."""
    import importlib.util
    import types
    fake = types.ModuleType("atheris")
    fake.instrument_imports = lambda: __import__("contextlib").nullcontext()
    if "atheris" not in sys.modules:
        monkeypatch.setitem(sys.modules, "atheris", fake)
    spec = importlib.util.spec_from_file_location("fuzz_triage", os.path.join(ROOT, "fuzz", "fuzz_triage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    class FDP:
        def __init__(self, picks):
            self.picks = list(picks)

        def ConsumeIntInRange(self, lo, hi):
            return max(lo, min(hi, self.picks.pop(0) if self.picks else lo))
    blob = b"step 1 ok\nRuntimeError: CUDA error: an illegal memory access was encountered\n" * 20
    for kind in range(4):
        data = mod.truncated_archive(FDP([kind, 8, 200]), blob)
        mod._scan_file(data, 4096)
    mod.through_a_fifo(blob)
