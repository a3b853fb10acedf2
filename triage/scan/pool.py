"""Worker processes that prepare blocks (prepare.prepare_block) ahead of the scanner, for big inputs."""
from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING, Any, BinaryIO, List, Optional, Sequence, Tuple

from .. import procs
from ..inputs.ranks import RANKS
from ..inputs.sources import describe_input
from ..match.anchors import AnchorSet
from . import prepare
from .geometry import NotPlain, Span

try:
    from _pickle import dumps, loads  # the C pickler, without pickle.py (imported for nothing else)
except ImportError:  # pragma: no cover - a Python without the accelerator
    from pickle import dumps, loads

if TYPE_CHECKING:
    from ..patterns import MatchRule

# Inputs smaller than this are scanned in one process.  Measured on the 16-core H200 host (issue 27,
# bench/README.md): 256 MiB production-like 1.92 s in one process, 1.40 s with 2, 0.98 s with 4, 0.75 s
# with 16; 64 MiB dense 1.36 s, 0.98 s with 4 (the scanner's own Python bounds it beyond).
POOL_MIN_BYTES = int(os.environ.get("TRIAGE_POOL_MIN_BYTES", "") or 0) or (32 << 20)
MAX_WORKERS = 15           # worker processes at most (the default is the cores, up to this cap)


MAIN_EVERY = 2             # with one worker, the scanner prepares every other block itself (balance: its own
#                            feeding of a production log is a tenth of a block's preparing since issue 44; 128 MiB
#                            production mix on 2 cores 0.37 s with every 4th, 0.33 s with every other)
BLOCKS_PER_PROCESS = 4     # a pooled scan cuts its inputs into at least this many blocks per process ...
MIN_POOL_BLOCK = 1 << 20   # ... of at least this many bytes (and at most sources.BLOCK_SIZE)


def pool_block_size(total: int, k: int) -> int:
    """The block size of a scan of TOTAL bytes with K workers: several blocks for each process, so that
    none waits long on the last one (issue 44: 256 MiB in 8 MiB blocks was 32 blocks for 16 processes,
    three rounds where 2.1 would do), from MIN_POOL_BLOCK to sources.BLOCK_SIZE, in 64 KiB steps."""
    from ..inputs.sources import BLOCK_SIZE
    want = total // (BLOCKS_PER_PROCESS * (k + 1))
    return max(MIN_POOL_BLOCK, min(BLOCK_SIZE, want >> 16 << 16))


def _owner(g: int, k: int) -> int:
    """Who prepares the g-th block of a scan: a worker's index, or -1 for the scanner itself."""
    if k == 1:
        return -1 if g % MAIN_EVERY == MAIN_EVERY - 1 else 0
    return g % k


def _worker(conn, plan: Sequence[Tuple[str, List[Span]]], aset: AnchorSet, batchers,
            rules: Sequence[Optional[MatchRule]], w: int, k: int) -> None:
    """Worker process: prepare_block and the catalog's RULES' searches of the hit lines
    (prepare.rule_searches) for its share (_owner) of the blocks of the plain inputs in PLAN
    (geometry.plain_inputs: each input with its blocks), in order; it reads only those."""
    procs.as_worker()
    try:
        guard = prepare.WorkerBudget(rules)
        g = 0
        for path, spans in plan:
            file_rank = describe_input(path).file_rank
            fd = os.open(path, os.O_RDONLY)
            try:
                for bi, (start, end, added) in enumerate(spans):
                    if _owner(g, k) == w:
                        block = os.pread(fd, end - start, start)
                        if len(block) != end - start:
                            raise NotPlain()
                        if added:
                            block += b"\n"
                        h, r, nl = prepare.prepare_block(block, 0, aset, batchers, ahead=True)
                        starts = sorted(h)
                        # the scanner's parse of the hit lines made here when there are workers to spare,
                        # and its look backs for a block dense in hits (prepare.DENSE_HITS_EVERY)
                        spare = k >= prepare.PARSE_MIN_WORKERS
                        dense = spare and len(h) * prepare.DENSE_HITS_EVERY >= nl
                        timed = prepare.timed_lines(block, nl) if dense else None
                        # (the lines a look back for a time reads are parsed here too: a log of handled
                        # tracebacks read every timed line back once, the scanner parsing each)
                        conn.send((path, bi, start, len(block),
                                   (h, r, nl, prepare.line_index(block, 0, starts),
                                    prepare.rule_searches(block, h, rules, guard, dense),
                                    prepare.parse_hits(block, sorted(set(starts).union(
                                        timed or (), prepare.followed_lines(block, starts))),
                                                       file_rank) if spare else {},
                                    timed)))
                    g += 1
            finally:
                os.close(fd)
    except BaseException as e:  # noqa: BLE001 - the scanner then prepares the blocks itself
        try:
            conn.send(("error", repr(e)))
        except Exception:  # noqa: BLE001
            pass
    finally:
        try:
            conn.close()
        finally:
            os._exit(0)


_HEADER = 8                 # bytes of a message's length, before its pickle
_MAX_MESSAGE = 1 << 34      # (a block's results are megabytes: a length past this is no message of ours)


