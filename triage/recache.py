"""The stdlib `re` engine's compiled patterns kept between runs, as Python keeps a module's code in __pycache__.

`re.compile` parses a pattern and generates its engine code in Python (re._parser, re._compiler): ~100
patterns of triage's modules and of the launcher rows' rank matchers cost ~10-14 ms of every run's start-up
(a tiny log's `triage analyze`: ~90 ms here), and the rank matchers' ~8 ms more before a big input's workers
are forked (issue 44: the run's fixed part bounds a 256 MiB run's speed).  What that compile hands the C
engine (`_sre.compile(pattern, flags, code, groups, groupindex, indexgroup)`) is plain data: it is kept in
triage's cache directory by (pattern, flags) and given to `_sre.compile` again on the next run.

While installed (`installed()`: the CLI's import and its command; importing triage as a library changes
nothing), re's compile of a string or bytes pattern looks the cache up first.  A miss is compiled as re does
(its parse, then its code) and kept only when the pattern equals re's own (a pattern's equality compares its
source, flags and code; where it does not, or where `_sre.compile` takes other arguments, the cache is off for
the process); the cache is written back once at exit when it grew.  The file is named by the Python build
(`_sre.MAGIC` and the code's layout change with it), read only as triage/cachefiles.py reads any cache file
(this user's, nobody else may write it, its own digest), and `_sre.compile` checks the code it is given
(CPython validates it: a bad one raises, and the pattern is then compiled as re does).  The cache holds at most
MAX_ENTRIES patterns of at most MAX_PATTERN characters (patterns built from a log's content fill it at most that
far).  Where re's internals are not those this reads (another Python), nothing is installed.

The `regex` package's patterns (the catalog's rules, the verdict's and the report's: ~37 compiles, ~12 ms of a tiny
log's run, its parser and compiler being Python too) are kept the same way: what its compile hands its C engine
(`regex._regex.compile`) is kept by (pattern, flags, default version) in a file named by the `regex` package's files
(its parser's and its C engine's: place, size, time) and the Python build, for the patterns without named lists nor
a locale; a kept pattern is made by the C engine loaded by itself, without the package (rx_cached: its parser's
import was most of a tiny log's run's own work), and a pool worker's compiles are kept by the scanner (rx_taken,
rx_merge). Its C engine does not check the code it is given: the file is trusted as the cache directory's other
files are (the records' compiled code among them). Its hook is installed when triage first imports `regex`
(match/rx.py: a run that needs no rule regex never imports it) while this module is installed; what a miss hands the
C engine is captured by a stand-in put in its place only while that miss compiles (a pattern pickled meanwhile by
another thread names triage's capture_compile). A pattern re's parser may warn of is re's own each time (_may_warn)."""
from __future__ import annotations

import sys
import threading
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
_lock = threading.Lock()
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


def _file_name(prefix: str, build: str) -> str:
    """A cache file's name: PREFIX, the Python's cache tag, a digest of BUILD (what the code it holds depends on)."""
    try:            # (CPython's builtin module, as cachefiles hashes: hashlib loads OpenSSL)
        from _blake2 import blake2b  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - another Python
        from hashlib import blake2b
    return f"{prefix}{sys.implementation.cache_tag}-{blake2b(build.encode(), digest_size=6).hexdigest()}.marshal"


def _name() -> str:
    import _sre  # type: ignore[import-not-found,unused-ignore]
    return _file_name(PREFIX, f"{sys.version}|{_sre.MAGIC}|{getattr(_sre, 'CODESIZE', '')}")


def _valid(k: Any, v: Any) -> bool:
    return (type(k) is tuple and tuple(map(type, k)) in ((str, int), (bytes, int))
            and type(v) is tuple and tuple(map(type, v)) == (int, list, int, dict, tuple))


def _read(name: str, valid: Callable[[Any, Any], bool]) -> Dict[Any, Any]:
    """The entries of cache file NAME that VALID takes ({} for a file that is missing or not the cache's)."""
    from . import cachefiles
    got = cachefiles.read_marshal_dict(name, MAX_BYTES)
    return {k: v for k, v in got.items() if valid(k, v)} if got is not None else {}


def _load() -> Dict[_Key, _Entry]:
    return _read(_name(), _valid)


