"""Regex helpers: every pattern is compiled with the `regex` package and searched with a timeout.

Pattern regexes are compiled on first use (a scan meets only the rules whose literals a line
holds; compiling all ~150 at start-up took ~0.3 s).  They are still validated when the catalog
is loaded, except a source that compiled before with this installation of `regex`: those are
remembered in a small file in the cache directory (triage/cachefiles.py).  The `regex` module itself is
imported on first use (_Regex)."""
from __future__ import annotations

import os
import re
from time import thread_time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple, Union, cast

from .. import hashing as hashlib
from .. import recache, regexwarm
from ..cachefiles import Memo

if TYPE_CHECKING:
    import regex
else:
    regex = None        # the _Regex stand-in below: the `regex` module is imported on first use

TIMEOUT = 0.05  # seconds allowed for one search of one line
# the `regex` flags triage uses, as constants (a test checks them against the module): taking them
# from the module would import it at start-up
V0, IGNORECASE, ASCII = 0x2000, 0x2, 0x80


class _Regex:
    """The `regex` package, imported on its first use (~8 ms of start-up that a small log, which no
    rule regex meets, never needs); then its names are this object's own."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name != "__version__":
            raise AttributeError(name)
        import regex as module

        from .. import recache
        recache.regex_imported()        # (its compiled patterns kept between runs: recache.py)
        self.__dict__.update(vars(module))
        return getattr(module, name)


if not TYPE_CHECKING:
    regex = _Regex()    # noqa: F811


class Timeouts:
    """A count of searches cut off by TIMEOUT; each engine scan owns one (ScanResult.regex_timeouts,
    checked by `triage patterns check`)."""
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


# A search holds the GIL unless a caller asks otherwise: `regex` lets it go by default, and a scan has a
# reader thread, so every search of a few microseconds waited for the GIL to come back (issue 44: a log of
# handled tracebacks spent 0.96 s in 16,673 searches of 120 characters, 57 us each; 2 us held). Workers
# are processes: no thread of ours searches beside another.
def _held(concurrent: Optional[bool]) -> bool:
    return False if concurrent is None else concurrent


class LazyRx:
    """A compiled-on-first-use `regex` pattern with the search interface the engine uses: the
    methods of `regex.Pattern[str]` below, typed as there (other attributes are looked up on the
    compiled pattern at run time, untyped)."""
    __slots__ = ("pattern", "flags", "_rx", "paths")

    def __init__(self, pattern: str, flags: int, compiled: Optional["regex.Pattern[str]"] = None):
        self.pattern = pattern
        self.flags = flags
        self._rx = compiled
        self.paths = -READ_AFTER       # bounded_paths(pattern) once searched READ_AFTER times (counted up to 0)

    def compiled(self) -> "regex.Pattern[str]":
        if self._rx is None:
            rx = recache.rx_cached(self.pattern, self.flags)   # (kept by an earlier run: no `regex` import)
            self._rx = rx if rx is not None else regex.compile(self.pattern, self.flags)
            regexwarm.note("regex", self.pattern, self.flags)      # (a big input's next run compiles it ahead)
        return self._rx

    def search(self, string: str, pos: Optional[int] = None, endpos: Optional[int] = None,
               concurrent: Optional[bool] = None, partial: bool = False,
               timeout: Optional[float] = None) -> Optional["regex.Match[str]"]:
        return self.compiled().search(string, pos=pos, endpos=endpos, concurrent=_held(concurrent), partial=partial,
                                      timeout=timeout)

    def match(self, string: str, pos: Optional[int] = None, endpos: Optional[int] = None,
              concurrent: Optional[bool] = None, partial: bool = False,
              timeout: Optional[float] = None) -> Optional["regex.Match[str]"]:
        return self.compiled().match(string, pos=pos, endpos=endpos, concurrent=_held(concurrent), partial=partial,
                                     timeout=timeout)

    def fullmatch(self, string: str, pos: Optional[int] = None, endpos: Optional[int] = None,
                  concurrent: Optional[bool] = None, partial: bool = False,
                  timeout: Optional[float] = None) -> Optional["regex.Match[str]"]:
        return self.compiled().fullmatch(string, pos=pos, endpos=endpos, concurrent=_held(concurrent), partial=partial,
                                         timeout=timeout)

    def finditer(self, string: str, pos: Optional[int] = None, endpos: Optional[int] = None,
                 overlapped: bool = False, concurrent: Optional[bool] = None, partial: bool = False,
                 timeout: Optional[float] = None) -> Iterator["regex.Match[str]"]:
        return self.compiled().finditer(string, pos=pos, endpos=endpos, overlapped=overlapped,
                                        concurrent=_held(concurrent), partial=partial, timeout=timeout)

    def findall(self, string: str, pos: Optional[int] = None, endpos: Optional[int] = None,
                overlapped: bool = False, concurrent: Optional[bool] = None,
                timeout: Optional[float] = None) -> List[Any]:  # str or tuple items, by the groups
        return self.compiled().findall(string, pos=pos, endpos=endpos, overlapped=overlapped,
                                       concurrent=_held(concurrent), timeout=timeout)

    def sub(self, repl: Union[str, Callable[["regex.Match[str]"], str]], string: str, count: int = 0,
            pos: Optional[int] = None, endpos: Optional[int] = None, concurrent: Optional[bool] = None,
            timeout: Optional[float] = None) -> str:
        return self.compiled().sub(repl, string, count=count, pos=pos, endpos=endpos, concurrent=_held(concurrent),
                                   timeout=timeout)

    def subn(self, repl: Union[str, Callable[["regex.Match[str]"], str]], string: str, count: int = 0,
             pos: Optional[int] = None, endpos: Optional[int] = None, concurrent: Optional[bool] = None,
             timeout: Optional[float] = None) -> Tuple[str, int]:
        return self.compiled().subn(repl, string, count=count, pos=pos, endpos=endpos, concurrent=_held(concurrent),
                                    timeout=timeout)

    def split(self, string: str, maxsplit: int = 0, concurrent: Optional[bool] = None,
              timeout: Optional[float] = None) -> List[Optional[str]]:
        return self.compiled().split(string, maxsplit=maxsplit, concurrent=_held(concurrent), timeout=timeout)

    @property
    def groups(self) -> int:
        return self.compiled().groups

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled().groupindex

    if not TYPE_CHECKING:
        def __getattr__(self, name: str):          # subf, splititer, scanner, ...: untyped
            return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"LazyRx({self.pattern!r})"

    def __reduce__(self) -> Tuple[Any, Tuple[str, int]]:
        """Pickled (the catalog cache) as its source and flags, never its compiled pattern."""
        return (LazyRx, (self.pattern, self.flags))


class ValidatedCache:
    """The pattern sources known to compile with this `regex` version (hashes of flags and source),
    read lazily from a file in the cache directory by compile_rx and written back by remember_valid.
    One per process (VALIDATED); `reset()` forgets what was read (tests simulate a new process)."""

    def __init__(self) -> None:
        self.known: Optional[Set[str]] = None      # None until read
        self.new: Set[str] = set()                 # validated in this process, not yet written

    def reset(self) -> None:
        self.known = None
        self.new = set()

    def loaded(self) -> Set[str]:
        if self.known is None:
            from ..cachefiles import read_own
            raw = read_own(_cache_name())
            try:
                self.known = {ln.strip() for ln in (raw or b"").decode("ascii").splitlines() if ln.strip()}
            except ValueError:
                self.known = set()
        return self.known


VALIDATED = ValidatedCache()


class GroupsMemo:
    """A regex's search of a line's text, its groups remembered for short texts (as TextMemo: a log
    repeats its lines on every rank, and each `regex` search with a timeout makes two clock system
    calls, where a busy machine takes the CPU away, issue 44): the match's groups, or None."""
    MAX = 4096
    MAX_TEXT = 512
    __slots__ = ("rx", "memo")

    def __init__(self, rx: "LazyRx"):
        self.rx = rx
        self.memo: Dict[str, Optional[Tuple[Optional[str], ...]]] = {}

    def __call__(self, text: str) -> Optional[Tuple[Optional[str], ...]]:
        if text in self.memo:
            return self.memo[text]
        cuts = CUTS[0]
        m = search(self.rx, text)
        r = m.groups() if m is not None else None
        if len(text) <= self.MAX_TEXT and CUTS[0] == cuts:      # (a search cut off is not remembered)
            if len(self.memo) >= self.MAX:
                self.memo.clear()
            self.memo[text] = r
        return r


