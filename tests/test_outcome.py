"""Never silent on a failed job (issue 12): the outcome (healthy | pitfall | unexplained-failure), its
exit code, and the first failing rank with its error block.

Real logs: tests/fixtures/logs/real/cpu-outcome/ (torch 2.13 CPU), real/gpu-multirank/ and real/gpu/
(H200), real/mcore-*/ (megatron-core); each records the exit status of the process that printed it.
Synthetic logs: tests/fixtures/logs/synthetic/outcome/ (Slurm format strings, labelled SYNTHETIC)
and the single lines written below, each quoting real text named beside it.
"""
import json
import os
import re

import pytest
from helpers import analyse_path, analyse_text
from click.testing import CliRunner

from triage.cli import cli
from triage.verdict.crashes import TAIL_LINES

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
REAL = os.path.join(LOGS, "real")
OUT = os.path.join(LOGS, "synthetic", "outcome")


_a = analyse_path        # (tests/helpers.py; the `engine` fixture is in conftest.py)
_text = analyse_text


def _cli(*args, input=None):
    r = CliRunner().invoke(cli, ["analyze", *args], input=input)
    return r.exit_code, r.output


# --------------------------------------------------------------------------------------------
# the exit status of the real process agrees with the outcome


def _recorded_exit_statuses():
    """(log path, exit status) of every real log whose folder records it: MANIFEST.tsv files and the
    megatron-core READMEs' `| name | rc=N: ... |` tables."""
    out = []
    for root, _dirs, files in os.walk(REAL):
        if "MANIFEST.tsv" in files:
            with open(os.path.join(root, "MANIFEST.tsv")) as f:
                for row in f.read().splitlines()[1:]:
                    cols = row.split("\t")
                    if len(cols) >= 2 and cols[1].lstrip("-").isdigit():
                        out.append((os.path.join(root, cols[0] + ".log"), int(cols[1])))
                    else:
                        m = re.match(r"^(\S+) rc=(\d+)$", row.strip())     # "mcore_rng_tracker rc=1"
                        if m:
                            out.append((os.path.join(root, m.group(1) + ".log"), int(m.group(2))))
        if os.path.basename(root).startswith("mcore-") and "README.md" in files:
            with open(os.path.join(root, "README.md")) as f:
                for m in re.finditer(r"^\| `([\w.-]+)` \| rc=(\d+)", f.read(), re.M):
                    out.append((os.path.join(root, m.group(1) + ".log"), int(m.group(2))))
    return sorted({(p, rc) for p, rc in out if os.path.exists(p)})


STATUSES = _recorded_exit_statuses()


def test_the_recorded_exit_statuses_are_found():
    # the exit statuses the fixture READMEs record: 18 clean exits, 107 failed processes
    assert (len(STATUSES), sum(rc == 0 for _, rc in STATUSES), sum(rc != 0 for _, rc in STATUSES)) == (125, 18, 107)


@pytest.mark.parametrize("path, rc", STATUSES, ids=[os.path.relpath(p, REAL) for p, _ in STATUSES])
def test_a_process_that_exited_non_zero_is_never_healthy_and_a_clean_exit_never_unexplained(engine, path, rc):
    a = _a(engine, path)
    if rc != 0:
        assert a.outcome in ("pitfall", "unexplained-failure"), a.summary
        assert a.summary != "no known pitfall found"
    else:
        assert a.outcome != "unexplained-failure", a.summary


# --------------------------------------------------------------------------------------------
# the fixtures of this issue, one by one


CASES = [
    # (fixture, outcome, first failing rank, kind of the first failure, its message starts with)
    ("real/cpu-outcome/caught_exception_continues.log", "healthy", None, None, None),
    ("real/cpu-outcome/uncaught_torch_error.log", "unexplained-failure", None, "uncaught-exception",
     "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x64 and 32x10)"),
    ("real/cpu-outcome/torchrun_rank_segfault.log", "unexplained-failure", 1, "fatal-python-error",
     "Fatal Python error: Segmentation fault"),
    ("real/gpu/mcore_local_replay.log", "unexplained-failure", 0, "uncaught-exception", "RuntimeError: expected scalar type BFloat16 but found Float"),  # the exception line of a 40+ line traceback
    ("synthetic/unrelated_dataset_error.log", "unexplained-failure", 0, "uncaught-exception",
     "FileNotFoundError: [Errno 2] No such file or directory"),
    # Slurm's oom_kill event and srun's "Out Of Memory": host-oom since issue 40, on task 6 (srun's report names it)
    ("synthetic/outcome/srun_task_oom.log", "pitfall", 6, None, None),
    ("synthetic/outcome/srun_task_exit_code.log", "unexplained-failure", 3, "srun",
     "srun: error: gpu-node-017: task 3: Exited with exit code 2"),
    ("synthetic/outcome/slurm_time_limit.log", "unexplained-failure", None, "slurm",
     "slurmstepd: error: *** JOB 4243 ON node-1 CANCELLED AT"),
    ("synthetic/outcome/healthy_handled_errors.log", "healthy", None, None, None),
    ("real/gpu-multirank/nccl_rank_error_vs_timeouts.log", "pitfall", 3, None, None),
]


