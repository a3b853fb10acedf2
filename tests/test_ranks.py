"""Root cause across ranks (issue 12): the launcher's rank beats timestamped timeouts elsewhere; a hang
names no first failing rank but its suspects; Flight Recorder dumps; one signature per job.

Real logs: tests/fixtures/logs/real/gpu-multirank/ (4 ranks, H200, torch 2.11) and real/gpu/.
The short logs built below are SYNTHETIC: layouts written here from lines of those real logs
(timestamps, ranks and hosts changed), each quoted where it is used.
"""
import json
import os
import re

from helpers import analyse_path, analyse_text
from click.testing import CliRunner

from triage.cli import cli
from triage.verdict.hangs import FR_ANALYSE, FR_DUMPS
from triage.verdict.unexplained import block_message, exception_line

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "fixtures", "logs", "real")
MULTI = os.path.join(REAL, "gpu-multirank")


_a = analyse_path        # (tests/helpers.py; the `engine` fixture is in conftest.py)
_text = analyse_text


def _json(path):
    r = CliRunner().invoke(cli, ["analyze", path, "--format", "json"])
    return r.exit_code, json.loads(r.output)


# real lines (real/gpu-multirank/nccl_rank_error_vs_timeouts.log), re-timed / re-ranked per test
def _timeout(rank, sec):
    return (f"[rank{rank}]:[E1203 14:57:{sec:02d}.448944874 ProcessGroupNCCL.cpp:689] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            f"Timeout(ms)=15000) ran for 15001 milliseconds before timing out.\n")


NCCL_ERR = ("[rank{r}]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9\n"
            "[rank{r}]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
            "[rank{r}]: Last error:\n"
            "[rank{r}]: Failed to CUDA calloc async 608 bytes\n")
SUMMARY = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
tests/fixtures/gen/gpu/nccl_rank_error_vs_timeouts.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-03_14:57:46
  host      : localhost
  rank      : {r} (local_rank: {r})
  exitcode  : 1 (pid: 528)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


# --------------------------------------------------------------------------------------------
# the launcher's rank


def test_real_rank_error_without_timestamp_beats_timestamped_errors_and_timeouts(engine):
    a = _a(engine, os.path.join(MULTI, "nccl_rank_error_vs_timeouts.log"))
    assert a.launcher_root_rank == 3
    assert a.outcome == "pitfall" and a.primary.pitfall == "nccl-error" and a.primary.rank == 3
    assert a.first_rank == 3 and not a.verdict.hang
    roles = sorted((f.pitfall, f.role, f.ranks_text) for f in a.findings if f.role != "info")
    # one finding per (pitfall, event) (issue 21): rank 3's NCCL error; the lost peer on rank 0 (NCCL's
    # own WARN line about the closed socket, without a rank prefix, is a line of that event); the timeouts
    # (rank 0's watchdog follow-up, "failure detected by watchdog at work sequence id: 3", is a line of the
    # timeouts' event since issue 40: the watchdog's own report that its collective did not complete)
    assert roles == [("nccl-error", "cascade", "0"), ("nccl-error", "root-cause", "3"),
                     ("nccl-watchdog-timeout", "cascade", "0-2")]
    # rank 3's "Last error:" / "Failed to CUDA calloc async 608 bytes" belong to its NCCL error
    assert not a.unmatched
    assert a.summary.startswith("rank 3 failed first with nccl-error")


def test_generic_error_on_the_launchers_rank_beats_earlier_timeouts(engine):
    log = _timeout(0, 5) + _timeout(1, 6) + NCCL_ERR.format(r=3) + _timeout(2, 7) + SUMMARY.format(r=3)
    a = _text(engine, log)
    assert a.primary.pitfall == "nccl-error" and a.first_rank == 3
    assert {f.pitfall: f.role for f in a.findings if f.role != "info"} == {
        "nccl-error": "root-cause", "nccl-watchdog-timeout": "cascade"}
    assert not a.unmatched and a.first_failure is None


def test_without_the_launcher_the_earliest_timestamp_still_leads(engine):
    log = _timeout(0, 5) + _timeout(1, 6) + NCCL_ERR.format(r=3) + _timeout(2, 7)
    a = _text(engine, log)
    assert a.primary.pitfall == "nccl-watchdog-timeout"


def test_a_launcher_rank_that_only_timed_out_is_a_hang_not_a_first_failure(engine):
    log = _timeout(0, 5) + _timeout(1, 6) + "[rank2]: [fixture] rank 2: sleeping\n" + SUMMARY.format(r=0)
    a = _text(engine, log)
    assert a.primary.pitfall == "nccl-watchdog-timeout" and a.verdict.hang
    assert a.first_rank is None
    assert [(s.rank, s.peer) for s in a.verdict.hang_suspects] == [(2, None)]


