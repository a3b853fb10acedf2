"""One multi-pattern search per block: which lines can matter to which observer.

Every observer declares anchors: literal strings (optionally case-insensitive) or small regexes
that every line it reacts to contains.  All anchors of all observers are compiled into one
Hyperscan database (the `hyperscan` wheel) and searched once per block, in C; a block of plain
INFO lines costs no Python at all.  Where the wheel is missing, each anchor is searched by itself
(`bytes.find` for the literals, the stdlib `re` for the regexes): the same lines and tags, ~10 times
slower.

Anchor regexes must not cross a newline: they use `[ \\t]` instead of `\\s` and no `.`.
"""
from __future__ import annotations

import os
import re
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .. import hashing as hashlib
from ..cachefiles import cache_dir, path_of, read_own, write  # noqa: F401 - cache_dir: read by tests
from ..record import record

if TYPE_CHECKING:
    from hyperscan import Database, Scratch

_hs: Optional[ModuleType]        # the `hyperscan` module, None without the wheel
try:  # pragma: no cover - exercised where the wheel exists
    import hyperscan
    _hs = hyperscan
except Exception:  # noqa: BLE001 - any import problem means "no hyperscan"
    _hs = None


@record(frozen=True)
class Anchor:
    text: str                 # a literal, or a regex when `regex` is true
    tag: int                  # what a hit means to the scanner (an observer / rule index)
    ignore_case: bool = False
    regex: bool = False


def _literal_rx(lit: bytes) -> bytes:
    """A literal as a Hyperscan/PCRE regex: every non-alphanumeric byte as \\xHH."""
    return b"".join(bytes([c]) if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else b"\\x%02x" % c
                    for c in lit)


def _per_line(rx: bytes) -> bytes:
    """An anchor's expression reported once a line whatever it holds: to the end of its line (Hyperscan
    reports a match once per end offset).  A literal found all over a line ("a" in a line of a's, issue
    46: 64 MiB of them was 64 M callbacks, 33 s and 740 MB) is one report for the line."""
    return rx + b"[^\\n]*$"


CACHE_KEEP = 16            # compiled anchor databases kept (the most recently used)
DB_FORMAT = 5              # how a database is made of its anchors (_literal_rx, the flags): change it with them
# facts C tells faster than a Hyperscan database holding them (AnchorSet: not compiled; each a test of the block's
# bytes): a byte not ASCII -- in one database with the other facts, Hyperscan scanned a block holding such bytes
# ~3.7x slower than one without (3.4 against 0.9 ms a MiB: issue 44's twentieth pass, a log with non-ASCII text on
# 2% of its lines); bytes.isascii is a pass in C
C_FACTS: Dict[bytes, Callable[[bytes], bool]] = {rb"[\x80-\xff]": lambda b: not b.isascii()}
                           # (3: cache files hold their name's digest; 4: literals reported once a line, issue 46)
                           # (tests/test_cachefiles.py pins them to it)


def _takes_buffers(version: str) -> bool:
    """Whether this `hyperscan` wheel's Database.scan takes any buffer (a memoryview of a block past
    the previous block's tail): from 0.8.0 on; 0.7.x takes only bytes ("a bytes-like object is
    required"), and 0.7.8 is the last wheel for CPython 3.9.  An unreadable version: bytes only."""
    try:
        return tuple(int(x) for x in version.split(".")[:2]) >= (0, 8)
    except ValueError:
        return False


_HS_BUFFERS = _hs is not None and _takes_buffers(str(getattr(_hs, "__version__", "")))


def db_key(*what: object) -> str:
    """The cache name of a database compiled of WHAT: also named by the wheel's version and this
    machine's architecture (a home directory shared by x86-64 login nodes and aarch64 Grace nodes
    holds one of each, instead of each host compiling again over the other's)."""
    return hashlib.sha256(repr((getattr(_hs, "__version__", ""), _machine(), what)).encode()).hexdigest()[:24]


def _machine() -> str:
    try:
        return os.uname().machine
    except AttributeError:  # pragma: no cover - not POSIX
        return os.environ.get("PROCESSOR_ARCHITECTURE", "")


def hyperscan_available() -> bool:
    """Whether the `hyperscan` wheel could be imported."""
    return _hs is not None


