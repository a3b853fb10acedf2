"""Where the reader cuts a plain file into blocks, worked out from the file's offsets alone: pool
workers read only their own blocks, and the scanner reads each block with its tail in one read."""
from __future__ import annotations

import os
import stat
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..inputs.dcgm import flatten as dcgm_flatten
from ..inputs.paste import PASTE_MAX, reshape
from ..inputs.sources import (
    _MAGIC,
    BINARY_PROBE,
    LONE_CR_PROBE,
    MAX_RAW,
    InputError,
    _binary,
    _lone_cr,
    block_tail,
    describe_input,
)


class NotPlain(Exception):
    """An input a worker cannot cut into the scanner's blocks by itself (see Geometry)."""


TAIL_PROBE = 64 << 10      # bytes read back from a chunk's end to find its last newline
# A pooled scan's first chunks are smaller (issue 44): its scanner waits on the first block's worker before it feeds
# anything (a storm's 1 MiB block ~90 ms, tracebacks' 2 MiB ~100 ms on the 16-core host, most of it the scanner
# idle); the first chunk is RAMP_FIRST-th of the block size, each next one RAMP_GROWTH times the one before (in
# RAMP_STEP steps) up to it, where the block size is RAMP_MIN or more (a smaller one is cut evenly).
RAMP_FIRST = 8
RAMP_GROWTH = (5, 4)       # (x 5 / 4)
RAMP_STEP = 64 << 10
RAMP_MIN = RAMP_FIRST * RAMP_STEP


