"""Truncated pastes and NCCL-only evidence (issue 12): C++ frames and heartbeat lines alone.

The pastes are cut, unedited, from real H200 logs (tests/fixtures/logs/synthetic/truncated/README.md
names the lines); the single lines below are real text quoted from those logs.
"""
import os

import pytest

from triage.scan.engine import Engine
from triage.verdict.analyse import analyse
from triage.patterns import load_all
from triage.selftest import fired
from triage.inputs.sources import iter_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
TRUNC = os.path.join(HERE, "fixtures", "logs", "synthetic", "truncated")
REAL = os.path.join(HERE, "fixtures", "logs", "real", "gpu")


@pytest.fixture(scope="module")
def engine():
    return Engine(load_all())


def _analyse(engine, path):
    return analyse(engine.scan(iter_inputs([path])))


def _pitfalls(a, roles=("root-cause", "cascade", "info")):
    return {f.pitfall for f in a.findings if f.role in roles}


@pytest.mark.parametrize("name, primary", [
    ("watchdog_trailer_tail", "nccl-watchdog-timeout"),
    ("watchdog_frames_only", "nccl-watchdog-timeout"),
    ("heartbeat_only", "nccl-watchdog-hang"),
    ("heartbeat_tail", "nccl-watchdog-hang"),
    ("oom_frames_only", "cuda-oom"),
    ("capture_end_frames_only", "capture-sync-forbidden"),
])
def test_a_paste_of_frames_or_monitor_lines_names_the_pitfall(engine, name, primary):
    a = _analyse(engine, os.path.join(TRUNC, name + ".log"))
    assert a.primary is not None and a.primary.pitfall == primary, a.summary


def test_the_watchdog_loop_frames_of_an_nccl_error_are_not_a_timeout(engine):
    """Real torch 2.11: Watchdog::runLoop / Watchdog::run frames carry the ncclRemoteError too;
    only WorkNCCL::checkTimeout means a timeout."""
    a = _analyse(engine, os.path.join(TRUNC, "remote_error_frames_only.log"))
    assert "nccl-watchdog-timeout" not in _pitfalls(a)


def test_frames_of_an_unrelated_crash_raise_none_of_these(engine):
    a = _analyse(engine, os.path.join(TRUNC, "kernel_launch_frames_only.log"))
    assert not _pitfalls(a) & {"nccl-watchdog-timeout", "nccl-watchdog-hang", "nccl-error", "cuda-oom",
                               "capture-sync-forbidden"}
    assert a.primary is None
    # ... but a C++ exception trailer where the paste ends is a failure, never a clean verdict
    assert a.outcome == "unexplained-failure"
    ff = a.first_failure
    assert ff.kind == "uncaught-exception"
    assert ff.message == ("Exception raised from launch_vectorized_kernel at "
                          "/pytorch/aten/src/ATen/native/cuda/CUDALoops.cuh:342")


def test_a_cpp_exception_trailer_the_process_went_on_after_is_not_a_failure(engine, tmp_path):
    """The same trailer followed by more than TAIL_LINES lines of a run that went on (a caught
    error it printed) is no failure."""
    from triage.verdict.crashes import TAIL_LINES
    with open(os.path.join(TRUNC, "kernel_launch_frames_only.log")) as f:
        paste = f.read()
    p = tmp_path / "went_on.log"
    p.write_text(paste + "".join(f" [2026-12-03 10:{i // 60:02d}:{i % 60:02d}] iteration {i}/ 1000 | ok\n"
                                 for i in range(TAIL_LINES + 5)))
    a = _analyse(engine, str(p))
    assert a.outcome == "healthy" and a.first_failure is None


def test_a_hung_watchdog_is_not_a_timed_out_collective(engine):
    a = _analyse(engine, os.path.join(TRUNC, "heartbeat_only.log"))
    assert "nccl-watchdog-timeout" not in _pitfalls(a)
    hang = [f for f in a.findings if f.pitfall == "nccl-watchdog-hang"]
    assert len(hang) == 1 and hang[0].rank == 0
    # the GIL probe and the fatal exit are the same occurrence as the "got stuck" line
    assert any("possible GIL induced hang" in e.text for e in hang[0].evidence)
    assert any("due to ProcessGroupNCCL watchdog hang" in e.text for e in hang[0].evidence)


