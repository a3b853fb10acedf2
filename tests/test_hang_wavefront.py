"""Issue 43, the hang's culprit from the log alone: what each rank's timeout and watchdog lines say
(group, collective, sequence number, last enqueued work) and the wavefront -- the ranks that never
reached the collective the others wait on -- in one sentence, in every format.

Real logs: torch 2.11 runs on H100 (tests/fixtures/logs/real/gpu*, a rank held back on purpose).
Whole-job hangs: tests/fixtures/logs/synthetic/hangs/ (SYNTHETIC, gen_hang_wavefront.py: real lines
with ranks and numbers substituted; older releases' wording from tests/fixtures/wordings/pytorch-c10d.tsv).
"""
from __future__ import annotations

import json
import os

import pytest

from triage.pipeline import triage
from triage.report import render
from triage.report.contract import to_dict
from triage.verdict.collectives import _observe, culprit, group_kind

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "fixtures", "logs", "real")
HANGS = os.path.join(HERE, "fixtures", "logs", "synthetic", "hangs")


def _hang(path):
    return triage([path]).verdict.hang_detail


def test_real_two_rank_hang_names_the_held_back_rank():
    # torch 2.11 on H100: rank 1 slept without joining all_reduce #2; rank 0 timed out after 15 s
    h = _hang(os.path.join(REAL, "gpu", "nccl_rank_hang_timeout.log"))
    assert (h.behind, h.waited, h.seq, h.op, h.kind) == ([1], [0], 2, "all_reduce", "default")
    assert h.sentence == "rank 1 never reached all_reduce #2 of the default group; the other waited 15 s"
    assert any("Last enqueued NCCL work: 1," in e.text and e.rank == 1 for e in h.evidence)


def test_real_four_rank_hang_names_rank_2():
    # real 4-rank run: ranks 0, 1, 3 time out on SeqNum=3, rank 2's dump line says it enqueued only 2
    h = _hang(os.path.join(REAL, "gpu-multirank", "nccl_hang_flight_recorder.log"))
    assert (h.behind, h.waited, h.seq) == ([2], [0, 1, 3], 3)
    assert h.sentence.startswith("rank 2 never reached all_reduce #3 of the default group; the 3 others waited 15 s")


def test_real_crashed_rank_that_printed_nothing_about_the_group_is_behind():
    # rank 3 died (its own error, no watchdog line): the three others waited on all_reduce #3
    h = _hang(os.path.join(REAL, "gpu-multirank", "nccl_rank_error_vs_timeouts.log"))
    assert (h.behind, h.silent, h.waited) == ([3], [3], [0, 1, 2])
    assert "(it printed nothing about it)" in h.sentence


def test_one_ranks_output_accuses_nobody():
    # a paste of rank 2's lines only: the other ranks are not in the log, so none is named
    h = _hang(os.path.join(REAL, "pastes", "torchrun_rank2_timeout_wrapped116.log"))
    assert h.behind == [] and h.waited == [2]
    assert "the log shows no other rank" in h.sentence


@pytest.mark.parametrize("name,behind,waited,seq,kind,group,sentence", [
    ("dp16_ranks_5_13_behind.log", [5, 13], 14, 4812, "DP", "DATA_PARALLEL_GROUP",
     "ranks 5 and 13 never reached all_reduce #4812 of the data-parallel group (DATA_PARALLEL_GROUP); "
     "the 14 others waited 600 s"),
    ("default16_ranks_5_13_silent.log", [5, 13], 14, 4812, "default", "default_pg",
     "ranks 5 and 13 never reached all_reduce #4812 of the default group (they printed nothing about it); "
     "the 14 others waited 600 s"),
    ("tp8_rank13_behind_torch241.log", [13], 7, 812, "TP", "TENSOR_MODEL_PARALLEL_GROUP",
     "rank 13 never reached all_reduce #812 of the tensor-parallel group (TENSOR_MODEL_PARALLEL_GROUP); "
     "the 7 others waited 600 s"),
    ("pg1_rank1_behind_torch231.log", [1], 3, 96, "unknown", "PG 1",
     "rank 1 never reached all_reduce #96 of process group PG 1; the 3 others waited 600 s"),
])
def test_whole_job_hangs_name_the_wavefront(name, behind, waited, seq, kind, group, sentence):
    h = _hang(os.path.join(HANGS, name))
    assert h.behind == behind and len(h.waited) == waited and h.seq == seq
    assert (h.kind, h.group) == (kind, group)
    assert h.sentence == sentence
    assert not h.in_graph


def test_tensor_parallel_group_ranks_are_global_ranks():
    # torch 2.4.1: [rank13]: is the global rank, "[PG 4 (TENSOR_MODEL_PARALLEL_GROUP) Rank 5]" its rank in the group
    h = _hang(os.path.join(HANGS, "tp8_rank13_behind_torch241.log"))
    assert h.group_ranks == list(range(8, 16))


def test_hang_after_graph_capture_says_so():
    h = _hang(os.path.join(HANGS, "graphs_rank3_behind.log"))
    assert h.in_graph and h.behind == [3]
    assert "CUDA graphs captured before it" in h.sentence
    assert any("Start CUDA Graphs capture" in e.text for e in h.evidence)


