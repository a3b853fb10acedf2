"""A big log piped to `triage analyze` is written to a file first, then read as one (issue 44's twentieth pass).

A pipe can be read once, in order: its scan had no pool of workers (they read their parts of a file) and read the
ranks of every block as it went (a hang's verdict may ask for them, and a pipe cannot be read again) -- a 128 MiB
production log on stdin took ~2.0 s on 2 cores where the same file took ~0.34.  `kubectl logs job/x | triage
analyze` is how the tool is mostly run.  So a pipe whose first SPOOL_MIN bytes do not end it is copied to a file
of its own (a private directory under TMPDIR, removed when triage exits), which the scan reads as a file labelled
`<stdin>` (sources.describe_input): the same report, by the pool.  A smaller one is read as before (its bytes
read so far are put back in front of the pipe); so is every pipe when the file cannot be written (the bytes copied
are read back first).  --max-bytes N copies at most N + 1 bytes (the scan reads N and says where it stopped)."""
from __future__ import annotations

import atexit
import io
import os
import shutil
import sys
import tempfile
from typing import List, Optional

from .sources import Input, InputError, _no_report, _Prefixed, alias_input

SPOOL_MIN = int(os.environ.get("TRIAGE_SPOOL_MIN_BYTES", "") or 0) or (32 << 20)   # a pipe this long (the pool's
#                                                           size: pool.POOL_MIN_BYTES) is copied to a file
COPY = 1 << 20                # bytes read from the pipe at a time


def spooled_stdin(max_bytes: int = 0) -> Optional[str]:
    """The path of a file holding what stdin (a pipe, or any stream not a terminal) holds, when it holds at least
    SPOOL_MIN bytes; else None, and stdin reads from its start again (the bytes read put back)."""
    stdin = sys.stdin
    if stdin is None or not hasattr(stdin, "buffer") or stdin.isatty():
        return None
    src = stdin.buffer
    head = _read_up_to(src, SPOOL_MIN)
    if len(head) < SPOOL_MIN or (max_bytes and max_bytes < SPOOL_MIN):
        _put_back([head], src)
        return None
    _no_report(head[:4096], "<stdin>")
    try:
        where = tempfile.mkdtemp(prefix="triage-stdin-")
    except OSError:
        _put_back([head], src)
        return None
    path = os.path.join(where, "stdin.log")
    atexit.register(shutil.rmtree, where, True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        shutil.rmtree(where, True)
        _put_back([head], src)
        return None
    try:
        _copy(src, fd, head, max_bytes)
    except _CopyFailed as e:          # (a full disk): the pipe read as before, what was copied first
        _put_back_file(path, e.rest, src)
        return None
    alias_input(path, Input(path, "<stdin>", None, None))
    return path


class _CopyFailed(Exception):
    def __init__(self, rest: bytes):
        super().__init__()
        self.rest = rest              # (read of the pipe, not written)


def _copy(src, fd: int, head: bytes, max_bytes: int) -> None:
    """HEAD, then SRC to its end (or MAX_BYTES + 1 bytes in all), written to FD (closed after); _CopyFailed with
    what was read and not written when a write fails."""
    piece, total = head, 0
    try:
        while piece:
            view = memoryview(piece)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError:
                raise _CopyFailed(bytes(view)) from None
            total += len(piece)
            if max_bytes and total > max_bytes:
                break
            try:
                piece = src.read(COPY if not max_bytes else min(COPY, max_bytes + 1 - total))
            except OSError as e:
                raise InputError(f"cannot read <stdin>: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _read_up_to(f, n: int) -> bytes:
    """The first N bytes of F (fewer: its end, or an error reading it), however the pipe delivers them."""
    parts: List[bytes] = []
    got = 0
    while got < n:
        try:
            piece = f.read(min(COPY, n - got))
        except OSError:               # (the pipe read as a pipe: its reader says so)
            break
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


class _Chain(io.RawIOBase):
    """The bytes of readable FIRST, then those of SECOND (the copy of a pipe, then the rest of the pipe)."""

    def __init__(self, first, second):
        self.parts = [first, second]

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while self.parts:
            n = self.parts[0].readinto(b)
            if n:
                return n
            self.parts.pop(0)
        return 0


def _put_back_file(path: str, rest: bytes, src) -> None:
    """stdin reads the bytes copied to PATH, then REST (read of the pipe, not copied), then the pipe."""
    try:
        f = open(path, "rb", buffering=0)
    except OSError as e:
        raise InputError(f"cannot read back the copy of <stdin> ({e.strerror or e})") from None
    os.unlink(path)                   # (the open file stays readable)
    first = _Chain(f, io.BytesIO(rest)) if rest else f
    _KEPT.append(sys.stdin)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(_Chain(first, src)), encoding="utf-8",  # type: ignore[arg-type]
                                 errors="replace")


_KEPT: List[object] = []       # the stdin objects replaced (one let go would close the pipe under its successor)


def _put_back(parts: List[bytes], src) -> None:
    """stdin reads PARTS (the bytes read of it) first, then the rest of SRC (its byte stream)."""
    head = b"".join(parts)
    if head:
        _KEPT.append(sys.stdin)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Prefixed(head, src)),  # type: ignore[arg-type]
                                     encoding="utf-8", errors="replace")
