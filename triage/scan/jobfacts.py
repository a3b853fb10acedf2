"""What a log says about its job besides its failures (issue 24): the first and last time it prints
and the hosts it names -- the report's job header and the store's job date.

Read from the first and last EDGE_BYTES of each input only (the block driver hands them over as it
reads: no second read, nothing on the hot path): a log's first timestamp is near its start, its
last near its end, and the lines that name hosts are NCCL's init lines (the start), torchrun's
failure summary and srun's / slurmstepd's lines (the end).  Evidence lines name more hosts; the
job header adds those (verdict/job.py).

Times are what `sources.parse_ts` reads (ISO, glog's `I1204 10:11:12.123`, vLLM's `MM-DD HH:MM:SS`);
a year-less one takes the year of a dated line of the same input, else the scan's year hint.
"""
from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..inputs.sources import parse_ts
from ..inputs.text import normalise
from ..lazyre import lazy_re
from ..record import record

EDGE_BYTES = 64 << 10      # bytes read at each end of an input
HOSTS_MAX = 8              # host names kept (the rest only counted)
EXTRA_MAX = 4096           # distinct hosts counted beyond them at most
SPANS_MAX = 100_000        # inputs whose time span is kept (verdict/job.py: several jobs given as one)
JOB_IDS_MAX = 64           # distinct Slurm job ids kept
COMMANDS_MAX = 16          # distinct launch scripts kept
# The script an input's first echoed launch line runs (`torchrun ... pretrain_gpt.py --flags`, bash -x's
# `+ python train.py`, `srun ... python -u run_recipe.py`): inputs that start different scripts are
# different jobs (issue 45).  Only a line that starts with the launcher word counts: an error message
# quoting a command does not.
_LAUNCH_SCRIPT = lazy_re(r"^(?:\+{1,4}[ \t]+|\$[ \t]+)?(?:[A-Z_][A-Z0-9_]*=\S*[ \t]+)*(?:\S*/)?"
                         r"(?:torchrun|python[\d.]*|srun|mpirun|deepspeed|accelerate[ \t]+launch)[ \t][^\n]*?"
                         r"(?:^|[ \t/])([\w.\-]{1,80}\.py)(?=[ \t]|$)")
