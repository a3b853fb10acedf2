"""The unexplained block (issue 40): one block per traceback, with the line that introduced it and the
tracebacks chained to it, PyTorch's boilerplate left out -- on vLLM's shape, where every line of a
traceback is an ERROR record of its own under the process and logger headers (vllm 0.10-0.11
v1/engine/core.py logger.exception "EngineCore encountered a fatal error."), and on plain Python."""
import json
import os

from click.testing import CliRunner

from triage.cli import cli

HEAD = "(EngineCore_DP0 pid=2210) ERROR 09-10 11:04:41 [core.py:720] "
VLLM_TB = [
    "EngineCore encountered a fatal error.",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 711, in run_engine_core',
    "    engine_core.run_busy_loop()",
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 1880, in execute_model',
    "    valid_sampled_token_ids = sampled_token_ids.tolist()",
    "                              ^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "RuntimeError: CUDA error: unknown error",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
    "be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 722, in run_engine_core',
    "    raise EngineDeadError()",
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace above.",
]


def _report(tmp_path, lines):
    p = tmp_path / "job.log"
    p.write_text("\n".join(lines) + "\n")
    r = CliRunner().invoke(cli, ["analyze", str(p), "--format", "json"], env={"TRIAGE_DB": None})
    return r.exit_code, json.loads(r.stdout)


def test_a_vllm_traceback_is_one_unexplained_block_without_boilerplate(tmp_path):
    code, d = _report(tmp_path, ["(EngineCore_DP0 pid=2210) INFO 09-10 11:02:03 [gpu_model_runner.py:3480] "
                                 "Graph capturing finished in 9 secs, took 0.41 GiB"] + [HEAD + x for x in VLLM_TB])
    assert code == 3 and d["outcome"] == "unexplained-failure"
    assert len(d["unmatched"]) == 1, [u["lines"][:2] for u in d["unmatched"]]
    lines = d["unmatched"][0]["lines"]
    assert lines[0] == "EngineCore encountered a fatal error." and lines[1].startswith("Traceback")
    assert "RuntimeError: CUDA error: unknown error" in lines and lines[-1].startswith("vllm.v1.engine.exceptions")
    for boiler in ("CUDA kernel errors might", "For debugging consider", "Compile with", "During handling", "^^^"):
        assert not any(boiler in x for x in lines), boiler
    assert "" not in lines


def test_two_unrelated_tracebacks_of_a_stream_stay_two_blocks(tmp_path):
    tb = ["Traceback (most recent call last):", '  File "a.py", line 1, in <module>', "ValueError: first"]
    tb2 = ["Traceback (most recent call last):", '  File "b.py", line 2, in <module>', "KeyError: 'second'"]
    code, d = _report(tmp_path, tb + tb2)
    assert [u["lines"][-1] for u in d["unmatched"]] == ["ValueError: first", "KeyError: 'second'"]


def test_the_first_failure_is_the_error_never_a_hint(tmp_path):
    code, d = _report(tmp_path, [HEAD + x for x in VLLM_TB])
    ff = d["first_failure"]
    assert "CUDA kernel errors" not in ff["message"] and "For debugging" not in ff["message"]


SEARCH_HINT = ("Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
               "group__CUDART__TYPES.html for more information.")


def test_first_seen_and_evidence_are_the_error_line_never_the_hint(tmp_path):
    """torch 2.9+ (c10/cuda/CUDAException.cpp) prints the `Search for` hint after the error line; a paste
    may put it first. Neither way is the hint the evidence."""
    err = "RuntimeError: CUDA error: an illegal memory access was encountered"
    for order in ([err, SEARCH_HINT], [SEARCH_HINT, err]):
        code, d = _report(tmp_path, ["[rank0]: " + x for x in order])
        f = d["findings"][0]
        assert d["primary"] == "illegal-memory-access" and f["line"] == order.index(err) + 1
        assert f["evidence"] == [err]


WATCHDOG_FOLLOWUP = ("[rank3]:[E1203 08:34:57.875050958 ProcessGroupNCCL.cpp:1895] [PG ID 1 PG GUID 1 Rank 3] "
                     "Exception (either an error or timeout) detected by watchdog at work: 4812, last enqueued NCCL "
                     "work: 4812, last completed NCCL work: 4811.")


def test_the_watchdogs_follow_up_line_is_a_timeout_of_its_rank(tmp_path):
    """torch 2.3-2.11 ProcessGroupNCCL.cpp: the watchdog's own follow-up to a timeout on rank 3, not an
    unexplained error."""
    code, d = _report(tmp_path, [WATCHDOG_FOLLOWUP])
    assert d["outcome"] == "pitfall" and d["primary"] == "nccl-watchdog-timeout", d["summary"]
    assert d["findings"][0]["rank"] == 3 and not d["unmatched"]


def test_kept_blocks_of_the_same_lines_read_as_each_one_alone():
    """A log of handled tracebacks keeps hundreds of blocks of the same lines: their signatures, boilerplate tests
    and first-line tests are remembered by text (issue 44) -- the unexplained signature, its ranks and each block's
    crash are what each block gives read alone, and a clean exit or a process that went on is no crash either way."""
    from triage import hashing
    from triage.scan.results import ErrorBlock
    from triage.verdict.crashes import crash_of
    from triage.verdict.fingerprint import mask_lines
    from triage.verdict.unexplained import _unmatched, one_per_traceback
    tb = ["Traceback (most recent call last):", '  File "/usr/lib/python3.12/ssl.py", line 1232, in sendall',
          "    v = self.send(byte_view[count:])", "", "ConnectionResetError: [Errno 104] Connection reset by peer"]
    blocks = [ErrorBlock("job.log", r % 8, 100 * r, 100 * r + 4, list(tb), 100 * r, None) for r in range(300)]
    alone = one_per_traceback(blocks[:1])
    assert alone[0].lines == [x for x in tb if x]              # (the empty line is boilerplate, left out)
    got, omitted = _unmatched(blocks)
    want = hashing.sha1("\n".join(mask_lines(alone[0].lines)).encode()).hexdigest()[:12]
    assert omitted == 0 and len(got) == 1 and got[0].fingerprint == want
    assert got[0].count == 8 and sorted(got[0].ranks) == list(range(8))
    for b in blocks[:20]:
        assert crash_of(b, after=1000) is None                 # the process went on
        c = crash_of(b, after=2)
        assert c is not None and c.kind == "uncaught-exception" and c.rank == b.rank and "ConnectionReset" in c.message
    clean = ErrorBlock("job.log", 0, 1, 3, [tb[0], tb[1], "SystemExit: 0"], 1, None)
    assert crash_of(clean, after=2) is None and crash_of(clean, after=1000) is None
    srun = ErrorBlock("job.log", None, 1, 1, ["srun: error: node-3: task 5: Exited with exit code 1"], 1, None)
    for _ in range(2):                                          # (the second read from the memo)
        c = crash_of(srun, after=1000)
        assert c is not None and c.kind == "srun" and c.rank == 5
