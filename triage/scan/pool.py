"""Worker processes that prepare blocks (prepare.prepare_block) ahead of the scanner, for big inputs."""
from __future__ import annotations

import os
import select
import signal
import time
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, cast

from .. import procs, recache
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
DENSE_POOL_MIN_BYTES = 4 << 20      # ... inputs dense in work: from this size (engine._dense)
MAX_WORKERS = 15           # worker processes at most (the default is the cores, up to this cap)


READER_CORES = 12         # from this many cores on, a scan of inputs light in work (engine._light: a production log's
#                            mix) leaves a core to the scanner's reader thread (prefetch.py): it reads every byte the
#                            workers do, ~0.4 ms a MiB, so fifteen workers' pace of a production log kept it busy ~90%
#                            of a core beside the scanner's own work, whose results then waited at the end (issue 44's
#                            nineteenth pass, the 16-core H100 host, 4 runs each alternating, seconds: the 1 GiB
#                            production mix -j 16 0.81-0.89, with 14 workers 0.73-0.80; 256 MiB 0.28-0.36 / 0.28-0.30;
#                            a storm's or megatron's dense mix, their workers the critical path, 0.75-0.83 / 0.76-0.88
#                            and 0.37-0.47 / 0.42-0.47: dense inputs keep every worker)


MAIN_EVERY = 2             # with one worker, the scanner prepares every other block itself (balance: its own
#                            feeding of a production log is a tenth of a block's preparing since issue 44; 128 MiB
#                            production mix on 2 cores 0.37 s with every 4th, 0.33 s with every other)
BLOCKS_PER_PROCESS = 4     # a pooled scan cuts its inputs into at least this many blocks per process ...
MIN_POOL_BLOCK = 1 << 20   # ... of at least this many bytes ...
MAX_POOL_BLOCK = 4 << 20   # ... and at most this many where the scanner only takes the workers' results (as many
#                            as prepare.PARSE_MIN_WORKERS), else sources.BLOCK_SIZE: its work a block (taking a
#                            result, its reader's tail) is per block, the workers' per byte (issue 44's eighteenth
#                            pass, the 16-core H100 host, -j 16, 5 runs alternating: the 1 GiB production mix
#                            0.638-0.756 s in 2 MiB blocks, 0.558-0.754 in 4 MiB, medians 0.665 / 0.610; 256 MiB
#                            0.278 / 0.257)


def pool_block_size(total: int, k: int) -> int:
    """The block size of a scan of TOTAL bytes with K workers: several blocks for each process, so that
    none waits long on the last one (issue 44: 256 MiB in 8 MiB blocks was 32 blocks for 16 processes,
    three rounds where 2.1 would do), from MIN_POOL_BLOCK to MAX_POOL_BLOCK (sources.BLOCK_SIZE with fewer workers
    than prepare.PARSE_MIN_WORKERS: the scanner prepares blocks too, or waits on their parse), in 64 KiB steps."""
    from ..inputs.sources import BLOCK_SIZE
    want = total // (BLOCKS_PER_PROCESS * (k + 1))
    most = MAX_POOL_BLOCK if k >= prepare.PARSE_MIN_WORKERS else BLOCK_SIZE
    return max(MIN_POOL_BLOCK, min(most, want >> 16 << 16))


def _owner(g: int, k: int) -> int:
    """Who prepares the g-th block of a scan with K workers: -1 for the scanner itself (with one worker, every
    MAIN_EVERY-th), else 0: a ticket for it is handed out, and the first worker free takes it (_claimed)."""
    return -1 if k == 1 and g % MAIN_EVERY == MAIN_EVERY - 1 else 0


