"""The rank prefixes launchers put before each line, and the rank forms messages carry: declared once.

Every matcher that reads a rank is generated from these two tables (triage/scan/ranks.py): the str
side that tags one line (`split_prefix`, `inner_rank`) and the bytes side that finds the ranks of a
whole block in C (`ranks_in`: one search per launcher, the quoted `> ` forms, the lines without a
prefix).  Adding a launcher is one row here plus a fixture (a log of that launcher in
tests/fixtures/logs/); tests/test_launchers.py checks that both sides read every row's example alike.

A row's `prefix` is a regex valid for str and bytes alike (ASCII classes only; `[ \\t]` rather than
`\\s` where it could meet a newline), matched at the line start, with the rank as the one group
`(?P<rank>...)`; a prefix without that group names no rank (it is still stripped).
"""
from __future__ import annotations

from typing import Optional, Tuple

from ..record import record

RANK_GROUP = "(?P<rank>"       # how a prefix regex marks the digits of its rank


@record(frozen=True)
class Launcher:
    name: str
    example: str              # a line as the launcher prints it (rank `rank`)
    prefix: str               # regex at the line start, up to the end of the prefix (see the module doc)
    probe: Optional[str]      # a literal every block holding such a line holds (bytes side); None: always search
    rank: Optional[int] = 3   # the rank `example` is tagged with (None: the prefix names none)
    sep: str = r"\s?"         # what after the prefix is stripped with it (str side only)
    keeps_time: bool = False  # a logger's header carrying the line's time (read from the raw line): the
    #                           message starts after it, so no launcher prefix is looked for past it

    @property
    def has_rank(self) -> bool:
        return RANK_GROUP in self.prefix


@record(frozen=True)
class InnerRank:
    """A rank named inside a message (not stripped; only read when no prefix or file name gives one)."""
    name: str
    example: str
    rx: str                   # regex valid for str and bytes, one group: the rank
    probe: str                # a literal every such line holds


