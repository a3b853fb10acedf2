"""The scan's worker processes (triage/scan/pool.py) without multiprocessing: forked by the scanner,
each sending its results over its own pipe as length-prefixed pickles; every worker is collected when
the scan ends, however it ends (done, interrupted, a worker killed), and none flushes a copy of the
scanner's buffered output.  The merge itself (the same report as a serial scan) is tested in
test_scan_blocks.py."""
import os
import signal
import subprocess
import sys
import threading

import pytest

from triage.scan import pool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LOG = os.path.join(HERE, "fixtures", "logs", "real", "gpu", "illegal_memory_access.log")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")


def _gone(pid):
    """PID exited and was collected (no zombie is left: kill(pid, 0) fails once it is reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _group_gone(pgid):
    """No process of the workers' group is left (exited and collected: a zombie still counts)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


class Started(list):
    """The process groups of the workers the scans start (their first worker's pid), and how many each has."""
    workers = 0

    def all_gone(self):
        return all(_gone(pid) and _group_gone(pid) for pid in self)


@pytest.fixture
def started(monkeypatch):
    monkeypatch.setattr(pool, "POOL_MIN_BYTES", 0)
    monkeypatch.setenv("TRIAGE_JOBS", "3")                 # two workers
    out = Started()
    real = pool._start_tree

    def start(target, args, k, **kw):
        pid, conns = real(target, args, k, **kw)
        out.append(pid)
        out.workers += len(conns)
        return pid, conns
    monkeypatch.setattr(pool, "_start_tree", start)
    return out


def _scan(block_size=256):
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    return Engine(load_all()).scan_paths([LOG], block_size=block_size)


def test_messages_of_any_size_cross_the_pipe_whole():
    """Bigger than a pipe's buffer (64 KiB), empty, and several in a row: each arrives whole, in order;
    a writer gone is EOFError, never a half message."""
    msgs = [b"x" * (3 << 20), (), {"a": [1, 2.5, None]}, "é" * 70000]

    def writer(conn, items, w, k):
        for m in items:
            conn.send(m)
    pid, (conn,) = pool._start_tree(writer, (msgs,), 1)
    try:
        assert [conn.recv() for _ in msgs] == msgs
        with pytest.raises(EOFError):
            conn.recv()
    finally:
        conn.close()
        pool._reap_group(pid)
    assert _gone(pid)


def test_a_worker_that_ignores_sigterm_is_killed_and_collected():
    import time

    pids = []
    for _ in range(2):                  # (the scanner's own children, as when they have no group: _reap)
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                time.sleep(60)
            finally:
                os._exit(0)
        pids.append(pid)
    time.sleep(0.2)
    t = time.monotonic()
    pool._reap(pids, wait_s=0.3)
    assert time.monotonic() - t < 5 and all(_gone(pid) for pid in pids)


def test_ctrl_c_while_the_workers_start_stops_those_started(started, monkeypatch):
    """A Ctrl-C arriving while the workers are forked is held until they all are, then raised: the
    workers started are stopped and collected (no zombie, no orphan scanning on)."""
    real = pool._start_tree

    def start(*a, **kw):
        out = real(*a, **kw)
        if len(started) == 1:               # (the fixture's wrapper recorded the group already)
            # to this thread (the scanner's, which holds it): a process-wide kill may be taken by
            # another thread of a multi-threaded process (pytest-xdist's) and raised at once
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return out
    monkeypatch.setattr(pool, "_start_tree", start)
    # Ctrl-C must raise here: a pytest started in the background of a non-interactive shell (`nohup`,
    # `cmd &`) inherits SIGINT ignored, and Python then leaves it ignored (this test failed so)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _scan()
    finally:
        signal.signal(signal.SIGINT, before)
    assert started.workers == 2 and started.all_gone()


@pytest.mark.parametrize("sent", [(100).to_bytes(8, "little") + b"only part", b"\x01\x02\x03",
                                  (1 << 62).to_bytes(8, "little") + b"garbage"])
