"""gloo's collective timeout is a waiting rank (gloo-collective-timeout), as NCCL's watchdog timeout is:
alone it is a hang with no first failing rank; after another rank's real error it is a cascade."""
import os

from helpers import analyse_path, analyse_text

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "fixtures", "logs", "real", "gpu")
GLOO = ("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
        "Timed out waiting 15000ms for recv operation to complete\n")


def test_real_gloo_hang_is_a_hang_not_a_failure_of_the_waiting_rank(engine):
    a = analyse_path(engine, os.path.join(REAL, "gloo_rank_hang_timeout.log"))
    assert a.outcome == "pitfall" and a.primary.pitfall == "gloo-collective-timeout"
    assert a.first_rank is None and a.verdict.hang
    assert a.summary.startswith("rank 0 timed out waiting for a gloo collective (gloo-collective-timeout): a hang")


def test_gloo_timeout_after_another_ranks_error_is_its_cascade(engine):
    # SYNTHETIC: rank 1's real illegal-memory-access line (gpu/illegal_memory_access.log), then
    # rank 0's real gloo timeout line
    with open(os.path.join(REAL, "illegal_memory_access.log")) as f:
        ima = next(ln for ln in f if "an illegal memory access was encountered" in ln).strip()
    a = analyse_text(engine, f"[rank1]: {ima.split(': ', 1)[-1] if ima.startswith('[rank') else ima}\n" + GLOO)
    assert a.primary.pitfall == "illegal-memory-access" and a.first_rank == 1
    roles = {f.pitfall: f.role for f in a.findings}
    assert roles["gloo-collective-timeout"] == "cascade"
    assert "timed out (gloo-collective-timeout)" in a.summary