# The job id a Slurm job's log names: an environment dump's SLURM_JOB_ID=N, slurmstepd's
# "*** JOB N ON host CANCELLED AT ..." (a step's "*** STEP N.M ON" is that job's too)
JOB_ID_RX = lazy_re(r"(?:^|[\s;'\"])SLURM_JOB_ID=(\d{1,20})\b|\*\*\* (?:JOB|STEP) (\d{1,20})(?:\.\w+)? ON ")
_HOST = r"([A-Za-z0-9][A-Za-z0-9.\-_]{0,62})"
# The lines that name the host they ran on, each found by a literal first (a line without it is
# never searched); ASCII host names only: nothing else of a line reaches a report.
HOST_RX: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    # NCCL's "host:pid:tid [dev]" prefix (an optional [time] before the device)
    ("NCCL ", lazy_re(r"(?:^|[\s\]>:])([A-Za-z][A-Za-z0-9.\-_]{0,62}):\d+:\d+ (?:\[[^\]]{0,40}\] )?\[\d+\] "
                      r"(?:\S+:\d+ )?NCCL ")),
    # torchrun's failure summary "  host      : node-1" (a line of its own)
    ("host", lazy_re(r"^[ \t]*host[ \t]+: " + _HOST + r"[ \t]*$")),
    # srun's "srun: error: node-3: task 5: Exited with exit code 1" / "tasks 0-3: ..."
    ("srun: error: ", lazy_re(r"srun: error: " + _HOST + r": tasks? \d")),
    # slurmstepd's "*** STEP 4242.0 ON node-1 CANCELLED AT ..." / "*** JOB 4242 ON node-1 ..."
    (" CANCELLED", lazy_re(r"\*\*\* (?:STEP|JOB) [\w.+]{1,40} ON " + _HOST + r" CANCELLED")),
    # a DCGM table's result line (inputs/dcgm.py): "dcgmi health on node-7: GPU 1 ..." (issue 43)
    ("dcgmi ", lazy_re(r"^dcgmi (?:health|diag) on " + _HOST + r": ")),
)
_ISO_YEAR = re.compile(r"(?<!\d)(\d{4})-\d\d-\d\d[ T_]\d\d:\d\d")
# The stack a log is of (issue 40: advice that fits the engine), by what its lines name: a package path
# or logger name, a process or logger prefix, a banner.  Counted in the first and last bytes of each
# input (the banner is at the start, a traceback's frames at the end); patterns/*.yaml `advice` is
# keyed by these names (patterns.ENGINES).
ENGINE_MARKERS: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    ("vllm", lazy_re(r"\bvllm[./]|\(EngineCore(?:_DP\d+)? pid=|\(VllmWorker|\((?:Worker|VllmWorkerProcess)_\w+ pid=|"
                     r"\bvLLM\b")),
    ("sglang", lazy_re(r"\bsglang[./]|\bSGLang\b|"
                       r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)+\]")),
    ("trtllm", lazy_re(r"\btensorrt_llm[./]|\[TRT-LLM\]|\[TensorRT-LLM\]")),
    ("jax", lazy_re(r"\bjax(?:lib)?[./]|\bXlaRuntimeError\b")),
    ("megatron", lazy_re(r"\bmegatron[./]|\bMegatron-(?:LM|Core|Bridge)\b|-+ arguments -+")),
)
# the literals each marker's alternatives hold (every match of a marker holds one of its own: a line with
# none of them cannot match it)
ENGINE_PROBES_OF = {
    "vllm": ("vllm", "vLLM", "EngineCore", "VllmWorker", "Worker_"),
    "sglang": ("sglang", "SGLang", " TP", " DP", " PP", " EP", " ATTN_CP", " MOE_DP"),
    "trtllm": ("tensorrt_llm", "TRT-LLM", "TensorRT-LLM"),
    "jax": ("jax", "Xla"),
    "megatron": ("megatron", "Megatron", "arguments"),
}
ENGINE_PROBES = tuple(p for probes in ENGINE_PROBES_OF.values() for p in probes)


def engines_in(lines: Iterable[str]) -> Dict[str, int]:
    """How many of LINES name each engine (ENGINE_MARKERS; each line's first 4,096 characters), in the
    order the engines are first named.  Each marker is searched only in the lines that hold one of its
    probes, found by C-level finds through the lines joined: a line at a time, every probe tried in Python
    and every marker on a line holding any probe, was ~5 ms of the 64 KiB at each end of a production log
    (issue 44)."""
    clipped = [ln[:4096] for ln in lines]
    text = "\n".join(clipped)
    ends: Optional[List[int]] = None              # each line's end + 1 in TEXT (made when a probe is found)
    found = []
    for k, (name, rx) in enumerate(ENGINE_MARKERS):
        at = set()
        for probe in ENGINE_PROBES_OF[name]:
            i = text.find(probe)
            while i >= 0:
                at.add(i)
                i = text.find(probe, i + 1)
        if not at:
            continue
        if ends is None:
            ends = list(itertools.accumulate(len(c) + 1 for c in clipped))
        named = {j for j in {bisect.bisect_right(ends, i) for i in at} if rx.search(clipped[j])}
        if named:
            found.append((min(named), k, name, len(named)))
    return {name: n for _, _, name, n in sorted(found)}


