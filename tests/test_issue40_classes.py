"""Issue 40: two common failure classes that real logs from bug threads showed and the catalog had no
id for -- a CUDA kernel's device-side assertion (cuda-device-assert) and a process killed by the host's
out-of-memory killer (host-oom).  The logs are real (tests/fixtures/logs/real/gpu-issue40/, made on the
H100 host with torch 2.11.0: gen.sh, gen_host_oom.sh); the few multi-rank layouts below are labelled
SYNTHETIC, each line in them a real printed line (its source in the pattern files' references)."""
import json
import os

import pytest

from inproc import run
from triage.patterns import builtin_dir, load_dir
from triage.scan.engine import Engine
from triage.selftest import fired, lines_of

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "fixtures", "logs", "real", "gpu-issue40")
ENV = {**os.environ, "TRIAGE_DB": ""}
ENG = Engine(load_dir(builtin_dir()))

ASSERT_LINE = ("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1515: indexSelectSmallIndex: block: [0,0,0], "
               "thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.")


def analyze(path=None, text=None):
    r = run(["analyze", path or "-", "--format", "json", "-q"], input=text, env=ENV)
    return r.returncode, json.loads(r.stdout)


def primary(d):
    return next(f for f in d["findings"] if f["pitfall"] == d["primary"] and f["role"] == "root-cause")


# --- the real logs -------------------------------------------------------------------------------

def test_the_real_device_side_assert_is_named_at_the_kernels_assertion_line():
    code, d = analyze(os.path.join(REAL, "device_side_assert.log"))
    assert (code, d["outcome"], d["primary"]) == (1, "pitfall", "cuda-device-assert")
    f = primary(d)
    # first seen: the kernel's own line (it names the kernel and the condition), not the CUDA error at
    # line 9 nor PyTorch's hint lines after it
    assert f["line"] == 1 and f["evidence"][0] == ASSERT_LINE
    assert "torch.AcceleratorError: CUDA error: device-side assert triggered" in f["evidence"]
    assert f["rank"] is None and d["first_failing_rank"] is None          # one process, no rank
    assert d["unmatched"] == []
    # the fix: what the condition means, and how to locate the kernel; not a retry
    assert "CUDA_LAUNCH_BLOCKING=1" in f["fix"] and "TORCH_USE_CUDA_DSA" in f["fix"]
    assert "vocab" in f["fix"] and "num_classes" in f["fix"]
    assert "`srcIndex < srcSelectDimSize`" in f["explanation"] and "`t >= 0 && t < n_classes`" in f["explanation"]
    assert d["action"]["do"] == "stop"


@pytest.mark.parametrize("name, line", [
    ("dataloader_worker_killed.log", 40),     # a worker SIGKILLed (what the OOM killer does)
    ("dataloader_worker_oom.log", 31),        # a worker killed by the kernel's OOM killer (1 GiB memory cgroup)
])
def test_the_real_dataloader_worker_killed_is_host_oom(name, line):
    code, d = analyze(os.path.join(REAL, name))
    assert (code, d["outcome"], d["primary"]) == (1, "pitfall", "host-oom")
    f = primary(d)
    assert f["line"] == line and "is killed by signal: Killed." in f["evidence"][0]
    # PyTorch's follow-up ("exited unexpectedly", raised from it) is the same dead worker: no unexplained block
    assert any("exited unexpectedly" in e for e in f["evidence"]) and d["unmatched"] == []
    assert f["rank"] is None and d["first_failing_rank"] is None
    # engine-neutral knobs: the input pipeline's workers and the job's memory request, not the GPU's
    for knob in ("num_workers", "prefetch_factor", "pin_memory", "--mem"):
        assert knob in f["fix"], knob
    assert d["action"]["do"] == "change-config"