def save() -> bool:
    """Write the cache when this process added to it (at exit; best effort, silent).  False when not written."""
    global _changed
    if not _changed or not _entries:
        return False
    from . import cachefiles
    ok = cachefiles.write_marshal(_name(), _entries, PREFIX)
    _changed = not ok and _changed
    return ok


def _compile(p: Any, flags: int = 0) -> Any:
    """re's compile of P with FLAGS, its code from the cache when it holds it (see the module doc)."""
    global _entries
    orig = _original
    parts = _internals()
    if orig is None or parts is None:  # pragma: no cover - uninstalled meanwhile
        return _fallback()(p, flags)
    if _off or type(p) not in (str, bytes) or len(p) > MAX_PATTERN:
        return orig(p, flags)
    comp, parse, _sre = parts
    flags = int(flags)
    if _entries is None:
        with _lock:                            # (read once: threads compiling at once keep theirs in one dict)
            if _entries is None:
                _entries = _load()
    key = (p, flags)
    e = _entries.get(key)
    if e is not None:
        try:
            return _sre.compile(p, *e)
        except Exception:  # noqa: BLE001 - not code this engine takes (validated by _sre): compiled again
            _entries.pop(key, None)
    if flags & 128 or _may_warn(p, flags):     # (re.DEBUG prints as it compiles; re's parser may warn: re's own)
        return orig(p, flags)
    return _miss(p, flags, key, orig, comp, parse, _sre)


def _miss(p: Union[str, bytes], flags: int, key: _Key, orig: Callable[..., Any], comp: Any, parse: Any,
          _sre: Any) -> Any:
    """re's compile of a pattern the cache does not hold: made here, kept when it is re's own pattern."""
    global _off
    assert _entries is not None
    try:
        e = _entry(p, flags, comp, parse)
        rx = _sre.compile(p, *e)
    except Exception as exc:  # noqa: BLE001 - a bad pattern: re's own error; anything else: no cache here
        import re
        if not isinstance(exc, re.error):
            _off = True
        return orig(p, flags)
    if len(_entries) >= MAX_ENTRIES:
        return rx
    # (kept only when it is re's own pattern -- a pattern's equality compares its flags, source and code --
    # else this Python's re is not what this reads: no cache in this process)
    own = orig(p, flags)
    if rx != own:
        _off = True
        return own
    _keep(key, e)
    return rx


def _keep(key: _Key, e: _Entry) -> None:
    global _changed
    assert _entries is not None
    _entries[key] = e
    if not _changed:
        _changed = True
        import atexit
        atexit.register(save)


# what re's parser may warn of (a FutureWarning: a set nested or a set operation to come, "[[", "--", "&&", "~~",
# "||"; a DeprecationWarning before 3.11: inline flags not at the start): such a pattern is compiled by re itself
# each time, its warnings said where re says them (from the cache: never; compiled here: twice)
_WARNS = ("[[", "--", "&&", "~~", "||")


def _may_warn(p: Union[str, bytes], flags: int = 0) -> bool:
    text = p if isinstance(p, str) else p.decode("latin-1")
    if sys.version_info < (3, 11) and "(?" in text[1:]:
        return True
    if not any(w in text for w in _WARNS):
        return False
    # (issue 44: "\[[0-9]" -- an escaped bracket before a set -- held "[[", and the launcher rows' rank matchers,
    # ~14 ms of compiles here, were never kept)
    return "(?#" in text or _inline_verbose(text) or _set_warns(text, bool(flags & 64))


def _inline_verbose(t: str) -> bool:
    """T sets or clears VERBOSE inline -- "(?x)", "(?ix:", "(?-x:", "(?i-x:" -- (where a "#" is a comment or not is
    then not read here: may warn)."""
    i = t.find("(?")
    while i >= 0:
        j = i + 2
        while j < len(t) and t[j] in "aiLmsux-":
            if t[j] == "x":
                return True
            j += 1
        i = t.find("(?", i + 2)
    return False


def _set_warns(t: str, verbose: bool = False) -> bool:
    """Where re's parser may warn in the sets of the pattern T (re/_parser.py, 3.9-3.13): a set that opens with
    "[", or two of one of "-&~|" in a row within a set (wider than re's tests: a pattern it says may warn is
    compiled by re each time, never wrongly kept).  An escape is two characters; a set's "]" right after its "["
    (or "[^") is a member.  A VERBOSE pattern's comments -- from a "#" outside a set to the line's end, read as re
    reads them: an escape two characters -- are skipped as re skips them (redact's secret names, ~1 ms a run, were
    compiled each time); a pattern verbose by an inline flag is not read here (_may_warn)."""
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        if c == "\\":
            i += 2
            continue
        i += 1
        if c == "#" and verbose:
            i = _comment_end(t, i)
        elif c == "[":
            if t[i:i + 1] == "[":
                return True
            i = _set_end(t, i + (t[i:i + 1] == "^"))
            if i < 0:
                return True
    return False


