"""The ranks of a big input read again, by processes side by side (issue 44's twentieth pass).

A hang's verdict asks which ranks each attempt had (engine._ranks_by_attempt): the scanner reads the inputs again
after the scan, ranks.ranks_in over every block.  On a 64 MiB log that was ~0.75 s (then ~0.28 s) of one core after
a scan of ~0.3 s: a 1 GiB hang ~4 s on the 16-core host, where the scan takes ~0.8.  An input of one attempt (no
restart in it) has its ranks read by up to K processes, each over its own part of the file cut at newlines; their
union is the ranks a serial read finds, for ranks_in reads line by line and each line is in one part (its bytes
read as the scan read them: sources.without_gaps, a rule per line).  Where it cannot (a file that is not plain, a
line longer than a part's read, a process that fails) it says so, and the serial read does it."""
from __future__ import annotations

import os
import pickle
import signal
from typing import List, Optional, Set, Tuple

from .. import procs
from ..inputs.ranks import ranks_in
from ..inputs.sources import without_gaps
from .geometry import open_plain

PARALLEL_MIN = 32 << 20       # bytes of an input from which its ranks are read by several processes ...
PART_READ = 2 << 20           # ... each reading its part in pieces of whole lines of about this size


def ranks_parallel(path: str, file_rank: Optional[int], upto: int, k: int) -> Optional[Set[int]]:
    """The ranks of the first UPTO bytes of PATH (a plain file: cut at its lines) as ranks_in reads them, by K
    processes; None where the serial read must do it."""
    if k < 2 or upto < PARALLEL_MIN or not hasattr(os, "fork"):
        return None
    plain = open_plain(path, PART_READ, upto)
    if plain is None:
        return None
    os.close(plain.fd)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        cuts = _cuts(fd, upto, k)
        if cuts is None:
            return None
        return _gather(fd, cuts, file_rank)
    finally:
        os.close(fd)


def _cuts(fd: int, upto: int, k: int) -> Optional[List[int]]:
    """K + 1 offsets cutting [0, UPTO) after newlines (the first 0, the last UPTO), or None (no newline near)."""
    cuts = [0]
    for i in range(1, k):
        at = upto * i // k
        if at <= cuts[-1]:
            continue
        piece = os.pread(fd, PART_READ, at - 1)
        nl = piece.find(b"\n")
        if nl < 0:
            return None
        at = at - 1 + nl + 1
        if at >= upto:
            break
        if at > cuts[-1]:
            cuts.append(at)
    cuts.append(upto)
    return cuts


def _part(fd: int, lo: int, hi: int, file_rank: Optional[int]) -> Optional[Set[int]]:
    """The ranks of the lines in bytes [LO, HI) of FD (LO after a newline), read in pieces of whole lines."""
    out: Set[int] = set()
    at = lo
    while at < hi:
        piece = os.pread(fd, min(PART_READ, hi - at), at)
        if not piece:
            return None
        if at + len(piece) < hi:
            nl = piece.rfind(b"\n")
            if nl < 0:
                return None           # (a line longer than a piece: the serial read clips it as the scan did)
            piece = piece[:nl + 1]
        data = without_gaps(piece)
        out |= ranks_in(data, 0, len(data), file_rank)
        at += len(piece)
    return out


def _gather(fd: int, cuts: List[int], file_rank: Optional[int]) -> Optional[Set[int]]:
    """Each part's ranks by a child process of its own (a pipe each: _spawn), their union; None if any failed."""
    kids: List[Tuple[int, int]] = []
    left: Set[int] = set()
    try:
        for lo, hi in zip(cuts, cuts[1:]):
            kids.append(_spawn(fd, lo, hi, file_rank))
            left.add(kids[-1][0])
        out: Set[int] = set()
        ok = True
        for pid, r in kids:
            got = _taken(pid, r)
            left.discard(pid)
            ok = ok and got is not None
            out |= got or set()
        return out if ok else None
    finally:
        for _, r in kids:
            try:
                os.close(r)
            except OSError:
                pass
        for pid in left:                  # (an error here: the children are told to stop, and collected)
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def _spawn(fd: int, lo: int, hi: int, file_rank: Optional[int]) -> Tuple[int, int]:
    """A child process writing the ranks of part [LO, HI) to a pipe: (its pid, the pipe's read end).  Ctrl-C and
    SIGTERM are held around the fork (procs.hold_signals: a child that got one before its work would run on in the
    parent's code); the child dies of SIGTERM and ignores Ctrl-C (procs.as_worker)."""
    r, w = os.pipe()
    held = procs.hold_signals()
    try:
        pid = os.fork()
        if pid == 0:                      # pragma: no cover - the child (measured by the parent's results)
            code = 1
            try:
                procs.as_worker()
                os.close(r)
                view = memoryview(pickle.dumps(_part(fd, lo, hi, file_rank), pickle.HIGHEST_PROTOCOL))
                while view:
                    view = view[os.write(w, view):]
                code = 0
            finally:
                os._exit(code)
    except BaseException:
        os.close(r)
        raise
    finally:
        procs.release_signals(held)
        os.close(w)
    return pid, r


def _taken(pid: int, r: int) -> Optional[Set[int]]:
    """The ranks child PID wrote to R (None: it failed, or found a line it cannot read), the child collected."""
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:         # (collected by another: its bytes tell)
        status = 0
    try:
        return pickle.loads(b"".join(chunks)) if status == 0 and chunks else None
    except Exception:  # noqa: BLE001 - a child cut short: the serial read instead
        return None