class TextMemo:
    """A pure predicate on a line's text, remembered for short texts: a log repeats its lines (a
    million `ERROR: retrying`), and a `regex` search with a timeout costs microseconds where a
    dict look-up costs tens of nanoseconds.  Bounded: at most MAX texts of at most MAX_TEXT
    characters are kept (cleared when full)."""
    MAX = 4096
    MAX_TEXT = 512
    __slots__ = ("fn", "memo")

    def __init__(self, fn: Callable[[str], object]):       # its truth is what counts
        self.fn = fn
        self.memo: Dict[str, bool] = {}

    def __call__(self, text: str) -> bool:
        r = self.memo.get(text)
        if r is None:
            cuts = CUTS[0]
            r = bool(self.fn(text))
            if len(text) <= self.MAX_TEXT and CUTS[0] == cuts:      # (a search cut off is not remembered)
                if len(self.memo) >= self.MAX:
                    self.memo.clear()
                self.memo[text] = r
        return r


def lazy(pattern: str, flags: int = 0) -> LazyRx:
    """A module-level helper regex compiled on first use (keeps `import triage` fast)."""
    return LazyRx(pattern, flags | V0)


def _cache_name() -> str:
    """The name of the file of validated sources in the cache directory (triage/cachefiles.py)."""
    return f"regex-ok-{_regex_install()}.txt"


