"""One verdict, decided once: step-time findings are known before it, and it keeps what the log says
(a restarted job's "attempt N of N", a crash's first failing rank) when a step-time finding is added.

The logs here are SYNTHETIC: each is put together in the test from the synthetic fixtures under
tests/fixtures/logs/synthetic/ (the qwen3 step-time pair and the unexplained-crash cascade)."""
import json
import os

import pytest
from click.testing import CliRunner
from helpers import pat

from triage.cli import cli
from triage.scan.engine import Engine
import dataclasses

from triage.verdict.analyse import analyse, gather
from triage.verdict.decide import decide
from triage.verdict.grouping import make_finding
from triage.selftest import lines_of

HERE = os.path.dirname(os.path.abspath(__file__))
SYN = os.path.join(HERE, "fixtures", "logs", "synthetic")
GRAPHS = os.path.join(SYN, "steptime", "qwen3_30b_te_graphs.log")     # graphs on, not faster than...
EAGER = os.path.join(SYN, "steptime", "qwen3_30b_eager.log")          # ...this eager baseline
CRASH = os.path.join(SYN, "multirank", "unexplained_crash_then_timeouts.log")
IMA = "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def read(path):
    with open(path) as f:
        return f.read()


def analyze_json(log_text, tmp_path, *args):
    p = tmp_path / "job.log"
    p.write_text(log_text)
    r = CliRunner().invoke(cli, ["analyze", str(p), "--format", "json", *args])
    assert r.exit_code in (0, 1, 3), r.output
    return r.exit_code, json.loads(r.output)


def test_step_time_finding_alone_is_the_primary(tmp_path):
    code, d = analyze_json(read(GRAPHS), tmp_path, "--baseline-log", EAGER)
    # a warning-only pitfall: exit 0 under the default --fail-on error, 1 under --fail-on warning
    assert code == 0 and d["primary"] == "graph-no-speedup" and d["first_failing_rank"] is None
    assert d["outcome"] == "pitfall"
    assert d["summary"].startswith("graph-no-speedup: CUDA graphs gave no steady-state speedup over eager")
    code, _ = analyze_json(read(GRAPHS), tmp_path, "--baseline-log", EAGER, "--fail-on", "warning")
    assert code == 1


def test_restarted_log_with_a_step_time_finding_keeps_attempt_2_of_2(tmp_path):
    # synthetic: attempt 1 = the graph run's arguments block and a crash; attempt 2 = the whole graph run
    graphs = read(GRAPHS)
    banner_block = graphs[graphs.index("------------------------ arguments"):graphs.index(" [2026-05-18 10:01:00]")]
    code, d = analyze_json(banner_block + IMA + graphs, tmp_path, "--baseline-log", EAGER)
    assert d["stats"]["attempts"] == 2
    assert d["primary"] == "graph-no-speedup"
    assert d["summary"].startswith("attempt 2 of 2: graph-no-speedup: CUDA graphs gave no steady-state speedup")
    assert [x["primary"] for x in d["attempts"]] == ["illegal-memory-access", "graph-no-speedup"]
    assert d["attempts"][0]["first_failing_rank"] == 2
    assert d["attempts"][1]["summary"] == d["summary"][len("attempt 2 of 2: "):]


def test_unexplained_crash_with_a_step_time_finding_keeps_its_first_failing_rank(tmp_path):
    # synthetic: the graph run (slower than its eager baseline), then rank 5 crashes with an error no
    # pattern knows and ranks 0-1 time out
    code, d = analyze_json(read(GRAPHS) + read(CRASH), tmp_path, "--baseline-log", EAGER)
    assert code == 3 and d["outcome"] == "unexplained-failure"
    assert d["primary"] is None and d["first_failing_rank"] == 5
    assert d["first_failure"]["rank"] == 5 and d["first_failure"]["message"] == "KeyError: 'input_ids'"
    assert d["summary"] == ("rank 5 failed first with an error no pattern explains (KeyError: 'input_ids'); "
                            "2 ranks (0-1) then timed out (nccl-watchdog-timeout)")
    roles = {f["pitfall"]: f["role"] for f in d["findings"]}
    # one root cause per verdict: a step-time finding beside a failure is an observation (issue 21)
    assert roles == {"nccl-watchdog-timeout": "cascade", "graph-no-speedup": "info"}
    # the timeline agrees with the findings: the timeouts are the crash's cascade
    assert d["timeline"] and all(e["role"] == "cascade" for e in d["timeline"])


