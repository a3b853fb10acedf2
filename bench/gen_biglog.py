"""Generate a large 8-rank Megatron-LM training log that ends in a rank-5 illegal memory access.

    python bench/gen_biglog.py OUT [--size 256M] [--dense] [--seed 0]

Input for `bench/bench_big.py` (issue 11, "Scan at disk speed"). The output is deterministic for a
given (size, dense, seed) and is written in a streaming way (about 1 MiB at a time), so a 1 GiB file
costs no memory.

What is real and what is not:
- The healthy filler is SYNTHETIC: generated here in the formats that Megatron-LM, torchrun and
  NCCL print (real examples of each format are in tests/fixtures/logs/): torchrun's `[rankN]:`
  line prefix, Megatron-LM's `------------------------ arguments ------------------------` block,
  NCCL_DEBUG=INFO lines (`host:pid:tid [dev] NCCL INFO ...`, init and per-collective), python
  warnings (`file.py:N: UserWarning: ...` + `  warnings.warn(`), debug lines with and without
  timestamps, ProcessGroupNCCL glog warnings, a few ANSI-coloured memory reports, Megatron-LM's
  ` [date] iteration N/ M | ... elapsed time per iteration (ms): ... |` step lines and
  megatron-core's `Start CUDA Graphs capture...` / `> built N cuda graph(s) in X sec` capture lines.
- The failure lines are copied from real logs: the `torch.AcceleratorError: CUDA error: an illegal
  memory access was encountered` block from tests/fixtures/logs/real/gpu/illegal_memory_access.log
  (the traceback frames above it are synthetic Megatron-LM paths), and the ProcessGroupNCCL watchdog
  lines from tests/fixtures/logs/real/gpu/nccl_rank_hang_timeout.log, with only the rank and the
  timestamp changed.

Mixes:
- production-like (default): per-rank NCCL INFO, warnings and debug lines make up most of the log;
  iteration lines come from the last rank only (about 3% of lines); capture lines only at start-up.
- `--dense` (worst case): every third line is a step line, or (one slot in 32) a capture line.
- `--storm` (rule-dense): after start-up, every line is one of a 4,096-rank job's NCCL watchdog
  timeouts (each meets a catalog rule: the rule searches and the per-match work).

The job runs normally, then rank 5 hits an illegal memory access, then every other rank's NCCL
watchdog times out 15 s later. `triage analyze` should name `illegal-memory-access` on rank 5 as the
root cause and the timeouts as cascades.
"""
from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from typing import IO, List

RANKS = 8
FAILED_RANK = 5
LAST_RANK = RANKS - 1
HOST = "node-0"
PIDS = [24310 + r for r in range(RANKS)]
TRAIN_ITERS = 5_000_000
GLOBAL_BATCH = 1024
WARMUP_ITERS = 3  # eager iterations before CUDA graph capture
CAPTURE_EVERY = 32  # --dense: one step slot in this many is a capture line
FLUSH_BYTES = 1 << 20
START = datetime(2026, 12, 3, 6, 40, 0)
SITE = "/usr/local/lib/python3.12/dist-packages"
MEGATRON = "/opt/megatron-lm"

# Megatron-LM `arguments` block (a realistic subset; the real block has ~800 keys, printed by rank 0).
ARGS = {
    "account_for_embedding_in_pipeline_split": "False",
    "accumulate_allreduce_grads_in_fp32": "True",
    "adam_beta1": "0.9",
    "adam_beta2": "0.95",
    "adam_eps": "1e-08",
    "attention_backend": "AttnBackend.auto",
    "attention_dropout": "0.0",
    "bf16": "True",
    "context_parallel_size": "1",
    "cuda_graph_impl": "local",
    "cuda_graph_modules": "[]",
    "cuda_graph_warmup_steps": "3",
    "data_parallel_size": "8",
    "distributed_backend": "nccl",
    "enable_cuda_graph": "False",
    "expert_model_parallel_size": "1",
    "external_cuda_graph": "False",
    "ffn_hidden_size": "14336",
    "fp16": "False",
    "global_batch_size": str(GLOBAL_BATCH),
    "hidden_dropout": "0.0",
    "hidden_size": "4096",
    "log_interval": "1",
    "lr": "0.0003",
    "micro_batch_size": "1",
    "num_attention_heads": "32",
    "num_layers": "32",
    "overlap_grad_reduce": "True",
    "overlap_param_gather": "True",
    "pipeline_model_parallel_size": "1",
    "recompute_granularity": "None",
    "recompute_method": "None",
    "recompute_num_layers": "None",
    "seed": "1234",
    "seq_length": "4096",
    "sequence_parallel": "False",
    "te_rng_tracker": "True",
    "tensor_model_parallel_size": "1",
    "train_iters": str(TRAIN_ITERS),
    "transformer_impl": "transformer_engine",
    "use_distributed_optimizer": "True",
    "world_size": str(RANKS),
}

