"""What `watch` reads off the new bytes besides the engine's verdict: each rank's last training step
(hang detection, the heartbeat), a checkpoint save or an evaluation pass in progress (never a
hang), and the launcher's report that the job ended.

None of this diagnoses anything: root causes come only from the engine and the pattern catalog.
The searches are C-level finds over each new chunk; Python runs only on the lines found.
"""
from __future__ import annotations

import re
import statistics
import time
from collections import deque
from typing import Deque, Dict, List, Optional, Tuple

from ..scan.ranks import RANKS

_STEP_KEYS = (b"elapsed time per iteration", b"train_step_timing")
_MEGATRON_STEP = re.compile(rb"iteration\s+(\d+)\s*/\s*\d+\s*\|[^\n]*?elapsed time per iteration \(ms\):\s*([\d.]+)")
_NEMO_STEP = re.compile(rb"global_step[=:]\s*(\d+)(?:\.\d+)?[^\n]*?train_step_timing in s[=:]\s*([\d.]+)|"
                        rb"train_step_timing in s[=:]\s*([\d.]+)[^\n]*?global_step[=:]\s*(\d+)")
# a checkpoint save or an evaluation pass: the steps stop advancing for a while, and that is no hang
# (Megatron-LM: "saving checkpoint at iteration N to ...", "successfully saved checkpoint from
# iteration N ..."; "validation loss at iteration N"; NeMo / Lightning: "Saving checkpoint", "Validation")
_BUSY_START = re.compile(rb"saving checkpoint|Saving checkpoint|save_checkpoint|Evaluating|evaluate \.\.\.|"
                         rb"Validation:|validation loop|Running evaluation", re.I)
_BUSY_END = re.compile(rb"successfully saved checkpoint|validation loss at iteration|saved checkpoint", re.I)
# the launcher says the job ended: torchrun's failure summary or its success line, srun's exit lines,
# Slurm cancelling the job or step
_END = re.compile(
    rb"Root Cause \(first observed failure\)|worker group successfully finished|"
    rb"srun: error: \S+: tasks? [\d,\-\[\]]+: |srun: Job step aborted|srun: error: Timed out waiting for job step|"
    rb"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED")


def _line_at(buf: bytes, at: int) -> Tuple[int, int]:
    ls = buf.rfind(b"\n", 0, at) + 1
    le = buf.find(b"\n", at)
    return ls, (len(buf) if le < 0 else le)


class Progress:
    """Per rank: the last step and when it advanced (monotonic time of the poll that saw it)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.last_step: Dict[int, int] = {}          # rank (-1: no rank) -> last step
        self.advanced_at: Dict[int, float] = {}
        self.last_advance: Optional[float] = None     # any rank
        self.step_ms: Deque[float] = deque(maxlen=256)
        self.intervals: Deque[float] = deque(maxlen=256)
        self.busy_since: Optional[float] = None       # a checkpoint save / evaluation started, not finished
        self.busy_at: Optional[float] = None          # the last checkpoint / evaluation line
        self.ended_at: Optional[float] = None         # the launcher said the job ended
        self.end_line = ""

    def feed(self, data: bytes, file_rank: Optional[int]) -> None:
        now = self.clock()
        for key in _STEP_KEYS:
            at = data.find(key)
            while at >= 0:
                ls, le = _line_at(data, at)
                self._step(data, ls, le, file_rank, now)
                at = data.find(key, le)
        if _BUSY_START.search(data) is not None or _BUSY_END.search(data) is not None:
            self._busy(data, now)
        m = _END.search(data)
        if m is not None and self.ended_at is None:
            self.ended_at = now
            ls, le = _line_at(data, m.start())
            self.end_line = data[ls:le][:300].decode("utf-8", "replace").strip()

    def _busy(self, data: bytes, now: float) -> None:
        last_start = max((m.start() for m in _BUSY_START.finditer(data)), default=-1)
        last_end = max((m.start() for m in _BUSY_END.finditer(data)), default=-1)
        self.busy_at = now
        if last_start > last_end:
            if self.busy_since is None:
                self.busy_since = now
        else:
            self.busy_since = None

    def _step(self, data: bytes, ls: int, le: int, file_rank: Optional[int], now: float) -> None:
        m = _MEGATRON_STEP.search(data, ls, le)
        if m is not None:
            it, ms = int(m.group(1)), m.group(2)
        else:
            n = _NEMO_STEP.search(data, ls, le)
            if n is None:
                return
            it = int(n.group(1) or n.group(4))
            ms = n.group(2) or n.group(3)
            try:
                ms = str(float(ms) * 1000.0).encode()
            except ValueError:
                return
        rank = file_rank
        if rank is None:
            rank = RANKS.split_prefix(data[ls:min(le, ls + 200)].decode("utf-8", "replace"))[1]
        r = -1 if rank is None else rank
        try:
            self.step_ms.append(float(ms))
        except ValueError:
            pass
        prev = self.last_step.get(r)
        if prev is None or it > prev:
            last = self.advanced_at.get(r)
            if last is not None and now > last:
                self.intervals.append(now - last)
            self.last_step[r] = it
            self.advanced_at[r] = now
            self.last_advance = now
            self.busy_since = None            # training goes on: a save / evaluation is over

    def median_step_s(self) -> Optional[float]:
        """The steady step time: the median of the logged step times, or of the wall time between
        a rank's step lines when that is longer (a log written in bursts)."""
        xs: List[float] = []
        if self.step_ms:
            xs.append(statistics.median(self.step_ms) / 1000.0)
        if len(self.intervals) >= 3:
            xs.append(statistics.median(self.intervals))
        return max(xs) if xs else None

    def steps(self) -> Dict[str, int]:
        return {("?" if r < 0 else str(r)): s for r, s in sorted(self.last_step.items())}

    def laggards(self) -> List[int]:
        """The ranks that advanced least (the likely culprit of a hang)."""
        if not self.last_step:
            return []
        lo = min(self.last_step.values())
        if lo == max(self.last_step.values()):
            return []                          # all at the same step: no rank stands out
        return sorted(r for r, s in self.last_step.items() if s == lo and r >= 0)