@pytest.mark.parametrize("name", ["hang_gil_heartbeat", "hang_heartbeat_2s"])
def test_a_timeout_before_the_hang_stays_the_primary(engine, name):
    """Real runs: the watchdog got stuck WHILE handling a collective timeout; the timeout (generic,
    earlier) is the primary and the hang its cascade."""
    a = _analyse(engine, os.path.join(TRUNC, "sources", name + ".log"))
    assert a.primary.pitfall == "nccl-watchdog-timeout" and a.first_rank is None    # a hang: no rank "failed first" (issue 12)
    assert {f.role for f in a.findings if f.pitfall == "nccl-watchdog-hang"} == {"cascade"}


def test_a_specific_error_makes_the_frames_a_cascade(engine):
    """The frames rules are generic: the real message above them is the finding."""
    for src, want in [("oom_plain_cpp.log", "cuda-oom"), ("capture_item_sync_cpp.log", "capture-sync-forbidden")]:
        a = _analyse(engine, os.path.join(TRUNC, "sources", src))
        assert a.primary.pitfall == want
        assert not a.primary.generic
        assert [f for f in a.findings if f.role == "root-cause"] == [a.primary]


# Lines that name the watchdog, the heartbeat monitor or a frame without being a failure.  Each is
# real text: libtorch_cuda.so 2.11.0 strings (the bare sentences) or lines of the real logs named.
HEALTHY = [
    "TORCH_NCCL_ENABLE_MONITORING (Whether to kill program when no watchdog heartbeat detected): 1",
    "TORCH_NCCL_BLOCKING_WAIT is enabled, NO watchdog thread is created.",
    "ProcessGroupNCCL heart beat monitor thread joined.",
    "Process group watchdog thread started!",
    "Process group watchdog thread terminated normally",
    "Operations flushed, joining watchdog thread.",
    # real/gpu/nccl_rank_hang_timeout.log: rank 1 only told that rank 0 timed out
    "[rank1]:[E1203 08:32:09.980657209 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
    "Observed flight recorder dump signal from another rank via TCPStore.",
    # sources/hang_gil_heartbeat.log: the monitor preparing its dump is not the hang itself
    "[rank0]:[E1203 14:15:16.748502467 ProcessGroupNCCL.cpp:1628] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
    "ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1, only active collectives: 0",
    # frames that are on every such stack
    "frame #3: c10d::ProcessGroupNCCL::Watchdog::run() + 0x157 (0x7f9be47093b7 in "
    "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so)",
    "#5 c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> >) from ??:0",
    "#7 at::cuda::CUDAGraph::capture_end() from ??:0",
    "#6 c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*) "
    "from CUDACachingAllocator.cpp:0",
]


@pytest.mark.parametrize("line", HEALTHY)
def test_lines_that_merely_mention_the_watchdog_fire_nothing(engine, line):
    assert fired(engine, line) == set(), line


def test_the_existing_real_timeout_log_is_unchanged(engine):
    """The checkTimeout rules add to the real timeout log's one occurrence, not a new finding."""
    a = _analyse(engine, os.path.join(REAL, "nccl_rank_hang_timeout.log"))
    roots = [f for f in a.findings if f.role == "root-cause"]
    assert len(roots) == 1 and roots[0].pitfall == "nccl-watchdog-timeout" and roots[0].rank == 0
    assert roots[0].count == 1


def test_a_paste_of_only_nccl_socket_warn_lines_is_an_nccl_failure():
    from triage.pipeline import triage
    a = triage([os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "fixtures", "logs", "synthetic", "truncated", "nccl_warn_only.log")])
    assert a.primary is not None and a.primary.pitfall == "nccl-error"


def test_a_rankless_warn_line_yields_to_the_same_failure_on_a_named_rank():
    from triage.pipeline import triage
    a = triage([os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "fixtures", "logs", "real", "gpu", "nccl_rank_early_exit.log")])
    assert a.primary.pitfall == "nccl-error" and a.primary.rank == 0
    # the rank-less WARN line is a line of rank 0's finding (one finding per event), not a row of its own
    assert not [f for f in a.findings if f.pitfall == "nccl-error" and f.rank is None and f.role != "info"]
    assert any(e.rank is None and "NCCL WARN" in e.text for e in a.primary.evidence)