def regex_origin() -> Optional[str]:
    """The file of the installed `regex` package, found without importing it (None: not installed; looked up once,
    recache.rx_origin: the regex cache's name needs it too)."""
    return recache.rx_origin()


def _regex_install() -> str:
    """Which installation of `regex` validates (its file's place, size and time): a source that
    compiled with it compiles with it again; found without importing it."""
    origin = regex_origin()
    try:
        st = os.stat(origin) if origin else None
    except OSError:
        st = None
    where = f"{origin or ''}\0{st.st_size if st else 0}\0{st.st_mtime_ns if st else 0}"
    return hashlib.sha1(where.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _key(pattern: str, flags: int) -> str:
    return hashlib.sha1(f"{flags}\x00{pattern}".encode("utf-8", "surrogatepass")).hexdigest()


def compile_rx(pattern: str, ignore_case: bool = False) -> LazyRx:
    """Validate (raises regex.error) and return a lazily compiled pattern."""
    flags = V0 | (IGNORECASE if ignore_case else 0)
    known = VALIDATED.loaded()
    k = _key(pattern, flags)
    if k in known:
        return LazyRx(pattern, flags)
    compiled = regex.compile(pattern, flags)
    known.add(k)
    VALIDATED.new.add(k)
    return LazyRx(pattern, flags, compiled)


def remember_valid() -> None:
    """Write the sources validated in this process to the cache (best effort)."""
    if not VALIDATED.new or VALIDATED.known is None:
        return
    from ..cachefiles import write
    if write(_cache_name(), ("\n".join(sorted(VALIDATED.known)) + "\n").encode("ascii")):
        VALIDATED.new.clear()


def search(rx: Union[LazyRx, "regex.Pattern[str]"], text: str,
           timeouts: Optional[Timeouts] = None) -> Optional["regex.Match[str]"]:
    """Search with a timeout; a pathological line counts as no match instead of hanging (and is
    counted in `timeouts` when given).  (TIMEOUT is wall time: on a loaded host a search of microseconds can
    pass it, issue 44's CI -- every search of a line's text goes through here, match or finditer, never raising.
    A search cut off is made again (_again): a host that took the CPU away for TIMEOUT seldom does it twice
    running, and a pathological line costs 2 x TIMEOUT.)  A search whose work is bounded (_bounded) is made
    without the timeout: `regex`'s costs ~1.3 us a search, a storm line's 2-3 searches a third of a worker's time."""
    if type(rx) is LazyRx and _bounded(rx, text):
        return rx.compiled().search(text)
    return _within(rx.search, text, timeouts)


def match(rx: Union[LazyRx, "regex.Pattern[str]"], text: str) -> Optional["regex.Match[str]"]:
    """As search, anchored at TEXT's start (a cut not counted in a Timeouts)."""
    if type(rx) is LazyRx and _bounded(rx, text):
        return rx.compiled().match(text)
    return _within(rx.match, text, None)


BOUNDED_WORK = 1 << 21     # a search of at most this many steps needs no timeout: the pattern's from one place
#                            (bounded_paths) times the text's length (a few ms at most; TIMEOUT is 50)


def _bounded(rx: LazyRx, text: str, most: int = BOUNDED_WORK) -> bool:
    """A search of RX on TEXT takes a bounded number of steps, MOST or fewer (False for RX's first READ_AFTER
    searches: bounded_paths reads a pattern with the stdlib's parser, ~0.1 ms, worth it for one searched often)."""
    paths = rx.paths
    if paths <= 0:
        if paths < -1:
            rx.paths += 1
            return False
        if paths == -1:
            paths = rx.paths = bounded_paths(rx.pattern)
    return 0 < paths * (len(text) + 1) <= most


READ_AFTER = 16            # a pattern's searches before its bound is read (a tiny log's 19 patterns read: ~2 ms)


QUICK_WORK = 1 << 18       # ... and of at most this many it cannot be slow (rules.slow: 1 ms and more): the count
#                            is a bound far above the work (the watchdog rule on a 257-character line: ~120,000
#                            counted, 0.27 us taken here)


def quick(rx: Union[LazyRx, "regex.Pattern[str]"], text: str) -> bool:
    """A search of RX on TEXT is bounded to QUICK_WORK steps: never slow, so not worth timing (a thread's CPU
    clock costs ~0.4 us a read, two a search: more than a storm line's search itself)."""
    return type(rx) is LazyRx and _bounded(rx, text, QUICK_WORK)


_PLAIN_BRACES = re.compile(r"\\.|\{(?:\d*,?\d*\})?")


def stdlib_reads_alike(pattern: str) -> bool:
    """The stdlib's parser reads PATTERN as `regex` does, as far as can be told: no `{` that is no counted repeat
    (regex's fuzzy matching), no set in a set (a POSIX class)."""
    return "[[" not in _ESCAPED.sub("", pattern) and not any(m.group().startswith("{") and not m.group().endswith("}")
                                                         for m in _PLAIN_BRACES.finditer(pattern))


_ESCAPED = re.compile(r"\\.", re.S)       # (an escaped bracket before a set, `\[[^\]]`, is no set in a set)


# every ASCII digit masked alike: a line's layout (digit_blind's regexes read two lines of one layout alike), the
# quota keys of the matches kept (scan.state), a time's HH:MM:SS run (inputs.sources._holds_hms)
DIGITS = bytes.maketrans(b"0123456789", b"##########")


# digit_blind's answers kept between runs, by (pattern, flags) (cachefiles.Memo: ~20 patterns a pool worker read with
# the stdlib's parser before its first block's lines were parsed, ~5-7 ms of every worker's start, issue 44)
BLIND = Memo("digit-blind-", __file__, lambda k, v: (type(k) is tuple and len(k) == 2 and type(k[0]) is str
                                                     and type(k[1]) is int and type(v) is bool))


def digit_blind(pattern: str, flags: int = 0) -> bool:
    """Whether PATTERN tells no ASCII digit from another: read by the stdlib's parser as `regex` reads it
    (stdlib_reads_alike), no digit of its own (a literal, a class holding some digits but not all), no
    back-reference, nothing the parser's tree holds that this does not know.  Two texts the same but for their digits
    are then matched alike -- where, and what each group spans --, as every step of a match tests a character
    against a literal that is no digit or a class holding every digit or none (issue 44: a storm's lines read once a
    layout, sources.parse_template, prepare.WorkerBudget, collectives.observe).  Kept between runs (BLIND)."""
    key = (pattern, int(flags))
    got = BLIND.get(key)
    if got is None:
        got = _read_blind(*key)
        BLIND.put(key, got)
    return got


def _read_blind(pattern: str, flags: int) -> bool:
    """digit_blind, read with the stdlib's parser."""
    if not stdlib_reads_alike(pattern):
        return False
    sre_parse, _ = _stdlib_parser()
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = sre_parse.parse(pattern, flags)
    except Exception:  # noqa: BLE001 - not the stdlib's dialect
        return False
    return _digit_blind(list(tree))


def _digit_blind(items: List[_Item]) -> bool:
    for op, av in items:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "IN"):
            test = _chars(("LITERAL" if name == "NOT_LITERAL" else name, av))
            if test is None or len({bool(test(d)) for d in "0123456789"}) != 1:
                return False
        elif name in _REPEATS:
            if not _digit_blind(list(av[2])):
                return False
        elif name in ("SUBPATTERN", "BRANCH", "ASSERT", "ASSERT_NOT", "ATOMIC_GROUP"):
            subs = [list(av)] if name == "ATOMIC_GROUP" else _children(name, av)
            if not all(_digit_blind(list(sub)) for sub in subs):
                return False
        elif name not in ("ANY", "AT", "CATEGORY"):
            return False
    return True


