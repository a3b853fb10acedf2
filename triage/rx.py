"""Regex helpers: every pattern is compiled with the `regex` package and searched with a timeout.

Pattern regexes are compiled on first use (a scan meets only the rules whose literals a line
holds; compiling all ~150 at start-up took ~0.3 s).  They are still validated when the catalog
is loaded, except a source that compiled before with this `regex` version: those are remembered
in a small file in the cache directory (anchors.cache_dir)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Callable, List, Optional, Set

import regex

TIMEOUT = 0.05  # seconds allowed for one search of one line


class Timeouts:
    """A count of searches cut off by TIMEOUT; each engine scan owns one (ScanResult.regex_timeouts,
    checked by `triage patterns check`)."""
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


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


# The cache of pattern sources known to compile with this `regex` version (hashes of flags and
# source), read lazily from a file in the cache directory by compile_rx and written back by
# remember_valid: None until read.  (tests/test_rx.py resets _known to simulate a new process.)
_known: Optional[Set[str]] = None
_new: Set[str] = set()        # validated in this process, not yet written


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


def search(rx, text: str, timeouts: Optional[Timeouts] = None) -> Optional["regex.Match[str]"]:
    """Search with a timeout; a pathological line counts as no match instead of hanging (and is
    counted in `timeouts` when given)."""
    try:
        return rx.search(text, timeout=TIMEOUT)
    except TimeoutError:
        if timeouts is not None:
            timeouts.count += 1
        return None


MAX_REPEAT_COUNT = 1000      # a {n} / {n,m} bound above this is refused in a pattern


def risky(pattern: str) -> Optional[str]:  # noqa: C901 - TODO(issue 16): split
    """Why a regex is a backtracking risk (nested unbounded quantifiers such as (a+)+ or (\\w*\\s?)*,
    or a huge repetition count), or None.  Read with the stdlib parser; a pattern it cannot read
    (a `regex`-only construct) is judged by its timeout alone."""
    try:
        import re._parser as sre_parse  # type: ignore[import-not-found]
        from re._constants import MAXREPEAT  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import sre_parse  # type: ignore[no-redef]
        from sre_constants import MAXREPEAT  # type: ignore[no-redef]
    try:
        tree = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - not the stdlib's dialect
        return None
    repeats = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")

    def chars(item) -> Optional[Callable[[str], bool]]:  # noqa: C901 - TODO(issue 16): split
        """What one item can match, as a predicate on a character (None: can't tell)."""
        op, av = str(item[0]), item[1]
        if op == "LITERAL":
            return lambda c, v=av: ord(c) == v
        if op == "ANY":
            return lambda c: c != "\n"
        if op == "IN":
            tests, neg = [], False
            for sop, sav in av:
                sop = str(sop)
                if sop == "NEGATE":
                    neg = True
                elif sop == "LITERAL":
                    tests.append(lambda c, v=sav: ord(c) == v)
                elif sop == "RANGE":
                    tests.append(lambda c, v=sav: v[0] <= ord(c) <= v[1])
                elif sop == "CATEGORY":
                    cat = str(sav)
                    base = {"CATEGORY_DIGIT": str.isdigit, "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
                            "CATEGORY_SPACE": str.isspace}
                    for key, fn in base.items():
                        if cat == key:
                            tests.append(fn)
                        elif cat == key.replace("CATEGORY_", "CATEGORY_NOT_"):
                            tests.append(lambda c, f=fn: not f(c))
                else:
                    return None
            return (lambda c: not any(t(c) for t in tests)) if neg else (lambda c: any(t(c) for t in tests))
        return None

    def inner_repeats(items) -> List[Optional[Callable[[str], bool]]]:
        """Character predicates of the unbounded repeats inside `items` (None when unknown)."""
        out: List[Optional[Callable[[str], bool]]] = []
        for op, av in items:
            name = str(op)
            if name in repeats:
                lo, hi, sub = av
                if hi is MAXREPEAT and name != "POSSESSIVE_REPEAT":
                    out.append(chars(sub[0]) if len(sub) == 1 else None)
                out += inner_repeats(sub)
            elif name == "SUBPATTERN":
                out += inner_repeats(av[-1])
            elif name == "BRANCH":
                for alt in av[1]:
                    out += inner_repeats(alt)
        return out

    def delimited(body, inner) -> bool:
        r"""The repeated body holds a mandatory character no inner repeat can match (as the "." of
        (\w+\.)* or the '|' of ([^|]*\|)*): each round is then anchored, no catastrophe."""
        for op, av in body:
            if str(op) == "LITERAL" and all(p is not None and not p(chr(av)) for p in inner):
                return True
        return False

    def walk(items, outer: bool) -> Optional[str]:  # noqa: C901 - TODO(issue 16): split
        for op, av in items:
            name = str(op)
            if name in repeats:
                lo, hi, sub = av
                if (hi is not MAXREPEAT and hi > MAX_REPEAT_COUNT) or lo > MAX_REPEAT_COUNT:
                    return f"repetition count above {MAX_REPEAT_COUNT}"
                unbounded = hi is MAXREPEAT and name != "POSSESSIVE_REPEAT"
                body = sub[0][1][-1] if len(sub) == 1 and str(sub[0][0]) == "SUBPATTERN" else sub
                if unbounded:
                    inner = inner_repeats(body)
                    if inner and not delimited(body, inner):
                        return "nested unbounded quantifiers (catastrophic backtracking)"
                why = walk(sub, outer or unbounded)
                if why:
                    return why
            elif name == "SUBPATTERN":
                why = walk(av[-1], outer)
                if why:
                    return why
            elif name == "BRANCH":
                for alt in av[1]:
                    why = walk(alt, outer)
                    if why:
                        return why
            elif name in ("ASSERT", "ASSERT_NOT"):
                why = walk(av[1], outer)
                if why:
                    return why
        return None
    return walk(tree, False)