@record
class LogFacts:
    """One log's (or several inputs') first and last timestamps and the hosts it names."""
    start: Optional[float] = None
    end: Optional[float] = None
    hosts: List[str] = field(default_factory=list)      # the first HOSTS_MAX, in order of appearance
    extra: Set[str] = field(default_factory=set)         # the distinct hosts beyond them (EXTRA_MAX kept)
    engines: Dict[str, int] = field(default_factory=dict)  # lines naming each engine (ENGINE_MARKERS)
    spans: List[Tuple[float, float]] = field(default_factory=list)   # each input's (first, last) time (SPANS_MAX)
    job_ids: Set[str] = field(default_factory=set)       # the Slurm job ids the inputs name (JOB_IDS_MAX)
    commands: Set[str] = field(default_factory=set)      # the script each input's first launch line runs

    @property
    def hosts_more(self) -> int:
        return len(self.extra)

    def add_hosts(self, names: Iterable[str]) -> None:
        for h in names:
            if h in self.hosts:
                continue
            if len(self.hosts) < HOSTS_MAX:
                self.hosts.append(h)
            elif len(self.extra) < EXTRA_MAX:
                self.extra.add(h)

    def merge(self, other: "LogFacts") -> None:
        if other.start is not None and (self.start is None or other.start < self.start):
            self.start = other.start
        if other.end is not None and (self.end is None or other.end > self.end):
            self.end = other.end
        self.add_hosts(other.hosts)
        self.add_hosts(sorted(other.extra))
        for k, n in other.engines.items():
            self.engines[k] = self.engines.get(k, 0) + n
        self.spans.extend(other.spans[:max(0, SPANS_MAX - len(self.spans))])
        for j in sorted(other.job_ids):
            if len(self.job_ids) >= JOB_IDS_MAX:
                break
            self.job_ids.add(j)
        for c in sorted(other.commands):
            if len(self.commands) >= COMMANDS_MAX:
                break
            self.commands.add(c)


def job_ids_in(lines: Iterable[str]) -> Set[str]:
    """The Slurm job ids LINES name (JOB_ID_RX)."""
    out: Set[str] = set()
    for ln in lines:
        if "SLURM_JOB_ID=" in ln or "*** " in ln:
            for m in JOB_ID_RX.finditer(ln[:4096]):
                out.add(m.group(1) or m.group(2))
    return out


def first_script(lines: Iterable[str]) -> Optional[str]:
    """The script the first echoed launch line of LINES runs (_LAUNCH_SCRIPT), or None."""
    for ln in lines:
        if ".py" in ln:
            m = _LAUNCH_SCRIPT.search(ln[:4096])
            if m:
                return m.group(1)
    return None


def hosts_in(lines: Iterable[str]) -> List[str]:
    """The host names LINES name, in order of appearance, each once."""
    out: List[str] = []
    for ln in lines:
        for lit, rx in HOST_RX:
            if lit in ln:
                m = rx.search(ln[:4096])
                h = m.group(1).rstrip(".") if m else ""
                if h and h not in out:
                    out.append(h)
    return out


def _first_ts(lines: Sequence[str], year: Optional[int]) -> Optional[float]:
    for ln in lines:
        if ":" in ln[:200]:
            t = parse_ts(normalise(ln), year)
            if t is not None:
                return t
    return None


def facts_of(head: bytes, tail: bytes, year: Optional[int] = None, tail_is_whole: bool = False) -> LogFacts:
    """The facts of one input from its first bytes HEAD and last bytes TAIL (TAIL_IS_WHOLE: TAIL
    starts at a line's start, else its first, partial line is skipped).  YEAR: the scan's year
    hint for year-less timestamps (a dated line of HEAD or TAIL wins)."""
    h = head.decode("utf-8", "replace")
    t = tail.decode("utf-8", "replace")
    m = _ISO_YEAR.search(h) or _ISO_YEAR.search(t)
    y = int(m.group(1)) if m else year
    head_lines = h.split("\n")
    tail_lines = t.split("\n")
    if not tail_is_whole:
        tail_lines = tail_lines[1:]
    f = LogFacts(start=_first_ts(head_lines, y), end=_first_ts(tail_lines[::-1], y))
    if f.start is not None and f.end is not None and f.end < f.start:
        f.start, f.end = f.end, f.start          # a date a message names, not the log's clock
    if f.start is not None:
        f.spans.append((f.start, f.end if f.end is not None else f.start))
    f.add_hosts(hosts_in(head_lines))
    f.add_hosts(hosts_in(tail_lines))
    f.engines = engines_in(head_lines + tail_lines)
    f.job_ids = set(sorted(job_ids_in(head_lines + tail_lines))[:JOB_IDS_MAX])
    script = first_script(head_lines)
    if script:
        f.commands.add(script)
    return f
