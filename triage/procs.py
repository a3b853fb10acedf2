"""What every worker process of triage shares, whichever pool made it (the scan's block workers,
`triage fleet`'s job workers): how many cores it may use, and its signals."""
from __future__ import annotations

import os
import signal
import sys
from typing import Any, List, Optional, Tuple

MAX_DEPTH = 64             # cgroup levels read at most (real hierarchies are a handful deep)
_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


def cores() -> int:
    """The cores this process may use: those it may run on (its affinity), at most as many as its
    cgroup's CPU quota allows (a container limited to 2 CPUs on a 200-core node: 2), at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    q = cpu_quota()
    return max(1, min(n, q) if q else n)


def cpu_quota(root: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup") -> Optional[int]:
    """The CPUs this process's cgroup quota allows, rounded up (None: no quota, or none readable):
    cgroup v2's `cpu.max` ("QUOTA PERIOD" or "max PERIOD"), else v1's `cpu.cfs_quota_us` /
    `cpu.cfs_period_us` (a quota of -1: none), of its cgroup and every cgroup above it.  The smallest
    wins.  A path through ".." (a cgroup outside this namespace's root) is none readable."""
    paths = _own_cgroups(own)
    if paths is None:
        return None
    v2, v1 = paths
    found: List[int] = []
    if os.path.exists(os.path.join(root, "cgroup.controllers")):        # the v2 hierarchy
        for d in _up(root, v2):
            q = _ratio(os.path.join(d, "cpu.max"), None)
            if q is not None:
                found.append(q)
    else:
        for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
            for d in _up(os.path.join(root, mount), v1):
                q = _ratio(os.path.join(d, "cpu.cfs_quota_us"), os.path.join(d, "cpu.cfs_period_us"))
                if q is not None:
                    found.append(q)
    return min(found) if found else None


def _up(mount: str, path: str) -> List[str]:
    """The directories of cgroup PATH under MOUNT and of every cgroup above it, itself first."""
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts or len(parts) > MAX_DEPTH:
        return []
    return [os.path.join(mount, *parts[:i]) for i in range(len(parts), -1, -1)]


def _own_cgroups(own: str) -> Optional[Tuple[str, str]]:
    """This process's cgroup paths from /proc/self/cgroup: (v2's, v1's cpu controller's)."""
    v2, v1 = "", ""
    try:
        with open(own, "rb") as f:
            text = os.fsdecode(f.read(65536))         # a path is bytes: as the file system names it
    except OSError:
        return None
    for line in text.split("\n"):
        hier, _, rest = line.partition(":")
        ctl, _, path = rest.partition(":")
        if hier == "0" and not ctl:
            v2 = path
        elif "cpu" in ctl.split(","):
            v1 = path
    return v2, v1


def _ratio(quota_file: str, period_file: Optional[str]) -> Optional[int]:
    """ceil(quota / period) from a v2 `cpu.max` (PERIOD_FILE None) or v1's two files; None: no quota."""
    try:
        with open(quota_file, encoding="ascii") as f:
            words = f.read(256).split()
        if period_file is not None:
            with open(period_file, encoding="ascii") as f:
                words = words[:1] + f.read(256).split()[:1]
        quota, period = int(words[0]), int(words[1])
    except (OSError, ValueError, IndexError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, -(-quota // period))


def hold_signals() -> Any:
    """Block Ctrl-C and SIGTERM in this thread (around a fork); release_signals(what this returned)."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)


def release_signals(held: Any) -> None:
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def as_worker() -> None:
    """A forked worker dies of SIGTERM and ignores Ctrl-C (its parent stops it), whatever handlers the
    parent had installed (the CLI's SIGTERM handler raises KeyboardInterrupt: a worker that inherited it
    would print a traceback when stopped, or, with a handler that returns, never stop); then it lets
    the signals held around the fork in."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)


_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


def adopt_orphans() -> bool:
    """Make this process the one its orphaned descendants are handed to (Linux's child subreaper), so that
    a worker whose parent worker is gone is collected here, not by an init that may collect late (issue 44:
    the scan's workers fork each other).  True when this call turned it on (give_up_orphans undoes it);
    False when it was on already or cannot be (not Linux, no libc): then orphans go to init, as before."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0 or was.value:
            return False
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError, ImportError):
        return False


def give_up_orphans() -> None:
    """Undo adopt_orphans (when it returned True)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass
