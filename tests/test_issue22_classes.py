"""Issue 22: failure classes from other stacks -- GPU hardware faults, the private-pool share of an
OOM, an NCCL timeout whose headline was cut off.  Messages are the real software's (each pattern
file's references say where from); the layouts are labelled where synthetic."""
import pytest

import inproc
from triage.scan.engine import Engine
from triage.patterns import PatternError, builtin_dir, load_dir, parse_pattern
from triage.scan.rules import size_bytes
from triage.selftest import fired, lines_of

PATS = load_dir(builtin_dir())
ENG = Engine(PATS)


def primary(text):
    from triage.verdict.analyse import analyse
    a = analyse(ENG.scan(lines_of(text)))
    return a.primary.pitfall if a.primary else None, a


@pytest.mark.parametrize("line", [
    "[rank3]: torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered",     # cudaErrorECCUncorrectable
    "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",    # cudaErrorNvlinkUncorrectable
    "host-3:4242:4300 [3] NCCL WARN Cuda failure 'uncorrectable ECC error encountered'",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "[Mon Dec  1 10:00:00 2026] NVRM: Xid (PCI:0000:97:00): 95, pid=4067793, name=python, Uncontained: FBHUB.",
])
def test_gpu_hardware_faults_have_their_own_id(line):
    assert primary(line)[0] == "gpu-hardware-fault"


def test_a_hardware_fault_is_never_an_illegal_memory_access():
    log = ("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
           "[rank1]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    pid, a = primary(log)
    assert pid == "gpu-hardware-fault"
    assert [f.pitfall for f in a.findings if f.role == "root-cause"] == ["gpu-hardware-fault"]
    assert "illegal-memory-access" not in fired(ENG, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, x")


OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {t}. GPU 0 has a total capacity of 79.11 GiB "
       "of which 1.06 GiB is free. Of the allocated memory {a} is allocated by PyTorch, with {p} allocated in private "
       "pools (e.g., CUDA Graphs), and 3.21 GiB is reserved by PyTorch but unallocated.")


@pytest.mark.parametrize("alloc,pool,want", [
    ("22.05 GiB", "21.71 MiB", "cuda-oom"),                  # 0.1%: a small graph's pool, not what filled the GPU
    ("70.12 GiB", "4.50 GiB", "capture-memory-overhead"),    # 6.4%
    ("75.00 GiB", "0 bytes", "cuda-oom"),
    ("10.00 GiB", "1.00 GiB", "capture-memory-overhead"),
])
def test_the_private_pool_share_must_be_material(alloc, pool, want):
    assert primary(OOM.format(t="2.00 GiB", a=alloc, p=pool))[0] == want


def test_sizes_and_the_share_rule_is_validated():
    assert size_bytes("21.71 MiB") == 21.71 * (1 << 20) and size_bytes("0 bytes") == 0 and size_bytes("x") is None
    base = {"id": "x", "title": "t", "severity": "error", "kind": "runtime", "explanation": "e", "fix": "f",
            "references": [{"source": "s"}], "examples": {"match": ["a"], "no_match": ["b"]}}
    with pytest.raises(PatternError, match="named groups"):
        parse_pattern(dict(base, match=[{"regex": "a (\\d+)", "literal": "a", "min_share": 0.1}]), "x.yaml")
    with pytest.raises(PatternError, match="min_share must be"):
        parse_pattern(dict(base, match=[{"regex": "(?P<part>a)(?P<whole>b)", "literal": "a", "min_share": 2}]),
                      "x.yaml")


def test_an_nccl_timeout_whose_headline_was_cut_off_is_still_a_timeout():
    # ProcessGroupNCCL's teardown lines (real/gpu/nccl_rank_hang_timeout.log lines 26-27)
    log = ("[rank0]:[E1203 08:33:09.257065472 ProcessGroupNCCL.cpp:750] [Rank 0] Some NCCL operations have failed "
           "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
           "corrupted/incomplete data.\n"
           "[rank0]:[E1203 08:33:09.257108223 ProcessGroupNCCL.cpp:764] [Rank 0] To avoid data inconsistency, we "
           "are taking the entire process down.")
    pid, a = primary(log)
    assert pid == "nccl-watchdog-timeout" and a.verdict.hang


# --- never "healthy" on a crash -------------------------------------------------------------------

def test_an_exception_line_ending_a_paste_is_a_failure():
    pid, a = primary('step 10 loss 1.0\n  File "/x/y.py", line 3, in f\n    g()\nRuntimeError: shard 3 is gone')
    assert a.outcome == "unexplained-failure" and a.first_failure.message == "RuntimeError: shard 3 is gone"
    assert primary('step 10 loss 1.0\n  File "/x/y.py", line 3, in f\n    g()\nRuntimeError: Invalid capture.')[0] \
        == "capture-sync-forbidden"                   # torch's capture_end on an invalidated capture
    pid, a = primary("iteration 7 ok\n  File \"/w/t.py\", line 9, in step\n    assert x\nAssertionError")
    assert a.outcome == "unexplained-failure"


def test_a_caught_exception_the_run_went_on_from_stays_healthy():
    log = "step 1\nValueError: bad sample, skipping\n" + "".join(f"iteration {i} ok\n" for i in range(20))
    assert primary(log)[1].outcome == "healthy"
    assert primary("UserWarning: something deprecated\nfinished")[1].outcome == "healthy"


def test_empty_and_binary_inputs_are_input_errors(tmp_path):
    empty, elf = tmp_path / "empty.log", tmp_path / "core.log"
    empty.write_bytes(b"")
    elf.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 500)
    for p, why in ((empty, "the input is empty"), (elf, "not a text log")):
        r = inproc.run(["analyze", str(p)])
        assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr, r.stderr
    utf16 = tmp_path / "w.log"
    utf16.write_bytes("RuntimeError: CUDA error: an illegal memory access was encountered\n".encode("utf-16"))
    r = inproc.run(["analyze", str(utf16), "-q"])
    assert r.returncode == 1 and "illegal-memory-access" in r.stdout     # UTF-16 has NULs and is text