def _comment_end(t: str, i: int) -> int:
    """Where a verbose pattern's comment that goes on at I in T ends (its newline; an escape is two characters)."""
    n = len(t)
    while i < n and t[i] != "\n":
        i += 2 if t[i] == "\\" else 1
    return i


def _set_end(t: str, i: int) -> int:
    """Where the set whose members start at I in T ends (past its "]"), or -1 where two of "-&~|" in a row are in it."""
    n, first = len(t), True
    while i < n:
        c = t[i]
        if c == "\\":
            i += 2
        elif c == "]" and not first:
            return i + 1
        elif c in "-&~|" and t[i + 1:i + 2] == c:
            return -1
        else:
            i += 1
        first = False
    return i


def _entry(p: Union[str, bytes], flags: int, comp: Any, parse: Any) -> _Entry:
    """What re's compile of P with FLAGS hands _sre.compile after the pattern (its parse, then its code)."""
    parsed = parse.parse(p, flags)
    code = comp._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    # (plain ints: the opcodes are int subclasses, which marshal does not write)
    return (int(flags | parsed.state.flags), [int(c) for c in code], parsed.state.groups - 1, groupindex,
            tuple(indexgroup))


def _fallback() -> Callable[..., Any]:  # pragma: no cover - only when uninstalled meanwhile
    parts = _internals()
    import re
    return parts[0].compile if parts is not None else re.compile


def install() -> None:
    """re's compile looks the cache up from now on, until as many uninstall() (nested: the outermost installs).
    Nothing when TRIAGE_REGEX_CACHE is 0 (compiled on every run, as TRIAGE_TEMPLATE_CACHE=0 does the templates)."""
    global _original, _depth
    import os
    parts = _internals()
    if parts is None or os.environ.get("TRIAGE_REGEX_CACHE", "1") == "0":
        return
    if _depth == 0:
        _original = parts[0].compile
        parts[0].compile = _compile
    _depth += 1
    if _depth == 1:
        regex_imported()


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
        _rx_uninstall()


@contextmanager
def installed() -> Iterator[None]:
    """install() for the time of a block."""
    install()
    try:
        yield
    finally:
        uninstall()


# -- the `regex` package's compiled patterns ---------------------------------------------------------------------

REGEX_PREFIX = "regex-code-"
_RX_DEBUG, _RX_LOCALE = 0x200, 0x4        # regex.DEBUG, regex.LOCALE: never kept
_rx_entries: Optional[Dict[tuple, tuple]] = None
_rx_changed = False
_rx_main: Any = None                       # regex._main, while our compile is installed there
_rx_original: Optional[Callable[..., Any]] = None    # its own _compile then
_rx_live: Dict[tuple, Any] = {}            # the patterns made from the cache in this process (regex's own cache's
#                                            role: a pattern compiled twice is one object)
_rx_real: Any = None                       # regex's C module (regex._regex), while installed
_rx_lock = threading.Lock()                # one miss captured at a time (and regex_imported once)
_rx_seen = threading.local()               # the arguments of this thread's last compile by regex's C engine
_rx_added: Dict[tuple, tuple] = {}         # the entries kept since rx_taken (a pool worker's: sent to the scanner)


class _Capture:
    """Stands in for regex's C module in regex._main while one miss is compiled (_rx_miss): passes everything
    through, and keeps the arguments of the pattern this thread compiles (regex's compile hands its C engine
    plain data).  Only for that while: regex pickles a pattern as its C engine's compile and its arguments, and
    a pattern pickled then names capture_compile (triage's: unpickled only where triage is importable)."""

    def __init__(self, real: Any):
        self.real = real
        self.compile = capture_compile

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def capture_compile(*args: Any) -> Any:
    """regex's C engine's compile, its arguments kept for this thread (_Capture)."""
    _rx_seen.args = args
    from regex import _regex  # type: ignore[attr-defined,unused-ignore]
    return _regex.compile(*args)  # type: ignore[attr-defined,unused-ignore]