def test_the_kernels_own_oom_kill_lines_are_host_oom():
    code, d = analyze(os.path.join(REAL, "dmesg_host_oom.log"))
    assert (code, d["primary"]) == (1, "host-oom")
    f = primary(d)
    assert "Memory cgroup out of memory: Killed process 671 (pt_data_worker)" in f["evidence"][0]
    # "invoked oom-killer" (the kernel's header of the kill) is evidence beside it, never the root cause
    info = [x for x in d["findings"] if x["pitfall"] == "host-oom" and x["role"] == "info"]
    assert info and "invoked oom-killer" in info[0]["evidence"][0]


def test_slurms_oom_kill_event_is_host_oom():
    code, d = analyze(os.path.join(HERE, "fixtures", "logs", "synthetic", "outcome", "srun_task_oom.log"))
    assert (code, d["primary"]) == (1, "host-oom")
    ev = primary(d)["evidence"]
    # srun's report names the task (the launcher table's srun-task row): the job's first failing rank
    assert ev[0] == "srun: error: node-2: task 6: Out Of Memory" and d["first_failing_rank"] == 6
    assert any(x.startswith("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0.") for x in ev)


# --- the right rank in a job (SYNTHETIC layouts of real lines) --------------------------------------

WATCHDOG = ("[rank{r}]:[E1203 14:03:49.385461578 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600013 milliseconds before timing out.")


def test_a_ranks_device_assert_is_the_jobs_root_cause_on_that_rank():
    text = "\n".join(
        [f"[rank3]: {ASSERT_LINE}",
         "[rank3]: Traceback (most recent call last):",
         '[rank3]:   File "/workspace/train.py", line 88, in <module>',
         "[rank3]:     loss.item()",
         "[rank3]: torch.AcceleratorError: CUDA error: device-side assert triggered"]
        + [WATCHDOG.format(r=r) for r in (0, 1, 2)]) + "\n"
    code, d = analyze(text=text)
    assert d["primary"] == "cuda-device-assert" and d["first_failing_rank"] == 3
    f = primary(d)
    assert f["rank"] == 3 and f["line"] == 1 and "Assertion `srcIndex < srcSelectDimSize` failed." in f["evidence"][0]


def test_a_ranks_killed_dataloader_worker_is_the_jobs_root_cause_on_that_rank():
    text = "\n".join(
        ["[rank5]: RuntimeError: DataLoader worker (pid 81234) is killed by signal: Killed. ",
         "[rank5]: RuntimeError: DataLoader worker (pid(s) 81234) exited unexpectedly"]
        + [WATCHDOG.format(r=r) for r in (0, 1, 2, 3)]) + "\n"
    code, d = analyze(text=text)
    assert d["primary"] == "host-oom" and d["first_failing_rank"] == 5 and primary(d)["rank"] == 5


# --- what they must not claim ---------------------------------------------------------------------

def test_a_device_assert_is_never_an_illegal_memory_access():
    assert fired(ENG, "RuntimeError: CUDA error: device-side assert triggered") == {"cuda-device-assert"}
    assert fired(ENG, ASSERT_LINE) == {"cuda-device-assert"}
    assert "cuda-device-assert" not in fired(ENG, "RuntimeError: CUDA error: an illegal memory access was encountered")


@pytest.mark.parametrize("line", [
    # PyTorch's hints after the error (torch 2.9.1+ / 2.1.2 .. 2.11.0): no evidence of their own
    "Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    # a host-side assertion (glibc's format, c10's internal assert) and a Python assert message
    "python: /workspace/csrc/ops.cpp:42: void run(int): Assertion `n > 0' failed.",
    'RuntimeError: i < config_.size() INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/c10/core/AllocatorConfig.h":124, '
    "please report a bug to PyTorch. ",
    "AssertionError: Assertion `srcIndex < srcSelectDimSize` failed. in the embedding test",
])
def test_what_is_not_a_device_assert(line):
    assert "cuda-device-assert" not in fired(ENG, line)