class Presence:
    """Which of LITERALS a buffer holds (`presence(data)`: a set of them), in one Hyperscan pass, each reported once
    (issue 44's twentieth pass: ranks.ranks_in looked for ~17 launchers' probes with `in`, a pass over the block
    each, ~5 ms a MiB of a hang's ranks read again); without the wheel, or where it cannot compile them, `in` each."""

    def __init__(self, literals: Sequence[bytes]):
        self.literals = tuple(dict.fromkeys(x for x in literals if x))
        self._db: Optional[Database] = None
        if _hs is not None and self.literals:
            try:
                db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
                db.compile(expressions=[_literal_rx(x) for x in self.literals],
                           ids=list(range(len(self.literals))), elements=len(self.literals),
                           flags=[_hs.HS_FLAG_SINGLEMATCH] * len(self.literals))
                self._scratch = _hs.Scratch(db)
                self._db = db
            except Exception:  # noqa: BLE001 - the `in` of each instead
                self._db = None

    def __call__(self, data: bytes) -> Set[bytes]:
        if self._db is None:
            return {x for x in self.literals if x in data}
        ids: List[int] = []
        self._db.scan(data, match_event_handler=lambda i, _a, _b, _c, _d: ids.append(i), scratch=self._scratch)
        return {self.literals[i] for i in ids}


def load_cached(key: str) -> Optional[Database]:
    """A compiled Hyperscan database from the cache directory (cachefiles: this user's file only), or
    None (compiling the catalog takes ~0.3 s; loading ~1 ms)."""
    if _hs is None:
        return None
    name = f"anchors-{key}.hsdb"
    data = read_own(name)
    if data is None:
        return None
    try:
        db = _hs.loadb(data, _hs.HS_MODE_BLOCK)
        os.utime(path_of(name))         # most recently used: kept by the pruning
        return db
    except Exception:  # noqa: BLE001 - a stale or corrupt cache is just recompiled
        return None


def store_cached(key: str, db: Database) -> None:
    """Keep a compiled Hyperscan database in the cache directory (best effort)."""
    if _hs is None:
        return
    try:
        data = _hs.dumpb(db)
    except Exception:  # noqa: BLE001 - a database the wheel cannot serialise: no cache
        return
    write(f"anchors-{key}.hsdb", data, keep=("anchors-", ".hsdb", CACHE_KEEP))


def _put(out: Dict[int, Set[int]], canon: Dict[FrozenSet[int], Set[int]], start: int, tags: Set[int]) -> None:
    """Line START's TAGS into OUT (with those it had, when its hits came apart), as the one set
    equal to them (CANON)."""
    f = frozenset(tags)
    old = out.get(start)                 # the line had hits before another line's (out of order)
    if old is not None:
        f = f | old
    c = canon.get(f)
    if c is None:
        c = canon[f] = set(f)
    out[start] = c