def _worker(conn, plan: Sequence[Tuple[str, List[Span]]], aset: AnchorSet, batchers,
            rules: Sequence[Optional[MatchRule]], tickets: Tuple[int, int], w: int, k: int) -> None:
    """Worker process: prepare_block and the catalog's RULES' searches of the hit lines
    (prepare.rule_searches) for the blocks of the plain inputs in PLAN (geometry.plain_inputs: each input with
    its blocks) it takes from the scanner's TICKETS (the pipe's read and write ends: _claimed), in order; it
    reads only those."""
    procs.as_worker()
    recache.rx_taken()              # (what the scanner kept before the fork is its own: not sent back)
    try:
        guard = prepare.WorkerBudget(rules)
        # every block of the scan by its number: (input, its number in the input, its span)
        flat = [(path, bi, span) for path, spans in plan for bi, span in enumerate(spans)]
        fds: Dict[str, Tuple[int, Optional[int]]] = {}     # (the inputs opened: fd, file rank)
        try:
            for g in _claimed(tickets):
                path, bi, (start, end, added) = flat[g]
                if path not in fds:
                    fds[path] = (os.open(path, os.O_RDONLY), describe_input(path).file_rank)
                fd, file_rank = fds[path]
                block = os.pread(fd, end - start, start)
                if len(block) != end - start:
                    raise NotPlain()
                if added:
                    block += b"\n"
                raw = len(block)
                facts = prepare.BlockFacts()    # (year-less time forms, dates shown normalised: year_changes)
                # (a block with NUL runs read without them, as the line reader reads it: the scanner's too, told so)
                block, _, (h, r, _) = prepare.prepare_gapless(block, 0, aset, batchers, ahead=True, count=False,
                                                              facts=facts)
                starts = sorted(h)
                li = prepare.line_index(block, 0, starts)
                nl = prepare.block_lines(block, starts, li)
                # the scanner's parse of the hit lines made here when there are workers to spare,
                # and its look backs for a block dense in hits (prepare.DENSE_HITS_EVERY)
                spare = k >= prepare.PARSE_MIN_WORKERS
                dense = spare and len(h) * prepare.DENSE_HITS_EVERY >= nl
                timed = prepare.timed_lines(block, nl) if dense else None
                texts: Dict[int, Tuple[str, str]] = {}       # (the hit lines decoded by parse_hits)
                if spare:
                    parsed, summ, bodies, intros, passes, followed = _spare_work(block, h, r, starts, timed,
                                                                                 batchers, file_rank, bi, texts)
                else:
                    parsed, summ, bodies, intros, passes, followed = {}, None, {}, {}, {}, []
                dated = prepare.first_dated_in(block, 0, None, ahead=True, normed=facts.normed)
                ranks = prepare.timed_ranks(timed, parsed)
                norms: Dict[int, str] = {}
                searched = prepare.rule_searches(block, h, rules, guard, dense, norms, texts)
                texts.clear()
                # (the hit lines the scanner may take in runs: a dense block's, when there are workers to spare)
                plain = prepare.plain_hits(block, searched, parsed, norms) if dense else {}
                runs = prepare.plain_runs(block, starts, h, plain, parsed, searched, li) if plain else {}
                if timed is not None:
                    prepare.drop_timed(parsed, timed, ranks, set(h).union(followed))
                prepare.strip_runs(runs, searched, parsed, plain)
                conn.send((path, bi, start, raw,
                           (h, r, nl, li, searched,
                            parsed, timed, dated, summ, bodies,
                            prepare.year_changes(block, dated[0], dated[1], None, ahead=True, facts=facts.found,
                                                 normed=facts.normed)
                            if isinstance(dated, tuple) else None,
                            # (the timed lines' numbers in the block, in their order)
                            list(prepare.line_index(block, 0, timed).values()) if timed is not None else None,
                            intros, passes, ranks, plain, runs, facts.normed, len(block) != raw),
                           recache.rx_taken()), g)         # (its regexes' code not in the cache: the scanner keeps it)
        finally:
            for fd, _ in fds.values():
                os.close(fd)
    except BaseException as e:  # noqa: BLE001 - the scanner then prepares the blocks itself
        try:
            conn.send(("error", repr(e)), ERROR_TAG)
        except Exception:  # noqa: BLE001
            pass
    finally:
        try:
            conn.close()
            _wait_kids()
        finally:
            os._exit(0)


