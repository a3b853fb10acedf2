"""The bench's log generator as a grid (issue 44): one Shape = line mix x rank prefix x timestamps x
line length x where the failure sits x how the log was captured (DRESSES); every shape of `bench/grid.py` is a row
of SHAPES here.

    python bench/gen_grid.py SHAPE OUT [--size 256M] [--seed 0]
    python bench/gen_grid.py --list

SYNTHETIC logs (the output is deterministic for a given shape, size and seed, written ~1 MiB at a
time). The line formats are the real software's wording; the sources of each:
- NCCL INFO collective / init lines, Megatron-LM's ` [date] iteration N/ M | ... |` step line,
  Python warnings, the ProcessGroupNCCL glog header, the failure section (a rank's illegal memory
  access, then every other rank's watchdog timeout): bench/gen_biglog.py, which took them from
  tests/fixtures/logs/real/ (gpu/illegal_memory_access.log, gpu/nccl_rank_hang_timeout.log).
- megatron-core's capture progress line without tqdm: `logger.info(f"{g_idx}/{len(cudagraph_record)}.
  {progress_str}")` with progress_str "create cuda graphs | mem: alloc %s, res %s" and its
  format_mem_bytes ("20.1 gb") (megatron/core/transformer/cuda_graphs.py, Megatron-LM main, the mirror
  under /work/.mirror), through Python logging's default format `INFO:<logger>:<message>`.
- hex debug lines: c10's C++ stack frames as PyTorch prints them under a warning or error
  (`frame #4: <unknown function> + 0xecdb4 (0x7f9c692ecdb4 in /lib/x86_64-linux-gnu/libstdc++.so.6)`,
  tests/fixtures/logs/real/gpu/nccl_rank_hang_timeout.log).
- a handled traceback: Python's `Traceback (most recent call last):` block of a caught
  ConnectionResetError (CPython's own wording) after a retry warning, as a checkpoint upload prints it.
- rank prefixes: torchrun `[rankN]:` (PyTorch >= 2.2) and `[defaultN]:` (--tee), Slurm `srun --label`
  (`N: `, right-aligned to the widest task id), Open MPI `--tag-output` (`[1,N]<stdout>:`), none
  (per-rank files merged without one); timestamps: `kubectl logs --timestamps` / `docker logs -t`
  (RFC3339Nano before the line) or none (each format as triage/inputs/launchers.yaml declares it).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Dict, IO, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_biglog as gb  # noqa: E402  (bench/ on sys.path)

RANKS = 8
FAILED_RANK = 5
LAST_RANK = RANKS - 1
HOST = "node-0"
START = datetime(2026, 12, 3, 6, 40, 0)
GRAPHS = 96                     # cuda graphs a capture creates (the issue's `N/96` lines)
FLUSH_BYTES = 1 << 20

LONG_WARNING = (
    f"{gb.SITE}/torch/autograd/graph.py:869: UserWarning: The AccumulateGrad node's stream does not match the "
    "stream of the node that produced the incoming gradient. This may incur unnecessary synchronization and break "
    "CUDA graph capture if the AccumulateGrad node's stream is the default stream. This mismatch is caused by an "
    "AccumulateGrad node created prior to the current iteration being kept alive. This can happen if the autograd "
    "graph is still being kept alive by tensors such as the loss, or if you are using DDP, which will stash a "
    "reference to the node. To resolve the mismatch, delete all references to the autograd graph or ensure that "
    "DDP initialization is performed under the same stream as subsequent forwards. If the mismatch is intentional, "
    "you can use torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch(False) to suppress this warning. "
    "(Triggered internally at /pytorch/torch/csrc/autograd/input_buffer.cpp:240.)")
FRAMES = [
    "c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> >) + 0x9d (0x7f9c98d7305d in {site}/torch/lib/libc10.so)",
    "c10d::ProcessGroupNCCL::Watchdog::runLoop() + 0x17b1 (0x7f9be4707fc1 in {site}/torch/lib/libtorch_cuda.so)",
    "<unknown function> + 0xecdb4 (0x7f9c692ecdb4 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "<unknown function> + 0x9cb84 (0x7f9c9a29cb84 in /lib/x86_64-linux-gnu/libc.so.6)",
]
HANDLED_TB = [
    "WARNING:megatron.training.checkpointing:checkpoint upload attempt 1 failed; retrying in 30 s",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/http/client.py", line 1338, in request',
    "    self._send_request(method, url, body, headers, encode_chunked)",
    '  File "/usr/lib/python3.12/ssl.py", line 1232, in sendall',
    "    v = self.send(byte_view[count:])",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
]
LINE_TYPES = ("nccl", "iter_one", "iter_all", "capture", "warn", "hex", "tb", "debug")


@dataclass(frozen=True)
class Shape:
    name: str
    what: str
    mix: Dict[str, float] = field(default_factory=dict)   # share of each LINE_TYPE (normalised)
    prefix: str = "torchrun"     # torchrun | tee | srun | mpirun | none
    ts: str = "none"             # none | k8s (RFC3339Nano before each line)
    length: str = "normal"       # short | normal | long (line length: NCCL init lines / collectives / long warnings)
    failure: str = "end"         # end | middle | start | none | hang (every rank but one times out: a hang's ranks)
    scale: float = 1.0           # its size is the grid's size times this (dense shapes: a quarter)
    dress: str = "none"          # none | crlf | ansi | tty | utf8: how the log was captured (DRESSES)
    legacy: str = ""             # a mix of bench/gen_biglog.py itself: default | dense | storm


# how a log was captured, beside what the job printed (issue 44's twentieth pass: shapes of logs the grid had never
# made ran 1.2-3.7x slower than their plain twins): crlf -- every line end CRLF, as a terminal's line discipline
# (ONLCR) writes it: `docker run -t`, `script`, a pod with `tty: true`, `kubectl logs` of one; ansi -- a colour
# formatter's SGR codes around the message of a third of the lines (Python logging / loguru / rich colours on a tty);
# tty -- both, as `docker run -t` of a colouring job gives; utf8 -- non-ASCII text on 2% of the lines (a
# checkmark, an em dash, CJK text: a log's own messages, tqdm's bar blocks)
DRESSES = ("none", "crlf", "ansi", "tty", "utf8")
UTF8_TAILS = (" \u2713 done", " \u2014 ok", " \u8bad\u7ec3\u6b65\u9aa4\u5b8c\u6210", " |\u2588\u2588\u2588\u258c      | 35%")

PROD = {"nccl": 0.55, "iter_one": 0.03, "debug": 0.25, "warn": 0.10, "hex": 0.07}
SHAPES: List[Shape] = [
    Shape("bench", "bench/gen_biglog.py's production-like mix (80% NCCL collectives, last-rank steps)",
          legacy="default"),
    Shape("bench-dense", "bench/gen_biglog.py --dense (a step or capture line every third line)", legacy="dense",
          scale=0.25),
    Shape("storm", "bench/gen_biglog.py --storm (every line a 4,096-rank watchdog timeout)", legacy="storm",
          scale=0.25),
    Shape("prod", "the issue's production mix: [rankN]: on every line, 55% NCCL INFO, 3% iteration lines",
          PROD),
    Shape("megatron-dense", "the issue's dense mix: capture progress `N/96. create cuda graphs` and iteration "
          "lines from every rank interleaved throughout", {"capture": 0.35, "iter_all": 0.35, "nccl": 0.30},
          scale=0.25),
    Shape("prod-srun", "the production mix under srun --label (`N: `)", PROD, prefix="srun"),
    Shape("prod-mpirun", "the production mix under mpirun --tag-output (`[1,N]<stdout>:`)", PROD, prefix="mpirun"),
    Shape("prod-tee", "the production mix under torchrun --tee (`[defaultN]:`)", PROD, prefix="tee"),
    Shape("prod-bare-k8s", "the production mix, no rank prefix, kubectl --timestamps on every line", PROD,
          prefix="none", ts="k8s"),
    Shape("short-lines", "NCCL init-length lines (short), the production shares", PROD, length="short"),
    Shape("long-lines", "long warning text on the warning lines (~1 KB each), the production shares", PROD,
          length="long"),
    Shape("iter-all", "iteration lines from every rank (25%), NCCL INFO the rest", {"iter_all": 0.25, "nccl": 0.75},
          scale=0.5),
    Shape("warn-heavy", "Python warnings 45% (two lines each), NCCL INFO the rest", {"warn": 0.45, "nccl": 0.55}),
    Shape("hex-heavy", "c10 C++ frame lines (hex addresses) 40%", {"hex": 0.40, "nccl": 0.55, "iter_one": 0.05}),
    Shape("tracebacks", "a handled traceback (7 lines) in 2% of the events", {**PROD, "tb": 0.02}, scale=0.5),
    Shape("fail-middle", "the production mix, the failure section in the middle (the job runs on)", PROD,
          failure="middle"),
    Shape("fail-start", "the production mix, the failure section right after start-up", PROD, failure="start"),
    Shape("healthy", "the production mix, no failure at all", PROD, failure="none"),
    Shape("prod-hang", "the production mix ending in a hang: every rank but one times out, no error before",
          PROD, failure="hang"),
    Shape("prod-crlf", "the production mix with CRLF line ends (a terminal's: docker run -t, script)", PROD,
          dress="crlf"),
    Shape("prod-ansi", "the production mix, a colour formatter's SGR codes on a third of the lines", PROD,
          dress="ansi"),
    Shape("prod-tty", "the production mix as a tty gives it: CRLF line ends and colours", PROD, dress="tty"),
    Shape("prod-utf8", "the production mix, non-ASCII text on 2% of the lines", PROD, dress="utf8"),
]
BY_NAME = {s.name: s for s in SHAPES}


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


class Writer(gb.Log):
    """gen_biglog's buffered writer, with the shape's rank prefix and time header on each line."""

    def __init__(self, f: IO[str], shape: Shape):
        super().__init__(f)
        self.shape = shape
        width = len(str(RANKS - 1))
        self.pre = {
            "torchrun": [f"[rank{r}]:" for r in range(RANKS)],
            "tee": [f"[default{r}]:" for r in range(RANKS)],
            "srun": [f"{r:>{width}}: " for r in range(RANKS)],
            "mpirun": [f"[1,{r}]<stdout>:" for r in range(RANKS)],
            "none": [""] * RANKS,
        }[shape.prefix]
        self.t = START
        self.dress = random.Random(1)       # (the dress's own draws: the job's lines are the plain shape's)

    def line(self, r: int, text: str) -> None:
        dress = self.shape.dress
        if dress in ("ansi", "tty") and self.dress.random() < 1 / 3:
            text = f"\x1b[{self.dress.choice((32, 33, 36, '1;31'))}m{text}\x1b[0m"
        elif dress == "utf8" and self.dress.random() < 0.02:
            text += self.dress.choice(UTF8_TAILS)
        s = self.pre[r] + text
        if self.shape.ts == "k8s":
            s = self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond:06d}123Z " + s
        self.raw(s + "\r" if dress in ("crlf", "tty") else s)


class GridJob:
    def __init__(self, w: Writer, rng: random.Random):
        self.w = w
        self.rng = rng
        self.it = 0
        self.graph = 0
        self.op = [0] * RANKS
        self.comm = [0x55D0C8A0 + 0x1000 * r for r in range(RANKS)]
        self.pids = [24310 + r for r in range(RANKS)]
        shares = [(k, v) for k, v in w.shape.mix.items() if v > 0]
        total = sum(v for _, v in shares)
        acc = 0.0
        self.cum: List[Tuple[float, str]] = []
        for k, v in shares:
            acc += v / total
            self.cum.append((acc, k))

    def tick(self, ms: float) -> None:
        self.w.t += timedelta(milliseconds=ms)

    def nccl(self, r: int) -> None:
        if self.w.shape.length == "short":
            ch = self.rng.randrange(32)
            msg = f"Channel {ch:02d}/0 : {r}[{r}] -> {(r + 1) % RANKS}[{(r + 1) % RANKS}] via P2P/CUMEM/read"
        else:
            name, dtype = self.rng.choice(gb.COLLECTIVES)
            self.op[r] += 1
            buf = 0x7F3A2C000000 + 0x200000 * self.rng.randrange(4096)
            count = 1 if dtype == 1 else self.rng.choice((16777216, 33554432, 50331648))
            msg = (f"{name}: opCount {self.op[r]:x} sendbuff 0x{buf:x} recvbuff 0x{buf:x} count {count} "
                   f"datatype {dtype} op 0 root 0 comm 0x{self.comm[r]:x} [nranks={RANKS}] "
                   f"stream 0x{self.comm[r] + 0x710:x}")
        self.w.line(r, f"{HOST}:{self.pids[r]}:{self.pids[r]} [{r}] NCCL INFO {msg}")
        self.tick(0.05)

    def iteration(self, r: int) -> None:
        ms = 5100.0 * self.rng.gauss(1.0, 0.004)
        loss = 2.1 + 8.5 / (1.0 + self.it / 300.0) + self.rng.gauss(0.0, 0.02)
        self.w.line(r, f" [{iso(self.w.t)}] iteration {self.it:8d}/{gb.TRAIN_ITERS:8d} | consumed samples: "
                       f"{self.it * gb.GLOBAL_BATCH:12d} | elapsed time per iteration (ms): {ms:.1f} | "
                       f"throughput per GPU (TFLOP/s/GPU): {2400000.0 / ms:.1f} | learning rate: 3.000000E-04 | "
                       f"global batch size: {gb.GLOBAL_BATCH:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
                       f"grad norm: {abs(self.rng.gauss(1.2, 0.2)):.3f} | number of skipped iterations:   0 | "
                       f"number of nan iterations:   0 |")

    def iter_one(self) -> None:
        self.it += 1
        self.tick(5100.0)
        self.iteration(LAST_RANK)

    def iter_all(self) -> None:
        r = self.it % RANKS          # every rank prints each iteration's line, one rank after another
        if r == 0:
            self.tick(5100.0)
        self.it += 1
        self.iteration(r)

    def capture(self) -> None:
        r = self.graph % RANKS
        g = self.graph // RANKS % GRAPHS
        self.graph += 1
        alloc = 20.1 + g * 0.05
        self.w.line(r, f"INFO:megatron.core.transformer.cuda_graphs:{g}/{GRAPHS}. create cuda graphs | "
                       f"mem: alloc {alloc:.1f} gb, res {alloc + 1.9:.1f} gb")

    def warn(self, r: int) -> None:
        if self.w.shape.length == "long":
            pair: Tuple[str, ...] = (LONG_WARNING, "  return Variable._execution_engine.run_backward(  # Calls into "
                                                   "the C++ engine to run the backward pass")
        else:
            pair = self.rng.choice(gb.WARNINGS)
        for x in pair:
            self.w.line(r, x)

    def hex(self, r: int) -> None:
        k = self.rng.randrange(len(FRAMES))
        self.w.line(r, f"frame #{k}: {FRAMES[k].format(site=gb.SITE)}")

    def tb(self, r: int) -> None:
        for x in HANDLED_TB:
            self.w.line(r, x)

    def debug(self, r: int) -> None:
        msg = self.rng.choice(gb.DEBUG).format(b=self.rng.randrange(8), n=self.rng.choice((16777216, 40000000)))
        if self.rng.random() < 0.5:
            t = self.w.t
            msg = f"[{t.strftime('%Y-%m-%d %H:%M:%S')},{t.microsecond // 1000:03d}] " + msg
        self.w.line(r, msg)

    def event(self) -> None:
        x = self.rng.random()
        kind = next((k for c, k in self.cum if x < c), self.cum[-1][1])
        r = self.rng.randrange(RANKS)
        if kind == "iter_one":
            self.iter_one()
        elif kind == "iter_all":
            self.iter_all()
        elif kind == "capture":
            self.capture()
        else:
            getattr(self, kind)(r)

    def startup(self) -> None:
        for r in range(RANKS):
            self.w.line(r, f"{HOST}:{self.pids[r]}:{self.pids[r]} [{r}] NCCL INFO cudaDriverVersion 12080")
            self.w.line(r, f"{HOST}:{self.pids[r]}:{self.pids[r] + 57} [{r}] NCCL INFO comm 0x{self.comm[r]:x} rank {r} "
                           f"nranks {RANKS} cudaDev {r} nvmlDev {r} busId {0x18 + 0x10 * r:x}000 commId "
                           "0x6d2c8f1a9b3e4a77 - Init COMPLETE")

    def failure(self) -> None:
        """The failure section of bench/gen_biglog.py (real wording), with this shape's prefixes; a hang's (failure
        "hang"): every rank but one times out in the same collective, and nothing else (the rank that did not reach
        it says nothing: tests/fixtures/logs/real/gpu/nccl_rank_hang_timeout.log's story)."""
        t0 = self.w.t
        if self.w.shape.failure == "hang":
            self.timeouts(t0, 600000)
            return
        fail = [
            "Traceback (most recent call last):",
            f'  File "{gb.MEGATRON}/pretrain_gpt.py", line 318, in <module>',
            "    pretrain(",
            f'  File "{gb.MEGATRON}/megatron/training/training.py", line 1408, in train_step',
            "    loss_reduced[key] = numerator / denominator",
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "",
        ]
        for x in fail:
            self.w.line(FAILED_RANK, f" {x}" if x else "")
        self.timeouts(t0, 15000)
        for i, r in enumerate(r for r in range(RANKS) if r != FAILED_RANK):
            t = t0 + timedelta(seconds=75.8, microseconds=211 * i)
            self.w.line(r, f"{gb.glog('E', t, 'ProcessGroupNCCL.cpp:764')} [Rank {r}] To avoid data "
                           "inconsistency, we are taking the entire process down.")


    def timeouts(self, t0: datetime, ms: int) -> None:
        """Every rank but FAILED_RANK's watchdog timeout of the same collective, after MS (ProcessGroupNCCL's glog
        header and wording)."""
        work = (f"WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)={ms}) "
                f"ran for {ms + 20} milliseconds before timing out.")
        for i, r in enumerate(r for r in range(RANKS) if r != FAILED_RANK):
            t = t0 + timedelta(seconds=(ms + 20) / 1000, microseconds=173 * i)
            self.w.line(r, f"{gb.glog('E', t, 'ProcessGroupNCCL.cpp:689')} [Rank {r}] Watchdog caught "
                           f"collective operation timeout: {work}")


TAIL_RESERVE = 16 << 10


def generate(shape: Shape, out: str, size: int, seed: int = 0) -> int:
    """Write SHAPE's log of about SIZE bytes to OUT; its size in bytes."""
    if shape.legacy:
        return gb.generate(out, size, dense=shape.legacy == "dense", seed=seed, storm=shape.legacy == "storm")
    with open(out, "w", encoding="utf-8" if shape.dress == "utf8" else "ascii", newline="\n",
              buffering=FLUSH_BYTES) as f:
        w = Writer(f, shape)
        job = GridJob(w, random.Random(seed))
        job.startup()
        at = {"start": 0, "middle": size // 2, "end": size - TAIL_RESERVE, "hang": size - TAIL_RESERVE}.get(
            shape.failure, -1)
        done = False
        while w.size < size - TAIL_RESERVE:
            if not done and 0 <= at <= w.size:
                job.failure()
                done = True
            job.event()
        if not done and at >= 0:
            job.failure()
        w.flush()
        return w.written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", nargs="?", help="a shape's name (--list)")
    ap.add_argument("out", nargs="?", help="file to write")
    ap.add_argument("--size", default="256M", help="target size before the shape's scale (default 256M)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="print the shapes")
    a = ap.parse_args()
    if a.list or not a.shape:
        for s in SHAPES:
            print(f"{s.name:15} x{s.scale:<5} {s.what}")
        return
    if a.shape not in BY_NAME or not a.out:
        sys.exit(f"gen_grid: unknown shape {a.shape!r} or no OUT (--list shows the shapes)")
    shape = BY_NAME[a.shape]
    n = generate(shape, a.out, int(gb.parse_size(a.size) * shape.scale), a.seed)
    print(f"wrote {a.out}: {n:,} bytes ({n / (1 << 20):.1f} MiB), shape {shape.name}")


if __name__ == "__main__":
    main()
