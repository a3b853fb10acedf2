"""Regex helpers: every pattern is compiled with the `regex` package and searched with a timeout.

Pattern regexes are compiled on first use (a scan meets only the rules whose literals a line
holds; compiling all ~150 at start-up took ~0.3 s).  They are still validated when the catalog
is loaded, except a source that compiled before with this `regex` version: those are remembered
in a small file in the cache directory (anchors.cache_dir)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Optional, Set

import regex

TIMEOUT = 0.05  # seconds allowed for one search of one line
timeouts = 0    # searches cut off by the timeout (checked by `triage patterns check`)


class LazyRx:
    """A compiled-on-first-use `regex` pattern with the search interface the engine uses."""
    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int, compiled: Optional["regex.Pattern[str]"] = None):
        self.pattern = pattern
        self.flags = flags
        self._rx = compiled

    def compiled(self) -> "regex.Pattern[str]":
        if self._rx is None:
            self._rx = regex.compile(self.pattern, self.flags)
        return self._rx

    def search(self, text: str, *args, **kw):
        return self.compiled().search(text, *args, **kw)

    def __getattr__(self, name: str):          # match, fullmatch, sub, finditer, ...
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"LazyRx({self.pattern!r})"


_known: Optional[Set[str]] = None     # sources known to compile (this regex version)
_new: Set[str] = set()


def lazy(pattern: str, flags: int = 0) -> LazyRx:
    """A module-level helper regex compiled on first use (keeps `import triage` fast)."""
    return LazyRx(pattern, flags | regex.V0)


def _cache_file() -> str:
    from .anchors import cache_dir
    return os.path.join(cache_dir(), f"regex-ok-{regex.__version__}.txt")


def _key(pattern: str, flags: int) -> str:
    return hashlib.sha1(f"{flags}\x00{pattern}".encode("utf-8", "surrogatepass")).hexdigest()


def compile_rx(pattern: str, ignore_case: bool = False) -> LazyRx:
    """Validate (raises regex.error) and return a lazily compiled pattern."""
    global _known
    flags = regex.V0 | (regex.IGNORECASE if ignore_case else 0)
    if _known is None:
        try:
            with open(_cache_file(), encoding="ascii") as f:
                _known = {ln.strip() for ln in f if ln.strip()}
        except (OSError, ValueError):
            _known = set()
    k = _key(pattern, flags)
    if k in _known:
        return LazyRx(pattern, flags)
    compiled = regex.compile(pattern, flags)
    _known.add(k)
    _new.add(k)
    return LazyRx(pattern, flags, compiled)


def remember_valid() -> None:
    """Write the sources validated in this process to the cache (best effort)."""
    if not _new or _known is None:
        return
    path = _cache_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".regex-ok-", dir=os.path.dirname(path))
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write("\n".join(sorted(_known)) + "\n")
        os.replace(tmp, path)
        _new.clear()
    except OSError:
        pass


def search(rx, text: str) -> Optional["regex.Match[str]"]:
    """Search with a timeout; a pathological line counts as no match instead of hanging."""
    global timeouts
    try:
        return rx.search(text, timeout=TIMEOUT)
    except TimeoutError:
        timeouts += 1
        return None