class AnchorSet:
    """Compiled anchors; `scan(data)` returns {line start: set of tags} for the lines they hit.  FACTS: regexes
    (bytes) searched in the same pass that hit no line: `scan(..., facts=S)` adds to S the index of each one
    the block may hold (Hyperscan: each found, reported once a block; the stdlib fallback searches none and
    adds them all -- a fact is what a block MAY hold)."""

    def __init__(self, anchors: Sequence[Anchor], facts: Sequence[bytes] = ()):
        self.anchors = list(anchors)
        self.facts = tuple(facts)
        self.engine = "hyperscan" if _hs is not None else "re"
        self._db: Optional[Database] = None
        if _hs is not None and self.anchors:
            try:
                self._db = self._compile_hs()
            except Exception:  # noqa: BLE001 - an anchor Hyperscan cannot compile: use the fallback
                self._db = None
                self.engine = "re"
        if self._db is None:
            self._compile_re()

    # --- Hyperscan -----------------------------------------------------------------------
    def _compile_hs(self) -> Database:
        assert _hs is not None           # only called with the wheel
        # named by the anchors themselves: the expressions and flags below are made from them (only
        # when the database is not in the cache: ~2 ms of a tiny log's run); DB_FORMAT names how
        key = db_key(DB_FORMAT, [(a.text, a.regex, a.ignore_case) for a in self.anchors], self.facts)
        db = load_cached(key)
        if db is None:
            exprs: List[bytes] = []
            ids: List[int] = []
            flags: List[int] = []
            for i, a in enumerate(self.anchors):
                exprs.append(a.text.encode("utf-8") if a.regex else _per_line(_literal_rx(a.text.encode("utf-8"))))
                ids.append(i)
                f = _hs.HS_FLAG_MULTILINE
                if a.ignore_case:
                    f |= _hs.HS_FLAG_CASELESS
                flags.append(f)
            for k, rx in self._compiled_facts():      # (ids after the anchors': reported once a scan)
                exprs.append(rx)
                ids.append(len(self.anchors) + k)
                flags.append(_hs.HS_FLAG_SINGLEMATCH)
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
            store_cached(key, db)
        self._scratch: Scratch = _hs.Scratch(db)
        self._tags: List[int] = [a.tag for a in self.anchors]
        self._hs_facts = [k for k, _ in self._compiled_facts()]
        self._c_facts = [(k, C_FACTS[rx]) for k, rx in enumerate(self.facts) if rx in C_FACTS]
        return db

    def _compiled_facts(self) -> List[Tuple[int, bytes]]:
        """(index, regex) of the facts the Hyperscan database holds: all but C_FACTS'."""
        return [(k, rx) for k, rx in enumerate(self.facts) if rx not in C_FACTS]

    # --- stdlib fallback ---------------------------------------------------------------
    def _compile_re(self) -> None:
        # each literal by itself (bytes.find, C speed: one alternation of ~290 literals in `re` tries
        # every branch at every byte, ~1 MB/s), each regex by itself, each once with all its tags; a
        # case-insensitive literal in the block lowered once (ASCII only, as re.I and Hyperscan's
        # CASELESS fold bytes)
        lits: Dict[Tuple[bytes, bool], Set[int]] = {}
        rxs: Dict[Tuple[str, bool], Set[int]] = {}
        for a in self.anchors:
            if a.regex:
                rxs.setdefault((a.text, a.ignore_case), set()).add(a.tag)
            else:
                b = a.text.encode("utf-8")
                lits.setdefault((b.lower() if a.ignore_case else b, a.ignore_case), set()).add(a.tag)
        self._re_lits: List[Tuple[bytes, bool, Set[int]]] = [(b, ci, tags) for (b, ci), tags in lits.items()]
        # a regex is searched only in the lines holding one of the literals every match contains (the
        # catalog's prefilter, patterns.derive_literals, or one per alternative of a leading group),
        # when it has them
        from .literals import derive_literals, leading_alternatives
        self._re_rxs: List[Tuple["re.Pattern[bytes]", Set[int], Optional[List[bytes]], bool]] = []
        for (t, ci), tags in rxs.items():
            pre = [x.encode("utf-8") for x in derive_literals(t, ci)[0] or leading_alternatives(t, ci)]
            self._re_rxs.append((re.compile(t.encode("utf-8"), re.M | (re.I if ci else 0)), tags,
                                 [x.lower() for x in pre] if ci else pre or None, ci))

    def scan(self, data: bytes, base: int = 0, buf: bytes = b"",
             facts: Optional[Set[int]] = None) -> Dict[int, Set[int]]:
        """Hits in `data`, keyed by the offset of their line's start in `buf` (data = buf[base:]); the facts
        `data` may hold added to FACTS (their indices in self.facts)."""
        if not len(data):
            return {}
        whole = buf or data
        if self._db is not None:
            return self._scan_hs(self._db, data, base, whole, facts)
        if facts is not None:
            facts.update(range(len(self.facts)))
        return self._scan_re(data, base, whole)

    def _take_facts(self, ids: List[int], ends: List[int], whole: bytes, facts: Optional[Set[int]]) -> None:
        """The facts' reports taken out of a Hyperscan scan's IDS and ENDS (each at most once), their indices added
        to FACTS, with those of C_FACTS that WHOLE holds (a fact is what the block MAY hold: its buffer's)."""
        n = len(self.anchors)
        for k in self._hs_facts:
            try:
                j = ids.index(n + k)
            except ValueError:
                continue
            del ids[j], ends[j]
            if facts is not None:
                facts.add(k)
        if facts is not None:
            for k, test in self._c_facts:
                if test(whole if type(whole) is bytes else bytes(whole)):
                    facts.add(k)

    def _scan_hs(self, db: Database, data: bytes, base: int, whole: bytes,
                 facts: Optional[Set[int]] = None) -> Dict[int, Set[int]]:
        """scan() with Hyperscan: every hit's tag added to its line.  Linear in the block however
        many hits a line holds: a hit's line start is looked for only back to the previous hit
        (Hyperscan reports in order of end offset), and hits are not kept, only their lines' tags,
        as sets shared among lines (equal sets are one object: a block of a million hit lines holds
        a handful of distinct ones; callers read them, never change them).  The callback only
        notes each hit (a Python call per hit is the cost: the rest is done in one loop after)."""
        ids: List[int] = []
        ends: List[int] = []
        note_id, note_end = ids.append, ends.append

        def on_match(i: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            note_id(i)
            note_end(to)
        db.scan(data if _HS_BUFFERS or type(data) is bytes else bytes(data),
                match_event_handler=on_match, scratch=self._scratch)
        self._take_facts(ids, ends, whole, facts)
        out: Dict[int, Set[int]] = {}
        canon: Dict[FrozenSet[int], Set[int]] = {}
        tags = self._tags
        rfind = whole.rfind
        last_end = last_start = 0            # absolute end of the last hit, and its line's start
        cur = -1                             # the line whose hits are being gathered ...
        cur_tags: Set[int] = set()           # ... and its tags so far
        for i, to in zip(ids, ends):
            end = base + to
            if end >= last_end:
                nl = rfind(b"\n", last_end, end)
                start = nl + 1 if nl >= 0 else last_start
                last_end, last_start = end, start
            else:                            # out of order: look back all the way
                start = rfind(b"\n", 0, end) + 1
            if start != cur:
                if cur >= 0:
                    _put(out, canon, cur, cur_tags)
                cur, cur_tags = start, set()
            cur_tags.add(tags[i])
        if cur >= 0:
            _put(out, canon, cur, cur_tags)
        return out

    def _scan_re(self, data: bytes, base: int, whole: bytes) -> Dict[int, Set[int]]:
        """scan() with the stdlib: each anchor searched in the block by itself, once per line it hits
        (after a hit the search goes on from the next line)."""
        if type(whole) is not bytes:
            whole = bytes(whole)
        found: Dict[int, Set[int]] = {}
        lowered: List[Optional[bytes]] = [None]          # whole[base:] lowered, made once if needed
        for needle, caseless, tags in self._re_lits:
            for start in self._lines_with(needle, caseless, whole, base, lowered):
                found.setdefault(start, set()).update(tags)
        for rx, tags, pre, caseless in self._re_rxs:
            for start in self._regex_lines(rx, pre, caseless, data, whole, base, lowered):
                found.setdefault(start, set()).update(tags)
        out: Dict[int, Set[int]] = {}
        canon: Dict[FrozenSet[int], Set[int]] = {}
        for start in sorted(found):
            _put(out, canon, start, found[start])
        return out

    def _regex_lines(self, rx: "re.Pattern[bytes]", pre: Optional[List[bytes]], caseless: bool, data: bytes,
                     whole: bytes, base: int, lowered: List[Optional[bytes]]) -> List[int]:
        """The starts of the lines of DATA (= whole[base:]) that RX hits: searched in each line holding
        one of its literals PRE, else through the block."""
        lf = whole.find
        out: List[int] = []
        if pre:
            for start in sorted({s for lit in pre for s in self._lines_with(lit, caseless, whole, base, lowered)}):
                end = lf(b"\n", start)
                if rx.search(data, max(start, base) - base, (end if end >= 0 else len(whole)) - base):
                    out.append(start)
            return out
        m = rx.search(data)
        while m is not None:
            out.append(whole.rfind(b"\n", 0, base + m.start()) + 1)
            nl = lf(b"\n", base + m.end())
            if nl < 0:
                break
            m = rx.search(data, nl + 1 - base)
        return out

    @staticmethod
    def _lines_with(needle: bytes, caseless: bool, whole: bytes, base: int,
                    lowered: List[Optional[bytes]]) -> List[int]:
        """The starts (in WHOLE) of the lines of whole[base:] holding NEEDLE (lowered: caseless, in the
        block lowered once, kept in LOWERED[0]), each once."""
        if caseless:
            low = lowered[0]
            if low is None:
                low = lowered[0] = whole[base:].lower()
            hay, lo, off = low, 0, base
        else:
            hay, lo, off = whole, base, 0
        find, rfind = hay.find, whole.rfind
        out: List[int] = []
        p = find(needle, lo)
        while p >= 0:
            out.append(rfind(b"\n", 0, off + p) + 1)
            nl = find(b"\n", p + len(needle))
            if nl < 0:
                break
            p = find(needle, nl + 1)
        return out

    def tags_of(self, line: bytes) -> Set[int]:
        """The tags that hit one (normalised) line."""
        return set().union(*self.scan(line).values()) if line else set()
