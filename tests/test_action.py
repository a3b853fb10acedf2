"""Issue 43 (part), what to do next: every verdict carries an action from the pattern files, in every format.
Real logs: a config assertion (stop), an out of memory (change-config), a hang (retry), an unexplained
failure (retry), a healthy run (none); a GPU fault (drain-node) in the kernel log's real Xid text (synthetic
layout); the same real failure twice in one log (two attempts, labelled synthetic: the log twice, torchelastic's real
restart line between) is stop."""
import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.patterns import ACTIONS, builtin_dir, load_dir

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
SAMPLE = os.path.join(os.path.dirname(HERE), "examples", "sample_job.log")


def _json(path):
    r = CliRunner().invoke(cli, ["analyze", path, "--format", "json"], env={"TRIAGE_DB": None})
    return json.loads(r.stdout)


@pytest.mark.parametrize("log, action", [
    (SAMPLE, "stop"),
    ("real/gpu/oom_plain.log", "change-config"),
    ("real/gpu/nccl_rank_hang_timeout.log", "retry"),
    ("real/cpu-outcome/uncaught_torch_error.log", "retry"),
    ("real/cpu-outcome/caught_exception_continues.log", "none"),
    ("synthetic/hardware/xid79_with_cuda_error.log", "drain-node"),
])
def test_the_action_of_each_kind_of_failure(log, action):
    d = _json(log if os.path.isabs(log) else os.path.join(LOGS, log))
    assert d["action"]["do"] == action and d["action"]["why"], d["action"]


def test_every_pattern_says_its_action():
    assert {p.action for p in load_dir(builtin_dir())} <= set(ACTIONS)
    assert all(p.action for p in load_dir(builtin_dir()))


def test_the_same_root_cause_twice_is_stop(tmp_path):
    with open(os.path.join(LOGS, "real", "mcore-0.19.2", "moe_preprocess_dtoh_capacity.log"), encoding="utf-8") as f:
        text = f.read()
    # torchelastic's restart line between the two (torch/distributed/elastic/agent/server/api.py)
    restart = ("W1203 07:12:30.123000 140 torch/distributed/elastic/agent/server/api.py:703] [default] Worker group "
               "FAILED. 2/3 attempts left; will restart worker group\n")
    p = tmp_path / "twice.log"
    p.write_text(text + restart + text)
    d = _json(str(p))
    assert d["action"]["do"] == "stop" and "attempts 1 and 2" in d["action"]["why"], d["action"]


def _iterations(lo, hi):
    with open(os.path.join(LOGS, "real", "gpu", "steptime_graph.log"), encoding="utf-8") as f:
        lines = [ln for ln in f if "elapsed time per iteration" in ln]
    return "".join(ln for ln in lines if lo <= int(ln.split("iteration", 1)[1].split("/", 1)[0]) <= hi)


@pytest.mark.parametrize("resumed_to, action", [(15, "stop"), (12, "stop"), (30, "change-config")])
def test_the_same_root_cause_twice_is_stop_only_with_no_progress_between(tmp_path, resumed_to, action):
    # labelled synthetic layout of real lines: attempt 1 runs iterations 1-15 (real Megatron-format step
    # lines of an H200 run) and dies of a real CUDA OOM; torchelastic restarts it; attempt 2 resumes from
    # the checkpoint of iteration 10 and dies of the same OOM after iteration RESUMED_TO -- past 15 is
    # progress (the action is the OOM's own), not past it is the same failure again (stop)
    with open(os.path.join(LOGS, "real", "gpu", "oom_plain.log"), encoding="utf-8") as f:
        oom = f.read()
    restart = ("W1203 07:12:30.123000 140 torch/distributed/elastic/agent/server/api.py:703] [default] Worker group "
               "FAILED. 2/3 attempts left; will restart worker group\n")
    p = tmp_path / "restarted.log"
    p.write_text(_iterations(1, 15) + oom + restart + _iterations(10, resumed_to) + oom)
    d = _json(str(p))
    assert [a["primary"] for a in d["attempts"]] == ["cuda-oom", "cuda-oom"], d["attempts"]
    assert d["action"]["do"] == action, d["action"]


@pytest.mark.parametrize("fmt, needle", [("text", "action: stop"), ("markdown", "Action"), ("html", "<dt>Action</dt>"),
                                         ("junit", 'name="action"'), ("jira", "Action")])
def test_every_format_shows_it(fmt, needle):
    out = CliRunner().invoke(cli, ["analyze", SAMPLE, "--format", fmt], env={"TRIAGE_DB": None}).stdout
    assert needle in out and "stop" in out


def test_a_hang_without_a_dump_says_how_to_get_one():
    d = _json(os.path.join(LOGS, "synthetic", "truncated", "watchdog_teardown_only.log"))
    assert any("TORCH_NCCL_DUMP_ON_TIMEOUT=1" in n and "TORCH_FR_BUFFER_SIZE" in n for n in d["notes"])
    d = _json(os.path.join(LOGS, "real", "gpu", "nccl_rank_hang_timeout.log"))     # it has its dumps
    assert not any("no Flight Recorder dump" in n for n in d.get("notes", []))