@pytest.mark.parametrize("line", [
    # a SIGKILL has other senders than the OOM killer (scancel, an eviction, torchrun, kill -9): left out
    "  exitcode  : -9 (pid: 4242)",
    "  traceback : Signal 9 (SIGKILL) received by PID 4242",
    "./run.sh: line 3:  4242 Killed                  python train.py",
    # a worker killed by SIGBUS is /dev/shm, not host RAM; the follow-up line alone says nothing of the cause
    "RuntimeError: DataLoader worker (pid 790) is killed by signal: Bus error. It is possible that dataloader's "
    "workers are out of shared memory. Please try to raise your shared memory limit.",
    "RuntimeError: DataLoader worker (pid(s) 790) exited unexpectedly",
    # Slurm's older failcnt report (the limit reached, memory reclaimed: not a kill)
    "slurmstepd: error: Exceeded step memory limit at some point.",
    # PyTorch's healthy warning about the number of workers
    "UserWarning: This DataLoader will create 16 worker processes in total. Our suggested max number of worker in "
    "current system is 8, which is smaller than what this DataLoader is going to create.",
])
def test_what_is_not_host_oom(line):
    assert "host-oom" not in fired(ENG, line)


def test_a_sigkilled_python_under_a_shell_is_not_called_host_oom():
    code, d = analyze(os.path.join(REAL, "shell_python_sigkill.log"))
    assert d["primary"] != "host-oom" and d["outcome"] != "healthy"


def test_healthy_lines_that_mention_the_words_stay_healthy():
    text = ("[rank0]: building DataLoader with num_workers=8, prefetch_factor=2\n"
            "UserWarning: This DataLoader will create 16 worker processes in total. Our suggested max number of "
            "worker in current system is 8, which is smaller than what this DataLoader is going to create.\n"
            "[rank0]: iteration 10/100 | loss 2.1\n[rank0]: training done\n")
    assert lines_of(text)
    code, d = analyze(text=text)
    assert (code, d["outcome"]) == (0, "healthy")


# --- a process's own report before its launcher's (failure_forms.yaml `own`) -----------------------------

def test_a_script_torchrun_could_not_start_is_the_error_not_torchruns_exit_line():
    """Real (torch 2.11's torchrun on a script that is not there): the error is the interpreter's own
    `can't open file` line, not torchrun's `failed (exitcode: 2)` (so such jobs group apart from a rank
    that exited 3 with no message, which has torchrun's line only); the rank is still the one torchrun
    names."""
    code, d = analyze(os.path.join(REAL, "torchrun_script_missing.log"))
    assert (code, d["outcome"], d["first_failing_rank"]) == (3, "unexplained-failure", 0)
    ff = d["first_failure"]
    assert ff["message"].endswith("can't open file '/workspace/pretrain_gpt.py': [Errno 2] No such file or directory")
    code2, d2 = analyze(os.path.join(REAL, "torchrun_rank_exit3_silent.log"))
    assert (code2, d2["first_failing_rank"]) == (3, 1) and "failed (exitcode: 3)" in d2["first_failure"]["message"]
    assert d["signature"] != d2["signature"]


def test_a_command_that_could_not_start_says_stop_not_retry():
    """A failure form's `action` (failure_forms.yaml): a script that is not there fails the same way on a
    retry, so the unexplained failure's action is stop, not the one retry an unknown error gets."""
    code, d = analyze(os.path.join(REAL, "torchrun_script_missing.log"))
    assert d["action"]["do"] == "stop" and "first failure's line" in d["action"]["why"], d["action"]
    code, d = analyze(text="starting\nbash: line 1: torchrun: command not found\n")
    assert (code, d["outcome"], d["action"]["do"]) == (3, "unexplained-failure", "stop")
    code2, d2 = analyze(os.path.join(REAL, "torchrun_rank_exit3_silent.log"))
    assert d2["action"]["do"] == "retry"             # a silent exit says nothing of a retry: one
