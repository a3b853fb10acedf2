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
from typing import Callable, Deque, Dict, List, Optional, Tuple

from ..inputs.ranks import RANKS
from ..verdict.steps import step_of

_STEP_KEYS = (b"elapsed time per iteration", b"train_step_timing")
_NEMO_STEP = re.compile(rb"global_step[=:]\s*(\d+)(?:\.\d+)?[^\n]*?train_step_timing in s[=:]\s*([\d.]+)|"
                        rb"train_step_timing in s[=:]\s*([\d.]+)[^\n]*?global_step[=:]\s*(\d+)")
# a checkpoint save or an evaluation pass: the steps stop advancing for a while, and that is no hang
# (Megatron-LM: "saving checkpoint at iteration N to ...", "successfully saved checkpoint from
# iteration N ..."; "validation loss at iteration N"; NeMo / Lightning: "Saving checkpoint", "Validation")
# literal finds (C), never a case-insensitive regex over every byte
_BUSY_START = (b"aving checkpoint", b"save_checkpoint", b"Evaluating", b"evaluating", b"Validation:",
               b"validation loop", b"Running evaluation", b"evaluate ...")
_BUSY_END = (b"successfully saved checkpoint", b"validation loss at iteration", b"Saved checkpoint")
# the launcher says the job ended: torchrun's failure summary or its success line, srun's exit lines,
# Slurm cancelling the job or step (a literal first, then the line's regex)
_END_KEYS = (b"Root Cause (first observed failure)", b"worker group successfully finished", b"srun: ",
             b" CANCELLED")
_END = re.compile(
    rb"Root Cause \(first observed failure\)|worker group successfully finished|"
    rb"srun: error: \S+: tasks? [\d,\-\[\]]+: |srun: Job step aborted|srun: error: Timed out waiting for job step|"
    rb"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED")


def _last(data: bytes, keys: Tuple[bytes, ...]) -> int:
    """The offset of the last of KEYS in DATA (-1: none)."""
    return max(data.rfind(k) for k in keys)


NO_NEW_RANK = 16
# the usual rank prefixes at a line's start (torchrun --tee "[rank3]:", srun -l "3: "); others: split_prefix
_PREFIX = re.compile(rb"(?:\[default\d+\]:)?\[rank(\d+)\]:|(\d+): ")


def _line_at(buf: bytes, at: int) -> Tuple[int, int]:
    ls = buf.rfind(b"\n", 0, at) + 1
    le = buf.find(b"\n", at)
    return ls, (len(buf) if le < 0 else le)


class Progress:
    """Per rank: the last step and when it advanced (monotonic time of the poll that saw it)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
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
            self._steps(data, key, file_rank, now)
        last_start, last_end = _last(data, _BUSY_START), _last(data, _BUSY_END)
        if last_start >= 0 or last_end >= 0:
            self._busy(last_start, last_end, now)
        if self.ended_at is None:
            for key in _END_KEYS:
                at = data.find(key)
                while at >= 0:
                    ls, le = _line_at(data, at)
                    if _END.search(data, ls, le) is not None:
                        self.ended_at = now
                        self.end_line = data[ls:le][:300].decode("utf-8", "replace").strip()
                        return
                    at = data.find(key, le)

    def _steps(self, data: bytes, key: bytes, file_rank: Optional[int], now: float) -> None:
        """The step lines of DATA, newest first: a rank's newest step is all that counts, so the walk
        stops once NO_NEW_RANK lines in a row (twice the ranks found, at least) showed no new rank."""
        found: Dict[int, Tuple[int, bytes]] = {}
        since_new = 0
        end = len(data)
        while True:
            at = data.rfind(key, 0, end)
            if at < 0:
                break
            ls, le = _line_at(data, at)
            end = ls
            got = self._parse(data, ls, le, file_rank)
            if got is None:
                continue
            r, it, ms = got
            if len(self.step_ms) < 8 or since_new == 0:
                self._ms(ms)
            if r not in found:
                found[r] = (it, ms)
                since_new = 0
            else:
                since_new += 1
                if since_new >= max(NO_NEW_RANK, 2 * len(found)):
                    break
            if file_rank is not None:
                break                        # a rank's own file: its newest step line is enough
        for r, (it, _ms) in found.items():
            self._advance(r, it, now)

    def _ms(self, ms: bytes) -> None:
        try:
            self.step_ms.append(float(ms))
        except ValueError:
            pass

    def _busy(self, last_start: int, last_end: int, now: float) -> None:
        self.busy_at = now
        if last_start > last_end:
            if self.busy_since is None:
                self.busy_since = now
        else:
            self.busy_since = None

    def _parse(self, data: bytes, ls: int, le: int, file_rank: Optional[int]) -> Optional[Tuple[int, int, bytes]]:
        """(rank (-1: none), step, step time in ms) of the step line data[ls:le], or None."""
        rec = step_of(data, ls, le)
        if rec is not None:
            it, ms = rec[0], str(rec[1]).encode()
        else:
            n = _NEMO_STEP.search(data, ls, le)
            if n is None:
                return None
            it = int(n.group(1) or n.group(4))
            try:
                ms = str(float(n.group(2) or n.group(3)) * 1000.0).encode()
            except ValueError:
                return None
        rank = file_rank
        if rank is None:
            p = _PREFIX.match(data, ls, le)
            if p is not None:
                rank = int(p.group(1) or p.group(2))
            else:
                rank = RANKS.split_prefix(data[ls:min(le, ls + 200)].decode("utf-8", "replace"))[1]
        return (-1 if rank is None else rank), it, ms

    def _advance(self, r: int, it: int, now: float) -> None:
        prev = self.last_step.get(r)
        if prev is None or it > prev:
            last = self.advanced_at.get(r)
            if last is not None and now > last:
                self.intervals.append((now - last) / max(1, it - prev) if prev is not None else now - last)
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