def _rx_name() -> str:
    """The `regex` cache's file name: the Python build, and the files of the `regex` package that make and run a
    pattern's code -- its parser (_regex_core.py, _main.py) and its C engine (place, size and time each) -- found
    without importing the package (rx_cached makes patterns before it is imported: the same name either way)."""
    import os
    parts = [sys.version]
    engine = _rx_engine_spec()
    where = [engine.origin] if engine is not None and engine.origin else []
    pkg = _rx_package_dir()
    if pkg is not None:
        where += [os.path.join(pkg, "_regex_core.py"), os.path.join(pkg, "_main.py")]
    for f in where:
        try:
            st = os.stat(f)
            parts.append(f"{f}|{st.st_size}|{st.st_mtime_ns}")
        except OSError:
            parts.append(f)
    return _file_name(REGEX_PREFIX, "|".join(parts) + f"|code as {_CODE} bytes")


_rx_where: Optional[list] = None           # [the package's folder, its C engine's spec, its file], once found


def _rx_find() -> list:
    global _rx_where
    if _rx_where is None:
        pkg, spec, origin = None, None, None
        try:
            import importlib.util
            top = importlib.util.find_spec("regex")
            if top is not None:
                origin = top.origin or None
                locs = list(top.submodule_search_locations or [])
                pkg = locs[0] if len(locs) == 1 else None
                spec = _rx_engine_in(pkg) if pkg is not None else None
        except (ImportError, ValueError, OSError, AttributeError):  # pragma: no cover - another layout
            pkg, spec = None, None
        _rx_where = [pkg, spec, origin]
    return _rx_where


def _rx_engine_in(pkg: str) -> Any:
    """The spec of `regex._regex` in the package's folder PKG, as the import system finds it: an extension module
    there, or None."""
    import importlib.machinery
    import os
    spec = importlib.machinery.PathFinder.find_spec("regex._regex", [pkg])
    ok = (spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
          and os.path.dirname(spec.origin or "") == pkg)
    return spec if ok else None


def rx_origin() -> Optional[str]:
    """The file of the installed `regex` package (its __init__), found without importing it (None: not installed)."""
    return _rx_find()[2]


def _rx_package_dir() -> Optional[str]:
    """The `regex` package's folder (None: not installed, or not one folder)."""
    return _rx_find()[0]


def _rx_engine_spec() -> Any:
    """The module spec of regex's C engine (`regex._regex`, an extension module in the package's folder), or None."""
    return _rx_find()[1]


def _rx_engine() -> Any:
    """regex's C engine (`regex._regex`): the one imported, or loaded by itself as the import system would load it
    -- under its own name, so that the package imported later takes this module -- without the package's Python
    parser (~90 M instructions, ~10 ms: most of a tiny log's run's own work).  None where it is not found."""
    mod = sys.modules.get("regex._regex")
    if mod is not None:
        return mod
    spec = _rx_engine_spec()
    if spec is None:
        return None
    import importlib.util
    with _rx_lock:
        mod = sys.modules.get("regex._regex")
        if mod is None:
            try:
                mod = importlib.util.module_from_spec(spec)
                sys.modules["regex._regex"] = mod
                spec.loader.exec_module(mod)
            except Exception:  # noqa: BLE001 - pragma: no cover - an engine that does not load: the package's import
                sys.modules.pop("regex._regex", None)
                return None
    return mod


# the C engine's arguments after the pattern: flags, code, group index, index group, named lists (none), their
# indexes (none), the required string's offset, characters (or None) and flags, the group count.  The code is kept
# as the bytes of its 32-bit words (regex's RE_CODE; array "I"): a file of ~260 patterns read back as a few hundred
# objects, not ~60,000 ints (its read and the check of every entry were ~3-4 ms of each process that compiled one)
_CODE = "I"
_RX_SHAPES = ((int, bytes, dict, dict, dict, list, int, tuple, int, int),
              (int, bytes, dict, dict, dict, list, int, type(None), int, int))


def _rx_valid(k: Any, v: Any) -> bool:
    """An entry as _rx_keep keeps it: (pattern, flags, version) -> the C engine's arguments (_RX_SHAPES); checked
    when it is used (_rx_made), so a run reads the file whole and looks at the few entries it takes."""
    return (type(k) is tuple and tuple(map(type, k)) in ((str, int, int), (bytes, int, int))
            and type(v) is tuple and tuple(map(type, v)) in _RX_SHAPES and not v[4] and not v[5]
            and len(v[1]) > 0 and len(v[1]) % 4 == 0)