def _zstd():
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor()


@pytest.mark.parametrize("suffix,compress", [(".gz", "gzip"), (".xz", "lzma"), (".bz2", "bz2"), (".zst", "zstandard")])
def test_a_truncated_archive_is_triaged_up_to_where_it_breaks(tmp_path, suffix, compress):
    import importlib
    import json
    text = "".join(f"iteration {i} ok\n" for i in range(3000)) + \
        "RuntimeError: CUDA error: an illegal memory access was encountered\n" + \
        "".join(f"filler {i} " * 8 + "\n" for i in range(20000))
    data = _zstd().compress(text.encode()) if compress == "zstandard" else \
        importlib.import_module(compress).compress(text.encode())
    p = tmp_path / f"node7.log{suffix}"
    p.write_bytes(data[:len(data) * 2 // 3])          # a crashed node's log, cut off
    r = inproc.run(["analyze", str(p), "--format", "json"])
    d = json.loads(r.stdout)
    assert r.returncode == 1 and d["primary"] == "illegal-memory-access", r.stderr
    assert any("breaks off after" in n and "triaged up to there" in n for n in d["notes"])


# --- vLLM (real strings of the vllm 0.34.0 wheel) ---------------------------------------------------

def test_vllm_custom_all_reduce_on_expandable_segments_has_its_own_id():
    pid, a = primary("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                     "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:475 'invalid argument'")
    assert pid == "vllm-custom-allreduce-expandable"
    assert pid != "nccl-graph-register-expandable" and "expandable_segments" in a.primary.implicates


@pytest.mark.parametrize("line", [
    "(EngineCore_DP0 pid=3111) ERROR 12-04 06:03:31 [multiproc_executor.py:405] Worker proc VllmWorker-1 died "
    "unexpectedly (exit code: 1), shutting down executor.",
    "Failed: Cuda error /workspace/csrc/cuda_utils_kernels.cu:20 'invalid argument'",
])
def test_an_engines_report_of_a_dead_process_is_a_failure_wherever_it_stands(line):
    a = primary(line + "\n" + "".join(f"INFO shutting down {i}\n" for i in range(60)))[1]
    assert a.outcome == "unexplained-failure" and a.first_failure.kind == "error"


def test_an_oom_inside_an_inference_engines_capture_is_the_graphs():
    """vllm 0.34.0's capture functions (v1/worker/gpu/model_runner.py capture_model,
    cudagraph_utils.py capture) in the OOM's traceback: capture-memory-overhead, not a plain OOM."""
    tb = ("Traceback (most recent call last):\n"
          '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu/model_runner.py", line 1160, in capture_model\n'
          "    self.cudagraph_manager.capture(self.model)\n"
          '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu/cudagraph_utils.py", line 480, in capture\n'
          "    hidden = model(**inputs)\n"
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
          "79.11 GiB of which 100.00 MiB is free.")
    assert primary(tb)[0] == "capture-memory-overhead"
    plain = tb.replace("vllm/v1/worker/gpu/model_runner.py", "myproj/train.py").replace(
        "vllm/v1/worker/gpu/cudagraph_utils.py", "myproj/model.py")
    assert primary(plain)[0] == "cuda-oom"


@pytest.mark.parametrize("frame", [
    '  File "/srv/app/runner.py", line 88, in replay_prepare\n    self.input_ids[:bs].copy_(batch.input_ids)',
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu/cudagraph_utils.py", line 617, in run_fullgraph\n'
    "    self.graphs[desc].replay()",
])
def test_a_size_mismatch_in_a_graph_replay_is_a_dynamic_shape(frame):
    msg = "RuntimeError: The size of tensor a (160) must match the size of tensor b (192) at non-singleton dimension 0"
    assert primary(frame + "\n" + msg)[0] == "dynamic-shapes"
    # the same message without a replay nearby is no graph pitfall
    assert primary('  File "/srv/app/model.py", line 12, in forward\n    y = x + b\n' + msg)[0] is None


def test_torch_compile_graph_trees_overwritten_output_has_its_own_id():
    # torch 2.13.0 torch/_inductor/cudagraph_trees.py _get_invalid_access_message
    msg = ("RuntimeError: Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent "
           "run. Stack trace: File \"/srv/train.py\", line 41, in forward. To prevent overwriting, clone the tensor "
           "outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin() before each model "
           "invocation.")
    pid, a = primary(msg)
    assert pid == "compiled-graph-output-overwritten" and "cudagraph_mark_step_begin" in a.primary.fix
    # "skipping cudagraphs due to ..." is informational: a healthy run stays healthy
    skip = "W1204 06:00:00.000000 123 torch/_inductor/cudagraph_trees.py:2000] skipping cudagraphs due to mutated inputs"
    pid, a = primary(skip + "\nstep 1 done")
    assert pid is None and a.outcome == "healthy" and [f.role for f in a.findings] == ["info"]


def test_a_whole_zst_of_several_frames_has_no_note(tmp_path):
    """zstd -c a >> log.zst; zstd -c b >> log.zst: every frame is read, and a whole file gets no note."""
    import json
    z = _zstd()
    p = tmp_path / "job.log.zst"
    p.write_bytes(z.compress(b"first frame\n" * 10) +
                  z.compress(b"RuntimeError: CUDA error: an illegal memory access was encountered\n"))
    r = inproc.run(["analyze", str(p), "--format", "json"])
    d = json.loads(r.stdout)
    assert r.returncode == 1 and d["primary"] == "illegal-memory-access"
    assert not any("breaks off" in n for n in d.get("notes", []))


# --- the rest of issue 22: real strings of SGLang 0.5.23, vLLM 0.6.3-0.34.0, torch 1.13.1-2.14.1 ------

def _cli_json(path):
    import json
    r = inproc.run(["analyze", str(path), "--format", "json"])
    return r.returncode, json.loads(r.stdout)


FIX = __import__("os").path.join(__import__("os").path.dirname(__file__), "fixtures", "logs")


@pytest.mark.parametrize("name", ["enginecore_fatal_error_tail", "enginecore_failed_to_start",
                                  "enginecore_fatal_error_0.10"])
def test_an_engine_cores_error_block_ending_the_input_is_a_failure(name):
    rc, d = _cli_json(f"{FIX}/synthetic/vllm/{name}.log")
    assert rc == 3 and d["outcome"] == "unexplained-failure"
    ff = d["first_failure"]
    assert ff["kind"] == "uncaught-exception" and ff["message"] == "ValueError: top_k must be positive, got 0"
    # the vLLM header is stripped: the signature is the exception, not "(EngineCore pid=N) ERROR ..."
    assert "pid=" not in d["signature"] and "ERROR" not in d["signature"]


def test_a_traceback_vllm_logged_and_went_on_from_stays_healthy():
    rc, d = _cli_json(f"{FIX}/synthetic/vllm/worker_exception_caught_0.6.log")
    assert rc == 0 and d["outcome"] == "healthy"


@pytest.mark.parametrize("line", [
    "(EngineCore_DP0 pid=3111) ERROR 12-04 06:03:31 [v1/engine/core.py:1759] EngineCore encountered a fatal error.",
    "(EngineCore pid=3111) ERROR 12-04 06:03:31 [v1/engine/core.py:1757] EngineCore failed to start.",
    "(Worker_TP1 pid=3120) ERROR 12-04 06:03:31 [v1/executor/multiproc_executor.py:1091] WorkerProc failed to start.",
    "[2026-12-04 06:10:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
])
def test_an_engines_fatal_record_alone_is_a_failure(line):
    """The record without its traceback (a paste that kept one line), followed by the run's lines."""
    from triage.verdict.analyse import analyse
    log = line + "\n" + "\n".join(f"INFO 12-04 06:03:{i:02d} [loggers.py:123] heartbeat {i}" for i in range(10, 20))
    a = analyse(ENG.scan(lines_of(log)))
    assert a.outcome == "unexplained-failure", a.outcome


def test_vllm_lines_keep_their_time():
    from triage.inputs.sources import parse_ts
    t = parse_ts("ERROR 12-04 06:03:31 [v1/engine/core.py:1759] EngineCore encountered a fatal error.")
    assert t is not None and parse_ts("ERROR 12-04 06:03:41 [core.py:1] x") - t == 10


@pytest.mark.parametrize("name", ["sglang_capture_failed_oom", "vllm_capture_progress_oom"])
def test_an_inference_engines_capture_oom_is_the_graphs(name):
    rc, d = _cli_json(f"{FIX}/synthetic/other-stacks/{name}.log")
    assert rc == 1 and d["primary"] == "capture-memory-overhead"


def test_sglangs_capture_failure_around_another_error_is_that_error():
    assert primary("Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is "
                   "capturing")[0] == "capture-sync-forbidden"
    assert "capture-memory-overhead" not in fired(
        ENG, "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing")


@pytest.mark.parametrize("name", ["torch113_invalid_capture", "allocator_capture_invalidated_assert",
                                  "nccl_window_register_during_capture"])
def test_other_wordings_of_an_invalidated_capture(name):
    rc, d = _cli_json(f"{FIX}/synthetic/other-stacks/{name}.log")
    assert rc == 1 and d["primary"] == "capture-sync-forbidden"


def test_registration_failing_outside_a_capture_is_not_a_capture_error():
    assert "capture-sync-forbidden" not in fired(
        ENG, "RuntimeError: Failed to register segment with ptr 0x7f2a40000000, size 268435456 on ncclComm_ 0x5581c0a0")


@pytest.mark.parametrize("name", ["compile_static_input_moved_error", "compile_static_input_moved_torch21"])
def test_a_compiled_graphs_moved_static_input_has_its_own_id(name):
    rc, d = _cli_json(f"{FIX}/synthetic/other-stacks/{name}.log")
    assert rc == 1 and d["primary"] == "compiled-graph-static-input-moved"
    assert "mark_static_address" in d["findings"][0]["explanation"]


def test_re_recording_for_a_moved_static_input_is_info_on_a_real_run():
    """Real (H200, torch 2.11.0): torch re-records instead of failing; the run is healthy."""
    rc, d = _cli_json(f"{FIX}/real/gpu-issue22/compile_static_input_rerecord.log")
    assert rc == 0 and d["outcome"] == "healthy"
    assert [(f["pitfall"], f["role"]) for f in d["findings"]] == [("compiled-graph-static-input-moved", "info")]


def test_a_bare_assertion_elsewhere_is_not_a_moved_static_input():
    log = ('  File "/srv/train.py", line 12, in step\n    assert x.data_ptr() == y.data_ptr()\nAssertionError')
    assert primary(log)[0] != "compiled-graph-static-input-moved"


@pytest.mark.parametrize("line", ["AssertionError: Cuda graph is not supported for model parallelism",
                                  "[rank0]: AssertionError: cuda graph is not supported with this model, please disable"])
def test_deepspeed_inference_refusing_cuda_graphs(line):
    """deepspeed 0.18.2 inference/engine.py, module_inject/replace_module.py (sdist strings)."""
    assert primary(line)[0] == "inference-graph-unsupported"