@pytest.mark.parametrize("rel, outcome, rank, kind, message", CASES, ids=[c[0] for c in CASES])
def test_outcome_first_failing_rank_and_error(engine, rel, outcome, rank, kind, message):
    a = _a(engine, os.path.join(LOGS, rel))
    assert a.outcome == outcome, a.summary
    assert a.first_rank == rank
    ff = a.first_failure
    if kind is None:
        assert outcome != "unexplained-failure" or ff is None
    else:
        assert ff is not None and ff.kind == kind and ff.message.startswith(message), ff
        assert ff.lines                                     # the error block itself
        assert not re.match(r"^\s*[~^]+\s*$", ff.message)  # never a caret line, a frame, "Last error:"
        assert not ff.message.lstrip().startswith(("File ", "frame #", "Last error:"))
    if outcome == "healthy":
        assert a.summary == "no known pitfall found" and not a.failed
    else:
        assert a.summary != "no known pitfall found"


@pytest.mark.parametrize("rel, code", [
    ("real/cpu-outcome/caught_exception_continues.log", 0),
    ("real/cpu-outcome/uncaught_torch_error.log", 3),
    ("real/cpu-outcome/torchrun_rank_segfault.log", 3),
    ("synthetic/outcome/srun_task_oom.log", 1),
    ("real/gpu-multirank/nccl_rank_error_vs_timeouts.log", 1),
    ("synthetic/multirank/unexplained_crash_then_timeouts.log", 3),
])
def test_exit_code_table_and_exit_zero(rel, code):
    path = os.path.join(LOGS, rel)
    got, out = _cli(path, "--format", "json")
    assert got == code, out[-500:]
    d = json.loads(out)
    assert {0: "healthy", 1: "pitfall", 3: "unexplained-failure"}[code] == d["outcome"]
    assert _cli(path, "-q", "--exit-zero")[0] == 0


def test_help_documents_the_exit_codes():
    code, out = _cli("--help")
    assert code == 0
    for line in ("0  healthy", "1  pitfall", "2  usage or input error", "3  unexplained-failure", "--exit-zero"):
        assert line in out


def test_usage_error_is_still_2_with_exit_zero():
    assert _cli("/nonexistent/job.log", "--exit-zero")[0] == 2


def test_unexplained_failure_json_names_the_rank_and_quotes_the_block():
    code, out = _cli(os.path.join(REAL, "cpu-outcome", "torchrun_rank_segfault.log"), "--format", "json")
    d = json.loads(out)
    assert code == 3 and d["outcome"] == "unexplained-failure" and d["primary"] is None
    assert d["first_failing_rank"] == 1 and d["launcher_root_rank"] == 1
    ff = d["first_failure"]
    assert ff["message"] == "Fatal Python error: Segmentation fault" and ff["kind"] == "fatal-python-error"
    assert ff["lines"] == ["Fatal Python error: Segmentation fault"]
    assert d["signature"] == "unexplained-failure: Fatal Python error: Segmentation fault"
    assert "no known pitfall found" not in out


def test_text_report_of_an_unexplained_failure():
    code, out = _cli(os.path.join(REAL, "cpu-outcome", "uncaught_torch_error.log"))
    assert code == 3
    assert out.startswith("triage: the job failed with an error no pattern explains (RuntimeError: mat1 and mat2")
    assert "UNEXPLAINED FAILURE" in out and "error: RuntimeError: mat1 and mat2 shapes" in out
    assert "| Traceback (most recent call last):" in out


@pytest.mark.parametrize("fmt, needle", [("markdown", "| Outcome | `unexplained-failure` |"),
                                         ("html", "<code>unexplained-failure</code>")])
def test_markdown_and_html_show_the_outcome_and_the_error(fmt, needle):
    code, out = _cli(os.path.join(REAL, "cpu-outcome", "uncaught_torch_error.log"), "--format", fmt)
    assert code == 3 and needle in out
    assert "mat1 and mat2 shapes cannot be multiplied" in out
    assert "No failure and no known pitfall" not in out and "no known pitfall found" not in out


# --------------------------------------------------------------------------------------------
# what counts as a failure, and what does not (single lines quote real text)


def test_a_caught_exception_printed_mid_run_is_healthy_and_the_same_one_at_the_end_is_not(engine):
    tb = ("Traceback (most recent call last):\n"
          '  File "/work/main/tests/fixtures/gen/issue12_cpu.py", line 79, in uncaught\n'
          "    model(x)\n"
          "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x64 and 32x10)\n")
    steps = "".join(f"2026-12-03 14:54:12,554 INFO train: step {i}\n" for i in range(TAIL_LINES + 5))
    assert _text(engine, tb + steps).outcome == "healthy"
    assert _text(engine, steps + tb).outcome == "unexplained-failure"
    # a few teardown lines after the traceback do not make it caught
    assert _text(engine, steps + tb + "W1203 14:54:18.269000 22950 something.py:1] teardown\n" * 5).outcome \
        == "unexplained-failure"