def test_a_message_cut_short_or_announced_past_any_size_is_eof(sent):
    """Half a message (a worker killed while it sent), or a length no message of ours has: EOFError,
    which the scanner takes for a broken pool (it prepares the blocks itself), never a MemoryError."""
    r, w = os.pipe()
    os.write(w, sent)
    os.close(w)
    conn = pool._Conn(r, False)
    with pytest.raises(EOFError):
        conn.recv()
    conn.close()


def test_every_worker_is_collected_after_a_scan(started):
    r = _scan()
    assert r.matches and started.workers == 2
    assert started.all_gone()


def test_an_interrupted_scan_stops_and_collects_its_workers(started, monkeypatch):
    """Ctrl-C (or the CLI's SIGTERM, raised as KeyboardInterrupt) in the middle of the scan: the
    workers, still sending or not, are stopped and collected before the interrupt goes on."""
    from triage.scan import blockscan
    calls = []
    real = blockscan._InputScan.block

    def block(self, *a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *a, **k)
    monkeypatch.setattr(blockscan._InputScan, "block", block)
    with pytest.raises(KeyboardInterrupt):
        _scan(block_size=256)
    assert started.workers == 2 and started.all_gone()


def test_a_worker_killed_mid_scan_leaves_its_blocks_to_the_scanner(started, monkeypatch):
    """A worker that dies (the OOM killer, say) holding the ticket of a block it took (_claimed): that block's
    result never comes, the scanner prepares the rest itself and the report is the serial scan's."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    real_worker = pool._worker

    def dying(conn, plan, aset, batchers, rules, tickets, w, k):
        # (in the worker's process: the scanner's _claimed is not this one) the worker that takes the first block,
        # whichever it is, dies holding its ticket, before any result is sent -- a worker picked by number may take
        # no block at all when the others are quicker to start (issue 44's seventh CI)
        real_claimed = pool._claimed

        def claimed(t):
            for g in real_claimed(t):
                if g == 0:
                    os.kill(os.getpid(), signal.SIGKILL)
                yield g
        pool._claimed = claimed
        real_worker(conn, plan, aset, batchers, rules, tickets, w, k)
    monkeypatch.setattr(pool, "_worker", dying)
    from triage.scan import engine
    parent, calls = os.getpid(), []
    real_prepare = engine.prepare_gapless
    monkeypatch.setattr(engine, "prepare_gapless", lambda *a, **k: calls.append(os.getpid()) or real_prepare(*a, **k))
    r = _scan(block_size=256)
    assert calls and set(calls) == {parent}           # the scanner prepared the dead worker's blocks (and the rest)
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    serial = Engine(load_all()).scan_paths([LOG], block_size=256)
    assert [(m.pattern.id, m.line.lineno, m.line.rank) for m in r.matches] == \
        [(m.pattern.id, m.line.lineno, m.line.rank) for m in serial.matches]
    assert started.all_gone()


def test_workers_flush_no_copy_of_the_scanners_output_and_import_no_multiprocessing(tmp_path):
    """What the scanner had written but not flushed when it forked is printed once (a worker leaves by
    os._exit, never flushing its copy of it); and a pooled scan imports neither multiprocessing nor
    pickle.py (~11 ms: socket, the pure-Python pickler, ... on every big input)."""
    probe = (
        "import os, sys\n"
        "from triage.scan import pool\n"
        "pool.POOL_MIN_BYTES = 0\n"
        "os.environ['TRIAGE_JOBS'] = '3'\n"
        "from triage.scan.engine import Engine\n"
        "from triage.patterns import load_all\n"
        "pats = load_all()\n"                         # (a cold cache: the catalog is pickled, by _pickle)
        "sys.stdout.write('BEFORE-THE-FORK\\n')\n"
        f"r = Engine(pats).scan_paths([{LOG!r}], block_size=256)\n"
        "print(bool(r.matches), sorted(m for m in sys.modules if m.startswith('multiprocessing') or m == 'pickle'))\n")
    import site                     # -S: only what triage imports (no .pth file's), site-packages on the path
    path = [ROOT] + site.getsitepackages() + [site.getusersitepackages()]
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(path))
    r = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "BEFORE-THE-FORK\nTrue []\n"


def test_the_workers_are_forked_with_what_every_one_needs_made(tmp_path):
    """Both sides of the rank matchers are made before the fork (each worker made them again, before its first
    block, which the scanner waits for); regex's C engine and the patterns kept (recache.rx_ready) are the
    scanner's once the workers run -- the `regex` package (~10 ms of import) not at all where the cache holds what
    the scan compiles (a worker loads the engine when it has hit lines to search: a production log's blocks mostly
    have none).  In a fresh interpreter, triage's caches installed as the CLI has them: this one has them from
    other tests."""
    probe = (
        "import os, sys\n"
        "import triage.recache as R\nR.install()\n"
        "from triage.scan import pool\nfrom triage.inputs import ranks\n"
        "pool.POOL_MIN_BYTES = 0\n"
        "os.environ['TRIAGE_JOBS'] = '3'\n"
        "def rx():\n"
        "    return ('regex._regex' in sys.modules, 'regex._main' in sys.modules)\n"
        "real, at_fork, started = pool._start_tree, [], []\n"
        "def start(*a, **kw):\n"
        "    at_fork.append((rx(), {'starts', 'kinds'} <= set(vars(ranks.RANKS))))\n"
        "    return real(*a, **kw)\n"
        "pool._start_tree = start\n"
        "init = pool._Pool.__init__\n"
        "def pool_init(self, *a, **k):\n"
        "    init(self, *a, **k)\n"
        "    started.append(rx())\n"
        "pool._Pool.__init__ = pool_init\n"
        "from triage.scan.engine import Engine\n"
        "from triage.patterns import load_all\n"
        "pats = load_all()\n"
        "before = (rx(), {'starts', 'kinds'} <= set(vars(ranks.RANKS)))\n"
        f"Engine(pats).scan_paths([{LOG!r}], block_size=256)\n"
        "print(before, at_fork, started, rx())\n")
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    out = []
    for _ in range(2):              # (the first run fills the caches: the catalog's validation imports regex)
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=120)
        out.append(r.stdout.strip())
    assert out[0].endswith("(True, True)"), out[0] + r.stderr
    assert out[1] == ("((False, False), False) [((False, False), True)] [(True, False)] (True, False)"), \
        out[1] + r.stderr


def _hello(conn, tag, w, k):
    conn.send((tag, w, k, os.getpid(), os.getpgid(0)))


@pytest.mark.parametrize("k", [1, 2, 5, 15])
def test_the_workers_fork_each_other_each_with_its_own_pipe(k):
    """The scanner forks the first worker only, the workers fork the rest (issue 44): K workers, each its
    index on its own pipe, all of one process group led by the first, none left once collected."""
    pid, conns = pool._start_tree(_hello, ("hi",), k)
    try:
        got = [c.recv() for c in conns]
        for c in conns:
            with pytest.raises(EOFError):
                c.recv()
    finally:
        for c in conns:
            c.close()
        pool._reap_group(pid)
    assert [g[:3] for g in got] == [("hi", w, k) for w in range(k)]
    assert got[0][3] == pid and len({g[3] for g in got}) == k and {g[4] for g in got} == {pid}
    assert _gone(pid) and _group_gone(pid)


def test_a_stuck_tree_of_workers_is_stopped_and_collected():
    """Workers that never leave (blocked, SIGTERM ignored): the group gets SIGTERM, then SIGKILL, and is gone."""
    import time

    def stubborn(conn, w, k):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        conn.send(w)
        time.sleep(60)
    pid, conns = pool._start_tree(stubborn, (), 4)
    assert sorted(c.recv() for c in conns) == [0, 1, 2, 3]
    t = time.monotonic()
    for c in conns:
        c.close()
    pool._reap_group(pid, wait_s=0.3)
    assert time.monotonic() - t < 5 and _group_gone(pid)


def test_workers_that_cannot_fork_theirs_leave_those_blocks_to_the_scanner(started, monkeypatch):
    """No process left to make in a worker (EAGAIN): its subtree's pipes have no writer, the scanner reads
    their end and prepares those blocks itself; the report is the serial scan's."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    monkeypatch.setenv("TRIAGE_JOBS", "5")
    scanner, real_fork = os.getpid(), os.fork

    def fork():
        if os.getpid() != scanner:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_fork()
    monkeypatch.setattr(os, "fork", fork)
    r = _scan(block_size=256)
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    serial = Engine(load_all()).scan_paths([LOG], block_size=256)
    assert [(m.pattern.id, m.line.lineno, m.line.rank) for m in r.matches] == \
        [(m.pattern.id, m.line.lineno, m.line.rank) for m in serial.matches]
    assert started.workers == 4 and started.all_gone()


