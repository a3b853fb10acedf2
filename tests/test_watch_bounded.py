"""Issue 46: `watch` on a fast writer of step lines stays small and keeps up.  A writer emitting
Megatron iteration lines in a tight loop (~850k lines/s, 1.33 GB) then an illegal memory access: watch
grew to 5.1 GB and named the root cause 156 s after its line.  The step series is now bounded
(verdict/steps.py: thinned past MAX_STEPS iterations) and a follower that falls more than BEHIND bytes
behind its writer skips to the tail, saying so in the report's notes.  Synthetic log (the line shape of
megatron-core's training_log), written here by a writer process; the watch's RSS is read from /proc.

Scaled down for the suite: 250k and 1M lines (58 MiB and 230 MiB) as fast as Python writes them; the
RSS must be flat between the two sizes and under 200 MB, the root cause <= 10 s after its line."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from triage.verdict import steps as S

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINE = (" [2026-12-03 08:%02d:%02d] iteration %8d/ 10000000 | consumed samples: %12d | elapsed time per iteration "
        "(ms): 812.%d | learning rate: 3.000000E-04 | global batch size:   256 | lm loss: 2.1%05d | loss scale: 1.0 | "
        "grad norm: 0.812 |\n")
IMA = "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
# the writer: N step lines in batches (RATE lines/s; 0: as fast as it can), then the fatal line; prints when
_WRITER = ("import sys, time\n"
           "path, n, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])\n"
           f"LINE = {LINE!r}\n"
           "with open(path, 'a') as f:\n"
           "    i = 1\n"
           "    while i <= n:\n"
           "        f.write(''.join(LINE % ((k // 60) % 60, k % 60, k, k * 256, k % 10, k % 100000)"
           " for k in range(i, min(n, i + 1999) + 1)))\n"
           "        f.flush()\n"
           "        i += 2000\n"
           "        if rate:\n"
           "            time.sleep(2000 / rate)\n"
           "    t = time.time()\n"
           f"    f.write({IMA!r})\n"
           "    f.flush()\n"
           "print(t)\n")


def _rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) >> 10
    except OSError:
        pass
    return 0


def _watch(tmp_path, n, rate=0.0):
    """(seconds from the fatal line written to the root-cause event, the watch's peak RSS in MB, the report)."""
    log = tmp_path / "train.log"
    log.write_text("")
    env = {**os.environ, "TRIAGE_DB": "", "PYTHONPATH": ROOT}
    w = subprocess.Popen([sys.executable, "-m", "triage", "watch", str(log), "--format", "jsonl", "--settle", "1",
                          "--idle", "60", "--report", str(tmp_path / "out")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    peak = [0]

    def sample():
        while w.poll() is None:
            peak[0] = max(peak[0], _rss_mb(w.pid))
            time.sleep(0.1)
    threading.Thread(target=sample, daemon=True).start()
    try:
        writer = subprocess.run([sys.executable, "-c", _WRITER, str(log), str(n), str(rate)], capture_output=True,
                                text=True, timeout=120)
        t_fatal = float(writer.stdout)
        got = None
        deadline = time.time() + 60
        for line in w.stdout:
            ev = json.loads(line)
            if ev.get("event") == "root-cause":
                got = time.time()
                break
            if time.time() > deadline:
                break
    finally:
        w.terminate()
        try:
            w.wait(30)
        except subprocess.TimeoutExpired:
            w.kill()
    with open(tmp_path / "out" / "triage-report.json") as f:
        report = json.load(f)
    log.unlink()
    return (None if got is None else got - t_fatal), peak[0], report


def test_a_fast_writer_keeps_the_sidecar_small_and_the_root_cause_on_time(tmp_path):
    small = tmp_path / "small"
    big = tmp_path / "big"
    small.mkdir()
    big.mkdir()
    late_s, rss_s, _ = _watch(small, 250_000)
    late_b, rss_b, report = _watch(big, 1_000_000)
    assert late_s is not None and late_b is not None
    assert late_b <= 10, late_b                               # was 24 s at this size, 156 s at 1.33 GB
    assert rss_b <= 200, rss_b                                # was 395 MB at this size, 5.1 GB at 1.33 GB
    assert rss_b <= rss_s + 40, (rss_s, rss_b)                # flat: 4x the log, not 4x the memory
    assert report["primary"] == "illegal-memory-access", report["primary"]
    assert any("fell behind the writer" in n for n in report.get("notes", [])), report.get("notes")


def test_a_sane_writer_is_followed_whole(tmp_path):
    """A writer the scan keeps up with (40k step lines a second, ~9 MB/s, for 4 s): nothing skipped, and
    the root cause within 10 s of its line."""
    late, rss, report = _watch(tmp_path, 160_000, rate=40_000)
    assert late is not None and late <= 10, late
    assert not any("fell behind" in n for n in report.get("notes", [])), report.get("notes")
    assert report["step_times"]["current"]["iterations"] == 160_000


def test_the_step_series_is_bounded_and_counts_every_iteration(monkeypatch):
    """Past MAX_STEPS iterations the series is thinned (the first HEAD_STEPS and the capture steps kept,
    an even sample of the rest); the count stays exact and the median of a steady run stays its median."""
    monkeypatch.setattr(S, "MAX_STEPS", 1000)
    monkeypatch.setattr(S, "HEAD_STEPS", 100)
    log = S.StepLog()
    for it in range(1, 20_001):
        log._add_step(it, 800.0 + (it % 7), "r0", it, None, f"iteration {it}", None)
    assert len(log.times) <= 1001
    assert log.count() == 20_000
    assert all(i in log.times for i in range(1, 101))          # the head kept whole
    kept = sorted(log.times)
    assert kept[-1] >= 19_000                                   # the newest still sampled
    d = S.summary(log, None)
    assert d["iterations"] == 20_000 and abs(d["steady_median_ms"] - 803.0) <= 1.0


@pytest.mark.parametrize("n", [50, 5000])
def test_a_series_under_the_bound_is_untouched(n):
    log = S.StepLog()
    for it in range(1, n + 1):
        log._add_step(it, 800.0 + it, "r0", it, None, f"iteration {it}", None)
    assert sorted(log.times) == list(range(1, n + 1)) and log.count() == n