def _rx_load() -> Dict[tuple, tuple]:
    from array import array

    from . import cachefiles
    if array(_CODE).itemsize != 4:  # pragma: no cover - a platform whose unsigned int is not 32 bits: no cache
        return {}
    got = cachefiles.read_marshal_dict(_rx_name(), MAX_BYTES)
    return got if got is not None else {}


def _rx_loaded() -> Dict[tuple, tuple]:
    """The `regex` cache's entries, read once (threads compiling at once keep theirs in one dict)."""
    global _rx_entries
    if _rx_entries is None:
        with _rx_lock:
            if _rx_entries is None:
                _rx_entries = _rx_load()
    return _rx_entries


RX_DEFAULT_VERSION = 0x2000        # regex.DEFAULT_VERSION (regex.VERSION0) as the package sets it (a test checks)


def _rx_version() -> int:
    return int(getattr(sys.modules.get("regex"), "DEFAULT_VERSION", RX_DEFAULT_VERSION))


def rx_ready() -> None:
    """Load regex's C engine and read the cache's entries now (a scan with workers: the scanner's while they make
    their first results), where this module is installed and holds some."""
    if _depth and _rx_engine_spec() is not None and _rx_loaded():
        _rx_engine()


def rx_cached(pattern: Any, flags: int) -> Any:
    """`regex.compile(PATTERN, FLAGS)` made by regex's C engine from the cache, without importing the package
    (_rx_engine), while this module is installed; None where the cache does not hold it (regex.compile then, which
    imports the package and keeps what it compiles: the next run takes it here)."""
    if _depth == 0 or not _rx_plain(pattern, flags, None):
        return None
    key = (pattern, int(flags), _rx_version())
    rx = _rx_live.get(key)
    if rx is not None:
        return rx
    if _rx_loaded().get(key) is None:
        return None
    return _rx_made(key)


def _rx_save() -> bool:
    """Write the `regex` cache when this process added to it (at exit; best effort, silent)."""
    global _rx_changed
    if not _rx_changed or not _rx_entries:     # (the package need not be imported: a scanner that made all its own
        return False                           # patterns from the file keeps its workers' compiles, rx_merge)
    from . import cachefiles
    ok = cachefiles.write_marshal(_rx_name(), _rx_entries, REGEX_PREFIX)
    _rx_changed = not ok and _rx_changed
    return ok


def _rx_compile(pattern: Any, flags: Any, ignore_unused: Any, kwargs: Any, cache_it: Any) -> Any:
    """regex._main._compile, its C engine's arguments from the cache when it holds them (see the module doc)."""
    orig, main = _rx_original, _rx_main
    if orig is None or main is None or not _rx_plain(pattern, flags, kwargs):
        return (orig or sys.modules["regex._main"]._compile)(pattern, flags, ignore_unused, kwargs, cache_it)
    key = (pattern, int(flags), _rx_version())
    rx = _rx_live.get(key)
    if rx is not None:
        return rx
    entries = _rx_loaded()
    rx = _rx_made(key)
    if rx is not None:
        return rx
    if len(entries) >= MAX_ENTRIES:
        return orig(pattern, flags, ignore_unused, kwargs, cache_it)
    return _rx_miss(main, orig, key, (pattern, flags, ignore_unused, kwargs, cache_it))


def _rx_miss(main: Any, orig: Callable[..., Any], key: tuple, call: tuple) -> Any:
    """regex's own compile of CALL, what it hands its C engine captured (_Capture) and kept under KEY."""
    with _rx_lock:
        real = main._regex
        main._regex = _Capture(real)
        _rx_seen.args = None
        try:
            rx = orig(*call[:4], False)     # (not from regex's own cache: one compiled before the hook, not kept)
        finally:
            main._regex = real
        args, _rx_seen.args = getattr(_rx_seen, "args", None), None
    if args is not None and len(args) == 11 and args[0] is call[0]:
        _rx_keep(key, args)     # (else a pattern regex had compiled already, or another layout of its arguments)
    return rx