def _spare_work(block: bytes, h: Dict[int, Set[int]], r: list, starts: List[int], timed: Optional[List[int]],
                batchers, file_rank: Optional[int], bi: int,
                texts: Optional[Dict[int, Tuple[str, str]]] = None) -> tuple:
    """What a worker prepares of block BI when there are workers to spare (prepare.PARSE_MIN_WORKERS): the parse
    of its hit lines, of the lines a look back for a time reads (TIMED) and of those around a traceback's first
    (a log of handled tracebacks read every timed line back once, the scanner parsing each); its step records'
    summaries (the records of the runs summarised left out: not an input's first block, its first evidence kept, is
    replayed); its traceback bodies, introducing lines and lines to pass by -- the bodies' lines' parses then left
    out (the scanner takes them whole); and the lines it looked at around the tracebacks' first."""
    followed = prepare.followed_lines(block, starts)
    parsed = prepare.parse_hits(block, sorted(set(starts).union(timed or (), followed)), file_rank, texts)
    summ = prepare.summaries(block, h, batchers, r)
    if summ and bi:      # (after: the summaries read them)
        prepare.leave_out(r, summ)
    firsts = prepare.tb_firsts(block, h)          # (the tracebacks' first lines)
    bodies = prepare.tb_bodies(block, h, parsed, file_rank, firsts)
    intros = prepare.tb_intros(block, parsed, firsts)
    passes = prepare.passable(block, followed, h, parsed, bodies)
    prepare.drop_bodies(block, parsed, bodies)
    return parsed, summ, bodies, intros, passes, followed


WINDOW_PER_WORKER = 8      # blocks handed out ahead of the one the scanner waits for, per worker (the results
#                            that come before their turn wait in the scanner, pickled; 2 a worker left them idle
#                            on the 16-core host, a production log's lanes busy 53-74 ms of 120)
READY_BYTES = 64 << 20     # ... and no more while the results waiting add up to this (its memory stays bounded)
_TICKETS_A_WRITE = 128     # tickets a write to the ticket pipe (512 bytes: PIPE_BUF at its smallest, POSIX's)
TICKET = 4                  # bytes of a ticket: the number of a block of the scan, little-endian
ERROR_TAG = (1 << 32) - 1   # the tag of a worker's last message when it failed (no block's number)


def _claimed(tickets: Tuple[int, int]) -> Iterator[int]:
    """The numbers of the blocks this worker takes, from the scanner's ticket pipe (its read and write ends):
    each read takes the next ticket whole (the scanner writes whole tickets, at most PIPE_BUF bytes at a time,
    and every read is of one ticket: a pipe neither splits such a write nor mixes two readers' reads), until
    the scanner closes its end and none is left.  A worker takes a block when it is free for one (issue 44:
    blocks dealt round the workers in turn left the first forked and the fastest idle while the last
    finished: 77-118 ms of work each, on the 16-core host, for the same number of blocks)."""
    r, w = tickets
    os.close(w)                     # (else this worker's own copy of the write end keeps the pipe open)
    while True:
        t = os.read(r, TICKET)
        if len(t) != TICKET:        # (the scanner's end closed, no ticket left)
            return
        yield int.from_bytes(t, "little")


_KIDS: List[int] = []      # in a worker: the workers it forked (_tree_worker), collected before it leaves


def _wait_kids() -> None:
    """A worker collects the workers it forked before it leaves (none is left to init, nor to the scanner
    when it is a container's first process, which orphans are handed to)."""
    for pid in _KIDS:
        try:
            os.waitpid(pid, 0)
        except (ChildProcessError, InterruptedError):
            pass


_HEADER = 8                 # bytes of a message's length, before its pickle
_MAX_MESSAGE = 1 << 34      # (a block's results are megabytes: a length past this is no message of ours)
_READ_CHUNK = 1 << 20       # bytes of a message read at a time