WARNINGS = [
    (f"{SITE}/torch/autograd/graph.py:824: UserWarning: c10d::allreduce_: an autograd kernel was not "
     "registered to the Autograd key(s) but we are trying to backprop through it. This may lead to "
     "silently incorrect behavior. This behavior is deprecated and will be removed in a future version "
     "of PyTorch. (Triggered internally at /opt/pytorch/pytorch/torch/csrc/autograd/"
     "autograd_not_implemented_fallback.cpp:62.)",
     "  return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"),
    (f"{MEGATRON}/megatron/core/tensor_parallel/layers.py:611: UserWarning: async_grad_allreduce is "
     "deprecated, not in use anymore and will be fully removed with 0.10.0. Please use allreduce_dgrad "
     "instead.",
     "  warnings.warn("),
    (f"{SITE}/torch/utils/checkpoint.py:86: UserWarning: None of the inputs have requires_grad=True. "
     "Gradients will be None",
     "  warnings.warn("),
]
DEBUG = [
    "DEBUG:megatron.core.distributed.param_and_grad_buffer:bucket {b}: launching reduce-scatter of {n} params",
    "DEBUG:megatron.core.distributed.param_and_grad_buffer:bucket {b}: all-gather of {n} params finished",
    "DEBUG:megatron.core.optimizer.distrib_optimizer:shard {b}: copied {n} main params to model params",
]
COLLECTIVES = [("ReduceScatter", 7), ("AllGather", 7), ("AllReduce", 7), ("AllReduce", 1)]


def parse_size(s: str) -> int:
    """'256M' -> 268435456 (K, M, G are binary units; a plain number is bytes)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(s)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


def glog(level: str, t: datetime, where: str) -> str:
    """glog header as torch's C++ code prints it: `[E1203 08:32:05.443767990 File.cpp:689]`."""
    return f"[{level}{t.strftime('%m%d %H:%M:%S')}.{t.microsecond:06d}{t.microsecond * 37 % 1000:03d} {where}]"


class Log:
    """Buffered, size-counting writer of `[rankN]:`-prefixed lines (all text is ASCII)."""

    def __init__(self, f: IO[str]) -> None:
        self.f = f
        self.buf: List[str] = []
        self.pending = 0
        self.written = 0

    def raw(self, line: str) -> None:
        self.buf.append(line + "\n")
        self.pending += len(line) + 1
        if self.pending >= FLUSH_BYTES:
            self.flush()

    def rank(self, r: int, line: str) -> None:
        self.raw(f"[rank{r}]:{line}")

    def flush(self) -> None:
        self.f.write("".join(self.buf))
        self.written += self.pending
        self.buf.clear()
        self.pending = 0

    @property
    def size(self) -> int:
        return self.written + self.pending


