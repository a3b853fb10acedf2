"""The content hash of a job's inputs (store.content_hash, the key of a stored verdict), folded
into the block reader: the bytes are hashed as the scan reads them, never read a second time.

The definition is content_hash's, so a record is the same whichever computed it:
- one input: SHA-256 of its bytes;
- several (store.expand_paths order): for each, its name relative to the job, NUL, its bytes, NUL;
  stdin among them: `<stdin>` NUL and the hex SHA-256 of its bytes (no NUL after it);
- a compressed input: its bytes as stored (the .gz file's), not the decompressed log.
The fold gives no hash (None: the caller falls back to content_hash) when any input was not read
whole: --max-bytes, an input that cannot be read, breaks off, grows while read or is a decompression
bomb, a URL (read through fsspec, where content_hash fetches it itself), or a scan that stopped early.

The hashing of big blocks runs in a thread of its own (hashlib releases the GIL): on a machine with
a core to spare, `analyze --record` costs what `analyze` does.  Updates keep their order (one queue).
"""
from __future__ import annotations

import hashlib
import os
import queue
import threading
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import remote


def relname(p: str, roots: Sequence[str]) -> str:
    """An input's name relative to the job's (the roots given): its path under a given directory
    or URL prefix, else its base name."""
    rel = remote.relname(p, roots)      # a URL under a URL prefix
    if rel is not None:
        return rel
    for r in roots:
        if r != "-" and os.path.isdir(r):
            rel = os.path.relpath(p, r)
            if not rel.startswith(".."):
                return rel
    return os.path.basename(p)


class InputHash:
    """What the block reader feeds with one input's raw bytes, in order (`update`), then tells
    whether it read them all (`finish`)."""
    __slots__ = ("job", "path", "h", "done")

    def __init__(self, job: "InputsDigest", path: str, h: Any):
        self.job, self.path, self.h = job, path, h
        self.done = False

    def update(self, data: Union[bytes, memoryview]) -> None:
        self.job._update(self.h, data)

    def finish(self, whole: bool) -> None:
        """The input's last byte was read (WHOLE), or reading stopped short of it."""
        if self.done:
            return
        self.done = True
        self.job._finished(self, whole)

    def broken(self) -> None:
        """The bytes were not read in order (a seek): no hash of this job."""
        self.job.ok = False


class InputsDigest:
    """The content hash of the inputs FILES (expand_paths of ROOTS), fed input by input in FILES'
    order by the scan (`input(path)` before reading each); `hexdigest()` once all were read."""

    def __init__(self, roots: Sequence[str], files: Sequence[str]):
        self.roots = list(roots)
        self.files = list(files)
        self.single = len(self.files) == 1
        self.h = hashlib.sha256()
        self.ok = True
        self.seen: List[str] = []
        self.pending: Optional[InputHash] = None
        self._q: "Optional[queue.Queue[Optional[Tuple[Any, bytes]]]]" = None
        self._thread: Optional[threading.Thread] = None

    THREAD_MIN = 1 << 20        # a block this big starts the hashing thread (a small log is hashed inline)
    QUEUE_BLOCKS = 4            # blocks waiting to be hashed at most (the reader waits beyond: bounded memory)

    def _update(self, h: Any, data: Union[bytes, memoryview]) -> None:
        if self._q is None:
            if len(data) < self.THREAD_MIN:
                h.update(data)
                return
            self._q = queue.Queue(self.QUEUE_BLOCKS)
            self._thread = threading.Thread(target=self._hash, args=(self._q,), name="triage-content-hash",
                                            daemon=True)
            self._thread.start()
        self._q.put((h, data if isinstance(data, bytes) else bytes(data)))     # a reader's buffer is reused

    @staticmethod
    def _hash(q: "queue.Queue[Optional[Tuple[Any, bytes]]]") -> None:
        while True:
            item = q.get()
            try:
                if item is None:
                    return
                item[0].update(item[1])
            finally:
                q.task_done()

    def _flush(self) -> None:
        """Wait until every update so far is hashed."""
        if self._q is not None:
            self._q.join()

    def close(self) -> None:
        """End the hashing thread (the scan is over, whole or not)."""
        if self._q is not None and self._thread is not None:
            self._q.put(None)
            self._thread.join()
            self._q, self._thread = None, None

    def input(self, path: str) -> Optional[InputHash]:
        """The sink of PATH's bytes (None once the hash is given up: the reader then hashes nothing)."""
        if self.pending is not None:          # the previous input was not read to its end
            self.ok = False
        k = len(self.seen)
        self.seen.append(path)
        if not self.ok or k >= len(self.files) or self.files[k] != path or remote.is_url(path):
            self.ok = False
            return None
        if path == "-":
            sink = InputHash(self, path, hashlib.sha256())      # its own digest, folded in at its end
        else:
            if not self.single:
                self._update(self.h, relname(path, self.roots).encode("utf-8", "surrogateescape") + b"\0")
            sink = InputHash(self, path, self.h)
        self.pending = sink
        return sink

    def failed(self) -> None:
        """The current input could not be read (an InputError): no hash."""
        self.ok = False
        self.pending = None

    def _finished(self, sink: InputHash, whole: bool) -> None:
        if sink is not self.pending or not whole:
            self.ok = False
        self.pending = None
        if not self.ok:
            return
        if sink.path == "-":
            self._flush()
            digest = sink.h.hexdigest()
            if self.single:
                self.h = sink.h                  # content_hash: stdin alone is its bytes' digest
            else:
                self._update(self.h, b"<stdin>\0" + digest.encode())
        elif not self.single:
            self._update(self.h, b"\0")

    def hexdigest(self) -> Optional[str]:
        """The content hash, or None when any input was not read whole (see the module's doc)."""
        self._flush()
        if not self.ok or self.pending is not None or self.seen != self.files:
            return None
        return self.h.hexdigest()