class _Conn:
    """One end of a pipe that carries pickled messages, each after its length and a tag (a block's number): a
    worker sends its results, the scanner receives them (what multiprocessing's Connection does, without its
    ~11 ms of imports, socket's and the pure-Python pickler's among them, on every big input's start).  The
    reading end is unbuffered: what poll() says is readable is all there is (no message held in a buffer)."""

    def __init__(self, fd: int, writing: bool):
        self.f: BinaryIO = os.fdopen(fd, "wb") if writing else cast(BinaryIO, os.fdopen(fd, "rb", buffering=0))

    def fileno(self) -> int:
        return self.f.fileno()

    def send(self, msg: Any, tag: int = 0) -> None:
        data = dumps(msg, -1)
        self.f.write((len(data) + TICKET).to_bytes(_HEADER, "little") + tag.to_bytes(TICKET, "little"))
        self.f.write(data)
        self.f.flush()

    def _read(self, n: int) -> bytes:
        """N bytes (fewer: the pipe closed first), read a MiB at most at a time (a pipe gives 64 KiB a read): no
        buffer of a length a message announced is made before its bytes come (a broken worker's header)."""
        first = self.f.read(min(n, _READ_CHUNK))
        if not first or len(first) == n:
            return first or b""
        parts, got = [first], len(first)
        while got < n:
            more = self.f.read(min(n - got, _READ_CHUNK))
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def recv_tagged(self) -> Tuple[int, memoryview]:
        """The next message's tag and pickle, not unpickled; EOFError when the worker is gone (or sent half of
        one)."""
        head = self._read(_HEADER)
        if len(head) != _HEADER:
            raise EOFError("the worker's pipe closed")
        n = int.from_bytes(head, "little")
        if n > _MAX_MESSAGE or n < TICKET:
            raise EOFError(f"the worker's pipe carried no message ({n:,} bytes announced)")
        data = self._read(n)
        if len(data) != n:
            raise EOFError("the worker's pipe closed in a message")
        return int.from_bytes(data[:TICKET], "little"), memoryview(data)[TICKET:]

    def recv(self) -> Any:
        """The next message; EOFError when the worker is gone (or sent half of one)."""
        return loads(self.recv_tagged()[1])

    def close(self) -> None:
        try:
            self.f.close()
        except OSError:             # a writer whose reader is gone: the flush of nothing left fails
            pass


_ADOPTED: Set[int] = set()      # the groups (first workers' pids) this process adopts the orphans of


def _start_tree(target: Any, args: tuple, k: int, adopt: bool = True) -> Tuple[int, List[_Conn]]:
    """Fork K workers, each running TARGET(its end of its own pipe, *ARGS, w, k) for its index w: the scanner
    forks the first only, and the workers fork the others in a binomial tree (worker w forks w + 2**j for
    each j >= w.bit_length() below k: 15 workers in four rounds of forks, each fork copying the page tables
    of a process of ~80 MB; issue 44: the scanner's 15 forks in a row were ~30 ms of its start on the
    16-core host, the scanner's thread being the scan's critical path).  The workers are a process group
    of their own, led by the first (its pid): the scanner stops them all with one signal (_reap_group).
    ADOPT false: the caller makes this process the orphans' adopter itself (_adopt), when it has given the workers
    their first tickets.  Returns (the first worker's pid, the scanner's ends of the K pipes, in order)."""
    pipes = []
    try:
        for _ in range(k):
            pipes.append(os.pipe())
        pid = os.fork()
    except BaseException:                        # (no pipe or process left to make: EMFILE, EAGAIN, ENOMEM)
        for r, w in pipes:
            os.close(r)
            os.close(w)
        raise
    if pid == 0:                                 # the first worker
        try:
            _group(0)
            for r, _ in pipes:
                os.close(r)
            _tree_worker(target, args, k, [w for _, w in pipes])
        finally:
            os._exit(0)
    if adopt:
        _adopt(pid)
    _group(pid)                                  # (both sides set it: whichever runs first)
    conns = []
    for r, w in pipes:
        os.close(w)
        conns.append(_Conn(r, False))
    return pid, conns


def _adopt(pid: int) -> None:
    """A worker of the group PID whose parent worker is gone is handed to the scanner, which collects it
    (_reap_group).  Set once the first worker runs and long before any worker ends: once the workers have their
    first tickets (_Pool; issue 44: ctypes' import and prctl, ~3 ms on the 16-core host and ~5 ms here, held every
    worker's first block back)."""
    if procs.adopt_orphans():
        _ADOPTED.add(pid)


