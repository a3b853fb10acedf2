"""The blocks of a big input read ahead by a thread while the scanner works on the one before.

Reading a file (and joining a block to the tail of the one before) is memory copying that drops
the GIL, so a reader thread overlaps it with the scanner's Python.  The reader's side effects keep
the order of a serial read: the notes it makes (a --max-bytes stop, a file that grew) and the
progress it reports reach the scanner with the block they came with, and an error is raised where
the serial read would raise it."""
from __future__ import annotations

import queue
import threading
from typing import Callable, Generator, List, Optional, Tuple

DEPTH = 2                  # blocks read ahead at most (each is a block of the input in memory)
_END, _ERROR = object(), object()
_Blocks = Generator[Tuple[bytes, int], None, None]


class Prefetched:
    """Iterate MAKE(notes, progress)'s blocks, read ahead by a thread.  NOTES: the scanner's list
    (the reader's notes are appended with their block); PROGRESS: called with the reader's figure
    with its block.  close() stops the reader (also when the scanner stops early)."""

    def __init__(self, make: Callable[[List[str], Optional[Callable[[int], None]]], _Blocks],
                 notes: Optional[List[str]], progress: Optional[Callable[[int], None]]):
        self._notes = notes
        self._progress = progress
        self._mine: List[str] = []
        self._said = 0
        self._last: List[Optional[int]] = [None]
        self._q: "queue.Queue[tuple]" = queue.Queue(maxsize=DEPTH)
        self._stop = threading.Event()
        record = (lambda n: self._last.__setitem__(0, n)) if progress is not None else None
        self._gen = make(self._mine, record)
        self._t = threading.Thread(target=self._run, name="triage-reader", daemon=True)
        self._t.start()

    def _put(self, item: tuple) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for block in self._gen:
                if not self._put((block, len(self._mine), self._last[0])):
                    return
            self._put((_END, len(self._mine), self._last[0]))
        except BaseException as e:  # noqa: BLE001 - raised in the scanner's thread, where it reads
            self._put((_ERROR, len(self._mine), self._last[0], e))
        finally:
            self._gen.close()

    def __iter__(self) -> "Prefetched":
        return self

    def __next__(self) -> Tuple[bytes, int]:
        item = self._q.get()
        n_notes, prog = item[1], item[2]
        if self._notes is not None and n_notes > self._said:
            self._notes.extend(self._mine[self._said:n_notes])
        self._said = max(self._said, n_notes)
        if self._progress is not None and prog is not None:
            self._progress(prog)
        if item[0] is _END:
            raise StopIteration
        if item[0] is _ERROR:
            raise item[3]
        return item[0]

    def close(self) -> None:
        self._stop.set()
        while self._t.is_alive():
            try:
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass
        self._t.join()
