"""Evidence, outside the patterns, that a process or the job died (`Crash`): an uncaught exception
(a traceback its input ends within TAIL_LINES lines of), `Fatal Python error`, srun's report of a
task that exited non-zero or died of a signal, slurmstepd's cancel line, a C++ exception's trailer
where its input ends; and the crash that came first."""
from __future__ import annotations

import functools
from typing import Dict, FrozenSet, Optional, Tuple, Union

from ..match.rx import TextMemo, lazy, search
from ..scan.blocks import EXC_LINE
from ..scan.forms import FailureForm, failure_forms
from ..scan.results import ErrorBlock, ScanResult
from .types import Case, Crash
from .unexplained import _TB_HEAD, _block_order, block_message, exception_line

FORM_WEIGHT = 3        # a failure form's crash (verdict/analyse.py): the last evidence looked to
OWN_FORM_WEIGHT = 2    # ... but an `own` form's (failure_forms.yaml): a process's own report, before the launcher's


@functools.lru_cache(maxsize=1)
def _forms() -> Dict[str, FailureForm]:
    return {f.id: f for f in failure_forms()}


def own_forms() -> FrozenSet[str]:
    """The ids of the failure forms that are a process's own report of its end (failure_forms.yaml `own`)."""
    return frozenset(i for i, f in _forms().items() if f.own)


def form_action(form: str) -> str:
    """What failure form FORM says to do when its line is an unexplained failure's first ("": nothing)."""
    f = _forms().get(form)
    return f.action if f is not None else ""
TAIL_LINES = 40        # a traceback this close to the end of its input ended the process (uncaught)
LOGGED_TAIL = 5        # ... or this close, when a log record ("ERROR ...: msg") introduces it (logging.exception)

_C10_TRAILER = "Exception raised from "
# CPython's PyErr_WriteUnraisable (a __del__ or a callback at shutdown): printed, ignored, not fatal
_UNRAISABLE = "Exception ignored in"
_FATAL_PY = lazy(r"^Fatal Python error: ")
# Slurm src/srun/launch.c: error("%s: %s %s: Exited with exit code %d" | "%s%s" (strsignal, core) |
# "Out Of Memory", hosts, "task"/"tasks", task ids) printed as "srun: error: ..."
_SRUN = lazy(r"^srun: error: (\S+): (tasks?) ([\d,\-\[\]]+): (.+?)\s*$")
# Slurm src/slurmd/slurmstepd/req.c: "*** JOB %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***", ...
# An inference engine's report that a process died (vLLM 0.34.0: v1/executor/multiproc_executor.py
# logger.error "Worker proc %s died unexpectedly (exit code: %s), shutting down executor.",
# v1/executor/ray_executor_v2.py "RayWorkerProc rank=%s died unexpectedly, shutting down executor.",
# v1/utils.py "Engine core process %s died unexpectedly."; csrc CUDACHECK "Failed: Cuda error %s:%d '%s'",
# a fatal check that exits the process): the job failed wherever the line stands.
# an inference engine's own report that a process of it is dead (vllm 0.34.0: multiproc_executor.py
# "Worker proc %s died unexpectedly", v1/engine/core.py logger.exception("EngineCore encountered a
# fatal error.") / ("EngineCore failed to start."), multiproc_executor.py "WorkerProc failed to
# start."; csrc CUDACHECK "Failed: Cuda error %s:%d '%s'"; sglang 0.4-0.5.23 managers/*.py
# logger.error(f"Scheduler hit an exception: {traceback}"), then SIGQUIT to its parent)
_ENGINE_DEATH = lazy(r"Worker proc \S+ died unexpectedly|RayWorkerProc rank=\S+ died unexpectedly|"
                     r"Engine core proc(?:ess)? \S+ died unexpectedly|Failed: Cuda error \S+:\d+ '|"
                     r"^EngineCore (?:encountered a fatal error|failed to start)\.|^WorkerProc failed to start\.|"
                     r"(?:^|\] )(?:Scheduler|DetokenizerManager|DataParallelController|TokenizerManager|"
                     r"MultiDetokenizerRouter) hit an exception: ")