class _Conn:
    """One end of a pipe that carries pickled messages, each after its length: a worker sends its
    results, the scanner receives them (what multiprocessing's Connection does, without its ~11 ms
    of imports, socket's and the pure-Python pickler's among them, on every big input's start)."""

    def __init__(self, fd: int, writing: bool):
        self.f: BinaryIO = os.fdopen(fd, "wb" if writing else "rb")

    def send(self, msg: Any) -> None:
        data = dumps(msg, -1)
        self.f.write(len(data).to_bytes(_HEADER, "little"))
        self.f.write(data)
        self.f.flush()

    def recv(self) -> Any:
        """The next message; EOFError when the worker is gone (or sent half of one)."""
        head = self.f.read(_HEADER)
        if len(head) != _HEADER:
            raise EOFError("the worker's pipe closed")
        n = int.from_bytes(head, "little")
        if n > _MAX_MESSAGE:
            raise EOFError(f"the worker's pipe carried no message ({n:,} bytes announced)")
        data = self.f.read(n)
        if len(data) != n:
            raise EOFError("the worker's pipe closed in a message")
        return loads(data)

    def close(self) -> None:
        try:
            self.f.close()
        except OSError:             # a writer whose reader is gone: the flush of nothing left fails
            pass


def _start(target: Any, args: tuple, parents: Sequence[_Conn]) -> Tuple[int, _Conn]:
    """Fork a worker running TARGET(its end of a new pipe, *ARGS); (its pid, the scanner's end).  The
    worker closes the ends of the pipes of the workers started before it (PARENTS: the scanner's),
    and leaves by os._exit whatever happens: it never returns into the scanner's code, and flushes
    no copy of the scanner's buffered output."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except BaseException:                        # (no process left to make: EAGAIN, ENOMEM)
        os.close(r)
        os.close(w)
        raise
    if pid == 0:                                 # the worker
        try:
            os.close(r)
            for c in parents:
                c.close()
            target(_Conn(w, True), *args)
        finally:
            os._exit(0)
    os.close(w)
    return pid, _Conn(r, False)


def _collected(pid: int) -> bool:
    """Worker PID has exited, and is collected now (or was before)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _reap(pids: Sequence[int], wait_s: float = 5.0) -> None:
    """Stop the workers PIDS that have not exited by themselves (SIGTERM) and collect them, within
    WAIT_S seconds for all of them; SIGKILL for those still there, collected within WAIT_S more.  One
    that survives even that (stuck in the kernel) is left, as multiprocessing's join(timeout) did."""
    left = []
    for pid in pids:
        if not _collected(pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            left.append(pid)
    killed = False
    deadline = time.monotonic() + wait_s
    while left:
        left = [pid for pid in left if not _collected(pid)]
        if not left:
            return
        if time.monotonic() > deadline:
            if killed:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            killed, deadline = True, time.monotonic() + wait_s
        time.sleep(0.0005)


class _Pool:
    """Worker processes that run prepare_block and the rule searches ahead of the scanner (see
    _owner for who does which).

    Each worker reads its own blocks of the plain inputs of PLAN (geometry.plain_inputs); the
    scanner takes their results in block order and checks path, block number, offset and size
    against its own read, so results merge exactly as a serial scan; on any mismatch or a dead
    worker it prepares the remaining blocks itself.  Blocks of other inputs are the scanner's."""

    def __init__(self, plan: Sequence[Tuple[str, List[Span]]], aset: AnchorSet, batchers, k: int,
                 rules: Sequence[Optional[MatchRule]] = ()):
        self.k = k
        self.conns: List[_Conn] = []
        self.pids: List[int] = []
        # what every worker and the scanner need for a big input's first lines, made once before the
        # fork (each worker made it again before its first block, which the scanner waits for): the
        # `regex` engine's import (~10 ms) and both sides of the rank matchers (~4 ms)
        RANKS.starts, RANKS.kinds      # noqa: B018 - (looking them up builds them)
        # Ctrl-C and SIGTERM are held while forking: a forked child that got one before it reached
        # _worker would raise the parent's KeyboardInterrupt (cli's SIGTERM handler) out of fork()
        # and run on as a second copy of triage.  The child takes the default actions (procs.as_worker)
        # before it lets them in; the parent gets a held one when the workers have started.
        held = procs.hold_signals()
        try:
            try:
                for w in range(k):
                    pid, conn = _start(_worker, (list(plan), aset, batchers, list(rules), w, k), self.conns)
                    self.pids.append(pid)
                    self.conns.append(conn)
            finally:
                procs.release_signals(held)      # (a Ctrl-C held meanwhile is raised here)
        except BaseException:               # the workers started so far are stopped and collected
            self.close()
            raise
        self.counter = 0
        self.broken = False
        self.paths = {p for p, _ in plan}

    @staticmethod
    def jobs(paths: Sequence[str]) -> int:
        """Workers to start: one per core beyond the scanner's own, none for small inputs."""
        if not paths or not hasattr(os, "fork") or sum(_size(p) for p in paths) < POOL_MIN_BYTES:
            return 0
        env = os.environ.get("TRIAGE_JOBS", "")
        cores = int(env) if env.isdigit() and int(env) > 0 else min(procs.cores(), MAX_WORKERS + 1)
        return cores - 1 if cores >= 2 else 0

    def get(self, path: str, bi: int, start: int, nbytes: int):
        """Block BI of PATH prepared (it starts at offset START of the input and is NBYTES long), or
        None when the scanner prepares it (its share, an input not plain, or a broken pool)."""
        if path not in self.paths:
            return None
        w = _owner(self.counter, self.k)
        self.counter += 1
        if self.broken or w < 0:
            return None
        conn = self.conns[w]
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            self.broken = True
            return None
        if msg[:4] != (path, bi, start, nbytes):     # a clipped line, a file that changed under us
            self.broken = True
            return None
        return msg[4]

    def close(self) -> None:
        for c in self.conns:        # a worker still sending gets a broken pipe and exits by itself
            c.close()
        _reap(self.pids)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0