def test_workers_without_a_group_of_their_own_are_still_collected(monkeypatch):
    """setpgid refused (a sandbox that forbids it): the workers stay in the scanner's group, and the first one,
    the scanner's child, is still stopped and collected."""
    import time

    def stubborn(conn, w, k):
        signal.signal(signal.SIGTERM, signal.SIG_IGN) if w else None
        conn.send(w)
        time.sleep(60)

    def refused(*a):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "setpgid", refused)
    pid, conns = pool._start_tree(stubborn, (), 1)
    assert conns[0].recv() == 0
    conns[0].close()
    t = time.monotonic()
    pool._reap_group(pid, wait_s=0.3)
    assert time.monotonic() - t < 5 and _gone(pid)


@pytest.mark.parametrize("jobs", ["3", "6"])
def test_a_free_worker_takes_the_next_block_and_results_merge_in_block_order(started, monkeypatch, tmp_path, jobs):
    """Blocks are handed out as tickets, each taken by the first worker free for one (pool._claimed): a worker
    slowed down takes fewer blocks and the others take the rest; every block's result comes once, some before
    their turn (they wait, pickled, in the scanner), and the report is the serial scan's."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    monkeypatch.setenv("TRIAGE_JOBS", jobs)
    log = _many_blocks(tmp_path)
    real_worker = pool._worker

    def slow(conn, plan, aset, batchers, rules, tickets, w, k):
        if w == 0:          # (in the worker's process)
            import time
            real_prepare = pool.prepare.prepare_block
            first = [0.3]   # (its first block held longer: the others' later results then come before its turn,
            #                 however a loaded host schedules the workers -- a full suite on 2 cores once had none)

            def prepare_block(*a, **kw):
                # (0.12 s a block: at 0.02 a fresh-clone CI run on a loaded 2-core machine, its other workers as slow
                # with five of them, once had two lanes of 49 blocks and one of 93; at 0.06 a full suite run beside a
                # benchmark on 2 cores once had lanes of 43, 63 and 85)
                time.sleep(first.pop() if first else 0.12)
                return real_prepare(*a, **kw)
            pool.prepare.prepare_block = prepare_block
        real_worker(conn, plan, aset, batchers, rules, tickets, w, k)
    monkeypatch.setattr(pool, "_worker", slow)
    came = []                       # (the pipe a result came on, its block), in the order they came
    real_recv = pool._Conn.recv_tagged
    monkeypatch.setattr(pool._Conn, "recv_tagged", lambda self: (lambda t: came.append((self.fileno(), t[0])) or t)(
        real_recv(self)))
    early = []                      # results kept before their turn, as the scanner asked for each block
    real_get = pool._Pool.get
    monkeypatch.setattr(pool._Pool, "get", lambda self, *a: early.append(len(self.ready)) or real_get(self, *a))
    r = _scan_log(log)
    blocks = [g for _, g in came]
    assert sorted(blocks) == list(range(len(blocks))) and len(blocks) > 100     # each block once
    assert any(early), "no result came before its turn"
    per_pipe = {}
    for fd, _ in came:
        per_pipe[fd] = per_pipe.get(fd, 0) + 1
    counts = sorted(per_pipe.values())
    # the slow one took few (a worker forked late on a loaded machine may find no ticket left: none at all)
    assert 2 <= len(per_pipe) <= int(jobs) - 1 and counts[0] < counts[-1] / 2, per_pipe
    assert started.all_gone()
    _serial_is(r, log, monkeypatch)


def _many_blocks(tmp_path):
    """A log of ~190 blocks of 4 KiB (synthetic layout: NCCL's INFO line of a collective on 8 ranks, then the
    real log's lines)."""
    log = tmp_path / "job.log"
    with open(LOG, encoding="utf-8") as f:
        log.write_text("".join(f"[rank{i % 8}]:node-0:2431{i % 8}:2431{i % 8} [{i % 8}] NCCL INFO AllReduce: opCount "
                               f"{i:x} sendbuff 0x7f3ac1c00000 recvbuff 0x7f3ac1c00000 count 16777216 datatype 7 op 0 "
                               f"root 0 comm 0x55d0c8a0 [nranks=8] stream 0x55d0cfb0\n" for i in range(4000))
                       + f.read(), encoding="utf-8")
    return log


def test_the_results_waiting_in_the_scanner_are_bounded(started, monkeypatch, tmp_path):
    """At most the window's tickets are out past the block the scanner waits for (pool.WINDOW_PER_WORKER a
    worker), so at most that many results wait for their turn; with any result waiting counted as too much
    (pool.READY_BYTES) the scan still ends, and its report is the serial scan's."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    monkeypatch.setenv("TRIAGE_JOBS", "5")
    monkeypatch.setattr(pool, "READY_BYTES", 1)
    monkeypatch.setattr(pool, "WINDOW_PER_WORKER", 2)
    log = _many_blocks(tmp_path)
    waiting = []
    real_get = pool._Pool.get
    monkeypatch.setattr(pool._Pool, "get", lambda self, *a: waiting.append(len(self.ready)) or real_get(self, *a))
    r = _scan_log(log)
    assert len(waiting) > 100 and max(waiting) <= 8, max(waiting)
    assert started.all_gone()
    _serial_is(r, log, monkeypatch)


def _handed(k, n_blocks, window, ready_bytes=0):
    """A pool's ticket dealer alone (no worker): its pipe, and a function that hands out up to block G and
    says which tickets went out (None once the pipe is closed and empty)."""
    p = object.__new__(pool._Pool)
    p.k, p.n_blocks, p.window, p.next_ticket, p.ready_bytes, p.broken = k, n_blocks, window, 0, ready_bytes, False
    r, w = os.pipe()
    p.tickets = (-1, w)

    def hand(g):
        p._hand_out(g)
        os.set_blocking(r, False)
        try:
            data = os.read(r, 1 << 16)
        except BlockingIOError:
            return []
        if not data:
            return None
        return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
    return p, hand


def test_the_tickets_handed_out_follow_the_scanner():
    """pool._Pool._hand_out: the window past the block waited for; none past it while the results waiting are
    over READY_BYTES (the block waited for itself always); with one worker, every other block is the scanner's
    own; the pipe closed once the last is out (a worker then stops when none is left)."""
    p, hand = _handed(3, 40, 6)
    assert hand(0) == [0, 1, 2, 3, 4, 5]
    assert hand(1) == [6] and hand(1) == []
    p.ready_bytes = pool.READY_BYTES
    assert hand(5) == [] and hand(8) == [7, 8]            # (over the bound: up to the block waited for only)
    p.ready_bytes = 0
    assert hand(9) == [9, 10, 11, 12, 13, 14]
    assert hand(39) == list(range(15, 40)) and hand(39) is None      # all out: the pipe closed
    _, hand1 = _handed(1, 10, 4)
    assert hand1(0) == [0, 2] and hand1(4) == [4, 6] and hand1(9) == [8] and hand1(9) is None


def _scan_log(log, within=0):
    """LOG's block scan in 4 KiB blocks; WITHIN > 0: a scan that would hang fails after that many seconds instead
    (SIGALRM in this process's main thread)."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    if not within:
        return Engine(load_all()).scan_paths([str(log)], block_size=4096)

    def ring(*_):
        raise TimeoutError(f"no end after {within} s")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(within)
    try:
        return Engine(load_all()).scan_paths([str(log)], block_size=4096)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _serial_is(r, log, monkeypatch):
    """R, a pooled scan of LOG, is its serial scan."""
    monkeypatch.setenv("TRIAGE_JOBS", "1")
    serial = _scan_log(log)
    assert [(m.pattern.id, m.line.lineno, m.line.rank) for m in r.matches] == \
        [(m.pattern.id, m.line.lineno, m.line.rank) for m in serial.matches]
    assert r.lines == serial.lines and r.matches


def _open_fds():
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None


def test_a_pool_that_cannot_start_leaves_the_scan_to_the_scanner_and_no_descriptor_behind(started, monkeypatch,
                                                                                           tmp_path):
    """No process left to make (EAGAIN) when the scanner forks its first worker: the scan is the scanner's alone
    (it was a traceback), with the serial result, and the pipes made for the pool are closed (the ticket pipe's
    read end was left open, review of issue 44's sixth pass)."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    log = _many_blocks(tmp_path)
    _scan_log(log)      # (whatever a first scan opens for good)

    def fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(os, "fork", fork)
    before, workers = _open_fds(), started.workers
    for _ in range(3):
        r = _scan_log(log)
    assert _open_fds() == before and started.workers == workers
    monkeypatch.undo()
    _serial_is(r, log, monkeypatch)


def test_a_scan_with_more_than_1024_descriptors_open(started, monkeypatch, tmp_path):
    """The scanner waits on its workers' pipes with poll: select() refused a descriptor numbered 1024 or more
    (a program that embeds triage with many files open; review of issue 44's sixth pass)."""
    import resource
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1400
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip("fewer descriptors allowed than the test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    held = []
    try:
        while len(held) < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        log = _many_blocks(tmp_path)
        r = _scan_log(log)
        assert started.workers
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    _serial_is(r, log, monkeypatch)


@pytest.mark.parametrize("lie", ["next", "twice", "none"])
def test_a_result_no_ticket_asked_for_breaks_the_pool_not_the_scan(started, monkeypatch, tmp_path, lie):
    """A worker that sends a block's result under another block's number (one not handed out yet, one the
    scanner took already, or the same twice): the block asked for would never come -- the scan waited for it for
    ever (review of issue 44's sixth pass); now the pool is broken, the scanner prepares the rest itself, and
    the result is the serial scan's."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    log = _many_blocks(tmp_path)
    real_worker = pool._worker

    def liar(conn, plan, aset, batchers, rules, tickets, w, k):
        class Lying:
            sent = 0

            def send(self, msg, tag=0):
                Lying.sent += 1
                if w == 0 and Lying.sent == 3:
                    if lie == "twice":
                        conn.send(msg, tag)
                    tag = tag + 10_000 if lie == "next" else (0 if lie == "none" else tag)
                conn.send(msg, tag)

            def close(self):
                conn.close()
        real_worker(Lying(), plan, aset, batchers, rules, tickets, w, k)
    monkeypatch.setattr(pool, "_worker", liar)
    r = _scan_log(log, within=60)
    assert started.all_gone()
    _serial_is(r, log, monkeypatch)


def test_a_window_of_no_block_still_hands_out_the_block_waited_for(started, monkeypatch, tmp_path):
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    monkeypatch.setattr(pool, "WINDOW_PER_WORKER", 0)
    log = _many_blocks(tmp_path)
    r = _scan_log(log, within=60)
    _serial_is(r, log, monkeypatch)


def test_a_header_announcing_gigabytes_allocates_none_of_them():
    """A broken worker's header announces 8 GiB and sends 10 bytes: EOFError, without a buffer of the announced
    size made first (the sixth pass's reader made one: 6 GB of memory, review)."""
    import resource
    r, w = os.pipe()
    os.write(w, (8 << 30).to_bytes(8, "little") + b"x" * 10)
    os.close(w)
    conn = pool._Conn(r, False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(EOFError):
        conn.recv()
    conn.close()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000     # KiB (Linux)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's")
def test_the_scanner_adopts_its_workers_orphans_once_they_have_tickets(started, monkeypatch):
    """The scanner becomes its workers' orphans' adopter (pool._adopt) after it handed out their first tickets
    (issue 44: ctypes' import and prctl held every worker's first block back), before any worker ends; it gives
    the role up when the workers are collected."""
    import ctypes
    order = []
    real_hand_out, real_adopt = pool._Pool._hand_out, pool._adopt

    def hand_out(self, g):
        order.append("tickets")
        return real_hand_out(self, g)

    def adopt(pid):
        libc = ctypes.CDLL(None)
        was = ctypes.c_int(0)
        libc.prctl(37, ctypes.byref(was), 0, 0, 0)          # PR_GET_CHILD_SUBREAPER
        order.append(("adopt", was.value, pool._collected(pid)))
        real_adopt(pid)
        libc.prctl(37, ctypes.byref(was), 0, 0, 0)
        order.append(("adopted", was.value, pid in pool._ADOPTED))
    monkeypatch.setattr(pool._Pool, "_hand_out", hand_out)
    monkeypatch.setattr(pool, "_adopt", adopt)
    r = _scan()
    assert r.matches and started.workers == 2
    assert order[0] == "tickets" and order[1] == ("adopt", 0, False) and order[2] == ("adopted", 1, True)
    assert not pool._ADOPTED and started.all_gone()
    was = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(37, ctypes.byref(was), 0, 0, 0)
    assert was.value == 0


def test_a_pools_blocks_are_bigger_where_the_scanner_only_takes_results():
    """With workers to spare (prepare.PARSE_MIN_WORKERS: the scanner prepares no block) a block is up to
    MAX_POOL_BLOCK (the scanner's work is per block); with fewer, up to sources.BLOCK_SIZE; never under
    MIN_POOL_BLOCK, and every process has BLOCKS_PER_PROCESS blocks at least where the size allows."""
    from triage.inputs.sources import BLOCK_SIZE
    from triage.scan import prepare
    assert pool.MAX_POOL_BLOCK > BLOCK_SIZE
    for total in (16 << 20, 64 << 20, 256 << 20, 1 << 30, 8 << 30):
        for k in range(1, 16):
            bs = pool.pool_block_size(total, k)
            most = pool.MAX_POOL_BLOCK if k >= prepare.PARSE_MIN_WORKERS else BLOCK_SIZE
            assert pool.MIN_POOL_BLOCK <= bs <= most and bs % (64 << 10) == 0
            assert bs == pool.MIN_POOL_BLOCK or total // bs >= pool.BLOCKS_PER_PROCESS * (k + 1)
    assert pool.pool_block_size(1 << 30, 15) == pool.MAX_POOL_BLOCK
    assert pool.pool_block_size(1 << 30, 1) == BLOCK_SIZE


def test_a_worker_sends_back_only_the_regex_code_it_kept_itself(tmp_path):
    """What the scanner kept before the fork (a cold cache: the catalog's validation keeps ~200 patterns) is its own:
    a worker sends back only what it compiled itself (recache.rx_taken at its start), not ~180 KB each."""
    probe = (
        "import os, sys\n"
        "import triage.recache as R\nR.install()\n"
        "from triage.scan import pool\n"
        "pool.POOL_MIN_BYTES = 0\n"
        "os.environ['TRIAGE_JOBS'] = '4'\n"
        "sent, before = [], []\n"
        "real_merge, real_start = R.rx_merge, pool._start_tree\n"
        "def merge(entries):\n"
        "    sent.append(set(entries))\n"
        "    real_merge(entries)\n"
        "def start(*a, **kw):\n"
        "    before.append(set(R._rx_added))\n"
        "    return real_start(*a, **kw)\n"
        "R.rx_merge, pool._start_tree = merge, start\n"
        "from triage.scan.engine import Engine\n"
        "from triage.patterns import load_all\n"
        "pats = load_all()\n"
        f"Engine(pats).scan_paths([{LOG!r}], block_size=256)\n"
        "print(len(before[0]), sum(len(s & before[0]) for s in sent))\n")
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    kept, resent = map(int, r.stdout.split())
    assert kept >= 100 and resent == 0, r.stdout + r.stderr
