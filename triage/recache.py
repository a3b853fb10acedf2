"""The stdlib `re` engine's compiled patterns kept between runs, as Python keeps a module's code in __pycache__.

`re.compile` parses a pattern and generates its engine code in Python (re._parser, re._compiler): ~100
patterns of triage's modules and of the launcher rows' rank matchers cost ~10-14 ms of every run's start-up
(a tiny log's `triage analyze`: ~90 ms here), and the rank matchers' ~8 ms more before a big input's workers
are forked (issue 44: the run's fixed part bounds a 256 MiB run's speed).  What that compile hands the C
engine (`_sre.compile(pattern, flags, code, groups, groupindex, indexgroup)`) is plain data: it is kept in
triage's cache directory by (pattern, flags) and given to `_sre.compile` again on the next run.

While installed (`installed()`: the CLI's import and its command; importing triage as a library changes
nothing), re's compile of a string or bytes pattern looks the cache up first.  A miss is compiled as re does
(its parse, then its code), kept, and the cache is written back once at exit when it grew.  The file is named
by the Python build (`_sre.MAGIC` and the code's layout change with it), read only as triage/cachefiles.py
reads any cache file (this user's, nobody else may write it, its own digest), and `_sre.compile` checks the
code it is given (CPython validates it: a bad one raises, and the pattern is then compiled as re does).  The
cache holds at most MAX_ENTRIES patterns of at most MAX_PATTERN characters (patterns built from a log's
content fill it no further).  Where re's internals are not those this reads (another Python), nothing is
installed."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Union

PREFIX = "re-code-"
MAX_ENTRIES = 1024          # patterns kept
MAX_PATTERN = 8192          # characters of a pattern kept at most
MAX_BYTES = 4 << 20         # the file read back at most

_Key = Tuple[Union[str, bytes], int]
_Entry = Tuple[int, list, int, dict, tuple]   # _sre.compile's arguments after the pattern

_entries: Optional[Dict[_Key, _Entry]] = None
_changed = False
_original: Optional[Callable[..., Any]] = None   # re's own compile, while ours is installed
_depth = 0
_parts: Optional[tuple] = None   # _internals(), once looked up (() where none)
_off = False                # a pattern compiled here was not re's own: the cache is not used in this process


def _internals() -> Optional[Tuple[Any, Any, Any]]:
    """(re's compiler module, its parser module, _sre), or None where they are not what this reads."""
    global _parts
    if _parts is not None:
        return _parts or None
    _parts = ()
    try:
        import _sre  # type: ignore[import-not-found,unused-ignore]
        if sys.version_info >= (3, 11):
            from re import _compiler as comp
            from re import _parser as parse
        else:  # pragma: no cover - Python 3.9 / 3.10
            import sre_compile as comp  # type: ignore[no-redef]
            import sre_parse as parse  # type: ignore[no-redef]
    except ImportError:  # pragma: no cover - another Python
        return None
    if not all(callable(getattr(m, n, None)) for m, n in ((comp, "compile"), (comp, "_code"), (parse, "parse"),
                                                        (_sre, "compile"))):
        return None  # pragma: no cover - another Python
    _parts = (comp, parse, _sre)
    return _parts


def _name() -> str:
    import _sre  # type: ignore[import-not-found,unused-ignore]
    try:            # (CPython's builtin module, as cachefiles hashes: hashlib loads OpenSSL)
        from _blake2 import blake2b  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - another Python
        from hashlib import blake2b
    build = blake2b(f"{sys.version}|{_sre.MAGIC}|{getattr(_sre, 'CODESIZE', '')}".encode(), digest_size=6).hexdigest()
    return f"{PREFIX}{sys.implementation.cache_tag}-{build}.marshal"


def _valid(k: Any, v: Any) -> bool:
    return (type(k) is tuple and len(k) == 2 and type(k[0]) in (str, bytes) and type(k[1]) is int
            and type(v) is tuple and len(v) == 5 and type(v[0]) is int and type(v[1]) is list
            and type(v[2]) is int and type(v[3]) is dict and type(v[4]) is tuple)


def _load() -> Dict[_Key, _Entry]:
    import marshal

    from . import cachefiles
    data = cachefiles.read_own(_name(), MAX_BYTES)
    if data is None:
        return {}
    try:
        got = marshal.loads(data)
    except Exception:  # noqa: BLE001 - not marshal data of this Python: compiled again
        return {}
    if not isinstance(got, dict):
        return {}
    return {k: v for k, v in got.items() if _valid(k, v)}


def save() -> bool:
    """Write the cache when this process added to it (at exit; best effort, silent).  False when not written."""
    global _changed
    if not _changed or not _entries:
        return False
    import marshal

    from . import cachefiles
    try:
        ok = cachefiles.write(_name(), marshal.dumps(_entries), keep=(PREFIX, ".marshal", 4))
    except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache, never a traceback
        return False
    _changed = False
    return ok


def _compile(p: Any, flags: int = 0) -> Any:
    """re's compile of P with FLAGS, its code from the cache when it holds it (see the module doc)."""
    global _entries, _changed, _off
    orig = _original
    parts = _internals()
    if orig is None or parts is None or _off or type(p) not in (str, bytes) or len(p) > MAX_PATTERN:
        return (orig or _fallback())(p, flags)
    comp, parse, _sre = parts
    flags = int(flags)
    if _entries is None:
        _entries = _load()
    key = (p, flags)
    e = _entries.get(key)
    if e is not None:
        try:
            return _sre.compile(p, *e)
        except Exception:  # noqa: BLE001 - not code this engine takes (validated by _sre): compiled again
            del _entries[key]
    if flags & 128:                            # (re.DEBUG prints as it compiles: re's own, never kept)
        return orig(p, flags)
    parsed = parse.parse(p, flags)
    code = comp._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    # (plain ints: the opcodes are int subclasses, which marshal does not write)
    e = (int(flags | parsed.state.flags), [int(c) for c in code], parsed.state.groups - 1, groupindex,
         tuple(indexgroup))
    rx = _sre.compile(p, *e)
    if len(_entries) < MAX_ENTRIES:
        # (kept only when it is re's own pattern -- a pattern's equality compares its flags, source and code --
        # else this Python's re is not what this reads: no cache in this process)
        own = orig(p, flags)
        if rx != own:
            _off = True
            return own
        _entries[key] = e
        if not _changed:
            _changed = True
            import atexit
            atexit.register(save)
    return rx


def _fallback() -> Callable[..., Any]:  # pragma: no cover - only when uninstalled meanwhile
    parts = _internals()
    import re
    return parts[0].compile if parts is not None else re.compile


def install() -> None:
    """re's compile looks the cache up from now on, until as many uninstall() (nested: the outermost installs)."""
    global _original, _depth
    parts = _internals()
    if parts is None:  # pragma: no cover - another Python
        return
    if _depth == 0:
        _original = parts[0].compile
        parts[0].compile = _compile
    _depth += 1


def uninstall() -> None:
    """Undo one install() (the last one gives re its own compile back)."""
    global _original, _depth
    parts = _internals()
    if parts is None or _depth == 0:  # pragma: no cover - another Python, or not installed
        return
    _depth -= 1
    if _depth == 0:
        parts[0].compile = _original
        _original = None


@contextmanager
def installed() -> Iterator[None]:
    """install() for the time of a block."""
    install()
    try:
        yield
    finally:
        uninstall()