def bounded_paths(pattern: str) -> int:
    """How many steps at most a backtracking matcher takes trying PATTERN from one place of a text, when that is
    bounded: the ways through it times the longest way (repeats unrolled: x{100} is 100 steps, (?:ab){100} 200); no
    repeat unbounded, no back-reference; else 0.  (A search then takes at most that times the text's length: linear
    in the text.)  Read with the stdlib's parser; 0 for what it cannot read or may read otherwise than `regex` (a
    `{` that is no counted repeat -- regex's fuzzy matching --, a set in a set -- a POSIX class), and past
    MAX_PATHS.  (The review: counting a repeat's rounds as one step let (?:\\w\\w){1000}\\W run 40 ms on a
    4,000-character line untimed.)"""
    if not stdlib_reads_alike(pattern):
        return 0
    sre_parse, maxrepeat = _stdlib_parser()
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - not the stdlib's dialect
        return 0
    got = _cost(list(tree), maxrepeat)
    return got[0] * got[1] if got is not None and got[0] * got[1] <= MAX_PATHS else 0


MAX_PATHS = 1 << 16
_ONE_CHAR = ("LITERAL", "NOT_LITERAL", "IN", "ANY", "CATEGORY")


def _repeat_cost(av: Any, maxrepeat: Any) -> Optional[Tuple[int, int]]:
    """_cost of a repeat {LO,HI} of SUB (AV): its rounds' ways (each round's ways multiplied), HI rounds long."""
    lo, hi, sub = av
    if hi is maxrepeat or hi > MAX_REPEAT_COUNT:
        return None
    inner = _cost(list(sub), maxrepeat)
    if inner is None:
        return None
    ways, steps = inner
    return (int(sum(ways ** i for i in range(lo, hi + 1))) if ways > 1 else int(hi - lo + 1)), int(hi * steps + 1)


