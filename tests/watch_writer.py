"""A realistic training-job log writer for `triage watch` tests (tests/test_watch.py), at training speed.

8 ranks (--ranks) log Megatron-LM step lines every --interval seconds each (the lines are copied from
the real fixtures' formats: tests/fixtures/logs/real/gpu/steptime_*.log,
real/gpu/illegal_memory_access.log, real/gpu/capture_item_sync.log,
real/gpu-multirank/nccl_rank_error_vs_timeouts.log), then a scenario:

  ima         rank --bad logs an illegal memory access at step --fail-at, then silence, then after
              --timeout-after seconds the other ranks' NCCL watchdog timeouts and torchrun's summary
  capture     rank --bad fails CUDA graph capture at start-up (no step), then the same timeouts
  hang        rank --bad stops at step --fail-at, the others log one more step; then silence
  checkpoint  a checkpoint save of --save-s seconds at step --fail-at, then training goes on to
              --steps and torchrun's agent reports success
  quiet       --rate bytes per second of step and info lines for --duration seconds (CPU tests)

Output: --out FILE (one merged log, lines prefixed "[rankN]:" as torchrun's --tee does), --dir DIR
(one file per rank, rank<N>.log, each appearing when its rank starts), or stdout (neither).
--rotate-at N renames FILE to FILE.1 after step N and goes on in a new FILE; --truncate-at N copies
FILE to FILE.1 and truncates it (logrotate's copytruncate).  --marks FILE gets one JSON line per
scenario event: {"mark": "root-cause" | "timeouts" | "end" | "stall", "t": time.time()}.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

IMA = """Traceback (most recent call last):
  File "/workspace/Megatron-LM/pretrain_gpt.py", line 317, in <module>
    pretrain(
  File "/workspace/Megatron-LM/megatron/training/training.py", line 1512, in train_step
    losses_reduced = forward_backward_func(
torch.AcceleratorError: CUDA error: an illegal memory access was encountered
Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""

CAPTURE = """Traceback (most recent call last):
  File "/workspace/Megatron-LM/megatron/core/transformer/cuda_graphs.py", line 46, in create_cudagraphs
    loss_value = loss.item()  # host sync inside capture -> CUDA error
                 ^^^^^^^^^^^
torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing
Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""

TIMEOUT = ("[E{md} {hms}.448944874 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
           "ran for 600001 milliseconds before timing out.")
TIMEOUT2 = ("[E{md} {hms}.449136816 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure "
            "detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last completed "
            "work: {prev}")

SUMMARY = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
pretrain_gpt.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : {stamp}
  host      : node-0
  rank      : {bad} (local_rank: {bad})
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

INFO = ("[2026-12-03 08:31:01,001] [INFO] [megatron.core.dist_checkpointing] rank {r}: prefetching data loader "
        "shard {n} of the training set (no error, just noise to make the log realistic)")


def stamp() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t % 1 * 1e6):06d}"


def step_line(it: int, total: int, ms: float) -> str:
    return (f" [{stamp()}] iteration {it:8d}/{total:8d} | consumed samples: {it * 256:12d} | elapsed time per "
            f"iteration (ms): {ms:.1f} | learning rate: 1.000000E-04 | global batch size:   256 | lm loss: "
            f"{7.0 - it * 0.01:.6E} | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |")


class Out:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.files: dict = {}
        self.f = None
        if a.out:
            self.f = open(a.out, "a", buffering=1)
        self.marks = open(a.marks, "a", buffering=1) if a.marks else None

    def mark(self, what: str) -> None:
        if self.marks:
            self.marks.write(json.dumps({"mark": what, "t": time.time()}) + "\n")

    def write(self, rank, text: str) -> None:
        lines = text.rstrip("\n").split("\n")
        if self.a.dir:
            if rank is None:
                rank = 0
            f = self.files.get(rank)
            if f is None:
                f = self.files[rank] = open(os.path.join(self.a.dir, f"rank{rank}.log"), "a", buffering=1)
            f.write("".join(x + "\n" for x in lines))
            return
        pre = "" if rank is None else f"[rank{rank}]:"
        data = "".join(pre + x + "\n" for x in lines)
        if self.f is not None:
            self.f.write(data)
        else:
            sys.stdout.write(data)
            sys.stdout.flush()

    def rotate(self) -> None:
        assert self.f is not None
        self.f.close()
        os.rename(self.a.out, self.a.out + ".1")
        self.f = open(self.a.out, "a", buffering=1)

    def copytruncate(self) -> None:
        assert self.f is not None
        self.f.flush()
        shutil.copyfile(self.a.out, self.a.out + ".1")
        os.truncate(self.a.out, 0)


def steps(o: Out, a: argparse.Namespace, first: int, last: int, skip_last_for=None) -> None:
    for it in range(first, last + 1):
        for r in range(a.ranks):
            if skip_last_for is not None and r == skip_last_for and it == last:
                continue
            o.write(r, step_line(it, a.steps, a.interval * 1000.0 * 0.98))
        if a.rotate_at == it:
            o.rotate()
        if a.truncate_at == it:
            o.copytruncate()
        time.sleep(a.interval)


def timeouts(o: Out, a: argparse.Namespace, seq: int) -> None:
    time.sleep(a.timeout_after)
    o.mark("timeouts")
    md, hms = time.strftime("%m%d"), time.strftime("%H:%M:%S")
    for r in range(a.ranks):
        if r != a.bad:
            o.write(r, TIMEOUT.format(md=md, hms=hms, r=r, seq=seq))
            o.write(r, TIMEOUT2.format(md=md, hms=hms, r=r, seq=seq, prev=seq - 1))
    time.sleep(0.5)
    o.write(None, SUMMARY.format(stamp=time.strftime("%Y-%m-%d_%H:%M:%S"), bad=a.bad))
    o.mark("end")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=["ima", "capture", "hang", "checkpoint", "quiet"])
    p.add_argument("--out")
    p.add_argument("--dir")
    p.add_argument("--marks")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--bad", type=int, default=3)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--fail-at", type=int, default=5)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--timeout-after", type=float, default=15.0)
    p.add_argument("--save-s", type=float, default=8.0)
    p.add_argument("--rate", type=int, default=1 << 20)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--rotate-at", type=int, default=None)
    p.add_argument("--truncate-at", type=int, default=None)
    p.add_argument("--stagger", type=float, default=0.0, help="seconds between ranks' first lines (--dir)")
    a = p.parse_args()
    o = Out(a)
    for r in range(a.ranks):
        o.write(r, f"[fixture] rank {r}/{a.ranks} starting; NCCL_HOSTID=node-{r // 8}")
        if a.stagger:
            time.sleep(a.stagger)
    if a.scenario == "ima":
        steps(o, a, 1, a.fail_at)
        o.write(a.bad, IMA)
        o.mark("root-cause")
        timeouts(o, a, a.fail_at * 4)
    elif a.scenario == "capture":
        o.write(0, "> building CUDA graphs: Capture CUDA graph for training (layers 0-31)")
        time.sleep(a.interval)
        o.write(a.bad, CAPTURE)
        o.mark("root-cause")
        timeouts(o, a, 3)
    elif a.scenario == "hang":
        steps(o, a, 1, a.fail_at + 1, skip_last_for=a.bad)
        o.mark("stall")
        time.sleep(a.timeout_after)
    elif a.scenario == "checkpoint":
        steps(o, a, 1, a.fail_at)
        o.write(0, f"saving checkpoint at iteration {a.fail_at:7d} to /checkpoints/gpt in torch_dist format")
        o.mark("stall")
        time.sleep(a.save_s)
        o.write(0, f"  successfully saved checkpoint from iteration {a.fail_at:7d} to /checkpoints/gpt "
                   "[ t 1/1, p 1/1 ]")
        steps(o, a, a.fail_at + 1, a.steps)
        o.write(None, "I1203 08:40:00.000000 498 torch/distributed/elastic/agent/server/api.py:900] [default] worker "
                      "group successfully finished. Waiting 300 seconds for other agents to finish.")
        o.mark("end")
    else:
        quiet(o, a)


def quiet(o: Out, a: argparse.Namespace) -> None:
    """--rate bytes a second of step and info lines, written every 0.1 s."""
    t0 = time.time()
    it = 0
    n = 0
    while time.time() - t0 < a.duration:
        want = a.rate // 10
        parts = []
        size = 0
        while size < want:
            r = n % a.ranks
            line = "[rank%d]:" % r + (step_line(it, 10 ** 7, 100.0) if n % 4 == 0 else INFO.format(r=r, n=n)) + "\n"
            if n % (4 * a.ranks) == 0:
                it += 1
            parts.append(line)
            size += len(line)
            n += 1
        data = "".join(parts)
        if o.f is not None:
            o.f.write(data)
        else:
            sys.stdout.write(data)
        time.sleep(0.1)
    o.mark("end")


if __name__ == "__main__":
    main()
