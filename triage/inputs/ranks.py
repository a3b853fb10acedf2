"""Rank extraction, generated from the launcher table (triage/scan/launchers.py).

`RankReader(launchers, inner)` builds every matcher from the two tables:

- str side, one line at a time (sources.make_line): `split_prefix` strips the launcher prefixes
  (a quoted `> ` paste too) and reads the rank of the first; `inner_rank` reads a rank a message
  names when no prefix (or file name) gives one;
- bytes side, a block at a time in C (the ranks a hang verdict lists): `ranks_in` finds the ranks
  of the prefixes at the line starts with one search per launcher (a lookahead excludes the ranks
  already seen, so a block of a million lines costs a few searches), the quoted forms, the lines
  without a prefix (they take the file's rank) and the inner forms.

Both read the same regexes (ASCII classes: launchers print ASCII digits and spaces), so they agree
on every line; tests/test_launchers.py checks each row's example and random variations of it.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..cachefiles import Memo
from ..lazyre import lazy_re
from ..match.rx import ASCII, V0, _stdlib_parser, digit_blind
from ..match.rx import _chars as _item_chars
from ..match.rx import regex as _regex
from .launchers import GROUP_NUMBER, INNER_RANKS, LAUNCHERS, RANK_GROUP, InnerRank, Launcher
from .text import normalise, progress_updates

if TYPE_CHECKING:
    from ..match.anchors import Presence

_QUOTE = lazy_re(r"^(?:> ?)+")            # a log pasted as a quote in an issue / e-mail: "> line", "> > line"
_QUOTE_B = rb"(?:> ?)"
# the control bytes (_DIRTY_LINE_B's class): a segment holds one when deleting them shortens it (bytes.translate: ~0.7
# ms a 2 MiB segment here, where a search of the class took ~10 ms: `triage watch` at 1 MB/s spent ~1% of a core on it)
_CTRL_BYTES = bytes([*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f])
_DIRTY_LINE_B = lazy_re(rb"\n[^\n]*[\x00-\x08\x0b-\x1f\x7f][^\n]*")
MAX_NESTED = 3            # prefixes read off one line ("[default0]:[rank0]: ..." nests)
MAX_ELIMINATE = 64        # past this many ranks in one block, one findall is cheaper


def _plain(prefix: str) -> str:
    """The prefix regex with its rank group made non-capturing."""
    return prefix.replace(RANK_GROUP, "(?:")


def _numbered(prefix: str) -> str:
    """The prefix regex with its rank group an unnamed group (several in one alternation)."""
    return prefix.replace(RANK_GROUP, "(")


# _first_chars' answers read off the parser's tree, kept between runs (cachefiles.Memo: the launcher rows' ~17 prefixes
# read again at every run's start, ~2-3 ms; an answer asked of the `regex` engine is not kept)
FIRST_CHARS = Memo("first-chars-", __file__, lambda k, v: (type(k) is str and type(v) is frozenset
                                                           and all(type(c) is str for c in v)))


def _first_chars(rx: str) -> FrozenSet[str]:
    """The ASCII characters a line matching RX at its start can begin with (at least: a class is read as
    match.rx reads it, whose \\s also holds \\x1c-\\x1f; more is only more lines tried): read off the parse
    tree of the stdlib's own parser (_first_of), else (a construct it does not know) asked of the `regex`
    engine, a partial match of each character.  Lines starting with anything else skip the prefix
    regexes (issue 44: the `regex` engine's compile of the 17 launcher rows took ~11 ms of every big
    input's start, before the workers were forked)."""
    got = FIRST_CHARS.get(rx)
    if got is not None:
        return got
    try:
        chars, nullable = _first_of(_sre_parse(rx, re.ASCII))
        got = _ALL if nullable else frozenset(chars)      # (one that matches nothing matches before any)
        FIRST_CHARS.put(rx, got)
        return got
    except _Unknown:
        compiled = _regex.compile(rx, ASCII | V0)
        return frozenset(c for c in map(chr, range(128)) if compiled.match(c, partial=True))


class _Unknown(Exception):
    """A regex construct _first_of does not read: the caller asks the engine instead."""


_ALL = frozenset(map(chr, range(128)))


def _sre_parse(rx: str, flags: int):
    try:
        return _stdlib_parser()[0].parse(rx, flags)
    except Exception:  # noqa: BLE001 - whatever the private parser says: the engine is asked
        raise _Unknown() from None


def _first_of(items) -> Tuple[Set[str], bool]:
    """(the ASCII characters a match of the parsed sequence ITEMS can start with, whether it can match
    the empty string); an over-estimate where a lookaround restricts it; _Unknown for anything else."""
    out: Set[str] = set()
    flags = getattr(getattr(items, "state", None), "flags", 0)
    folded = bool(flags & re.IGNORECASE)
    nullable = True
    for op, av in items:
        step = _FIRST.get(str(op))
        if step is None:
            raise _Unknown(str(op))
        chars, nullable = step(av, flags)
        if str(op) == "SUBPATTERN" and av[1] & re.IGNORECASE:
            folded = True
        out |= chars
        if not nullable:
            break
    return (_folded(out) if folded else out), nullable


def _first_sub(av, flags: int) -> Tuple[Set[str], bool]:
    if (av[1] | av[2]) & re.DOTALL:
        raise _Unknown("a local DOTALL")
    return _first_of(av[-1])


def _first_branch(av, flags: int) -> Tuple[Set[str], bool]:
    chars: Set[str] = set()
    nullable = False
    for alt in av[1]:
        c, n = _first_of(alt)
        chars |= c
        nullable = nullable or n
    return chars, nullable


def _first_repeat(av, flags: int) -> Tuple[Set[str], bool]:
    chars, nullable = _first_of(av[2])
    return chars, nullable or av[0] == 0


# what each element of a parsed regex (by its opcode's name) may start with, and whether it can match nothing
_FIRST = {
    "LITERAL": lambda av, flags: ({chr(av)} if av < 128 else set(), False),
    "NOT_LITERAL": lambda av, flags: (set(_ALL - {chr(av)}), False),
    # (a newline only under DOTALL; a subpattern's own DOTALL: _Unknown)
    "ANY": lambda av, flags: (set(_ALL) if flags & re.DOTALL else set(_ALL - {"\n"}), False),
    "IN": lambda av, flags: (_in_class(av), False),     # (match.rx's reading of a class, on ASCII)
    "SUBPATTERN": _first_sub,
    "ATOMIC_GROUP": lambda av, flags: _first_of(av),
    "BRANCH": _first_branch,
    "MAX_REPEAT": _first_repeat, "MIN_REPEAT": _first_repeat, "POSSESSIVE_REPEAT": _first_repeat,
    "AT": lambda av, flags: (set(), True), "ASSERT": lambda av, flags: (set(), True),
    "ASSERT_NOT": lambda av, flags: (set(), True),
}


def _in_class(av) -> Set[str]:
    """The ASCII characters of a parsed character class (match.rx's predicate of it)."""
    test = _item_chars(("IN", av))
    if test is None:
        raise _Unknown("a class")
    return {c for c in _ALL if test(c)}


def _folded(chars: Set[str]) -> Set[str]:
    return chars | {c.swapcase() for c in chars}


def _any_prefix(launchers: Sequence[Launcher]) -> Tuple[
        "Optional[re.Pattern[str]]", Dict[str, Tuple[Optional[str], bool]]]:
    """Every row's `prefix sep` as one alternation, in the rows' order (the first row that matches at the
    start wins, as when each is tried in turn: issue 44, a line of a nested prefix tried the 17 rows one
    by one twice), each row its own named group (Match.lastgroup: a row's group closes after those inside
    it), and per row's group the name of its rank group and whether it stops the prefixes.  (None, {})
    when the rows cannot be one regex (a user's row with an inline flag, say): split_prefix then tries
    each in turn."""
    alts, of = [], {}
    for i, x in enumerate(launchers):
        if GROUP_NUMBER.search(x.prefix + x.sep):
            return None, {}         # (its own groups renumbered in the alternation: a \\1 would name another's)
        rank_at = f"_r{i}" if x.has_rank else None
        body = (x.prefix + x.sep).replace(RANK_GROUP, f"(?P<{rank_at}>") if rank_at else x.prefix + x.sep
        alts.append(f"(?P<_L{i}>{body})")
        of[f"_L{i}"] = (rank_at, x.keeps_time)
    try:
        return re.compile("(?:" + "|".join(alts) + ")", re.ASCII), of
    except (re.error, OverflowError, RecursionError):
        return None, {}


def _common_probe(probes: Sequence[str]) -> str:
    """The longest literal every probe holds (the str side's one cheap test before the inner regex)."""
    first = min(probes, key=len)
    for n in range(len(first), 0, -1):
        for i in range(len(first) - n + 1):
            cand = first[i:i + n]
            if all(cand in p for p in probes):
                return cand
    return ""


def _one_of(groups: Sequence[Optional[bytes]]) -> int:
    return int(next(g for g in groups if g is not None))


class RankReader:
    """Every rank matcher, str and bytes, built from a launcher table and an inner-rank table.
    Each side's matchers are built on the first look-up of one of them (a small log may need none:
    building both took ~5 ms of start-up)."""
    # str side: (regex at the line start, reads a rank, stops the prefixes); the first characters
    # of a prefix; the inner-rank regex and its probe
    prefixes: List[Tuple["re.Pattern[str]", bool, bool]]
    starts: FrozenSet[str]
    inner_rx: "re.Pattern[str]"
    inner_probe: str
    # bytes side: per launcher with a rank, (probe, head, tail): head + a lookahead + tail finds a
    # line of a rank not seen yet (the lookahead goes right before the rank's digits)
    kinds: List[Tuple[Optional[bytes], bytes, bytes]]
    quoted_b: "re.Pattern[bytes]"
    unprefixed_b: "re.Pattern[bytes]"
    outer_probes_b: List[Optional[bytes]]
    outer_kinds: List[Tuple[Optional[bytes], bytes, bytes]]
    outer_quoted_b: "re.Pattern[bytes]"
    outer_unprefixed_b: "re.Pattern[bytes]"
    inner_b: "re.Pattern[bytes]"
    inner_probes_b: List[bytes]
    ranked_start_b: "re.Pattern[bytes]"
    prefix_any: "Optional[re.Pattern[str]]"
    prefix_of: Dict[str, Tuple[Optional[str], bool]]
    _STR = frozenset(("prefix_any", "prefix_of", "starts", "inner_rx", "inner_probe"))
    _BYTES = frozenset(("kinds", "quoted_b", "unprefixed_b", "outer_probes_b", "outer_kinds", "outer_quoted_b",
                        "outer_unprefixed_b", "inner_b", "inner_probes_b", "ranked_start_b"))

    def __init__(self, launchers: Sequence[Launcher] = LAUNCHERS, inner: Sequence[InnerRank] = INNER_RANKS):
        self.launchers = tuple(launchers)
        self.inner = tuple(inner)

    if not TYPE_CHECKING:
        def __getattr__(self, name: str):         # a matcher not built yet: build its side
            if name == "prefixes":              # (each row's own regex: only when they are no one alternation)
                self.prefixes = [(re.compile("^" + x.prefix + x.sep, re.ASCII), x.has_rank, x.keeps_time)
                                 for x in self.launchers]
            elif name in RankReader._STR:
                self._build_str()
            elif name in RankReader._BYTES:
                self._build_bytes()
            else:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            return self.__dict__[name]

    def _build_str(self) -> None:
        self.prefix_any, self.prefix_of = _any_prefix(self.launchers)
        self.starts = frozenset().union(*(_first_chars(x.prefix) for x in self.launchers))
        self.inner_rx = re.compile("|".join(r.rx for r in self.inner), re.ASCII)
        self.inner_probe = _common_probe([r.probe for r in self.inner])

    def _build_bytes(self) -> None:
        ranked = [x for x in self.launchers if x.has_rank]
        kinds: List[Tuple[Optional[bytes], bytes, bytes]] = []
        for x in ranked:
            head, tail = x.prefix.split(RANK_GROUP, 1)
            kinds.append((x.probe.encode() if x.probe is not None else None,
                          b"\n" + head.encode(), b"(" + tail.encode()))
        self.kinds = kinds
        alts = "|".join(_numbered(x.prefix) for x in ranked).encode()
        self.quoted_b = re.compile(rb"\n" + _QUOTE_B + rb"+(?:" + alts + rb")")
        plain = "|".join(_plain(x.prefix) for x in ranked).encode()
        self.unprefixed_b = re.compile(rb"\n(?!" + _QUOTE_B + rb"*(?:" + plain + rb"))")
        # a prefix naming no rank that other prefixes may follow (kubectl's "[pod/p/c] " before
        # torchrun's "[rank3]:"; not a logger's header, after which none is looked for): when a block
        # holds one, the searches above are repeated with any run of them allowed at the line start
        outer = [x for x in self.launchers if not x.has_rank and not x.keeps_time]
        self.outer_probes_b = [x.probe.encode() if x.probe is not None else None for x in outer]
        self.outer_kinds = []
        self.outer_quoted_b = self.quoted_b
        self.outer_unprefixed_b = self.unprefixed_b
        if outer:
            run = ("(?:" + "|".join(f"(?:{x.prefix})" + ("[ \t]?" if x.sep == r"\s?" else x.sep)
                                    for x in outer) + ")*").encode()
            # (a probe holding the line start, torchrun's "\n[", no longer follows the newline)
            self.outer_kinds = [(probe.lstrip(b"\n") or None if probe is not None else None,
                                 head[:1] + run + head[1:], tail) for probe, head, tail in kinds]
            self.outer_quoted_b = re.compile(rb"\n" + _QUOTE_B + rb"+" + run + rb"(?:" + alts + rb")")
            self.outer_unprefixed_b = re.compile(rb"\n(?!" + _QUOTE_B + rb"*" + run + rb"(?:" + plain + rb"))")
        self.inner_b = re.compile("|".join(r.rx for r in self.inner).encode())
        # a line that starts with a launcher prefix naming its rank: prefixed_ranks has its rank
        self.ranked_start_b = re.compile(rb"(?:" + alts + rb")")
        self.inner_probes_b = [r.probe.encode() for r in self.inner]

    # --- str: one line ------------------------------------------------------------------------
    def split_prefix(self, text: str) -> Tuple[str, Optional[int]]:
        """Remove launcher rank prefixes; return (text, rank)."""
        cut, rank, _ = self.split_at(text)
        return text[cut:], rank

    def split_at(self, text: str) -> Tuple[int, Optional[int], Optional[Tuple[int, int]]]:
        """split_prefix's reading of TEXT: where its text starts, its rank, and where in TEXT the rank's digits
        are (None: no rank, or the rows read each in turn)."""
        rank = span = None
        off = 0
        if text[:1] == ">":
            q = _QUOTE.match(text)
            if q is not None:
                off = q.end()
                text = text[off:]
        if text[:1] not in self.starts:
            return off, None, None
        any_ = self.prefix_any
        if any_ is None:                  # (rows that cannot be one alternation: each in turn)
            rest, rank = self._split_each(text)
            return off + len(text) - len(rest), rank, None
        of = self.prefix_of
        for _ in range(MAX_NESTED):
            m = any_.match(text)
            if m is None:
                break
            rank_at, stops = of[m.lastgroup or ""]      # (the row's own group closes last: lastgroup is it)
            if rank is None and rank_at is not None:
                rank = int(m.group(rank_at))
                a, b = m.span(rank_at)
                span = (off + a, off + b)
            e = m.end()
            text = text[e:]
            off += e
            if stops:                     # a logger's header (NeMo): the message starts here
                return off, rank, span
            if text and text[:1] not in self.starts:
                break
        return off, rank, span

    def _split_each(self, text: str) -> Tuple[str, Optional[int]]:
        """split_prefix with each row's regex in turn (the rows' order), a quote already taken off."""
        rank = None
        for _ in range(MAX_NESTED):
            for rx_, has_rank, stops in self.prefixes:
                m = rx_.match(text)
                if m:
                    if rank is None and has_rank:
                        rank = int(m.group("rank"))
                    text = text[m.end():]
                    if stops:             # a logger's header (NeMo): the message starts here
                        return text, rank
                    break
            else:
                break
        return text, rank

    def inner_rank(self, text: str) -> Optional[int]:
        """The rank a message names ("[Rank 3]", "[rank: 3]", "global rank 3"), or None."""
        if self.inner_probe not in text:
            return None
        m = self.inner_rx.search(text)
        if not m:
            return None
        return next(int(g) for g in m.groups() if g is not None)

    def inner_rank_at(self, text: str) -> Optional[Tuple[int, int]]:
        """Where in TEXT the digits of the rank inner_rank reads are, or None."""
        if self.inner_probe not in text:
            return None
        m = self.inner_rx.search(text)
        if not m:
            return None
        return next(m.span(i + 1) for i, g in enumerate(m.groups()) if g is not None)

    def digit_blind(self) -> bool:
        """split_at and inner_rank_at read two texts the same but for their digits alike (digit_blind: the
        launcher rows' and the inner ranks' regexes, the quote, the first characters and the probe)."""
        got = self.__dict__.get("_digit_blind")
        if got is None:
            got = self._digit_blind = (
                self.prefix_any is not None and digit_blind(self.prefix_any.pattern, self.prefix_any.flags)
                and digit_blind(self.inner_rx.pattern, self.inner_rx.flags)
                and digit_blind(_QUOTE.pattern) and len({d in self.starts for d in "0123456789"}) == 1
                and not any(c.isdigit() for c in self.inner_probe))
        return got

    # --- bytes: a block -----------------------------------------------------------------------
    def ranks_in(self, buf: bytes, lo: int, hi: int, file_rank: Optional[int]) -> Set[int]:
        """The ranks of the lines in buf[lo:hi], as make_line would tag them (C-level searches only)."""
        if hi <= lo:
            return set()
        seg = b"\n" + buf[lo:hi]
        out: Set[int] = set()
        if len(seg.translate(None, _CTRL_BYTES)) != len(seg):
            seg = self.dirty_ranks(seg, file_rank, out)
            if seg in (b"", b"\n"):
                return out
        has = self._presence()(seg).__contains__ if len(seg) >= PRESENCE_MIN else seg.__contains__
        nested = self.has_outer(seg, has)
        out |= self.prefixed_ranks(seg, nested, has)
        if file_rank is not None:             # a launcher prefix beats the file name; other lines are its
            unprefixed = self.outer_unprefixed_b if nested else self.unprefixed_b
            if not out or unprefixed.search(seg[:-1] if seg.endswith(b"\n") else seg):
                out.add(file_rank)
            return out
        out |= self.inner_ranks(seg, has)
        return out

    def _presence(self) -> "Presence":
        """Every probe ranks_in looks for, looked for in one pass (anchors.Presence; made once)."""
        got = self.__dict__.get("_probes")
        if got is None:
            from ..match.anchors import Presence
            probes = [p for p, _, _ in self.kinds] + [p for p, _, _ in self.outer_kinds] + list(self.outer_probes_b)
            got = self.__dict__["_probes"] = Presence([p for p in probes + list(self.inner_probes_b) + [b"\n>"]
                                                       if p is not None])
        return got

    def dirty_ranks(self, seg: bytes, file_rank: Optional[int], out: Set[int]) -> bytes:
        """Lines with ANSI codes, carriage returns or other control characters are normalised in
        Python (their prefix may follow a colour code; a progress bar's updates each read as a line:
        text.progress_updates): their ranks go to OUT; returns SEG without them (the rest stays C-level)."""
        keep, pos = [], 0
        for m in _DIRTY_LINE_B.finditer(seg):
            keep.append(seg[pos:m.start()])
            pos = m.end()
            line = m.group()[1:].decode("utf-8", "replace")
            for part in progress_updates(line) or (line,):      # (a progress bar's updates: each a line)
                text, rank = self.split_prefix(normalise(part))
                if rank is None:
                    rank = file_rank if file_rank is not None else self.inner_rank(text)
                if rank is not None:
                    out.add(rank)
        keep.append(seg[pos:])
        return b"".join(keep)

    def has_outer(self, seg: bytes, has: Optional[Callable[[bytes], bool]] = None) -> bool:
        """Whether SEG may hold a rank-less prefix another one follows (the slower nested searches); HAS: whether
        SEG holds a probe (default: `in`)."""
        has = has or seg.__contains__
        return any(p is None or has(p) for p in self.outer_probes_b)

    def prefixed_ranks(self, seg: bytes, nested: bool = False, has: Optional[Callable[[bytes], bool]] = None
                       ) -> Set[int]:
        """The ranks of the launcher prefixes (quoted ones too) at the line starts of SEG; NESTED:
        behind any run of rank-less prefixes (has_outer); HAS as has_outer's."""
        has = has or seg.__contains__
        out: Set[int] = set()
        for probe, head, tail in (self.outer_kinds if nested else self.kinds):
            if probe is None or has(probe):
                out |= distinct_ranks(seg, head, tail)
        if has(b"\n>"):
            for m in (self.outer_quoted_b if nested else self.quoted_b).finditer(seg):
                out.add(_one_of(m.groups()))
        return out

    def inner_ranks(self, seg: bytes, has: Optional[Callable[[bytes], bool]] = None) -> Set[int]:
        """The ranks that lines without a prefix name in their text (inner_rank: the first a line
        names), line by line as make_line tags them; only lines that name one are decoded."""
        has = has or seg.__contains__
        if not any(has(p) for p in self.inner_probes_b):
            return set()
        out: Set[int] = set()
        done = -1
        for m in self.inner_b.finditer(seg):
            if m.start() < done:
                continue                      # a line already tagged
            start = seg.rfind(b"\n", 0, m.start()) + 1
            end = seg.find(b"\n", m.end())
            done = end if end >= 0 else len(seg)
            if self.ranked_start_b.match(seg, start):
                continue                      # its rank is its prefix's (prefixed_ranks): not decoded
            text, rank = self.split_prefix(normalise(seg[start:done].decode("utf-8", "replace")))
            if rank is None:
                rank = self.inner_rank(text)
            if rank is not None:
                out.add(rank)
        return out


def distinct_ranks(seg: bytes, head: bytes, tail: bytes) -> Set[int]:
    """The ranks of HEAD + TAIL (TAIL starts with the rank group) in SEG: each search finds a line of
    a rank not seen yet (a lookahead excludes the known ones), up to MAX_ELIMINATE, then one findall."""
    if len(seg) < ELIMINATE_MIN_BYTES:
        return {int(k) for k in set(_excluding(head, tail, ()).findall(seg))}
    known: List[bytes] = []
    pos = 0
    while len(known) <= MAX_ELIMINATE:
        m = _excluding(head, tail, tuple(sorted(known))).search(seg, pos)
        if m is None:
            return {int(k) for k in known}
        known.append(m.group(1))
        pos = m.start()
    return {int(k) for k in known} | {int(k) for k in re.findall(head + tail, seg[pos:])}


# (issue 44: each segment found its ranks in its own order, with a pattern of its own at each step, compiled anew past
# `re`'s cache: `triage watch` of a quiet 8-rank log at 1 MB/s spent about half its CPU, ~3% of a core, compiling
# them.  A pattern takes ~0.2-0.4 ms to compile and a findall of the whole segment ~2 us a KiB: a segment under
# ELIMINATE_MIN_BYTES (a watched log's poll, a small block) takes one findall; a bigger one its searches, their
# patterns kept by the known ranks sorted)
ELIMINATE_MIN_BYTES = 1 << 20
PRESENCE_MIN = 1 << 16     # a segment from this size has its probes looked for in one pass (RankReader._presence)
_EXCLUDING: Dict[Tuple[bytes, bytes, Tuple[bytes, ...]], "re.Pattern[bytes]"] = {}
EXCLUDING_KEPT = 1024     # patterns kept (a dict: emptied when full)


def _excluding(head: bytes, tail: bytes, known: Tuple[bytes, ...]) -> "re.Pattern[bytes]":
    """HEAD + TAIL where TAIL's rank is none of KNOWN (sorted: the alternation's order changes no match), compiled
    once."""
    key = (head, tail, known)
    rx = _EXCLUDING.get(key)
    if rx is None:
        if len(_EXCLUDING) >= EXCLUDING_KEPT:
            _EXCLUDING.clear()
        ex = b"(?!(?:" + b"|".join(known) + b")\\D)" if known else b""
        rx = _EXCLUDING[key] = re.compile(head + ex + tail)
    return rx


RANKS = RankReader()                 # the shipped tables' matchers
split_prefix = RANKS.split_prefix
inner_rank = RANKS.inner_rank
split_at = RANKS.split_at
inner_rank_at = RANKS.inner_rank_at
ranks_in = RANKS.ranks_in