def _cost(items: List[_Item], maxrepeat: Any) -> Optional[Tuple[int, int]]:
    """(ways through a sequence of parsed items, steps of the longest), None when unbounded or past MAX_PATHS."""
    ways, steps = 1, 0
    for op, av in items:
        name = str(op)
        got: Optional[Tuple[int, int]]
        if name in _ONE_CHAR or name == "AT":
            got = (1, 1)
        elif name in _REPEATS:
            got = _repeat_cost(av, maxrepeat)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            got = _cost(list(av[-1] if name == "SUBPATTERN" else av), maxrepeat)
        elif name == "BRANCH":
            alts = [_cost(list(alt), maxrepeat) for alt in av[1]]
            got = None if any(a is None for a in alts) else (
                sum(a[0] for a in cast(List[Tuple[int, int]], alts)),
                max(a[1] for a in cast(List[Tuple[int, int]], alts)))
        elif name in ("ASSERT", "ASSERT_NOT"):
            got = _cost(list(av[1]), maxrepeat)
        else:                   # (a back-reference, a conditional, what this does not know)
            return None
        if got is None:
            return None
        ways *= max(got[0], 1)
        steps += got[1]
        if ways * steps > MAX_PATHS:
            return None
    return ways, steps


def _within(call: Callable[..., Any], text: str, timeouts: Optional[Timeouts]) -> Optional["regex.Match[str]"]:
    """CALL(TEXT) within TIMEOUT, made again when cut off (_again); None when every attempt was cut off (counted in
    CUTS, and in TIMEOUTS when given)."""
    try:
        return cast(Optional["regex.Match[str]"], call(text, timeout=TIMEOUT))
    except TimeoutError:
        pass
    found = _again(call, text)
    if found is _CUT:
        CUTS[0] += 1
        if timeouts is not None:
            timeouts.count += 1
        return None
    return cast(Optional["regex.Match[str]"], found)


ATTEMPTS = 2               # searches of a line cut off by TIMEOUT, using the CPU, before it counts as no match
PREEMPTED_MAX = 4          # ... and cut off with less than half of TIMEOUT of this thread's CPU (the host took it)
_CUT = object()
# searches and matches cut off in this process, all attempts made (search, match, finditer): what a memo of their
# results (GroupsMemo, TextMemo) must not remember -- a text cut off once, the host busy or a test's TIMEOUT cut short,
# read as no match for the rest of the process (issue 44's eighth CI: a test that cut every search left two real
# logs' capture lines unread in the tests after it in its process)
CUTS = [0]