# (a bare "CANCELLED AT %s ***": scancel, SIGTERM/SIGKILL or a task's failure, Slurm 17.02 .. 24.11; "DUE to
# SIGNAL %s" / "DUE TO TASK FAILURE" from 25.05: tests/fixtures/wordings/slurm.tsv)
_SLURM_END = lazy(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ (?:CANCELLED AT \S+(?: DUE (?:TO|to) .+?)?|FAILED \(.*?\)) \*\*\*")
_CLEAN_EXIT = lazy(r"^(?:builtins\.)?SystemExit(?:: 0)?\s*$")
# a block's first line is one of the four above: remembered by text (a log of handled tracebacks keeps hundreds of
# blocks of the same first line; their four searches took ~20 ms here, issue 44)
_said_first = TextMemo(lambda first: _FATAL_PY.match(first) or _SRUN.match(first)
                       or search(_ENGINE_DEATH, first[:400]) or search(_SLURM_END, first[:300]))


def _input_ends(scan: ScanResult) -> Dict[str, Optional[int]]:
    """The scan order number (seq) of each input's last line where the scan shows it: a line's seq is
    the lines of the inputs before it plus its line number, and the last input ends the scan
    (the live driver says where each input ends: ScanResult.input_ends)."""
    given = getattr(scan, "input_ends", None)
    if given is not None:
        return dict(given)
    base: Dict[str, int] = {}
    for m in scan.matches:
        base.setdefault(m.line.source, m.seq - m.line.lineno)
    for b in scan.blocks:
        base.setdefault(b.source, b.seq - b.start)
    srcs = list(scan.sources)
    ends: Dict[str, Optional[int]] = {}
    for i, src in enumerate(srcs):
        ends[src] = scan.lines if i == len(srcs) - 1 else base.get(srcs[i + 1])
    return ends


def crash_of(b: ErrorBlock, after: Optional[int], ended: bool = False, named: bool = False,
             logged: bool = False) -> Optional[Crash]:
    """What block B says about the job dying: an uncaught exception (a traceback that ends the
    process: its input ends within TAIL_LINES lines, AFTER, of it -- LOGGED_TAIL when a log record
    introduces it, as logging.exception prints a caught one -- or the attempt ENDED, or the launcher
    NAMED its rank), `Fatal Python error`, srun's report of a task that exited non-zero or died of a
    signal, slurmstepd's cancel line; None for anything else (an error line a process logged and
    went on, a traceback it caught and printed, SystemExit(0))."""
    lines = b.lines
    first = lines[0] if lines else ""
    order = _block_order(b)
    if _said_first(first):             # (most blocks' first line is none of these four)
        if _FATAL_PY.match(first):
            return Crash("fatal-python-error", b.rank, b.source, b.start, first[:200], list(lines), order, 0)
        m = _SRUN.match(first)
        if m:
            what = m.group(4)
            if what == "Completed" or what.startswith("Exited with exit code 0"):
                return None
            rank = b.rank
            if rank is None and m.group(2) == "task" and m.group(3).isdigit():
                rank = int(m.group(3))         # a Slurm task id: the rank when srun starts one task per rank
            return Crash("srun", rank, b.source, b.start, first[:200], list(lines), order, 1)
        if search(_ENGINE_DEATH, first[:400]):
            return Crash("error", b.rank, b.source, b.start, first[:200], list(lines), order, 1)
        if search(_SLURM_END, first[:300]):
            return Crash("slurm", b.rank, b.source, b.start, first[:200], list(lines), order, 2)
    left = None if (ended or named) else after      # lines the input went on for after the block
    crash = _exception_crash(b, first, order, left, logged)
    if crash is None or isinstance(crash, Crash):
        return crash
    return _cpp_trailer_crash(b, order, left is not None and left > TAIL_LINES)


def _exception_crash(b: ErrorBlock, first: str, order: Tuple[float, int], left: Optional[int],
                     logged: bool) -> "Union[Crash, None, bool]":
    """An uncaught exception: a traceback, or an exception line without its "Traceback" header (a
    paste that kept only the end) -- None when the process went on (a caught exception it printed or
    logged), False when the block is neither."""
    lines = b.lines
    if first.startswith(_TB_HEAD):
        if left is not None and left > (LOGGED_TAIL if logged else TAIL_LINES):
            return None                    # the process went on: a caught exception it printed
        exc = exception_line(lines)
        if (exc is not None and _CLEAN_EXIT.match(exc)) or b.intro.startswith(_UNRAISABLE):
            return None                    # a clean exit, or one CPython reports and ignores
        return Crash("uncaught-exception", b.rank, b.source, b.start, block_message(lines, b.source, b.end),
                     list(lines), order, 0)
    if EXC_LINE.match(first) and not _CLEAN_EXIT.match(first) and not b.intro.startswith(_UNRAISABLE):
        # headless: it ended the process when nothing but a few lines follow it (a caught exception a
        # run logs and goes on from has the run's lines after it)
        after_line = None if left is None else left + (b.end - b.start)   # lines after the exception line
        if after_line is None or after_line <= LOGGED_TAIL:
            return Crash("uncaught-exception", b.rank, b.source, b.start, first[:200], list(lines), order, 0)
        return None
    return False


def _cpp_trailer_crash(b: ErrorBlock, order: Tuple[float, int], went_on: bool) -> Optional[Crash]:
    """A C++ exception's trailer (c10::Error: "Exception raised from X at F:N") where the input
    ends: a truncated paste of a process that died of it, as a traceback would be."""
    lines = b.lines
    trailer = next((k for k, ln in enumerate(lines[:3]) if ln.startswith(_C10_TRAILER)), None)
    if trailer is None or went_on:
        return None
    prev = lines[trailer - 1] if trailer else ""
    msg = prev if prev and exception_line([prev]) else lines[trailer].replace(" (most recent call first):", "")
    return Crash("uncaught-exception", b.rank, b.source, b.start, msg[:200], list(lines), order, 0)


def first_crash(case: Case) -> Optional[Crash]:
    """The crash that came first: on the launcher's root-cause rank when it names one, else the
    earliest process error, else the earliest launcher / scheduler report."""
    if not case.crashes:
        return None
    # a death torchrun or the shell reports only stands in when nothing else shows the failure, and a
    # failure form's line (failure_forms.yaml) only when neither does
    crashes = ([c for c in case.crashes if c.kind != "launcher-exit" and c.weight < FORM_WEIGHT]
               or [c for c in case.crashes if c.kind == "launcher-exit"] or case.crashes)
    named = [c for c in crashes if c.rank is not None and c.rank == case.launcher_root_rank]
    pool = named or crashes
    return min(pool, key=lambda c: (c.weight, c.order))