class Job:
    """The simulated training job: a clock, per-rank NCCL op counters and the line formats."""

    def __init__(self, log: Log, rng: random.Random) -> None:
        self.log = log
        self.rng = rng
        self.t = START
        self.it = 0
        self.slot = 0  # --dense: step/capture slots so far
        self.op = [0] * RANKS
        self.comm = [0x55D0C8A0 + 0x1000 * r for r in range(RANKS)]
        self.step_ms = 5100.0

    def nccl(self, r: int, msg: str, tid: int = 0) -> None:
        self.log.rank(r, f"{HOST}:{PIDS[r]}:{tid or PIDS[r]} [{r}] NCCL INFO {msg}")

    def collective(self, r: int) -> None:
        name, dtype = self.rng.choice(COLLECTIVES)
        self.op[r] += 1
        buf = 0x7F3A2C000000 + 0x200000 * self.rng.randrange(4096)
        count = 1 if dtype == 1 else self.rng.choice((16777216, 33554432, 50331648))
        self.nccl(r, f"{name}: opCount {self.op[r]:x} sendbuff 0x{buf:x} recvbuff 0x{buf:x} count {count} "
                     f"datatype {dtype} op 0 root 0 comm 0x{self.comm[r]:x} [nranks={RANKS}] "
                     f"stream 0x{self.comm[r] + 0x710:x}")

    def warning(self, r: int) -> None:
        for line in self.rng.choice(WARNINGS):
            self.log.rank(r, line)

    def debug(self, r: int) -> None:
        msg = self.rng.choice(DEBUG).format(b=self.rng.randrange(8), n=self.rng.choice((16777216, 40000000)))
        if self.rng.random() < 0.5:  # some debug lines carry a Python-logging timestamp
            stamp = self.t.strftime("%Y-%m-%d %H:%M:%S") + f",{self.t.microsecond // 1000:03d}"
            msg = f"[{stamp}] " + msg
        self.log.rank(r, msg)

    def memory_report(self, r: int) -> None:
        alloc = 20588.1 + self.rng.random() * 50
        self.log.rank(r, f"\x1b[1;32m[Rank {r}] (after {self.it} iterations) memory (MB)\x1b[0m | "
                         f"allocated: {alloc:.1f} | max allocated: 53152.5 | reserved: 61498.0 | max reserved: 61498.0")

    def filler(self, r: int) -> None:
        """One healthy per-rank line (or two, for a warning): mostly NCCL INFO."""
        x = self.rng.random()
        if x < 0.80:
            self.collective(r)
        elif x < 0.95:
            self.debug(r)
        elif x < 0.995:
            self.warning(r)
        else:
            self.memory_report(r)

    def step(self) -> None:
        """Advance one iteration; Megatron-LM prints the step line on the last rank."""
        self.it += 1
        slow = {1: 1.9, WARMUP_ITERS + 1: 2.4}.get(self.it, 1.0)  # first and capture iterations
        ms = self.step_ms * slow * self.rng.gauss(1.0, 0.004)
        self.t += timedelta(milliseconds=ms)
        loss = 2.1 + 8.5 / (1.0 + self.it / 300.0) + self.rng.gauss(0.0, 0.02)
        self.log.rank(LAST_RANK,
                      f" [{iso(self.t)}] iteration {self.it:8d}/{TRAIN_ITERS:8d} | consumed samples: "
                      f"{self.it * GLOBAL_BATCH:12d} | elapsed time per iteration (ms): {ms:.1f} | "
                      f"throughput per GPU (TFLOP/s/GPU): {2400000.0 / ms:.1f} | learning rate: 3.000000E-04 | "
                      f"global batch size: {GLOBAL_BATCH:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
                      f"grad norm: {abs(self.rng.gauss(1.2, 0.2)):.3f} | number of skipped iterations:   0 | "
                      f"number of nan iterations:   0 |")

    def capture_start(self, r: int) -> None:
        self.log.rank(r, "INFO:megatron.core.transformer.cuda_graphs:Start CUDA Graphs capture...")

    def capture_built(self, r: int) -> None:
        self.log.rank(r, "INFO:megatron.core.transformer.cuda_graphs:> built 32 cuda graph(s) in 7.41 sec, "
                         "with total memory usage: allocated 4.12 GB, reserved 5.00 GB.")

    # --- sections ---------------------------------------------------------------
    def startup(self) -> None:
        w = f"W{START.strftime('%m%d %H:%M:%S')}.061000 24290 torch/distributed/run.py:851]"
        self.log.raw(f"{w} ")
        self.log.raw(f"{w} *****************************************")
        self.log.raw(f"{w} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
                     "to avoid your system being overloaded, please further tune the variable for optimal "
                     "performance in your application as needed. ")
        self.log.raw(f"{w} *****************************************")
        self.log.rank(0, "using world size: 8, data-parallel size: 8, context-parallel size: 1, hierarchical "
                         "context-parallel sizes: None, tensor-model-parallel size: 1, pipeline-model-parallel size: 1")
        self.log.rank(0, "------------------------ arguments ------------------------")
        for k, v in ARGS.items():
            self.log.rank(0, f"  {k} {'.' * (48 - len(k))} {v}")
        self.log.rank(0, "-------------------- end of arguments ---------------------")
        for r in range(RANKS):
            self.nccl(r, "Bootstrap: Using eth0:10.0.0.10<0>")
            self.nccl(r, "cudaDriverVersion 12080")
            if r == 0:
                self.log.rank(r, "NCCL version 2.27.3+cuda12.9")
            self.nccl(r, "NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.")
            self.nccl(r, f"Channel 00/0 : {r}[{r}] -> {(r + 1) % RANKS}[{(r + 1) % RANKS}] via P2P/CUMEM/read",
                      tid=PIDS[r] + 57)
            self.nccl(r, "Connected all rings, use ring PXN 0 GDR 1", tid=PIDS[r] + 57)
            self.nccl(r, f"comm 0x{self.comm[r]:x} rank {r} nranks {RANKS} cudaDev {r} nvmlDev {r} "
                         f"busId {0x18 + 0x10 * r:x}000 commId 0x6d2c8f1a9b3e4a77 - Init COMPLETE", tid=PIDS[r] + 57)
            self.log.rank(r, f"{glog('W', self.t, 'ProcessGroupNCCL.cpp:4715')} [PG ID 0 PG GUID 0 Rank {r}]  using "
                             f"GPU {r} as device used by this process is currently unknown. This can potentially "
                             "cause a hang if this rank to GPU mapping is incorrect. You can specify device_id in "
                             "init_process_group() to force use of a particular device.")
        for _ in range(WARMUP_ITERS):
            self.iteration(dense=False)
        for r in range(RANKS):
            self.capture_start(r)
            self.log.rank(r, f"INFO:megatron.core.transformer.cuda_graphs:Rank {r}: 32 graphable layers.")
            self.log.rank(r, f"INFO:megatron.core.transformer.cuda_graphs:Time spent in CUDA Graphs capture on rank {r}: 7.41s")
        self.capture_built(0)

    def storm(self, n: int) -> None:
        """`--storm`: 64 lines of a hang on a 4,096-rank job, every rank's NCCL watchdog timing out
        (real lines of tests/fixtures/logs/real/gpu/nccl_rank_hang_timeout.log, rank, sequence id and
        time changed): each line meets the nccl-watchdog-timeout rule's literals and regex."""
        for i in range(64):
            g = n * 64 + i
            r = g % 4096
            self.t += timedelta(microseconds=173)
            work = (f"WorkNCCL(SeqNum={2 + g // 4096}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
                    "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
            self.log.rank(r % RANKS, f"{glog('E', self.t, 'ProcessGroupNCCL.cpp:689')} [Rank {r}] Watchdog caught "
                                     f"collective operation timeout: {work}")

    def iteration(self, dense: bool) -> None:
        if dense:
            for _ in range(2):
                self.filler(self.rng.randrange(RANKS))
            self.slot += 1
            if self.slot % CAPTURE_EVERY == 0:
                even = self.slot // CAPTURE_EVERY % 2 == 0
                (self.capture_built if even else self.capture_start)(LAST_RANK)
                return
        else:
            for _ in range(4):
                for r in self.rng.sample(range(RANKS), RANKS):
                    self.filler(r)
        self.step()

    def failure(self) -> None:
        """Rank 5 faults; 15 s later the other ranks' watchdogs time out (real message text)."""
        t0 = self.t + timedelta(milliseconds=1873.219)
        fail = [
            "Traceback (most recent call last):",
            f'  File "{MEGATRON}/pretrain_gpt.py", line 318, in <module>',
            "    pretrain(",
            f'  File "{MEGATRON}/megatron/training/training.py", line 907, in pretrain',
            "    iteration, num_floating_point_operations_so_far = train(",
            "                                                      ^^^^^^",
            f'  File "{MEGATRON}/megatron/training/training.py", line 2358, in train',
            "    ) = train_step(",
            "        ^^^^^^^^^^^",
            f'  File "{MEGATRON}/megatron/training/training.py", line 1408, in train_step',
            "    loss_reduced[key] = numerator / denominator",
            "                        ~~~~~~~~~~^~~~~~~~~~~~~",
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
            "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
            "group__CUDART__TYPES.html for more information.",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "",
        ]
        for line in fail:
            self.log.rank(FAILED_RANK, f" {line}" if line else "")
        for r in range(RANKS):  # the healthy ranks go on until they block in the next collective
            if r != FAILED_RANK:
                self.collective(r)
        work = ("WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=15000) "
                "ran for 15020 milliseconds before timing out.")
        for i, r in enumerate(r for r in range(RANKS) if r != FAILED_RANK):
            t = t0 + timedelta(seconds=15.02, microseconds=173 * i)
            pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
            self.log.rank(r, f"{glog('E', t, 'ProcessGroupNCCL.cpp:689')} [Rank {r}] Watchdog caught "
                             f"collective operation timeout: {work}")
            self.log.rank(r, f"{glog('E', t, 'ProcessGroupNCCL.cpp:2303')} {pg}  failure detected by watchdog "
                             "at work sequence id: 2 PG status: last enqueued work: 2, last completed work: 1")
        for i, r in enumerate(r for r in range(RANKS) if r != FAILED_RANK):
            t = t0 + timedelta(seconds=75.8, microseconds=211 * i)
            pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
            self.log.rank(r, f"{glog('E', t, 'ProcessGroupNCCL.cpp:750')} [Rank {r}] Some NCCL operations have "
                             "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                             "operations might run on corrupted/incomplete data.")
            self.log.rank(r, f"{glog('E', t, 'ProcessGroupNCCL.cpp:764')} [Rank {r}] To avoid data "
                             "inconsistency, we are taking the entire process down.")
            self.log.rank(r, f"{glog('E', t, 'ProcessGroupNCCL.cpp:2119')} {pg} Process group watchdog thread "
                             f"terminated with exception: [Rank {r}] Watchdog caught collective operation "
                             f"timeout: {work}")


TAIL_RESERVE = 16 << 10  # bytes left for the failure section


def generate(out: str, size: int, dense: bool = False, seed: int = 0, storm: bool = False) -> int:
    """Write the log to `out`; return its size in bytes (close to `size`)."""
    with open(out, "w", encoding="ascii", newline="\n", buffering=FLUSH_BYTES) as f:
        log = Log(f)
        job = Job(log, random.Random(seed))
        job.startup()
        n = 0
        while log.size < size - TAIL_RESERVE:
            if storm:
                job.storm(n)
                n += 1
            else:
                job.iteration(dense)
        job.failure()
        log.flush()
        return log.written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", metavar="OUT", help="file to write")
    ap.add_argument("--size", default="256M", help="target size: 64M, 256M, 1G, ... (binary units; default 256M)")
    ap.add_argument("--dense", action="store_true", help="worst case: a step or capture line on every third line")
    ap.add_argument("--storm", action="store_true",
                    help="a 4,096-rank hang: after start-up every line is a rank's NCCL watchdog timeout (rule-dense)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    a = ap.parse_args()
    n = generate(a.out, parse_size(a.size), a.dense, a.seed, a.storm)
    print(f"wrote {a.out}: {n:,} bytes ({n / (1 << 20):.1f} MiB){', dense' if a.dense else ''}"
          f"{', storm' if a.storm else ''}")


if __name__ == "__main__":
    main()