def _again(call: Callable[..., Any], text: str) -> Any:
    """CALL(TEXT) made again after a first one was cut off by TIMEOUT: once more (ATTEMPTS), and again while an
    attempt is cut off having had less than half of TIMEOUT of this thread's CPU, PREEMPTED_MAX times at most (a
    loaded host takes the CPU away).  Its result, or _CUT when every attempt was cut off.  (The CPU is read only
    after a first cut: the searches that are not cut off pay nothing for it.)"""
    preempted = 0
    tries = 1
    while tries < ATTEMPTS:
        c0 = thread_time()
        try:
            return call(text, timeout=TIMEOUT)
        except TimeoutError:
            if thread_time() - c0 < TIMEOUT / 2 and preempted < PREEMPTED_MAX:
                preempted += 1
            else:
                tries += 1
    return _CUT


def finditer(rx: Union[LazyRx, "regex.Pattern[str]"], text: str) -> Iterator["regex.Match[str]"]:
    """RX's matches in TEXT, in order, as far as they were found within TIMEOUT (the rest not looked for)."""
    try:
        yield from rx.finditer(text, timeout=TIMEOUT)
    except TimeoutError:
        CUTS[0] += 1
        return


MAX_REPEAT_COUNT = 1000      # a {n} / {n,m} bound above this is refused in a pattern
MANY_ROUNDS = 10             # a counted repeat of this many rounds or more is judged as an unbounded one

# risky() reads a pattern with the stdlib's parser: a parsed pattern is a list of (opcode, argument)
# items whose shape depends on the opcode (untyped in the standard library, so Any here).
_Item = Tuple[Any, Any]
CharTest = Callable[[str], bool]        # what one item can match, as a predicate on a character
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_CATEGORIES: Dict[str, CharTest] = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_SPACE": str.isspace,
}


def _stdlib_parser() -> Tuple[Any, Any]:
    """The stdlib's regex parser module and its MAXREPEAT (an unbounded repeat's upper bound)."""
    try:
        import re._parser as sre_parse  # type: ignore[import-not-found]
        from re._constants import MAXREPEAT  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import sre_parse  # type: ignore[no-redef]
        from sre_constants import MAXREPEAT  # type: ignore[no-redef]
    return sre_parse, MAXREPEAT


def _is_code(v: int) -> CharTest:
    return lambda c: ord(c) == v


def _in_range(lo: int, hi: int) -> CharTest:
    return lambda c: lo <= ord(c) <= hi


def _negated(test: CharTest) -> CharTest:
    return lambda c: not test(c)


def _category_tests(cat: str) -> List[CharTest]:
    """The predicates of a set's category item (\\d, \\w, \\s or their negations)."""
    tests: List[CharTest] = []
    for key, fn in _CATEGORIES.items():
        if cat == key:
            tests.append(fn)
        elif cat == key.replace("CATEGORY_", "CATEGORY_NOT_"):
            tests.append(_negated(fn))
    return tests


def _set_chars(members: List[_Item]) -> Optional[CharTest]:
    """What a character set [...] can match (None: can't tell)."""
    tests: List[CharTest] = []
    neg = False
    for sop, sav in members:
        sop = str(sop)
        if sop == "NEGATE":
            neg = True
        elif sop == "LITERAL":
            tests.append(_is_code(sav))
        elif sop == "RANGE":
            tests.append(_in_range(sav[0], sav[1]))
        elif sop == "CATEGORY":
            tests += _category_tests(str(sav))
        else:
            return None

    def any_test(c: str) -> bool:
        return any(t(c) for t in tests)
    return _negated(any_test) if neg else any_test


def _chars(item: _Item) -> Optional[CharTest]:
    """What one item can match, as a predicate on a character (None: can't tell)."""
    op, av = str(item[0]), item[1]
    if op == "LITERAL":
        return _is_code(av)
    if op == "ANY":
        return lambda c: c != "\n"
    if op == "IN":
        return _set_chars(av)
    return None


def _children(name: str, av: Any) -> List[List[_Item]]:
    """The item sequences inside a group, an alternation or a lookaround (none for other items)."""
    if name == "SUBPATTERN":
        return [av[-1]]
    if name == "BRANCH":
        return list(av[1])
    if name in ("ASSERT", "ASSERT_NOT"):
        return [av[1]]
    return []


def _many(hi: Any, maxrepeat: Any) -> bool:
    """A repeat's upper bound lets it take many rounds: unbounded, or MANY_ROUNDS and more (a counted
    repeat backtracks as an unbounded one does within its count: (.*a){20}x, (a?){30}a{30})."""
    return hi is maxrepeat or hi >= MANY_ROUNDS


