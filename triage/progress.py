"""A progress bar on stderr for big inputs: bytes read, rate, ETA.  Only on a terminal, only for
inputs of PROGRESS_MIN_BYTES or more, never on a pipe (the caller also turns it off for --quiet)."""
from __future__ import annotations

import os
import sys
import time
from typing import IO, Optional, Sequence

PROGRESS_MIN_BYTES = 64 << 20
SLOW_NOTE_BYTES = 32 << 20       # (the size from which a run without hyperscan takes seconds)
_EVERY_S = 0.2


def _mb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _on_terminal(stream: IO[str], quiet: bool) -> bool:
    return not quiet and getattr(stream, "isatty", lambda: False)() and os.environ.get("TERM") != "dumb"


class Progress:
    """Call with the number of bytes read so far; `close()` clears the line.  Subclasses say what
    is counted (`_label`)."""

    def __init__(self, total: int, stream: Optional[IO[str]] = None, clock=time.monotonic):
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.t0 = clock()
        self.last = -1.0
        self.shown = False

    def _label(self, done: int, rate: float) -> str:
        pct = min(100.0, 100.0 * done / self.total)
        return f"{pct:5.1f}%  {_mb(done)} / {_mb(self.total)}  {rate / 1e6:.0f} MB/s"

    def __call__(self, done: int) -> None:
        now = self.clock()
        if now - self.last < _EVERY_S and done < self.total:
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-6)
        eta = (self.total - done) / rate if rate > 0 else 0.0
        width = 24
        fill = int(width * min(done, self.total) / self.total)
        self.stream.write(f"\rtriage: [{'#' * fill}{'.' * (width - fill)}] {self._label(done, rate)}  ETA {eta:.0f}s ")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def _total(paths: Sequence[str], max_bytes: int = 0) -> int:
    """The bytes of PATHS that will be read (each file at most MAX_BYTES, when > 0)."""
    from .inputs.sources import expand_paths
    total = 0
    for p in expand_paths(paths):
        if p == "-":
            continue
        try:
            size = os.path.getsize(p)
        except OSError:
            continue
        total += min(size, max_bytes) if max_bytes > 0 else size
    return total


def for_inputs(paths: Sequence[str], quiet: bool = False, stream: Optional[IO[str]] = None,
               max_bytes: int = 0) -> Optional[Progress]:
    """A Progress for these inputs (each read up to MAX_BYTES, when > 0) when it should be shown, else None."""
    s = stream if stream is not None else sys.stderr
    if not _on_terminal(s, quiet):
        return None
    total = _total(paths, max_bytes)
    return Progress(total, s) if total >= PROGRESS_MIN_BYTES else None


def slow_search_note(paths: Sequence[str], stream: Optional[IO[str]] = None, max_bytes: int = 0) -> bool:
    """Without the `hyperscan` wheel, one line on stderr before SLOW_NOTE_BYTES or more of inputs (each
    read up to MAX_BYTES, when > 0) are searched (with `re`, ~10 times slower): what is missing and how
    to get it.  Whether it was said."""
    from .match.anchors import hyperscan_available
    if hyperscan_available():
        return False
    total = _total(paths, max_bytes)
    if total < SLOW_NOTE_BYTES:
        return False
    s = stream if stream is not None else sys.stderr
    s.write(f"triage: note: without the hyperscan wheel (pip install hyperscan) these {_mb(total)} of logs "
            "are searched with Python's re, about 10 times slower\n")
    s.flush()
    return True


class JobsProgress(Progress):
    """A job counter on stderr for `triage fleet`: jobs done, rate, ETA."""

    def _label(self, done: int, rate: float) -> str:
        return f"{done}/{self.total} jobs  {rate:.1f} jobs/s"


def for_jobs(n: int, quiet: bool = False, stream: Optional[IO[str]] = None) -> Optional[JobsProgress]:
    """A JobsProgress when it should be shown (a terminal, not --quiet, more than one job)."""
    s = stream if stream is not None else sys.stderr
    return JobsProgress(n, s) if n >= 2 and _on_terminal(s, quiet) else None