def _rx_plain(pattern: Any, flags: Any, kwargs: Any) -> bool:
    """A compile the cache takes: a str or bytes pattern, no named lists, no locale nor debugging."""
    return not kwargs and type(pattern) in (str, bytes) and len(pattern) <= MAX_PATTERN and not flags & (
        _RX_DEBUG | _RX_LOCALE)


def _rx_made(key: tuple) -> Any:
    """The pattern KEY made by regex's C engine from the cache's entry, or None (none, or one it refuses)."""
    from array import array
    assert _rx_entries is not None
    e = _rx_entries.get(key)
    engine = _rx_real or _rx_engine()
    if e is None or engine is None:
        return None
    try:
        if not _rx_valid(key, e):
            raise ValueError(key)
        code = array(_CODE)
        code.frombytes(e[1])
        # (the code is regex's own as it was kept: its C engine does not check it, a bad one could crash it; the
        # file is trusted as the cache directory's others are -- cachefiles.py -- and named by the engine's build)
        rx = engine.compile(key[0], e[0], code.tolist(), *e[2:])
    except Exception:  # noqa: BLE001 - arguments of another layout: compiled again
        _rx_entries.pop(key, None)
        return None
    if len(_rx_live) >= MAX_ENTRIES:
        _rx_live.clear()
    _rx_live[key] = rx
    return rx


def _rx_keep(key: tuple, args: tuple) -> None:
    """Keep what regex's compile of KEY handed its C engine (ARGS, the pattern first), as plain data."""
    from array import array
    try:
        e = (int(args[1]), array(_CODE, [int(c) for c in args[2]]).tobytes(), dict(args[3]), dict(args[4]), args[5],
             args[6], int(args[7]), None if args[8] is None else tuple(int(c) for c in args[8]), int(args[9]),
             int(args[10]))
    except (TypeError, ValueError, OverflowError):  # pragma: no cover - another layout of its arguments
        return
    if _rx_add(key, e) and len(_rx_added) < MAX_ENTRIES:
        _rx_added[key] = e


def _rx_add(key: Any, e: Any) -> bool:
    """Entry E of KEY kept (written at exit) where it is one the cache keeps; whether it was."""
    global _rx_changed
    assert _rx_entries is not None
    if not _rx_valid(key, e) or e[0] & _RX_LOCALE:
        return False
    _rx_entries[key] = e
    if not _rx_changed:
        _rx_changed = True
        import atexit
        atexit.register(_rx_save)
    return True


def rx_taken() -> Dict[tuple, tuple]:
    """The entries this process kept since the last call (a pool worker's misses: it exits without writing the
    cache, so it sends them to the scanner with its results, which keeps them: rx_merge)."""
    if not _rx_added:
        return {}
    got = dict(_rx_added)
    _rx_added.clear()
    return got


def rx_merge(entries: Any) -> None:
    """Keep a pool worker's ENTRIES (rx_taken's) as this process's own, written at exit: a pattern only workers
    compile (a rule's, searched on their hit lines) was compiled by the package in every worker of every run, the
    scanner never compiling it (issue 44: megatron-dense at `-j 16` 0.17 -> 0.21 s when the cache held none)."""
    if _depth == 0 or type(entries) is not dict or not entries:
        return
    have = _rx_loaded()
    for k, v in entries.items():
        if k not in have and len(have) < MAX_ENTRIES:
            _rx_add(k, v)


def regex_imported() -> None:
    """The `regex` package is imported (match/rx.py says so when it imports it): its compile looks the cache up
    while this module is installed.  Nothing where its internals are not those this reads."""
    global _rx_main, _rx_original, _rx_real
    main: Any = sys.modules.get("regex._main")
    if _depth == 0 or _rx_main is not None or main is None:
        return
    if not callable(getattr(main, "_compile", None)) or not callable(getattr(getattr(main, "_regex", None),
                                                                             "compile", None)):
        return  # pragma: no cover - another `regex`
    import os
    if os.path.dirname(getattr(main, "__file__", "") or "") != _rx_package_dir():
        return  # pragma: no cover - a package of another place than the one the cache's file is named by
    with _rx_lock:
        if _rx_main is not None:
            return
        _rx_main, _rx_original, _rx_real = main, main._compile, main._regex
        main._compile = _rx_compile


def _rx_uninstall() -> None:
    global _rx_main, _rx_original
    main = _rx_main
    if main is None:
        return
    with _rx_lock:
        main._compile = _rx_original
        _rx_main = _rx_original = None
    _rx_live.clear()