def test_a_logged_exception_is_caught_unless_the_log_ends_with_it(engine):
    """logging.exception prints a record line, then the traceback (real: cpu-outcome/caught_*.log)."""
    rec = "2026-12-03 14:54:45,023 ERROR train: skipping a bad sample at step 13\n"
    tb = ("Traceback (most recent call last):\n"
          '  File "/tmp/venv-torch/lib/python3.11/site-packages/torch/_utils.py", line 794, in reraise\n'
          "    raise exception\n"
          "ValueError: sample 13: token count 0 (empty document in shard 3)\n")
    after = "".join(f"2026-12-03 14:54:45,302 INFO train: step {i} | loss 1.8929\n" for i in range(14, 24))
    assert _text(engine, rec + tb + after).outcome == "healthy"
    assert _text(engine, after + rec + tb).outcome == "unexplained-failure"


@pytest.mark.parametrize("exc, outcome", [
    ("SystemExit: 0", "healthy"),
    ("SystemExit", "healthy"),
    ("SystemExit: 2", "unexplained-failure"),
    ("KeyboardInterrupt", "unexplained-failure"),
])
def test_how_the_last_exception_ends_the_process(engine, exc, outcome):
    log = f'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    main()\n{exc}\n'
    assert _text(engine, log).outcome == outcome


@pytest.mark.parametrize("line", [
    # warnings and handled errors that training survives
    "/work/main/tests/fixtures/gen/issue12_cpu.py:68: UserWarning: checkpointing is disabled for this run; an error "
    "while saving would be ignored",
    "[rank0]:[W1203 08:29:47.908943771 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not "
    "called before program exit, which can leak resources.",
    "wandb: ERROR Error while calling W&B API: context deadline exceeded (<Response [500]>)",
    "srun: error: gpu-node-017: task 3: Exited with exit code 0",
    "[2026-12-03 08:33:52] vm:1635:1659 [0] misc/socket.cc:72 NCCL WARN socketProgress: Connection closed by remote "
    "peer localhost<55012>",
])
def test_lines_that_are_no_failure_of_the_job_stay_healthy(engine, line):
    a = _text(engine, "2026-12-03 14:54:12,554 INFO train: step 1\n" + line + "\n"
              + "2026-12-03 14:54:12,554 INFO train: step 2\n")
    assert a.outcome in ("healthy", "pitfall"), a.summary
    assert a.outcome != "unexplained-failure"


@pytest.mark.parametrize("line, rank", [
    ("srun: error: node-2: task 6: Bus error", 6),        # (its "Out Of Memory" is host-oom since issue 40)
    ("srun: error: gpu-node-017: task 3: Exited with exit code 1", 3),
    ("srun: error: node-7: task 12: Segmentation fault (core dumped)", 12),
    ("srun: error: node-7: tasks 0-3: Killed", None),
    ("slurmstepd: error: *** JOB 4243 ON node-1 CANCELLED AT 2026-12-03T12:00:05 DUE TO TIME LIMIT ***", None),
    ("slurmstepd: error: *** STEP 4242.0 ON node-1 CANCELLED AT 2026-12-03T10:06:12 DUE TO TASK FAILURE ***", None),
    ("Fatal Python error: Aborted", None),
    ("[rank3]: Fatal Python error: Segmentation fault", 3),
])
def test_launcher_scheduler_and_interpreter_reports_are_failures(engine, line, rank):
    a = _text(engine, "2026-12-03 14:54:12,554 INFO train: step 1\n" + line + "\n")
    assert a.outcome == "unexplained-failure" and a.first_rank == rank, a.summary
    assert a.first_failure.message.endswith(line.split(": ", 1)[1] if line.startswith("[rank") else line)


def test_a_truncated_launcher_summary_alone_is_a_failure():
    """The last 17 lines of real/cpu-outcome/torchrun_rank_segfault.log: torchrun's summary only."""
    with open(os.path.join(REAL, "cpu-outcome", "torchrun_rank_segfault.log")) as f:
        tail = "".join(f.readlines()[-17:])
    code, out = _cli("--format", "json", input=tail)
    d = json.loads(out)
    assert code == 3 and d["outcome"] == "unexplained-failure" and d["first_failing_rank"] == 1


def test_cascades_without_their_cause_are_a_failure_not_health(engine):
    """Only rank 0's follow-on error of real/torchrun-cpu/two_ranks_mcore_assert.log (gloo's real text)."""
    line = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
            "closed by peer [127.0.0.1]:11167. This is typically caused by a remote worker crashing. Check the logs of "
            "the remote worker.")
    a = _text(engine, line)
    assert a.outcome == "unexplained-failure" and a.primary is None
    assert "only follow-on errors" in a.summary
