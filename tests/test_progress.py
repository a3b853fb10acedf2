"""The progress bar: only on a terminal, only for big inputs, never with --quiet or on a pipe."""
import io
import os
import subprocess
import sys

from triage.progress import PROGRESS_MIN_BYTES, SLOW_NOTE_BYTES, Progress, for_inputs, slow_search_note

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_bar_shows_bytes_rate_and_eta_then_clears():
    t = [0.0]
    out = FakeTTY()
    p = Progress(200_000_000, out, clock=lambda: t[0])
    t[0] = 1.0
    p(100_000_000)
    text = out.getvalue()
    assert "50.0%" in text and "100 MB / 200 MB" in text and "100 MB/s" in text and "ETA 1s" in text
    p.close()
    assert out.getvalue().endswith("\r\x1b[2K")


def test_shown_only_on_a_terminal_for_big_inputs(tmp_path):
    big = tmp_path / "big.log"
    with open(big, "wb") as f:
        f.truncate(PROGRESS_MIN_BYTES)          # sparse: size is what counts
    small = tmp_path / "small.log"
    small.write_text("x\n")
    assert isinstance(for_inputs([str(big)], stream=FakeTTY()), Progress)
    assert for_inputs([str(tmp_path)], stream=FakeTTY()) is not None        # a directory: its files
    assert for_inputs([str(big)], stream=io.StringIO()) is None             # a pipe / file
    assert for_inputs([str(big)], quiet=True, stream=FakeTTY()) is None
    assert for_inputs([str(big)], stream=FakeTTY(), max_bytes=1000) is None   # --max-bytes: what is read
    assert for_inputs([str(small)], stream=FakeTTY()) is None
    assert for_inputs(["-"], stream=FakeTTY()) is None                      # stdin: size unknown


def test_quiet_prints_only_the_verdict_line():
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", "-q", os.path.join(ROOT, "examples", "sample_job.log")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("triage: rank 1 failed first with moe-scope-conflict")
    assert r.stderr == ""


def test_fleet_job_counter_only_on_a_terminal():
    import io
    from triage.progress import JobsProgress, for_jobs

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert for_jobs(10, stream=io.StringIO()) is None          # a pipe: nothing
    assert for_jobs(10, quiet=True, stream=Tty()) is None
    assert for_jobs(1, stream=Tty()) is None                   # one job: no counter
    s = Tty()
    t = [0.0]
    bar = JobsProgress(4, s, clock=lambda: t[0])
    t[0] = 2.0
    bar(2)
    assert "2/4 jobs" in s.getvalue() and "1.0 jobs/s" in s.getvalue() and "ETA 2s" in s.getvalue()
    bar.close()
    assert s.getvalue().endswith("\r\x1b[2K")


def test_without_hyperscan_big_inputs_get_one_line_saying_so(tmp_path, monkeypatch):
    from triage.match import anchors
    big = tmp_path / "big.log"
    with open(big, "wb") as f:
        f.truncate(SLOW_NOTE_BYTES)             # sparse: size is what counts
    small = tmp_path / "small.log"
    small.write_text("x\n")
    out = io.StringIO()
    monkeypatch.setattr(anchors, "_hs", None)
    assert slow_search_note([str(big)], out) is True
    assert out.getvalue() == ("triage: note: without the hyperscan wheel (pip install hyperscan) these 34 MB of "
                              "logs are searched with Python's re, about 10 times slower\n")
    assert slow_search_note([str(tmp_path)], io.StringIO()) is True     # a directory: its files
    assert slow_search_note([str(small), "-"], io.StringIO()) is False
    assert slow_search_note([str(big)], io.StringIO(), max_bytes=1000) is False       # --max-bytes 1000
    monkeypatch.undo()
    if anchors.hyperscan_available():
        assert slow_search_note([str(big)], io.StringIO()) is False


def test_the_slow_search_note_is_said_by_analyze_unless_quiet(monkeypatch):
    import inproc
    import triage.pipeline
    said = []
    monkeypatch.setattr(triage.pipeline, "slow_search_note", lambda paths, max_bytes=0: said.append((paths, max_bytes)))
    log = os.path.join(ROOT, "examples", "sample_job.log")
    inproc.run(["analyze", log])
    inproc.run(["analyze", "-q", log])
    inproc.run(["analyze", "--max-bytes", "1000", log])
    assert [(list(p), m) for p, m in said] == [([log], 0), ([log], 1000)]