def test_torch_1_13_wording_without_a_group():
    # 1.13.1 .. 2.0.1 (pytorch-c10d.tsv): "[Rank r] Watchdog caught ...: WorkNCCL(SeqNum=812, OpType=ALLREDUCE,
    # TensorShape=[4096, 1024], Timeout(ms)=1800000)" -- no process group named, no enqueued count
    line = ("[E ProcessGroupNCCL.cpp:821] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, "
            "OpType=ALLREDUCE, TensorShape=[4096, 1024], Timeout(ms)=1800000) ran for 1800357 milliseconds before "
            "timing out.")
    obs = [_observe(line.format(r=r), r, "rank_%d.log" % r, 7) for r in (0, 1, 3)]
    assert all(o is not None and o.seq == 812 and o.op == "ALLREDUCE" and o.timeout_ms == 1800000 for o in obs)
    h = culprit(obs, lambda: [0, 1, 2, 3])
    # the group is not named: rank 2 is not accused (it may be in another group)
    assert h is not None and h.behind == [] and h.waited == [0, 1, 3] and h.kind == "unknown"
    assert "all_reduce #812" in h.sentence and "1800 s" in h.sentence


def test_no_sequence_number_gives_no_sentence():
    # a real gloo timeout (torch 2.11 on CPU): a hang, but no SeqNum / enqueued line -> no wavefront, no crash
    a = triage([os.path.join(REAL, "gpu", "gloo_rank_hang_timeout.log")])
    assert a.verdict.hang_detail is None
    d = to_dict(a)
    assert "hang" not in d
    for fmt in ("text", "markdown", "html", "junit", "jira"):
        assert "Who never arrived" not in render(a, fmt) and "WHO NEVER ARRIVED" not in render(a, fmt)


def test_group_kinds_from_megatron_names():
    assert group_kind("TENSOR_MODEL_PARALLEL_GROUP", "2")[0] == "TP"
    assert group_kind("PIPELINE_MODEL_PARALLEL_GROUP", "3")[0] == "PP"
    assert group_kind("DATA_PARALLEL_GROUP_WITH_CP", "4")[0] == "DP"
    assert group_kind("EXPERT_MODEL_PARALLEL_GROUP", "5")[0] == "EP"
    assert group_kind("CONTEXT_PARALLEL_GROUP", "6")[0] == "CP"
    assert group_kind("default_pg", "0")[0] == "default"
    assert group_kind("my_group", "7") == ("other", "my_group")


def test_sentence_in_every_format_and_the_schema():
    from jsonschema import Draft202012Validator

    from triage.schemas import load
    a = triage([os.path.join(HANGS, "dp16_ranks_5_13_behind.log")])
    d = json.loads(render(a, "json"))
    assert d["hang"]["behind"] == [5, 13] and d["hang"]["from"] == "log"
    assert d["hang"]["sentence"].startswith("ranks 5 and 13 never reached all_reduce #4812")
    Draft202012Validator(load("analyze")).validate(d)
    for fmt in ("text", "markdown", "html", "junit", "jira"):
        out = render(a, fmt)
        assert "ranks 5 and 13 never reached all" in out, fmt


def test_a_rank_the_log_never_shows_is_not_accused():
    # ranks 0 and 1 time out, rank 5 crashed (its traceback, nothing about the group); ranks 2-4 print
    # nothing at all in this log: only rank 5 is named
    h = _hang(os.path.join(HERE, "fixtures", "logs", "synthetic", "multirank", "unexplained_crash_then_timeouts.log"))
    assert (h.behind, h.silent, h.waited) == ([5], [5], [0, 1])


@pytest.mark.parametrize("nccl_line", [
    # NCCL src/transport/p2p.cc v2.23.4-1 (NCCL_DEBUG_SUBSYS=REG)
    "node-0:4242:4242 [0] NCCL INFO rank 0 - IPC graph register buffer 0x7f3b35200000 size 4194304 (baseAddr "
    "0x7f3b35200000 size 4194304) to peer 1 regAddr 0x7f2a10000000 offsetOut 0",
    # NCCL src/plugin/profiler.cc v2.29.7-1
    "node-0:4242:4242 [0] NCCL INFO Comm config graphUsageMode is set to 0 but the user is capturing graphs on the "
    "stream. Violating graphUsageMode semantics can lead to hangs!",
])
def test_nccl_says_the_collective_was_captured(tmp_path, nccl_line):
    """A hang after NCCL's own line that a collective was captured in a CUDA graph (its graph registration,
    its graphUsageMode warning) ran inside a graph, without a Megatron capture line.  Labelled synthetic:
    the real 2-rank H100 hang with the NCCL line (its wording from the release named) put before it."""
    with open(os.path.join(REAL, "gpu", "nccl_rank_hang_timeout.log"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    plain = tmp_path / "plain.log"
    plain.write_text("\n".join(lines))
    assert not _hang(str(plain)).in_graph
    p = tmp_path / "graph.log"
    p.write_text("\n".join([nccl_line] + lines))
    h = _hang(str(p))
    assert h.in_graph and h.behind == [1]


@pytest.mark.parametrize("name,reads", [
    ("synthetic/multirank_ima_cascade.log", 0),           # a crash with timeouts after it: no read again
    ("real/gpu-multirank/nccl_hang_flight_recorder.log", 1),   # a hang: the inputs read again, once
])
def test_the_inputs_are_read_again_only_for_a_hang_and_once(monkeypatch, name, reads):
    """The 16-core grid (bench/grid.py) found a crash's hang sentence reading every input again for the
    ranks it shows (256 MiB: 0.41 -> 6.43 s); the hang suspects and the wavefront asked twice."""
    from triage.pipeline import assemble, scan_logs
    from triage.patterns import load_all
    pats = load_all()
    scan, seen = scan_logs([os.path.join(HERE, "fixtures", "logs", name)], pats)
    import triage.scan.engine as engine
    calls = []
    real = engine._ranks_by_attempt
    monkeypatch.setattr(engine, "_ranks_by_attempt", lambda *a: calls.append(1) or real(*a))
    a = assemble(scan, seen, pats)
    assert a.verdict.outcome != "healthy"
    assert len(calls) == reads, (name, len(calls))
