"""The regexes a big input's scan will compile, compiled ahead while the scanner waits for its workers.

A run compiles its regexes on first use (rx.LazyRx, lazyre.lazy_re): the rules a hit line holds the
literals of, the config lines' and the error blocks' regexes, then the verdict's and the report's (~40 of
them, ~0.3 ms each with `regex`, on the scanner's thread: issue 44, the scanner's thread being the critical
path of a scan with many workers).  Each run notes the sources it compiled (`note`); a run with workers
saves them in the cache directory at its end (`save`, only when they changed) and, the next time, compiles
the saved ones in a thread while its scanner waits on the workers' first results (`start`): a compile
looked up there again costs a dictionary look-up (both engines keep the patterns they compiled).  The
thread holds the GIL while it compiles, as the scanner would: it only moves the work into the scanner's
idle time.  A source that does not compile any more is skipped; the list is bounded (MAX_SOURCES,
MAX_SOURCE chars each) and read back only as cachefiles reads any cache file."""
from __future__ import annotations

import json
import os
import threading
from typing import Any, List, Optional, Tuple, Union

from . import cachefiles

NAME = "regex-warm.json"
# the flags a saved source may carry, by engine: none that prints (DEBUG) or that no run uses (LOCALE, TEMPLATE).
# re: IGNORECASE, MULTILINE, DOTALL, UNICODE, VERBOSE, ASCII; regex: those and V0, V1, BESTMATCH, ENHANCEMATCH,
# FULLCASE, POSIX, REVERSE, WORD
SAFE_FLAGS = {"re": 0x2 | 0x8 | 0x10 | 0x20 | 0x40 | 0x100,
              "regex": 0x2 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80 | 0x2000 | 0x100 | 0x1000 | 0x8000 | 0x4000 | 0x10000
              | 0x400 | 0x800}
MAX_SOURCES = 256          # sources kept (the first compiled in a run)
MAX_SOURCE = 4096          # characters of one source kept (a longer one is not warmed)
MAX_BYTES = 1 << 20        # the file read back at most

# (engine, source, flags, bytes source) of each regex compiled in this process, in order
_noted: List[Tuple[str, str, int, bool]] = []
_seen: set = set()
_loaded: Optional[List[Tuple[str, str, int, bool]]] = None


def note(engine: str, pattern: Union[str, bytes], flags: int) -> None:
    """A regex of ENGINE ("re" or "regex") compiled from PATTERN with FLAGS in this process."""
    if len(_noted) >= MAX_SOURCES or len(pattern) > MAX_SOURCE:
        return
    is_bytes = isinstance(pattern, bytes)
    try:
        source = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
        key = (engine, source, int(flags), is_bytes)
    except (TypeError, ValueError):
        return
    if key not in _seen:
        _seen.add(key)
        _noted.append(key)


def _read() -> List[Tuple[str, str, int, bool]]:
    raw = cachefiles.read_own(NAME, MAX_BYTES)
    out: List[Tuple[str, str, int, bool]] = []
    try:
        for e in json.loads(raw.decode("utf-8")) if raw else []:
            if (isinstance(e, list) and len(e) == 4 and e[0] in ("re", "regex") and isinstance(e[1], str)
                    and type(e[2]) is int and not e[2] & ~SAFE_FLAGS[e[0]] and isinstance(e[3], bool)
                    and len(e[1]) <= MAX_SOURCE):
                out.append((e[0], e[1], e[2], e[3]))
    except (ValueError, UnicodeDecodeError, TypeError):
        return []
    return out[:MAX_SOURCES]


def _compile_all(items: List[Tuple[str, str, int, bool]], stop: threading.Event) -> None:
    import re

    for engine, source, flags, is_bytes in items:
        if stop.is_set():
            return
        try:
            if engine == "regex":
                _regex_compile(source.encode("latin-1") if is_bytes else source, flags)
            elif is_bytes:
                re.compile(source.encode("latin-1"), flags)
            else:
                re.compile(source, flags)
        except Exception:  # noqa: BLE001 - a source that no longer compiles (another version): skipped
            continue


def _regex_compile(pattern: Any, flags: int) -> None:
    """`regex.compile(PATTERN, FLAGS)`: made from triage's cache by regex's C engine where it holds it
    (recache.rx_cached: no import of the package), else by the package."""
    from . import recache
    if recache.rx_cached(pattern, flags) is None:
        import regex
        recache.regex_imported()        # (the cache's hook, as match/rx.py's stand-in installs it: the miss kept)
        regex.compile(pattern, flags)


class Warmer:
    """The thread compiling the saved sources (start()); stop() ends it between two compiles and waits for
    it.  No process is forked while one runs (a child would inherit the `regex` cache's lock held): a fork
    stops it first (os.register_at_fork), and a scan stops its own before it returns."""

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def start(self) -> "Warmer":
        global _loaded
        if _loaded is None:
            _loaded = _read()
        todo = [x for x in _loaded if x not in _seen]
        if todo:
            _guard_forks()
            self.thread = threading.Thread(target=_compile_all, args=(todo, self.stop_event),
                                           name="triage-regex-warm", daemon=True)
            _running.append(self)
            self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(STOP_WAIT)
        if self in _running and (self.thread is None or not self.thread.is_alive()):
            _running.remove(self)           # (one still compiling stays: a fork waits for it again)


STOP_WAIT = 5.0            # seconds a stop waits for the compile in progress (one pattern: milliseconds)
_running: List[Warmer] = []
_guarded = False


def _guard_forks() -> None:
    """Stop every running warmer before this process forks (once registered per process)."""
    global _guarded
    if not _guarded and hasattr(os, "register_at_fork"):
        _guarded = True
        os.register_at_fork(before=_stop_all)


def _stop_all() -> None:
    for w in list(_running):
        w.stop()


def save_at_exit() -> None:
    """save() when this process exits (once; a run with workers: its verdict's and report's regexes too)."""
    global _registered
    if not _registered:
        _registered = True
        import atexit
        atexit.register(save)


_registered = False


def save() -> bool:
    """Write the sources this process compiled, when they are not those read (a run with workers: see
    the module doc).  False when nothing was written.  (A run that warmed nothing -- one or two workers -- reads
    the saved ones first: it wrote the same file again at every exit, ~5 ms of a 128 MiB run at `-j 2` here.)"""
    global _loaded
    if not _noted:
        return False
    if _loaded is None:
        _loaded = _read()
    if set(_noted) <= set(_loaded):
        return False
    merged = list(_noted) + [x for x in (_loaded or []) if x not in _seen]
    # (ASCII JSON: a source with a lone surrogate, which UTF-8 cannot write, is written escaped)
    data = json.dumps([list(x) for x in merged[:MAX_SOURCES]]).encode("ascii")
    return cachefiles.write(NAME, data)