def chunk_edges(size: int, block_size: int, ramp: bool) -> List[int]:
    """The end of each chunk the reader reads of SIZE bytes: every BLOCK_SIZE bytes, or ramped (RAMP_FIRST)."""
    if not ramp or block_size < RAMP_MIN:
        return [min(size, at) for at in range(block_size, size + block_size, block_size)] if size else []
    edges: List[int] = []
    at, step = 0, block_size // RAMP_FIRST
    while at < size:
        at = min(size, at + max(RAMP_STEP, min(block_size, step // RAMP_STEP * RAMP_STEP)))
        edges.append(at)
        step = step * RAMP_GROWTH[0] // RAMP_GROWTH[1]
    return edges


class Geometry:
    """The blocks the scanner's reader (sources.iter_blocks_with_tail) cuts a plain file into,
    worked out from the file's offsets alone, so that a worker reads only its own blocks.

    The reader reads chunk j = bytes [j*B, (j+1)*B) (up to --max-bytes and the size at open) and
    yields the whole lines read so far: block j ends after the last newline of chunk j, and the
    bytes after the last newline of the input are a last block with a newline added.  That holds
    for a plain file (uncompressed, UTF-8, lines ending with LF) in which every chunk holds a
    newline; anything else raises NotPlain.  A line longer than MAX_RAW, which the reader clips,
    and a file changed between the reads are caught by the scanner, which checks each block's
    offset and size against its own (_Pool.get)."""

    def __init__(self, fd: int, block_size: int, max_bytes: int, ramp: bool = False):
        self.fd = fd
        size = os.fstat(fd).st_size
        self.size_at_open = size
        self.size = min(size, max_bytes) if max_bytes else size
        probe = min(self.size, LONE_CR_PROBE)        # what the reader looks at
        head = os.pread(fd, max(min(probe, 64 << 10), BINARY_PROBE), 0)    # (its binary probe: the file's)
        if (any(head.startswith(m) for m, _ in _MAGIC) or head[:2] in (b"\xff\xfe", b"\xfe\xff")
                or _binary(head[:BINARY_PROBE])):
            raise NotPlain()
        head = head[:probe]
        if b"\n" not in head and _lone_cr(os.pread(fd, probe, 0)):     # (a newline in it: no lone CRs)
            raise NotPlain()
        self.edges = chunk_edges(self.size, block_size, ramp)      # (chunk j: edges[j - 1] or 0 to edges[j])
        self.n_chunks = len(self.edges)
        self._ends: Dict[int, int] = {-1: 0}

    def end(self, j: int) -> int:
        """1 + the offset of the last newline of chunk j (0 for j = -1; -1 for a chunk without one)."""
        e = self._ends.get(j)
        if e is not None:
            return e
        lo, hi = self.edges[j - 1] if j else 0, self.edges[j]
        at = hi
        e = -1
        while at > lo:                      # back from the chunk's end, a probe at a time
            n = min(TAIL_PROBE, at - lo)
            piece = os.pread(self.fd, n, at - n)
            if len(piece) != n:
                raise NotPlain()           # shorter than it was: changed under us
            nl = piece.rfind(b"\n")
            if nl >= 0:
                e = at - n + nl + 1
                break
            at -= n
        self._ends[j] = e
        return e

    def blocks(self) -> Iterator[Tuple[int, int, bool]]:
        """(start, end, newline added) of each block, in order."""
        start = 0
        for j in range(self.n_chunks):
            e = self.end(j)
            hi = self.edges[j]
            if e < 0:
                if j < self.n_chunks - 1:
                    raise NotPlain()       # a chunk without a newline: the reader clips a line
                break                       # the last chunk: its bytes end the last block
            if hi - e > MAX_RAW:
                raise NotPlain()           # the part of a line after it: longer than the reader keeps
            yield start, e, False
            start = e
        if start < self.size:
            if self.size - start > MAX_RAW:
                raise NotPlain()
            yield start, self.size, True


class PlainFile:
    """A plain file opened for sources.iter_blocks_with_tail's blocks (see blocks())."""

    def __init__(self, fd: int, path: str, geo: Geometry, spans: List[Tuple[int, int, bool]]):
        self.fd, self.path, self.geo, self.spans = fd, path, geo, spans

    def blocks(self, progress: Optional[Callable[[int], object]], tail: int, max_bytes: int,
               notes: Optional[List[str]], consumed: Optional[List[int]], sink=None) -> Iterator[Tuple[bytes, int]]:
        """sources.iter_blocks_with_tail of the file: the same blocks, tails, notes, progress, bytes
        consumed and content hash (SINK), each block read with its tail in one read (the reader
        joins each chunk to the tail before it: a second copy of every byte).  Closes the file."""
        try:
            yield from _read(self.fd, self.path, self.geo, self.spans, progress, tail, max_bytes, notes, consumed,
                             sink)
        finally:
            os.close(self.fd)


def open_plain(path: str, block_size: int, max_bytes: int, ramp: bool = False) -> Optional[PlainFile]:
    """PATH opened as a PlainFile, or None when it is not one (sources' reader reads it, and says
    why it cannot when it cannot).  RAMP: its first chunks ramped up to the block size (chunk_edges) where the
    scanner reads it so too: over PASTE_MAX and the block size (smaller, sources' reader reads it, in even chunks);
    and where a ramped chunk holds no newline (a line of 64 KiB to 1 MiB among the first ones), cut evenly as
    without RAMP (the plan and the scanner both open it so: the same blocks)."""
    if path == "-" or "://" in path or not hasattr(os, "pread"):     # (no pread: Windows)
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotPlain()
        ramped = ramp and os.fstat(fd).st_size > max(block_size, PASTE_MAX)
        try:
            geo = Geometry(fd, block_size, max_bytes, ramped)
            spans = list(geo.blocks())
        except NotPlain:
            if not ramped:
                raise
            geo = Geometry(fd, block_size, max_bytes, False)      # (a ramped chunk with no newline: cut evenly)
            spans = list(geo.blocks())
        return PlainFile(fd, describe_input(path).label, geo, spans)      # (a pipe's copy: labelled <stdin>)
    except (OSError, NotPlain):
        os.close(fd)
        return None


def _read(fd: int, label: str, geo: "Geometry", spans: List[Tuple[int, int, bool]],
          progress: Optional[Callable[[int], object]], tail: int, max_bytes: int, notes: Optional[List[str]],
          consumed: Optional[List[int]], sink) -> Iterator[Tuple[bytes, int]]:
    prev = b""                       # the block before, with its tail; it starts at offset p
    p = 0
    for j in range(geo.n_chunks):    # the reader's chunk j, then the block of its lines
        _chunk_read(label, geo.edges[j], progress, max_bytes, notes, consumed)
        if j >= len(spans) or spans[j][2]:
            break
        start, stop, _ = spans[j]
        t = _tail_start(prev, p, start, tail)
        buf = _pread(fd, label, t, stop)
        if sink is not None:
            sink.update(memoryview(buf)[start - t:])
        yield buf, start - t
        prev, p = buf, t
    last = spans[-1] if spans and spans[-1][2] else None
    grew = os.fstat(fd).st_size > geo.size_at_open
    if grew and notes is not None:
        notes.append(f"{label} grew while it was read: triaged up to the {geo.size_at_open:,} bytes it had when opened")
    if last is None:
        if sink is not None:
            sink.finish(not (grew or bool(max_bytes and geo.size >= max_bytes)))
        return
    t = _tail_start(prev, p, last[0], tail)
    buf = _pread(fd, label, t, last[1])
    if sink is not None:
        sink.update(memoryview(buf)[last[0] - t:])
        sink.finish(not (grew or bool(max_bytes and geo.size >= max_bytes)))
    yield buf + b"\n", last[0] - t


def _chunk_read(label: str, total: int, progress: Optional[Callable[[int], object]], max_bytes: int,
                notes: Optional[List[str]], consumed: Optional[List[int]]) -> None:
    """What the reader does after reading a chunk, up to offset TOTAL: the bytes consumed, the
    --max-bytes note, the progress."""
    if consumed is not None:
        consumed[0] = total
    if notes is not None and max_bytes and total >= max_bytes:
        notes.append(f"stopped reading {label} after {max_bytes:,} bytes (--max-bytes); the rest is not triaged")
    if progress is not None:
        progress(total)


def _pread(fd: int, label: str, lo: int, hi: int) -> bytes:
    """Bytes [lo, hi) of the file; an input error (as the reader's) when they cannot be read."""
    try:
        buf = os.pread(fd, hi - lo, lo)
    except OSError as e:
        raise InputError(f"cannot read {label!r}: {e.strerror or e}") from None
    if len(buf) != hi - lo:
        raise InputError(f"cannot read {label!r}: it got shorter while it was read (truncated or rotated)")
    return buf


def _tail_start(prev: bytes, p: int, start: int, tail: int) -> int:
    """Where the tail before the block at START starts: the whole lines within the last TAIL bytes
    of PREV (the block before with its own tail, from offset P), as sources.block_tail cuts them."""
    if not tail or not prev:
        return start
    return p + block_tail(prev, tail)            # (p + len(prev) is START: no whole line there)
Span = Tuple[int, int, bool]        # a block: start, end, and whether a newline is added after it


def _joined(fd: int) -> bool:
    """The small file FD is read reshaped (sources._reshaped): a paste, whose dressing the reader takes
    off and whose hard-wrapped lines it joins (paste.py), or DCGM's tables, each result said as a line
    (dcgm.py)."""
    size = os.fstat(fd).st_size
    if size > PASTE_MAX:
        return False
    data = os.pread(fd, size, 0)
    return dcgm_flatten(data) is not None or reshape(data) is not None


def plain_inputs(paths: Sequence[str], block_size: int, max_bytes: int,
                 ramp: bool = False) -> List[Tuple[str, List[Span]]]:
    """The PATHS the workers can cut into blocks (see Geometry; RAMP: open_plain's), each with its blocks, cut once
    here for every worker; the scanner prepares the blocks of the others (compressed, UTF-16,
    pipes, URLs, ...)."""
    out = []
    for p in paths:
        f = open_plain(p, block_size, max_bytes, ramp)
        if f is not None and _joined(f.fd):
            os.close(f.fd)              # a hard-wrapped paste: the scanner's reader joins its lines
            continue
        if f is not None:
            os.close(f.fd)
            out.append((p, f.spans))
    return out
