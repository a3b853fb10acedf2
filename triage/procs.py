"""What every worker process of triage shares, whichever pool made it (the scan's block workers,
`triage fleet`'s job workers): how many cores it may use, and its signals."""
from __future__ import annotations

import os
import signal
from typing import Any

_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


def cores() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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