def test_an_unexplained_error_on_the_launchers_rank_is_the_first_failure(engine):
    log = (_timeout(0, 5) + _timeout(1, 6) + "[rank3]: Traceback (most recent call last):\n"
           '[rank3]:   File "train.py", line 3, in <module>\n[rank3]: KeyError: \'input_ids\'\n' + SUMMARY.format(r=3))
    a = _text(engine, log)
    assert a.primary is None and a.outcome == "unexplained-failure" and a.first_rank == 3
    assert a.first_failure.message == "KeyError: 'input_ids'"
    assert {f.role for f in a.findings if f.pitfall == "nccl-watchdog-timeout" and f.role != "info"} == {"cascade"}


# --------------------------------------------------------------------------------------------
# hangs


def test_real_hang_names_no_first_rank_but_the_silent_one(engine):
    code, d = _json(os.path.join(MULTI, "nccl_hang_flight_recorder.log"))
    assert code == 1 and d["outcome"] == "pitfall" and d["primary"] == "nccl-watchdog-timeout"
    assert d["first_failing_rank"] is None and d["launcher_root_rank"] == 1
    assert d["hang_suspects"] == [{"rank": 2, "peer": None,
                                   "because": "logged no error or timeout while other ranks waited for it"}]
    assert d["summary"].startswith("3 ranks (0-1,3) timed out waiting for a collective (nccl-watchdog-timeout): a hang; "
                                   "rank 2 logged no error and never joined it")
    assert "failed first" not in d["summary"]
    fr = d["flight_recorder"]
    assert fr["ranks"] == [0, 1, 2, 3] and fr["dumps"] == FR_DUMPS and fr["analyse"] == FR_ANALYSE
    assert any("Received a dump signal due to a collective timeout" in e["text"] for e in fr["evidence"])


def test_real_two_rank_hang(engine):
    a = _a(engine, os.path.join(REAL, "gpu", "nccl_rank_hang_timeout.log"))
    assert a.verdict.hang and a.first_rank is None
    assert [s.rank for s in a.verdict.hang_suspects] == [1]


def test_a_lost_peer_names_the_peer_nccl_reports(engine):
    """real/gpu/nccl_rank_early_exit.log: rank 1 left early; rank 0's socket to it closed."""
    a = _a(engine, os.path.join(REAL, "gpu", "nccl_rank_early_exit.log"))
    assert a.primary.pitfall == "nccl-error" and a.verdict.hang and a.first_rank is None
    assert [s.peer for s in a.verdict.hang_suspects] == ["localhost<55012>"]
    assert a.summary.startswith("rank 0 lost its collective peer (nccl-error)")
    assert "localhost<55012>" in a.summary


def test_hang_in_text_markdown_and_html():
    path = os.path.join(MULTI, "nccl_hang_flight_recorder.log")
    out = CliRunner().invoke(cli, ["analyze", path]).output
    assert "HANG  no rank failed first" in out and "suspect: rank 2" in out
    assert "FLIGHT RECORDER" in out and "torchfrtrace" in out and "comm_lib_trace_rank_" in out
    assert "(the first process to exit: in a hang, only the first rank to time out)" in out
    md = CliRunner().invoke(cli, ["analyze", path, "--format", "markdown"]).output
    assert "| First failing rank | none: a hang (suspects: rank 2)" in md and "**Flight Recorder:**" in md
    html = CliRunner().invoke(cli, ["analyze", path, "--format", "html"]).output
    assert 'id="flight-recorder"' in html and "a hang: no rank failed first" in html and 'id="hang"' in html


def test_one_signature_per_hang(engine):
    """Two hangs of different ranks, sizes and times are one job-level signature."""
    sigs = {_a(engine, os.path.join(MULTI, "nccl_hang_flight_recorder.log")).verdict.signature,
            _a(engine, os.path.join(REAL, "gpu", "nccl_rank_hang_timeout.log")).verdict.signature}
    assert sigs == {"nccl-watchdog-timeout: ProcessGroupNCCL watchdog collective timeout"}


# --------------------------------------------------------------------------------------------
# the error block: the exception line itself


def test_exception_line_is_never_a_caret_a_frame_or_a_continuation():
    tb = ["Traceback (most recent call last):",
          '  File "/tmp/site/megatron/core/transformer/module.py", line 376, in __call__',
          "    return super().__call__(*args, **kwargs)",
          "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
          "RuntimeError: expected scalar type BFloat16 but found Float"]
    assert exception_line(tb) == "RuntimeError: expected scalar type BFloat16 but found Float"
    assert block_message(tb + ["    ~~~~^^^^"]) == "RuntimeError: expected scalar type BFloat16 but found Float"
    # NCCL's continuation alone: the message after "Last error:", not "Last error:" itself
    assert block_message(["Last error:", "socketProgress: Connection closed by remote peer localhost<55012>"]) == \
        "socketProgress: Connection closed by remote peer localhost<55012>"
    # a traceback cut before its exception line says so instead of quoting a frame
    cut = block_message(tb[:4], "job.log", 72)
    assert "job.log:72" in cut and "File " not in cut and "^" not in cut


def test_nccl_continuations_of_an_unknown_message_stay_one_block(engine):
    """An NCCL message no pattern knows, with its 'Last error:' continuation (layout of the real
    ncclRemoteError lines of real/gpu/nccl_rank_early_exit.log, message made up): one block."""
    log = ("[rank2]: RuntimeError: NCCL communicator setup failed: error 42 while bootstrapping\n"
           "[rank2]: Last error:\n"
           "[rank2]: bootstrap: connection refused\n")
    a = _text(engine, log)
    assert len(a.unmatched) == 1
    assert a.unmatched[0].lines[0].startswith("RuntimeError: NCCL communicator setup failed")
    assert a.unmatched[0].lines[-1] == "bootstrap: connection refused"


def test_ranks_of_a_block_decode_no_line_whose_prefix_names_its_rank(monkeypatch):
    """A line with a launcher prefix naming its rank has that rank, whatever rank its message names:
    ranks_in reads it from the prefix search and decodes only the lines without one (50,000 watchdog
    lines of 8 ranks were 50,000 decodes, 1.2 s of a 12 MB log)."""
    from triage.inputs.ranks import RankReader
    reader = RankReader()
    lines = [f"[rank{r}]:[E1203 07:12:01.4 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective "
             "operation timeout" for r in range(8)] * 500
    decoded = []
    real = RankReader.split_prefix
    monkeypatch.setattr(RankReader, "split_prefix", lambda self, t: decoded.append(t) or real(self, t))
    buf = ("\n".join(lines) + "\n").encode()
    assert reader.ranks_in(buf, 0, len(buf), None) == set(range(8))
    assert decoded == []
    # an unprefixed line naming its rank is still read line by line, beside the prefixed ones
    buf += b"[PG ID 0 PG GUID 0 Rank 11] Watchdog caught collective operation timeout\n"
    assert reader.ranks_in(buf, 0, len(buf), None) == set(range(8)) | {11}
    assert len(decoded) == 1


def test_distinct_ranks_are_the_same_whatever_order_or_size_and_compile_once():
    """distinct_ranks (issue 44): a small segment by one findall, a big one by searches excluding the ranks found,
    their patterns kept by the ranks sorted -- every order of the same ranks finds them all, and the patterns
    compiled stay those of the sets met, not one per order."""
    import random

    from triage.inputs import ranks as R
    probe, head, tail = R.RANKS.kinds[0]
    rnd = random.Random(7)
    for size in (64 << 10, R.ELIMINATE_MIN_BYTES + (64 << 10)):
        for ranks in ([3], [0, 1, 2, 3, 4, 5, 6, 7], list(range(100))):
            lines = []
            n = 0
            while n < size:
                r = rnd.choice(ranks)
                ln = b"[rank%d]: NCCL INFO line %d" % (r, n)
                lines.append(ln)
                n += len(ln) + 1
            seg = b"\n" + b"\n".join(lines)
            want = {int(x) for x in re.findall(head + tail, seg)}
            assert R.distinct_ranks(seg, head, tail) == want
    R._EXCLUDING.clear()
    eight = [b"[rank%d]: x" % r for r in range(8)]
    for _ in range(20):
        rnd.shuffle(eight)
        seg = b"\n" + b"\n".join(eight * ((R.ELIMINATE_MIN_BYTES // 80) + 1))
        assert R.distinct_ranks(seg, head, tail) == set(range(8))
    # (each order adds at most its own chain of sets; sorted, 20 orders of 8 ranks met far fewer than 20 * 9)
    assert len(R._EXCLUDING) <= 2 ** 8


def test_a_control_byte_anywhere_sends_the_segment_the_dirty_way():
    from triage.inputs.ranks import RANKS
    clean = b"[rank1]: a\n[rank2]: b\n"
    assert RANKS.ranks_in(clean, 0, len(clean), None) == {1, 2}
    for c in [*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f]:
        # (the control byte alone, before the prefix: only the dirty way, which normalises the line, sees rank 2)
        lead = b"\x1b[0m" if c == 0x1b else bytes([c])       # (ESC opens a colour code)
        dirty = b"[rank1]: a\n" + lead + b"[rank2]: b\n"
        assert RANKS.ranks_in(dirty, 0, len(dirty), None) == {1, 2}, c