def _group(pid: int) -> None:
    """Process PID (0: this one) leads a process group of its own (best effort)."""
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass


def _tree_worker(target: Any, args: tuple, k: int, ends: List[int]) -> None:
    """In the first worker: fork this worker's share of the tree (then each child its own), keep only its
    own pipe's write end of ENDS, and run TARGET.  A fork that fails leaves its subtree's pipes with no
    writer: the scanner reads their end and prepares those blocks itself."""
    w = 0
    j = 0
    while w + (1 << j) < k:
        child = w + (1 << j)
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            w = child                            # (its own children: child + 2**j' for j' > j)
            _KIDS.clear()
        else:
            _KIDS.append(pid)
        j += 1
    for i, fd in enumerate(ends):
        if i != w:
            os.close(fd)
    target(_Conn(ends[w], True), *args, w, k)


def _collected(pid: int) -> bool:
    """Worker PID has exited, and is collected now (or was before)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _escalate(gone: Callable[[], bool], send: Callable[[int], None], wait_s: float) -> None:
    """Until GONE() (which collects what it can): SEND(SIGTERM), then, WAIT_S seconds on, SEND(SIGKILL); one
    still there WAIT_S seconds after that (stuck in the kernel) is left, as multiprocessing's join(timeout)
    did."""
    deadline = time.monotonic() + wait_s
    signalled = killed = False
    while not gone():
        if not signalled:
            send(signal.SIGTERM)
            signalled = True
        elif time.monotonic() > deadline:
            if killed:
                return
            send(signal.SIGKILL)
            killed, deadline = True, time.monotonic() + wait_s
        time.sleep(0.0005)


def _reap(pids: Sequence[int], wait_s: float = 5.0) -> None:
    """Stop the workers PIDS (children of this process) that have not exited by themselves and collect
    them (_escalate)."""
    left = list(pids)

    def gone() -> bool:
        left[:] = [pid for pid in left if not _collected(pid)]
        return not left

    def send(sig: int) -> None:
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    _escalate(gone, send, wait_s)


def _group_left(pgid: int) -> bool:
    """Whether any process of the group PGID is left."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:             # (EPERM: a member of another user's, which no worker of ours is)
        return False
    return True


