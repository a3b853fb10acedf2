from helpers import pat

from triage.scan.engine import Engine
from triage.verdict.analyse import analyse
from triage.verdict.fingerprint import fingerprint, mask
from triage.verdict.types import rank_ranges
from triage.selftest import lines_of

IMA = pat("illegal-memory-access", r"an illegal memory access was encountered", "illegal memory access")
WD = pat("nccl-watchdog-timeout", r"Watchdog caught collective operation timeout", "Watchdog caught", generic=True,
         waits=True, cascade_verb="timed out",
         hang={"summary": "{who} timed out waiting for a collective ({id}): a hang", "silent": "never joined it"})
CFG = pat("moe-scope-conflict", r"must not contain both moe and moe_router", "moe and moe_router", kind="config")
INV = pat("capture-sync-forbidden", r"operation failed due to a previous error during capture",
          "previous error during capture", kind="capture", role="cascade")


def run(text, *pats):
    return analyse(Engine(list(pats)).scan(lines_of(text)))


def wd(rank, t):
    return (f"[rank{rank}]:[E1203 07:12:{t:02d}.426415540 ProcessGroupNCCL.cpp:629] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=600000) ran for 60008{rank} milliseconds before timing out.")


def test_rank_ranges():
    assert rank_ranges([0, 1, 2, 3, 4, 6, 7]) == "0-4,6-7"
    assert rank_ranges([5]) == "5"
    assert rank_ranges([]) == ""


def test_fingerprint_masks_numbers_paths_ranks_and_times():
    a = "[E1203 07:12:11.4 x.cpp:629] [Rank 3] timeout: WorkNCCL(SeqNum=12) ran for 600081 ms /opt/a/b.py 0x7f00ff"
    b = "[E0101 01:01:01.9 x.cpp:631] [Rank 17] timeout: WorkNCCL(SeqNum=99) ran for 601234 ms /usr/c/d.py 0xdeadbeef"
    assert mask(a) == mask(b)
    assert fingerprint("x", a) == fingerprint("x", b) != fingerprint("y", a)


def test_crash_then_timeouts_is_root_cause_plus_cascade():
    log = "\n".join(["[rank5]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
                    + [wd(r, 30) for r in range(8) if r != 5])
    a = run(log, IMA, WD)
    assert a.primary.pitfall == "illegal-memory-access" and a.primary.rank == 5
    casc = [f for f in a.findings if f.role == "cascade"]
    assert len(casc) == 1 and casc[0].count == 7 and casc[0].ranks_text == "0-4,6-7"
    assert a.summary.startswith("rank 5 failed first with illegal-memory-access")
    assert "; 7 ranks (0-4,6-7) then timed out (nccl-watchdog-timeout)" in a.summary


def test_only_timeouts_the_earliest_is_root_cause():
    a = run("\n".join([wd(3, 10), wd(1, 5)]), WD)
    assert a.primary.pitfall == "nccl-watchdog-timeout"
    assert len(a.findings) == 1 and a.findings[0].count == 2 and a.primary.rank == 1


def test_specific_config_error_beats_generic_runtime_error():
    log = "\n".join(["RuntimeError: CUDA error: an illegal memory access was encountered",
                     "AssertionError: cuda_graph_scope must not contain both moe and moe_router."])
    assert run(log, IMA, CFG).primary.pitfall == "moe-scope-conflict"


def test_rule_role_cascade_is_never_primary():
    a = run("RuntimeError: CUDA error: operation failed due to a previous error during capture", INV)
    assert a.primary is None
    assert a.findings[0].role == "cascade"


def test_healthy_gives_no_primary():
    a = run("iteration 1/10 | loss 1.0\niteration 2/10 | loss 0.9", IMA, WD)
    assert a.primary is None and list(a.findings) == [] and a.summary == "no known pitfall found"


def test_restart_splits_attempts_and_last_attempt_is_headline():
    banner = "------------------------ arguments ------------------------"
    log = "\n".join([banner, "  cuda_graph_scope ......... ['moe', 'moe_router']",
                     "AssertionError: cuda_graph_scope must not contain both moe and moe_router.",
                     banner, "  cuda_graph_scope ......... ['attn']",
                     "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered"])
    a = run(log, IMA, CFG)
    assert a.attempts == 2
    assert a.primary.pitfall == "illegal-memory-access" and a.primary.rank == 2
    assert [d.primary for d in a.verdict.attempts] == ["moe-scope-conflict", "illegal-memory-access"]
    assert a.summary.startswith("attempt 2 of 2: rank 2 failed first")


def test_torchelastic_restart_line_starts_new_attempt():
    log = "\n".join(["RuntimeError: CUDA error: an illegal memory access was encountered",
                     "[2026-12-03 07:00:00,000] torch.distributed.elastic.agent.server.api: [WARNING] "
                     "[default] Worker group FAILED. 2/3 attempts left; will restart worker group",
                     "iteration 1/10 | loss 1.0"])
    a = run(log, IMA)
    assert a.attempts == 2 and a.primary is None
    assert a.verdict.attempts[0].primary == "illegal-memory-access"


def test_rank_counts_and_matched_lines_count_every_line():
    # rank 3 times out twice in a row (one occurrence, two lines); 120 more timeouts on rank 6 (the
    # scan keeps a few and counts the rest): every line counts
    log = "\n".join([wd(3, 10), wd(3, 11)] + [wd(6, 20 + i % 30) for i in range(120)])
    a = run(log, WD)
    [f] = a.findings
    assert f.rank_counts == {3: 2, 6: 120} and f.matched_lines == 122 and f.ranks == [3, 6]
    assert f.count == 2 and len(f.evidence) == 6          # two ranks; 6 evidence lines kept (EVIDENCE_MAX)


def test_unmatched_keeps_the_first_block_of_each_signature():
    # rank 0's second error was dropped when only the first block of each rank was kept
    log = "\n".join(["[rank0]: KeyError: 'input_ids'", "[rank1]: KeyError: 'input_ids'",
                     "[rank0]: ValueError: bad shard 17", "[rank1]: ValueError: bad shard 18"])
    a = run(log, IMA)
    assert [(u.lines, u.count, u.ranks) for u in a.unmatched] == [
        (["KeyError: 'input_ids'"], 2, [0, 1]), (["ValueError: bad shard 17"], 2, [0, 1])]
    assert a.unmatched_omitted == 0
