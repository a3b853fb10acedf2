"""Issue 43, attempts of one job in separate files (fleet, `analyze --attempt N` with a store): the same
root cause as the attempt before with no iteration past the one it reached is `stop`; a later attempt
that got further keeps its root cause's action (change-config for an OOM).

Inputs: labelled synthetic layouts of real lines -- real Megatron-format step lines of an H200 run
(tests/fixtures/logs/real/gpu/steptime_graph.log) and a real CUDA OOM (real/gpu/oom_plain.log), one
file per attempt, as a requeued Slurm job writes them (slurm-<job>.out per attempt directory).
"""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.fleet.run import Job, analyse_job, stop_no_progress
from triage.patterns import builtin_dir, load_dir
from triage.verdict.action import PriorAttempt, no_progress

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")


def _iterations(lo, hi):
    with open(os.path.join(LOGS, "real", "gpu", "steptime_graph.log"), encoding="utf-8") as f:
        lines = [ln for ln in f if "elapsed time per iteration" in ln]
    return "".join(ln for ln in lines if lo <= int(ln.split("iteration", 1)[1].split("/", 1)[0]) <= hi)


def _oom():
    with open(os.path.join(LOGS, "real", "gpu", "oom_plain.log"), encoding="utf-8") as f:
        return f.read()


def _attempt(tmp_path, n, lo, hi):
    p = tmp_path / f"attempt_{n}.log"
    p.write_text(_iterations(lo, hi) + _oom())
    return str(p)


def test_rule():
    prior = PriorAttempt(0, "cuda-oom: x", 15)
    assert no_progress("cuda-oom: x", 15, prior)            # no iteration past 15
    assert no_progress("cuda-oom: x", 12, prior)
    assert no_progress("cuda-oom: x", None, prior)          # no step line at all
    assert not no_progress("cuda-oom: x", 16, prior)        # got further
    assert not no_progress("other: y", 12, prior)           # another root cause
    assert not no_progress("cuda-oom: x", 3, PriorAttempt(0, "cuda-oom: x", None))
    assert no_progress("cuda-oom: x", None, PriorAttempt(0, "cuda-oom: x", None))


@pytest.mark.parametrize("resumed_to, stop", [(15, True), (12, True), (30, False)])
def test_fleet_lists_the_job_to_stop(tmp_path, resumed_to, stop):
    pats = load_dir(builtin_dir())
    a0 = _attempt(tmp_path, 0, 1, 15)
    a1 = _attempt(tmp_path, 1, 10, resumed_to)
    res = [analyse_job(Job("4242", a0, attempt=0), pats), analyse_job(Job("4242", a1, attempt=1), pats)]
    assert [r.reached for r in res] == [15, resumed_to]
    assert all(r.record.primary == "cuda-oom" for r in res)
    out = stop_no_progress(res)
    if stop:
        assert out == [{"job": "4242", "attempts": [0, 1], "signature": res[1].record.group_signature,
                        "reached": [15, resumed_to], "action": "stop", "why": out[0]["why"]}]
    else:
        assert out == []


def test_fleet_cli_json_and_text(tmp_path):
    jobs = tmp_path / "jobs"
    for n, (lo, hi) in enumerate(((1, 15), (10, 14))):
        d = jobs / f"attempt_{n}"
        d.mkdir(parents=True)
        (d / "slurm-4242.out").write_text(_iterations(lo, hi) + _oom())
    r = CliRunner().invoke(cli, ["fleet", "run", "--jobs-in", str(jobs), "--no-store", "--format", "json", "-j", "1"],
                           env={"TRIAGE_DB": None})
    d = json.loads(r.stdout)
    assert [s["attempts"] for s in d["stop"]] == [[0, 1]], d
    from jsonschema import Draft202012Validator

    from triage.schemas import load
    Draft202012Validator(load("fleet")).validate(d)
    r = CliRunner().invoke(cli, ["fleet", "run", "--jobs-in", str(jobs), "--no-store", "-j", "1"],
                           env={"TRIAGE_DB": None})
    assert "stop these jobs" in r.stdout


def _analyze_attempts(tmp_path, a0, a1, job="4242"):
    """`analyze --attempt 0` of A0, then `--attempt 1` of A1, with one store: their JSON reports."""
    db = str(tmp_path / "store.db")
    out = []
    for n, a in enumerate((a0, a1)):
        r = CliRunner().invoke(cli, ["analyze", a, "--db", db, "--job-id", job, "--attempt", str(n), "--format", "json"],
                               env={"TRIAGE_DB": None})
        out.append(json.loads(r.stdout))
    return out


@pytest.mark.parametrize("resumed_to, action", [(15, "stop"), (30, "change-config")])
def test_analyze_attempt_with_a_store(tmp_path, resumed_to, action):
    d0, d = _analyze_attempts(tmp_path, _attempt(tmp_path, 0, 1, 15), _attempt(tmp_path, 1, 10, resumed_to))
    assert d0["action"]["do"] == "change-config"
    assert d["action"]["do"] == action, d["action"]
    if action == "stop":
        assert "attempt 0" in d["action"]["why"]


def test_analyze_attempt_whose_earlier_logs_are_gone(tmp_path):
    db = str(tmp_path / "store.db")
    a0 = _attempt(tmp_path, 0, 1, 15)
    a1 = _attempt(tmp_path, 1, 10, 12)
    env = {"TRIAGE_DB": None}
    CliRunner().invoke(cli, ["analyze", a0, "--db", db, "--job-id", "4242", "--attempt", "0"], env=env)
    os.remove(a0)
    d = json.loads(CliRunner().invoke(cli, ["analyze", a1, "--db", db, "--job-id", "4242", "--attempt", "1",
                                            "--format", "json"], env=env).stdout)
    assert d["action"]["do"] == "change-config"
    assert any("cannot be read again" in n for n in d["notes"])


def _long_attempt(tmp_path, n, lo, hi):
    """An attempt of iterations LO..HI: the real H200 step lines renumbered (a labelled synthetic layout:
    the real log has 30 iterations, and a run of more than 64 without a capture after the first ones takes
    the block scan's tight path)."""
    real = _iterations(1, 30).splitlines()
    out = []
    for it in range(lo, hi + 1):
        ln = real[(it - 1) % len(real)]
        head, rest = ln.split("iteration", 1)
        out.append(f"{head}iteration {it:8d}/{hi:8d} |{rest.split('|', 1)[1]}")
    p = tmp_path / f"attempt_{n}.log"
    p.write_text("\n".join(out) + "\n" + _oom())
    return str(p)


def test_an_attempt_past_64_steps_that_got_further_is_no_stop(tmp_path):
    """The block scan's tight path once kept no runs of rising iterations: an attempt of 200 steps 'reached' its
    64th, and one that got further (200) than the attempt before (140, its logs read again) was told to stop."""
    d0, d1 = _analyze_attempts(tmp_path, _long_attempt(tmp_path, 0, 1, 140), _long_attempt(tmp_path, 1, 1, 200), "4243")
    assert d0["action"]["do"] == "change-config"
    assert d1["action"]["do"] == "change-config", d1["action"]