def _collect_group(pgid: int) -> None:
    """Collect the exited children of ours in group PGID: the first worker, and any other worker handed to
    this process as an orphan (a container's first process, or a subreaper, adopts them)."""
    while True:
        try:
            if os.waitpid(-pgid, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _reap_group(pid: int, wait_s: float = 5.0) -> None:
    """Stop and collect the workers _start_tree forked: the first (PID, the scanner's child, the group's
    leader) collected, the others (children of workers, collected by them or, once their parent is gone,
    by init) gone.  Those still there get SIGTERM, then after WAIT_S seconds SIGKILL, as _reap does."""
    try:
        _stop_group(pid, wait_s)
    finally:                                 # (a Ctrl-C meanwhile leaves no orphan adopter behind)
        if pid in _ADOPTED:
            _ADOPTED.discard(pid)
            if not _ADOPTED:
                procs.give_up_orphans()


def _stop_group(pid: int, wait_s: float) -> None:
    solo = []                                # (no group of its own: setpgid refused; the first worker alone)

    def gone() -> bool:
        _collected(pid)
        _collect_group(pid)
        if _group_left(pid):
            return False
        if not _collected(pid):
            solo.append(pid)
        return True

    def send(sig: int) -> None:
        try:
            os.killpg(pid, sig)
        except OSError:                      # (gone already: nothing to do)
            pass
    _escalate(gone, send, wait_s)
    if solo:
        _reap(solo, wait_s)


class _Pool:
    """Worker processes that run prepare_block and the rule searches ahead of the scanner.

    The scanner hands out the blocks of the plain inputs of PLAN (geometry.plain_inputs) as tickets, a window of
    WINDOW_PER_WORKER a worker ahead of the block it waits for while the results waiting are under READY_BYTES
    (_hand_out; with one worker, every other block is the scanner's own: _owner); a free worker takes the next
    (_claimed) and reads that block itself.  The scanner takes the results in block order, whichever worker sent
    each (a result that comes early waits, pickled, in `ready`), and checks path, block number, offset and size
    against its own read, so results merge exactly as a serial scan; on any mismatch or a dead worker it prepares
    the remaining blocks itself.  Blocks of other inputs are the scanner's."""

    def __init__(self, plan: Sequence[Tuple[str, List[Span]]], aset: AnchorSet, batchers, k: int,
                 rules: Sequence[Optional[MatchRule]] = ()):
        self.k = k
        self.conns: List[_Conn] = []
        self.pids: List[int] = []
        # what every worker needs for a big input's first lines, made once before the fork (each worker
        # made it again before its first block, which the scanner waits for): both sides of the rank
        # matchers (~1 ms, their regexes from triage's cache: recache.py).  regex's C engine and the patterns
        # kept (recache.rx_ready, ~2 ms; the `regex` package's import was ~10 ms) are the scanner's after the
        # fork, while the workers prepare their first blocks: a worker loads them when a block's hit lines are
        # to be searched, which a block of a production log mostly has none of (made before the fork, they
        # held every worker's start back)
        RANKS.starts, RANKS.kinds      # noqa: B018 - (looking them up builds them)
        prepare.warm_workers(batchers, k >= prepare.PARSE_MIN_WORKERS)
        # Ctrl-C and SIGTERM are held while forking: a forked child that got one before it reached
        # _worker would raise the parent's KeyboardInterrupt (cli's SIGTERM handler) out of fork()
        # and run on as a second copy of triage.  The child takes the default actions (procs.as_worker)
        # before it lets them in; the parent gets a held one when the workers have started.
        self.tickets: Optional[Tuple[int, int]] = None
        self.n_blocks = sum(len(spans) for _, spans in plan)
        self.window = max(1, WINDOW_PER_WORKER * k)
        self.next_ticket = 0            # the next block to hand out (or to leave to the scanner)
        self.ready: Dict[int, memoryview] = {}   # results that came before their turn, by block, pickled
        self.ready_bytes = 0
        self.counter = 0
        self.broken = False
        self.paths = {p for p, _ in plan}
        held = procs.hold_signals()
        try:
            try:
                self.tickets = os.pipe()
                pid, self.conns = _start_tree(_worker, (list(plan), aset, batchers, list(rules), self.tickets), k,
                                              adopt=False)
                self.pids.append(pid)
            finally:
                procs.release_signals(held)      # (a Ctrl-C held meanwhile is raised here)
            os.close(self.tickets[0])
            self.tickets = (-1, self.tickets[1])
            self.live = list(self.conns)
            self.poller = select.poll()
            for c in self.live:
                self.poller.register(c.fileno(), select.POLLIN)
            self._hand_out(0)
            _adopt(pid)
            recache.rx_ready()             # (regex's C engine and the kept patterns, the workers at work)
        except BaseException:               # the workers started so far are stopped and collected
            self.close()
            raise

    @staticmethod
    def cores() -> int:
        """The cores a scan may use: TRIAGE_JOBS (-j) as given, else procs.cores() up to MAX_WORKERS + 1."""
        env = os.environ.get("TRIAGE_JOBS", "")
        return int(env) if env.isdigit() and int(env) > 0 else min(procs.cores(), MAX_WORKERS + 1)

    @staticmethod
    def jobs(paths: Sequence[str], dense: bool = False, light: bool = False) -> int:
        """Workers to start: one per core beyond the scanner's own, none for small inputs (DENSE: inputs dense in
        hits, engine._dense: none under DENSE_POOL_MIN_BYTES); LIGHT (inputs light in work, engine._light): one
        fewer from READER_CORES cores on, its core the scanner's reader thread's."""
        least = min(POOL_MIN_BYTES, DENSE_POOL_MIN_BYTES) if dense else POOL_MIN_BYTES
        if not paths or not hasattr(os, "fork") or sum(_size(p) for p in paths) < least:
            return 0
        cores = _Pool.cores()
        # (every core but the scanner's; a light input's reader thread takes one more from READER_CORES on)
        k = max(0, cores - 1 - (light and cores >= READER_CORES))
        # (a dense input gains from workers that parse its hit lines too: with fewer, one worker's blocks
        # cost the scanner as much as its own, here a 4 MiB storm 0.70 -> 0.81 s)
        return 0 if dense and k < prepare.PARSE_MIN_WORKERS else k

    def get(self, path: str, bi: int, start: int, nbytes: int):
        """Block BI of PATH prepared (it starts at offset START of the input and is NBYTES long), or
        None when the scanner prepares it (its share, an input not plain, or a broken pool)."""
        if path not in self.paths:
            return None
        g = self.counter
        self.counter += 1
        if self.broken or _owner(g, self.k) < 0:
            return None
        self._hand_out(g)
        while g not in self.ready:
            if not self._take():
                self.broken = True
                return None
        data = self.ready.pop(g)
        self.ready_bytes -= len(data)
        try:
            msg = loads(data)
        except Exception:  # noqa: BLE001 - a broken worker's bytes: the scanner prepares the blocks itself
            self.broken = True
            return None
        if not isinstance(msg, tuple) or msg[:4] != (path, bi, start, nbytes):     # a clipped line, a file that
            self.broken = True                                                      # changed under us
            return None
        if len(msg) > 5 and msg[5]:
            recache.rx_merge(msg[5])
        return msg[4]

    def _hand_out(self, g: int) -> None:
        """Tickets for the blocks up to the window past block G (not the scanner's own: _owner); the ticket
        pipe closed once the last is out (each worker then stops when none is left)."""
        if self.tickets is None or self.tickets[1] < 0:
            return
        out = []
        while self.next_ticket < min(self.n_blocks, g + self.window) and (
                self.next_ticket <= g or self.ready_bytes < READY_BYTES):
            if _owner(self.next_ticket, self.k) >= 0:
                out.append(self.next_ticket.to_bytes(TICKET, "little"))
            self.next_ticket += 1
        try:
            for i in range(0, len(out), _TICKETS_A_WRITE):       # (whole tickets, PIPE_BUF bytes at most a write)
                os.write(self.tickets[1], b"".join(out[i:i + _TICKETS_A_WRITE]))
        except OSError:                 # (no worker left to read them)
            self.broken = True
        if self.next_ticket >= self.n_blocks or self.broken:
            self._close_tickets()

    def _close_tickets(self) -> None:
        if self.tickets is not None and self.tickets[1] >= 0:
            os.close(self.tickets[1])
            self.tickets = (-1, -1)

    def _take(self) -> bool:
        """Wait for a worker's next result and keep it in `ready`; False when none can come any more: a worker
        failed, or went before every ticket was out (it may have taken one), or none is left, or a result came
        that no ticket out asked for (a block the scanner has taken, one not handed out, one come twice: the
        block it stands for would never come)."""
        while self.live:
            for c in self._readable():
                try:
                    tag, data = c.recv_tagged()
                except (EOFError, OSError):
                    self.live.remove(c)
                    self.poller.unregister(c.fileno())
                    if self.tickets is not None and self.tickets[1] >= 0:
                        return False
                    continue
                if tag < self.counter - 1 or tag >= self.next_ticket or tag in self.ready or _owner(tag, self.k) < 0:
                    return False            # (the error message's ERROR_TAG among them)
                self.ready[tag] = data
                self.ready_bytes += len(data)
                return True
        return False

    def _readable(self) -> List[_Conn]:
        """The workers' pipes with something to read (a message, or the end), waiting for one (poll: no bound on
        the numbers of the descriptors, as select's 1024)."""
        by_fd = {c.fileno(): c for c in self.live}
        while True:
            ready = [by_fd[fd] for fd, _ in self.poller.poll() if fd in by_fd]
            if ready:
                return ready

    def close(self) -> None:
        if self.tickets is not None and self.tickets[0] >= 0:      # (a start that failed before it closed it)
            os.close(self.tickets[0])
            self.tickets = (-1, self.tickets[1])
        self._close_tickets()
        for c in self.conns:        # a worker still sending gets a broken pipe and exits by itself
            c.close()
        for pid in self.pids:       # (the group's leader: every worker is of its group)
            _reap_group(pid)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0