LAUNCHERS: Tuple[Launcher, ...] = (
    # kubectl logs --prefix (also --all-pods, and --all-containers with it): "[pod/<pod>/<container>] "
    # (kubectl pkg/cmd/logs/logs.go addPrefixIfNeeded: fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerName));
    # the outermost prefix, before torchrun's "[rank3]:"; a pod name (a DNS subdomain) and a container name
    # (a DNS label, empty when kubectl cannot read it) name no rank
    Launcher("kubectl", "[pod/train-x7k2p/trainer] RuntimeError: CUDA error: an illegal memory access was encountered",
             r"\[pod/[a-z0-9][a-z0-9.-]{0,252}/[a-z0-9-]{0,63}\]", "[pod/", rank=None),
    # a container runtime's log file (issue 40: pasted from /var/log/pods or /var/log/containers): CRI's
    # "<RFC3339Nano time> <stdout|stderr> <P|F> <line>" (containerd / CRI-O, kubelet's CRI logging format)
    Launcher("cri", "2026-12-03T08:33:52.123456789Z stderr F RuntimeError: CUDA error: an illegal memory access was "
             "encountered", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) std(?:out|err) [FP]",
             "std", rank=None),
    # `docker logs -t` / `kubectl logs --timestamps`: an RFC3339Nano time before each line
    Launcher("docker-timestamps", "2026-12-03T08:33:52.123456789Z RuntimeError: CUDA error: an illegal memory access "
             "was encountered", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,9}Z(?= )", "Z ", rank=None),
    # Ray's worker prefix (vLLM's and verl's Ray executors): "(RayWorkerWrapper pid=51, ip=10.1.2.3) ",
    # "(pid=51) ", "(raylet) " (ray/_private/log_monitor.py / worker.py print_logs: "({name} pid={pid}, ip={ip})")
    Launcher("ray", "(RayWorkerWrapper pid=51, ip=10.1.2.3) RuntimeError: CUDA error: an illegal memory access was "
             "encountered", r"\((?:(?:[A-Za-z_][\w.:-]* )?pid=\d+, ip=[\d.]+|pid=\d+|raylet(?:, ip=[\d.]+)?)\)",
             "pid=", rank=None),
    # torchrun: "[rank3]:" (PyTorch >= 2.2) and "[default3]:" (--tee / TailLog); may repeat
    Launcher("torchrun", "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
             r"\[(?:rank|default|trainer|worker)(?P<rank>\d+)\]:", "\n["),
    # Open MPI --tag-output: "[1,3]<stderr>:" / "[1,3]<stdout>:" (job, rank)
    Launcher("openmpi", "[1,3]<stderr>:RuntimeError: NCCL error", r"\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:", "]<std"),
    # NeMo / Lightning logger: "[NeMo E 2026-12-03 07:12:01 exp_manager:123] " (no rank; its time kept)
    Launcher("nemo", "[NeMo E 2026-12-03 07:12:01 exp_manager:123] Error: training failed",
             r"\[NeMo [DIWEC] [\d\- :]+ [\w.]+:\d+\]", "[NeMo ", rank=None, keeps_time=True),
    # srun -l (--label): the task id right-aligned to the width of the largest one, "3: " or "  3: "
    # (Slurm pads it with spaces, never tabs)
    Launcher("srun", "  3: RuntimeError: CUDA error: out of memory", r" {0,4}(?P<rank>\d{1,6}): ", None, sep=""),
    # vLLM's process tag on every line a child process prints: "(EngineCore_DP0 pid=4242) " (vllm 0.10.2
    # utils._add_prefix, in cyan; vllm 0.34.0 logger _FORMAT "(%(vllm_process_name)s pid=%(process)d) ");
    # the names (EngineCore, EngineCore_DP0, Worker_TP1, Worker_PP1_TP2, VllmWorkerProcess, APIServer)
    # are vLLM's process names, not global ranks: no rank
    # vLLM's worker processes name their rank (issue 40): "(VllmWorker rank=3 pid=1090) " (vllm 0.8-0.9,
    # v1/executor/multiproc_executor.py: f"VllmWorker rank={rank}"), "(Worker_TP1 pid=1090) " (0.10+: the
    # worker's tensor-parallel rank, "Worker_TP{tp}" when it is the only parallelism shown), and the
    # data-parallel engine "(EngineCore_DP1 pid=4242) " (0.10+, its DP rank): read as the rank
    Launcher("vllm-worker", "(VllmWorker rank=3 pid=1090) RuntimeError: CUDA error: out of memory",
             r"\(VllmWorker rank=(?P<rank>\d+) pid=\d+\)", "VllmWorker rank="),
    Launcher("vllm-worker-tp", "(Worker_TP3 pid=1090) RuntimeError: CUDA error: out of memory",
             r"\((?:Worker|VllmWorkerProcess)_TP(?P<rank>\d+) pid=\d+\)", "_TP"),
    Launcher("vllm-enginecore-dp", "(EngineCore_DP3 pid=4242) RuntimeError: CUDA error: out of memory",
             r"\(EngineCore_DP(?P<rank>\d+) pid=\d+\)", "EngineCore_DP"),
    Launcher("vllm-process", "(EngineCore pid=4242) RuntimeError: CUDA error: out of memory",
             r"\((?!(?:Worker|VllmWorkerProcess)_TP\d+ |EngineCore_DP\d+ )[A-Za-z][\w-]* pid=\d+\)", " pid=",
             rank=None),
    # vLLM's logger header: "ERROR 12-04 07:00:05 [v1/engine/core.py:1759] " (vllm 0.10.2 .. 0.34.0),
    # "ERROR 10-24 12:00:00 engine.py:123] " (vllm 0.6.3); its time kept (MM-DD, no year)
    Launcher("vllm-logger", "ERROR 12-04 07:00:05 [v1/engine/core.py:1759] EngineCore encountered a fatal error.",
             r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+:\d+\]",
             None, rank=None, keeps_time=True),
    # SGLang's logger header in its scheduler / worker processes: "[2026-12-04 06:10:09 DP0 TP1] "
    # (sglang 0.5.23 utils/common.py configure_logger: f"[%(asctime)s{maybe_ms}{prefix}] %(message)s",
    # the prefix " DP{d} PP{p} ATTN_CP{c} MOE_DP{m} TP{t} EP{e}" as the parallelism has them); at least
    # one tag, so a bare "[2026-12-04 06:10:09] " of other software stays; TP/DP ranks are no global rank
    # ... with a TP tag, its TP rank is the line's rank (issue 40; with several DP / PP groups it is the
    # rank within its group): "[2026-12-04 06:10:09 TP3] ", "[2026-12-04 06:10:09 DP1 TP2 EP2] "
    Launcher("sglang-tp", "[2026-12-04 06:10:09 DP0 TP3 EP3] Scheduler hit an exception: Traceback (most recent call "
             "last):",
             r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: (?:DP|PP|ATTN_CP|MOE_DP)\d+)* "
             r"TP(?P<rank>\d+)(?: EP\d+)?\]",
             None, keeps_time=True),
    # TensorRT-LLM's Python logger: "[01/23/2025-09:50:47] [TRT-LLM] [RANK 3] [E] msg" (tensorrt_llm/logger.py:
    # '[TRT-LLM]' and f'[RANK {rank}]' before the severity letter [V]/[I]/[W]/[E]/[F])
    Launcher("trtllm", "[01/24/2025-09:50:47] [TRT-LLM] [RANK 3] [E] RuntimeError: CUDA error: out of memory",
             r"(?:\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\] )?\[TRT-LLM\] \[RANK (?P<rank>\d+)\](?: \[[VIWEF]\])?",
             "[TRT-LLM] [RANK "),
    Launcher("sglang", "[2026-12-04 06:10:09 DP0] Scheduler hit an exception: Traceback (most recent call last):",
             r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)+\]",
             None, rank=None, keeps_time=True),
)

INNER_RANKS: Tuple[InnerRank, ...] = (
    # NCCL / ProcessGroupNCCL: "[Rank 3]", "[PG 0 Rank 3]", "[PG ID 0 PG GUID 0(default_pg) Rank 3]"
    InnerRank("nccl", "[PG ID 0 PG GUID 0(default_pg) Rank 3] Watchdog caught collective operation timeout",
              r"\[(?:PG (?:ID )?\d+ (?:PG GUID \d+)?[ \t]*(?:\([^)\n]*\)[ \t]*)?)?Rank (\d+)\]", "Rank "),
    # NeMo: "[rank: 3]"
    InnerRank("nemo", "[NeMo W 2026-12-03 07:12:01 nemo_logging:349] [rank: 3] step failed", r"\[rank: ?(\d+)\]",
              "[rank:"),
    # TE / Megatron: "... on global rank 3"
    InnerRank("global", "Exception on global rank 3 of 8", r"\bglobal rank (\d+)\b", "global rank"),
)