def test_timeouts_with_a_step_time_finding_stay_a_hang_with_no_first_failing_rank(tmp_path):
    # synthetic: the graph run, then ranks 0-1 time out (a hang: no crash line); the first rank to
    # time out did not fail first (issue 12), and the step-time finding does not become the primary
    wd = "".join(ln for ln in read(CRASH).splitlines(True) if "Watchdog caught" in ln)
    code, d = analyze_json(read(GRAPHS) + wd, tmp_path, "--baseline-log", EAGER)
    assert d["primary"] == "nccl-watchdog-timeout" and d["first_failing_rank"] is None
    assert d["outcome"] == "pitfall" and code == 1
    assert d["summary"].startswith("2 ranks (0-1) timed out waiting for a collective (nccl-watchdog-timeout): a hang")
    assert d["hang_suspects"] == []           # both ranks timed out: no rank of this log is a culprit
    roles = {f["pitfall"]: f["role"] for f in d["findings"]}
    assert roles == {"nccl-watchdog-timeout": "root-cause", "graph-no-speedup": "info"}
    assert d["findings"][0]["pitfall"] == "nccl-watchdog-timeout"


def test_specific_crash_with_a_step_time_finding_stays_primary(tmp_path):
    code, d = analyze_json(read(GRAPHS) + IMA, tmp_path, "--baseline-log", EAGER)
    assert d["primary"] == "illegal-memory-access" and d["first_failing_rank"] == 2
    assert d["summary"] == "rank 2 failed first with illegal-memory-access (Illegal memory access / GPU kernel fault)"


# ---- the verdict as a function

WD = pat("nccl-watchdog-timeout", r"Watchdog caught collective operation timeout", "Watchdog caught", generic=True,
         waits=True, cascade_verb="timed out",
         hang={"summary": "{who} timed out waiting for a collective ({id}): a hang", "silent": "never joined it"})
PERF = pat("graph-no-speedup", r"never in a log", "never in a log", kind="perf")
LOG = "\n".join(
    ["[rank5]:[W1203 07:02:10.000000000 something.cpp:1] started",
     "[rank5]: Traceback (most recent call last):", "[rank5]: KeyError: 'input_ids'"]
    + [f"[rank{r}]:[E1203 07:12:1{r}.426415540 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective "
       f"operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600081 milliseconds" for r in (0, 1)])


def _slow():
    return make_finding(PERF, [], "triage: CUDA graphs gave no steady-state speedup: 2 ms vs 1 ms")


def test_decide_is_pure_and_the_verdict_is_decided_once_explicitly():
    a = gather(Engine([WD]).scan(lines_of(LOG)))
    before = [(f.pitfall, f.role) for f in a.case.findings]
    v1 = decide(a.case, [_slow()], a.earlier)
    v2 = decide(a.case, [_slow()], a.earlier)
    assert [(f.pitfall, f.role) for f in a.case.findings] == before      # the scan's findings untouched
    assert (v1.summary, v1.first_rank) == (v2.summary, v2.first_rank)
    assert [(f.pitfall, f.role) for f in v1.findings] == [(f.pitfall, f.role) for f in v2.findings]
    with pytest.raises(RuntimeError, match="before it is decided"):     # no lazy, provisional verdict
        _ = a.primary
    v = a.decide([_slow()])
    assert a.verdict is v and a.first_rank == 5 and a.primary is None and a.first_failure.rank == 5
    with pytest.raises(RuntimeError, match="decided once"):
        a.decide([_slow()])
    with pytest.raises(dataclasses.FrozenInstanceError):                # frozen: nothing changes it later
        v.outcome = "healthy"  # type: ignore[misc]


def test_verdict_is_the_same_with_or_without_analyser_findings_when_the_log_failed():
    plain = analyse(Engine([WD]).scan(lines_of(LOG)))
    slow = gather(Engine([WD]).scan(lines_of(LOG)))
    slow.decide([_slow()])
    assert (plain.summary, plain.first_rank, plain.first_failure) == (slow.summary, slow.first_rank, slow.first_failure)
    assert [f.pitfall for f in slow.findings] == ["nccl-watchdog-timeout", "graph-no-speedup"]
    assert slow.findings[1].role == "info"