def _inner_repeats(items: List[_Item], maxrepeat: Any) -> List[Optional[CharTest]]:
    """Character predicates of the repeats of many rounds inside `items` (None when unknown)."""
    out: List[Optional[CharTest]] = []
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            _lo, hi, sub = av
            if _many(hi, maxrepeat) and name != "POSSESSIVE_REPEAT":
                out.append(_chars(sub[0]) if len(sub) == 1 else None)
            out += _inner_repeats(sub, maxrepeat)
        elif name in ("SUBPATTERN", "BRANCH"):
            for child in _children(name, av):
                out += _inner_repeats(child, maxrepeat)
    return out


def _delimited(body: List[_Item], inner: List[Optional[CharTest]]) -> bool:
    r"""The repeated body holds a mandatory character no inner repeat can match (as the "." of
    (\w+\.)* or the '|' of ([^|]*\|)*): each round is then anchored, no catastrophe."""
    for op, av in body:
        if str(op) == "LITERAL" and all(p is not None and not p(chr(av)) for p in inner):
            return True
    return False


_ZERO_WIDTH = ("AT", "ASSERT", "ASSERT_NOT")
# characters tried when asking whether two character predicates overlap
_SAMPLE = [chr(i) for i in range(0x250)] + ["\u00a0", "\u2003", "\u0660", "\u4e00"]


def _subs(name: str, av: Any) -> Optional[List[List[_Item]]]:
    """The item sequences of a repeat, a group or an alternation (None for other items)."""
    if name in _REPEATS:
        return [av[2]]
    if name == "SUBPATTERN":
        return [av[-1]]
    if name == "ATOMIC_GROUP":
        return [av]
    if name == "BRANCH":
        return list(av[1])
    return None


def _nullable(items: List[_Item]) -> bool:
    """ITEMS can match the empty string (a back-reference or an unfamiliar item counts as not empty)."""
    for op, av in items:
        name = str(op)
        if name in _ZERO_WIDTH or (name in _REPEATS and av[0] == 0):
            continue
        subs = _subs(name, av)
        if subs is None or not any(_nullable(sub) for sub in subs):
            return False
    return True


def _first(items: List[_Item]) -> Optional[CharTest]:
    """What the first character of a match of ITEMS can be (None: can't tell, or none)."""
    tests: List[CharTest] = []
    for op, av in items:
        name = str(op)
        if name in _ZERO_WIDTH:
            continue
        t = _chars((op, av))
        if t is not None:
            tests.append(t)
            break
        subs = _subs(name, av)
        if subs is None:
            return None
        for sub in subs:
            t = _first(sub)
            if t is None and not _nullable(sub):
                return None
            if t is not None:
                tests.append(t)
        if not _nullable([(op, av)]):
            break
    if not tests:
        return None
    return lambda c: any(t(c) for t in tests)


def _overlap(a: Optional[CharTest], b: Optional[CharTest]) -> bool:
    return a is not None and b is not None and any(a(c) and b(c) for c in _SAMPLE)


def _ambiguous_branch(body: List[_Item]) -> bool:
    """An alternation in the repeated BODY (outside atomic groups and inner repeats) whose
    alternatives can take the same text: an empty alternative where the other can start what
    follows it (the stdlib's parser writes (a|aa) as a(?:|a)), or two alternatives that start
    alike.  (Alternatives with a common literal prefix are factored out by the parser first,
    so (ab|ac)+ is a(?:b|c) and passes.)"""
    for k, (op, av) in enumerate(body):
        name = str(op)
        if name == "SUBPATTERN":
            if _ambiguous_branch(list(av[-1]) + body[k + 1:]):
                return True
        elif name == "BRANCH":
            alts = list(av[1])
            follow = _first(body[k + 1:] + body) if _nullable(body[k + 1:]) else _first(body[k + 1:])
            firsts = [_first(a) for a in alts]
            keys = [_shape(a) for a in alts]
            if len(set(keys)) < len(keys):
                return True               # the same alternative twice: (a|a)* (the parser leaves a(?:|))
            for i, a in enumerate(alts):
                if _nullable(a) and any(_overlap(f, follow) for j, f in enumerate(firsts) if j != i):
                    return True
                if any(_overlap(firsts[i], firsts[j]) and _alike(a, alts[j]) for j in range(i + 1, len(alts))):
                    return True
    return False


def _simple(items: List[_Item]) -> Tuple[List[CharTest], bool]:
    """The character predicates of the leading one-character items of ITEMS (plain groups and
    fixed counts such as x{3} unrolled), and whether that is all of ITEMS."""
    out: List[CharTest] = []
    for op, av in items:
        name = str(op)
        t = _chars((op, av))
        if t is not None:
            out.append(t)
        elif name == "SUBPATTERN":
            inner, whole = _simple(list(av[-1]))
            out += inner
            if not whole:
                return out, False
        elif name in _REPEATS and av[0] == av[1] <= 8 and len(av[2]) == 1 and _chars(av[2][0]) is not None:
            out += [t2 for t2 in [_chars(av[2][0])] * av[0] if t2 is not None]
        else:
            return out, False
    return out, True


def _alike(a: List[_Item], b: List[_Item]) -> bool:
    """Alternatives A and B (starting alike) can take the same text: character by character they
    overlap until one of them ends, or until what follows is beyond this check (then assumed)."""
    pa, _ = _simple(a)
    pb, _ = _simple(b)
    for x, y in zip(pa, pb):
        if not _overlap(x, y):
            return False
    return True


def _repeat_risk(name: str, av: Any, maxrepeat: Any) -> Optional[str]:
    """Why one repeat item itself is a risk (its count, an unbounded repeat of unbounded repeats,
    of something that can match nothing, or of alternatives that can take the same text), not
    looking further into its body; or None."""
    lo, hi, sub = av
    if (hi is not maxrepeat and hi > MAX_REPEAT_COUNT) or lo > MAX_REPEAT_COUNT:
        return f"repetition count above {MAX_REPEAT_COUNT}"
    if _rounds(sub, maxrepeat) * (hi if hi is not maxrepeat else 1) > MAX_REPEAT_COUNT and hi is not maxrepeat:
        return f"nested repetition counts whose product is above {MAX_REPEAT_COUNT}, such as (a{{1,1000}}){{1,1000}}"
    if _many(hi, maxrepeat) and name != "POSSESSIVE_REPEAT":
        body = sub[0][1][-1] if len(sub) == 1 and str(sub[0][0]) == "SUBPATTERN" else sub
        inner = _inner_repeats(body, maxrepeat)
        if inner and not _delimited(body, inner):
            return "nested unbounded quantifiers (catastrophic backtracking)"
        if _nullable(body):
            return "an unbounded quantifier over something that can match nothing (catastrophic backtracking)"
        if _ambiguous_branch(list(body)):
            return ("an unbounded quantifier over alternatives that can match the same text, such as (a|aa)+ "
                    "(catastrophic backtracking)")
    return None


def _shape(items: Any) -> Any:
    """A parsed item sequence as nested tuples (two alternatives written alike compare equal)."""
    if isinstance(items, (list, tuple)) or type(items).__name__ == "SubPattern":
        return tuple(_shape(x) for x in items)
    return str(items) if not isinstance(items, (int, type(None))) else items


def _rounds(items: List[_Item], maxrepeat: Any) -> int:
    """The largest product of the counted repeats' upper bounds nested in ITEMS (1: none; an unbounded
    one counts 1 here, judged by the other checks)."""
    best = 1
    for op, av in items:
        name = str(op)
        subs = _subs(name, av)
        if subs is None:
            continue
        inner = max((_rounds(sub, maxrepeat) for sub in subs), default=1)
        if name in _REPEATS and av[1] is not maxrepeat:
            inner *= max(1, av[1])
        best = max(best, inner)
    return best


def _walk(items: List[_Item], maxrepeat: Any) -> Optional[str]:
    """The first risk found in `items`, depth first, or None."""
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            children = [av[2]]
            why = _repeat_risk(name, av, maxrepeat)
            if why:
                return why
        else:
            children = _children(name, av)
        for child in children:
            why = _walk(child, maxrepeat)
            if why:
                return why
    return None


def risky(pattern: str) -> Optional[str]:
    """Why a regex is a backtracking risk (nested unbounded quantifiers such as (a+)+ or (\\w*\\s?)*,
    a repeated group that can match nothing such as (a|a?)+, alternatives under a quantifier that can
    take the same text such as (a|aa)+, or a huge repetition count), or None.  Read with the stdlib
    parser; a pattern it cannot read (a `regex`-only construct) is judged by its timeout alone."""
    sre_parse, maxrepeat = _stdlib_parser()
    try:
        tree = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - not the stdlib's dialect
        return None
    return _walk(tree, maxrepeat)
