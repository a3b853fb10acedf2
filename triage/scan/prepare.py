"""The pure, C-heavy part of scanning a block (anchor hits, batch records, line indexes): what a
worker process can do ahead of the scanner; the compiled anchor set of an observer set."""
from __future__ import annotations

import bisect
import functools
import re
import time
from array import array
from itertools import compress
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple, Union, cast

from ..inputs.sources import (
    MAX_LINE,
    MAX_RAW,
    YEARLESS_FORMS,
    Template,
    decode_line,
    from_template,
    normalise,
    other_digits_in,
    parse_template,
    parse_ts,
    parse_ts_ahead,
    progress_updates,
    scanned,
    templates_ok,
    text_and_rank,
    without_gaps,
)
from ..match.anchors import Anchor, AnchorSet
from ..match.rx import Timeouts, digit_blind
from . import rules as rules_  # (read at call time: tests patch its search)
from . import state as state_
from .blocks import (
    ERR_HEAD,
    ERROR_LINE,
    EXC_LINE,
    INTRO_BACK,
    _maybe_error,
    _opens_block,
    error_header_of,
    exc_line,
    starts_traceback,
)
from .observer import Feeder, Observer
from .state import INTRO_TEXT

if TYPE_CHECKING:
    from ..patterns import MatchRule
    from .state import Searched

# a line with a control byte, hit once (at its end) however many it holds: an anchor hit per byte
# made a 4 MiB line of control bytes 4 million hits
_CTRL_RX = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f][^\n]*$"
NORM_TAG = -1            # a line with control characters: normalise it before trusting anchors
NORMED_TAG = -2          # ... and its tags come from its normalised text
RULE_TAG = 1000          # tags >= RULE_TAG name a rule (tag - RULE_TAG); lower tags an observer
# tags >= ANCHOR_TAG name one anchor of an observer that asks which of its anchors hit
# (Observer.per_anchor): ANCHOR_TAG + observer index * ANCHOR_STRIDE + the anchor's index
ANCHOR_TAG = 1 << 24
ANCHOR_STRIDE = 1 << 12
# A worker sends the scanner its searches of a line only when they took at least this much CPU time
# (or one timed out): a search of a few microseconds costs the scanner less to redo than to receive
# (measured on the H200 host, issue 27: a 32 MiB watchdog storm, every line a match, took 6.4-6.9 s
# with one process and 6.6-8.8 s with every search sent), a slow regex (milliseconds a line) far more.
SHIP_SECONDS = 50e-6


@functools.lru_cache(maxsize=8)
def anchor_set(anchors: Tuple[Anchor, ...]) -> AnchorSet:
    """The compiled anchors of one observer set, built once per process (a fleet worker analyses
    hundreds of jobs with the same catalog: the database is not rebuilt or reloaded per job).  Its facts: FACTS
    (the year-less time forms, a byte not ASCII, what normalising may join a date of: year_changes)."""
    return AnchorSet(anchors, FACTS)



def _batchers(obs: Sequence[Observer]) -> List[Tuple[Feeder, int]]:
    """The observers of OBS that parse lines of a block ahead of the scanner, with their indexes: the
    batch observers (Feeder.batch) and those that take records of the lines they follow
    (Feeder.records)."""
    return [(o, i) for i, o in enumerate(obs) if isinstance(o, Feeder) and (o.batch or o.records)]


def line_index(buf: bytes, lo: int, starts: Sequence[int]) -> Dict[int, int]:
    """{line start: newlines in buf[lo:start]} for the sorted line STARTS (a pool worker's gift to
    the scanner, which then counts no lines between hits itself)."""
    out: Dict[int, int] = {}
    n = 0
    pos = lo
    count = buf.count
    for s in starts:
        n += count(b"\n", pos, s)
        out[s] = n
        pos = s
    return out


class BlockFacts:
    """What a block's anchor pass tells beyond its hits (prepare_block's FACTS): FOUND, the anchor set's facts it
    may hold (FACTS' indices); NORMED, the starts of its lines with control characters whose normalised text holds
    a date the raw search does not read as it is (`2025-08-0\\x011`: _date_read_otherwise), in order, collected
    where FOUND says normalising may join one (_JOINS_A_DATE); first_dated_in and year_changes read them."""
    __slots__ = ("found", "normed")

    def __init__(self) -> None:
        self.found: Set[int] = set()
        self.normed: List[int] = []


def prepare_block(buf: bytes, lo: int, aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]],
                  ahead: bool = False, count: bool = True, facts: Optional[BlockFacts] = None
                  ) -> Tuple[Dict[int, Set[int]], List[Dict[int, tuple]], int]:
    """The pure, C-heavy part of scanning the block buf[lo:] (a worker process can do it ahead
    of the scanner): the anchor hits per line start, the lines each batch observer parsed itself
    (those leave the hits when they wake nobody else), the records of the lines an observer may
    follow (Feeder.records: no hit is taken) and the block's line count (AHEAD: a pool worker's, which
    parses more of a record than the scanner would need: what the scanner then parses no more).  Offsets are
    offsets in buf.  (The scanner counts the lines before a hit itself: an index per hit line
    cost a dict entry per line of a block of dense hits.)  COUNT false: the line count is -1 (a pool worker's,
    which counts the lines with its line index: block_lines).  FACTS: what the pass tells beyond the hits is added
    to it (BlockFacts: AnchorSet.scan's facts, its lines with control characters looked at normalised too)."""
    # a zero-copy view of the block: AnchorSet.scan reads any bytes-like buffer (annotated `bytes`)
    data = cast(bytes, memoryview(buf)[lo:]) if lo else buf
    hits = aset.scan(data, lo, buf, facts.found if facts is not None else None)
    _retag_normalised(hits, buf, aset, facts)
    recs_all: List[Dict[int, tuple]] = []
    for o, idx in batchers:
        if not o.batch:                  # records of the lines it may follow (Feeder.records): no hit taken
            recs_all.append(o.obj.follow_records(buf, lo))
            continue
        only = {idx}
        mine = [ls for ls, t in hits.items() if t == only]
        recs = o.obj.scan_lines(buf, mine, ahead)
        for ls in recs:
            del hits[ls]
        recs_all.append(recs)
    return hits, recs_all, buf.count(b"\n", lo) if count else -1


def prepare_gapless(buf: bytes, lo: int, aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]],
                    ahead: bool = False, count: bool = True, facts: Optional[BlockFacts] = None
                    ) -> Tuple[bytes, int, tuple]:
    """(buf, lo, prepare_block's) of the block buf[lo:] as the line reader reads its bytes (sources.without_gaps:
    its NUL runs, its CRLF line ends' CRs and its lines' ANSI escapes that no line's text holds left out; its tail
    BUF[:LO] is the caller's, already so): where its anchor pass finds a control byte (a fact: _CONTROL) and it holds
    a NUL, or a CRLF line end (_CRLF) or an escape (_ESC), it is read so and prepared again (FACTS then the second
    pass's).  A block whose first line ends in CRLF or with an escape in its first DRESS_PROBE bytes (a terminal's
    log) is read so before its one pass; one without any of them is prepared once, as is."""
    if _dressed(buf, lo):
        buf = without_gaps(buf)       # (its tail BUF[:LO] is so already, whole lines: the rule is a line's)
        return buf, lo, prepare_block(buf, lo, aset, batchers, ahead, count, facts)
    prepared = prepare_block(buf, lo, aset, batchers, ahead, count, facts)
    if _gapped(buf, lo, facts.found if facts is not None else None):
        read = without_gaps(buf)
        if len(read) != len(buf):
            buf = read
            if facts is not None:
                facts.found.clear()
                facts.normed.clear()
            prepared = prepare_block(buf, lo, aset, batchers, ahead, count, facts)
    return buf, lo, prepared


def _gapped(buf: bytes, lo: int, found: Optional[Set[int]]) -> bool:
    """The block buf[lo:] holds what sources.without_gaps leaves out, as its anchor pass's facts FOUND (None: not
    known) and a search tell: a NUL, a CRLF line end, an escape."""
    return (((found is None or _CONTROL in found) and buf.find(b"\x00", lo) >= 0)
            or ((found is None or _CRLF in found) and buf.find(b"\r\n", lo) >= 0)
            or ((found is None or _ESC in found) and buf.find(b"\x1b", lo) >= 0))


DRESS_PROBE = 1 << 16     # bytes of a block looked at for an escape before its anchor pass (prepare_gapless)


def _dressed(buf: bytes, lo: int) -> bool:
    """The block buf[lo:] looks like a terminal's: its first line ends in CRLF, or an ANSI escape is in its first
    DRESS_PROBE bytes (read without them before its anchor pass: one pass, not two)."""
    nl = buf.find(b"\n", lo)
    return (nl > lo and buf[nl - 1] == 13) or buf.find(b"\x1b", lo, lo + DRESS_PROBE) >= 0


def block_lines(buf: bytes, starts: Sequence[int], index: Dict[int, int]) -> int:
    """The lines of BUF (its newlines) from its line INDEX of the sorted STARTS (line_index from 0): only the bytes
    after the last counted again (issue 44: a pool worker counted its whole block twice, ~0.3 ms a MiB of its ~2
    on the 16-core host)."""
    return index[starts[-1]] + buf.count(b"\n", starts[-1]) if starts else buf.count(b"\n")


# an ISO date and time after a year's four digits (BlockView.first_dated: the block's first dated line); the
# year's digits looked behind from its first `-` (a literal to search for first: as fast as without them), so a
# date-like string without a year is passed over in C (a block of them used up the looks below)
_ISO_DATE_B = re.compile(rb"-(?<=\d{4}-)\d\d-\d\d[ T_]\d\d:\d\d:\d\d")
DATED_LOOKS = 128          # lines parsed for a block's first dated line, at most (a hostile block of date-like
#                            strings that are no time: ~5 us each) ...
DATED_SKIPS = 512          # ... and dates passed over, past their line's first 200 bytes (no parse: ~2 us each; a
#                            log of JSON lines with a late "timestamp" field has one a line)
DATED_UNKNOWN = -1         # first_dated_in(ahead=True): a time on the way depends on the year (the scanner looks)


def first_dated_in(buf: bytes, pos: int, year: Optional[int], ahead: bool = False,
                   normed: Sequence[int] = ()) -> Union[None, int, Tuple[int, float, str]]:
    """The first line from buf[pos:] with a dated time (an ISO date in the first 200 characters parse_ts
    reads): (its offset, its time in YEAR, its normalised text), or None (DATED_LOOKS lines parsed and DATED_SKIPS
    dates passed over at most: a bound against hostile blocks).
    NORMED: the starts of the lines with control characters whose normalised text holds a date (BlockFacts: one
    the raw bytes may not show), looked at in their place.  AHEAD: a pool worker's, in no known year (issue 44:
    the scanner searched each block for it, a pass over a block without a date, ~1 ms of every 2 MiB of a log of
    warnings): DATED_UNKNOWN when a time it read on the way depends on the year, which the scanner then knows."""
    k = bisect.bisect_left(normed, pos)
    parsed = skipped = 0
    while parsed < DATED_LOOKS and skipped < DATED_SKIPS:
        m = _ISO_DATE_B.search(buf, pos)
        if k < len(normed) and (m is None or normed[k] < m.start()):
            s = normed[k]                 # (a line with control characters first: read normalised)
            k += 1
            nl = buf.find(b"\n", s)
            e = len(buf) if nl < 0 else nl
            pos = max(pos, e + 1)
        else:
            if m is None:
                return None
            if m.start() - 4 < pos:           # (its year before POS: not in the block)
                pos = m.start() + 1
                continue
            s = buf.rfind(b"\n", 0, m.start()) + 1
            nl = buf.find(b"\n", m.end())
            e = len(buf) if nl < 0 else nl
            pos = e + 1
            if _past_reach(buf, s, m.start()):
                skipped += 1
                continue
        parsed += 1
        ts, norm, dep = _read_dated(buf, s, e, year, ahead)
        if dep:
            return DATED_UNKNOWN
        if ts is not None:
            return s, ts, norm
    return None


_UNPRINTED_B = re.compile(rb"[^\x20-\x7e]")


def _past_reach(buf: bytes, s: int, at: int) -> bool:
    """Whether a date at AT of the line at S is past what parse_ts reads of it (its normalised text's first 200
    characters): over 200 bytes in, all printable ASCII -- as many characters once normalised.  Before it an ANSI
    colour, a carriage return (the text after it kept), a control byte or a character of several bytes may bring it
    within them: read then (issue 44: an ANSI run before a line's date hid its year from the block scan)."""
    return at - s > 200 and _UNPRINTED_B.search(buf, s, at) is None


def _read_dated(buf: bytes, s: int, e: int, year: Optional[int], ahead: bool) -> Tuple[Optional[float], str, bool]:
    """The line buf[s:e] read as the line scan reads it: (its time if it is a dated line -- a time, a `-` in its
    first 40 characters -- else None, its normalised text, whether AHEAD, in no known year, read a time that
    depends on the year)."""
    norm = normalise(decode_line(buf[s:min(e, s + MAX_RAW)]))
    if ahead:
        ts, dep = parse_ts_ahead(norm)
    else:
        ts, dep = parse_ts(norm, year), False
    return (ts if ts is not None and "-" in norm[:40] else None), norm, dep


YEAR_TAIL = 1 << 16        # bytes at a block's end looked at for its last date (year_changes) ...
YEAR_TAIL_FIRST = 1 << 12  # ... these first (a log of a date on every line: ~600 dates in YEAR_TAIL, ~0.2 ms a MiB)


def year_changes(buf: bytes, first: int, first_ts: float, year: Optional[int], ahead: bool = False,
                 facts: Optional[Set[int]] = None, normed: Sequence[int] = ()) -> List[Tuple[int, float, str]]:
    """The dated lines of BUF after the one at offset FIRST (first_dated_in's; FIRST_TS its time) whose year differs
    from the dated line's before them: (offset, time in YEAR, normalised text) each, in order (AHEAD: a pool
    worker's, in no known year -- an ISO date needs none).  The line scan learns the year from every dated line; the
    block scan only from the lines it feeds and each block's first dated line, so a year change later in a block
    went unlearnt (issue 44's fifth review: a glog `E0229` line after `[2027-..]` then `[2028-..]` read in 2027).  A
    block whose last date (in its last YEAR_TAIL bytes) has its first's year ends in the year it began in; when it
    holds no year-less time either (FACTS, its anchor pass's: none of sources.YEARLESS_FORMS, no digit of another
    script -- _may_read_a_year) no time in it depends on a year it may change to in between: one look at its tail
    (a search of every block for a date of another year cost ~0.5-0.7 ms a MiB).  Else each change is one search
    in C for a date of another year (_other_year): a year that goes and comes back inside a block (clocks that
    straddle a New Year's midnight, logs of two years interleaved) is found where a line's time depends on it.
    NORMED (BlockFacts): the lines with control characters whose normalised text holds a date, looked at in their
    place (their dates the raw bytes may not show: no look at the tail alone then)."""
    nl0 = buf.find(b"\n", first)
    e0 = len(buf) if nl0 < 0 else nl0
    cur = _year_b(first_ts)
    k = bisect.bisect_right(normed, first)
    if k == len(normed):
        end = _last_date(buf, e0)
        if end >= 0 and buf[end - 4:end] == cur and not _may_read_a_year(buf, facts) \
                and _tells(buf, end, cur, year, ahead):
            return []                   # the tail's last date has the first's year, no time depends on a year
        if end < 0 and _other_year(cur).search(buf, e0) is None:
            return []                   # no date in the tail: the block is looked at, no date of another year
    return _changes(buf, first, e0, cur, year, ahead, normed[k:])


def _changes(buf: bytes, first: int, pos: int, cur: bytes, year: Optional[int], ahead: bool,
             normed: Sequence[int]) -> List[Tuple[int, float, str]]:
    """year_changes' dated lines where the year changes from CUR (the first's, at offset FIRST), from POS on: each
    date of another year searched in C, each line of NORMED read in its place."""
    out: List[Tuple[int, float, str]] = []
    rfind, find, last, k = buf.rfind, buf.find, first, 0
    m: "Optional[re.Match[bytes]]" = None
    searched = -1                         # (M: the search from this offset, in CUR's year; else searched again)
    while True:
        if searched < 0 or (m is not None and m.start() < pos):
            m, searched = _other_year(cur).search(buf, pos), pos
        if k < len(normed) and (m is None or normed[k] < m.start()):
            s = normed[k]                 # (a line with control characters: its date read normalised)
            k += 1
            nl = find(b"\n", s)
            e = len(buf) if nl < 0 else nl
            pos = max(pos, e)
        elif m is None:
            return out
        else:
            pos = m.end()
            s = rfind(b"\n", 0, m.start()) + 1
            if s == last or _past_reach(buf, s, m.start()):
                continue
            nl = find(b"\n", m.end())
            e = len(buf) if nl < 0 else nl
        ts, norm, _ = _read_dated(buf, s, e, year, ahead)
        if ts is not None:
            y = _year_b(ts)
            if y != cur:
                out.append((s, ts, norm))
                cur, last, searched = y, s, -1


def _year_b(ts: float) -> bytes:
    """The year of the time TS as a date writes it (four digits, bytes)."""
    return b"%04d" % time.gmtime(ts).tm_year


def _tells(buf: bytes, at: int, cur: bytes, year: Optional[int], ahead: bool) -> bool:
    """Whether the line of the date at AT is a dated line (_read_dated) of the year CUR: the year the line scan
    learns from it (its first date, if a line has several: a date of 2025 before one of 2026 told 2025, issue 44's
    sixteenth pass; a date past its first 40 characters with no `-` before, none)."""
    s = buf.rfind(b"\n", 0, at) + 1
    nl = buf.find(b"\n", at)
    ts, _, _ = _read_dated(buf, s, len(buf) if nl < 0 else nl, year, ahead)
    return ts is not None and _year_b(ts) == cur


def _last_date(buf: bytes, lo: int) -> int:
    """Where the last _ISO_DATE_B match of buf[lo:] in its last YEAR_TAIL bytes starts (its `-`), or -1: looked for
    in the last YEAR_TAIL_FIRST bytes first (two matches never overlap: the last is the last of any window it lies
    in)."""
    for tail in (YEAR_TAIL_FIRST, YEAR_TAIL):
        last = -1
        for m in _ISO_DATE_B.finditer(buf, max(lo, len(buf) - tail)):
            last = m.start()
        if last >= 0 or len(buf) - tail <= lo:
            return last
    return -1


# the facts an anchor pass looks for (AnchorSet, prepare_block's FACTS): the year-less headers, a byte not ASCII
# (where one is, a digit of another script may be: sources.other_digits_in looks), and what normalising may join a
# date of: a control byte normalising drops that is not an ANSI escape's, or ANSI escapes between two characters of
# a date (where one of these is, the lines with control characters are looked at for a date: BlockFacts.normed)
FACTS = YEARLESS_FORMS + (
    rb"[\x80-\xff]",
    rb"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]",
    rb"[0-9:T_ \-](?:\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[@-Z\\-_]))+(?:[0-9:\-]|[T_ ][0-9])",
    rb"\r\n",
    rb"\x1b",
)
_NOT_ASCII = len(YEARLESS_FORMS)
_CONTROL = _NOT_ASCII + 1          # (a NUL among them: prepare_gapless)
_CRLF = _NOT_ASCII + 3             # (a CRLF line end: prepare_gapless) ...
_ESC = _NOT_ASCII + 4              # (... an ANSI escape's first byte)
_JOINS_A_DATE = {_CONTROL, _NOT_ASCII + 2}


def _may_read_a_year(buf: bytes, facts: Optional[Set[int]]) -> bool:
    """Whether a time in BUF may depend on the year, by FACTS (its anchor pass's; None: not known)."""
    if facts is None or any(f < _NOT_ASCII for f in facts):
        return True
    return _NOT_ASCII in facts and other_digits_in(buf)


@functools.lru_cache(maxsize=64)
def _other_year(year: bytes) -> "re.Pattern[bytes]":
    """_ISO_DATE_B for a date whose year is not YEAR (its four digits)."""
    head = rb"-(?<=\d{4}-)"
    assert _ISO_DATE_B.pattern.startswith(head)
    return re.compile(head + rb"(?<!" + re.escape(year) + rb"-)" + _ISO_DATE_B.pattern[len(head):])


# what a hit line's parse (sources.make_line) gives, made by a pool worker: (characters of launcher prefix
# before Line.text in the normalised line, rank, time with no year hint, whether the time depends on the year)
Parsed = Tuple[int, Optional[int], Optional[float], bool]
PARSE_MIN_WORKERS = 3      # workers parse the hit lines only when there are this many (spare cores: with
#                            one or two, a worker is as busy as the scanner and the parse only moves work)


PARSED_KEEP = 4096         # distinct short lines whose parse is remembered (a log repeats its lines) ...
PARSED_TEXT = 512          # ... of at most this many bytes (BlockView._parse, parse_hits)
# a line that may carry a time (sources.parse_ts reads the first 200 characters of the normalised line):
# hh:mm:ss in its first bytes, or a byte normalising may drop or change (not printable ASCII) ...
_TIMELIKE = re.compile(rb"\d\d:\d\d:\d\d|[^\x20-\x7e]")
PLAIN_MAX = 256            # ... or longer than this (BlockView._times_back, in a block no worker read, passes
#                            over the others unparsed)
# a worker parses the hit lines and looks for the lines that may carry a time (parse_hits, timed_lines)
# only in a block of this many lines a hit or fewer: the scanner's own work on a few hits (most of them
# repeated lines it parsed before) costs it less than that costs the worker (8 MiB of the bench's log,
# 37 hits: 46 ms to prepare, 73 ms more to find its timed lines; the production mix's 1.6% of hit lines
# doubled the workers' CPU)
DENSE_HITS_EVERY = 50
# what a block is searched for first (each has a plain search: the alternation of _TIMELIKE ran at
# ~60 MB/s, these at ~2 GB/s): ":dd:" (in every hh:mm:ss), a byte not printable ASCII nor a newline
_COLON_DD = re.compile(rb":\d\d:")
_ODD_B = re.compile(rb"[^\n\x20-\x7e]")
_PLAIN_B = bytes(range(0x20, 0x7f)) + b"\n"


def timed_lines(buf: bytes, lines: int) -> Optional[List[int]]:
    """The starts of the lines of BUF (a worker's block of LINES lines), sorted, that hold what _TIMELIKE finds
    anywhere in them, for the scanner's look back for a time (BlockView._times_back visits only those);
    None when that is most of them (of no use to the scanner)."""
    out: Set[int] = set()
    rfind, find = buf.rfind, buf.find
    for rx, check in ((_COLON_DD, True), (_ODD_B, False)):
        if not check and not buf.translate(None, _PLAIN_B):      # (all printable ASCII: no odd byte)
            break
        pos = 0
        while True:
            m = rx.search(buf, pos)
            if m is None:
                break
            s = rfind(b"\n", 0, m.start()) + 1
            e = find(b"\n", m.end())
            e = len(buf) if e < 0 else e
            if not check or _TIMELIKE.search(buf, s, e):
                out.add(s)
                if len(out) * 2 > lines:
                    return None
            pos = e + 1
    return sorted(out)         # (sorted here, not by the scanner: ~0.7 ms a block of handled tracebacks)


def summaries(buf: bytes, hits: Dict[int, Set[int]], batchers: Sequence[Tuple[Feeder, int]],
              recs_all: List[Dict[int, tuple]]) -> List[Optional[object]]:
    """Per batch observer, its summary of the block's records (Feeder.summarises; None: none), made by a
    pool worker so that the scanner merges runs of records instead of replaying them one by one (issue 44:
    a dense log's step and capture lines were most of the scanner's work).  A run ends at a line the
    observer is fed through feed() (a hit of its anchors that it did not take as a record: the scanner
    feeds the records before it first)."""
    out: List[Optional[object]] = []
    for (o, idx), recs in zip(batchers, recs_all):
        if not (o.summarises and recs):
            out.append(None)
            continue
        out.append(o.obj.summarise(buf, recs, sorted(s for s, t in hits.items() if idx in t)))
    return out


def leave_out(recs_all: Sequence[Dict[int, Any]], summ: Sequence[Optional[Any]]) -> None:
    """The records of the runs a worker summarised (SUMM, summaries') left out of RECS_ALL, None in their place
    (the scanner parses a run's lines again when it replays it: StepLog.feed_records), from the record each
    summary says (BlockDeltas.leave_from: not those the scanner will likely replay).  A dense log's records,
    unpickled one by one, were most of what the scanner spent taking a worker's result (issue 44: megatron-dense
    32 MiB, 50 of 60 ms); parsed again they cost the scanner six times as much."""
    for recs, s in zip(recs_all, summ):
        if not s:
            continue
        keys = sorted(recs)
        for i, (j, d) in cast(Dict[int, Tuple[int, Any]], s).items():
            k = d.leave_from()
            if k is not None:
                for at in keys[i + k:j]:
                    recs[at] = None


RANK_BACK = 2              # lines before a hit of no rank a worker parses too (BlockView.line_at reads them)
TB_FOLLOWED = 12            # lines after a traceback's first line a worker parses too (see followed_lines)


def followed_lines(buf: bytes, starts: Sequence[int], n: int = TB_FOLLOWED) -> List[int]:
    """The starts of the N lines after each hit line at STARTS that opens a traceback, and of the INTRO_BACK
    lines before it: the scanner feeds every line while a traceback is open (Blocks.following: the other
    ranks' lines between its own), and parses each, in a log of handled tracebacks a line in ten (issue 44);
    it reads the lines before the traceback's first (Blocks._traceback_start: the line that introduced it)."""
    out: List[int] = []
    find, rfind, size = buf.find, buf.rfind, len(buf)
    for s in starts:
        e = find(b"\n", s)
        if e < 0 or find(b"Traceback (most recent call last):", s, e) < 0:
            continue
        b = s
        for _ in range(INTRO_BACK):
            if b <= 0:
                break
            b = rfind(b"\n", 0, b - 1) + 1
            out.append(b)
        for _ in range(n):
            s = e + 1
            e = find(b"\n", s)
            if s >= size:
                break
            out.append(s)
            if e < 0:
                break
    return out


def timed_ranks(timed: Optional[Sequence[int]], parsed: Dict[int, Parsed]) -> Optional[list]:
    """Per timed line (timed_lines'), what the scanner's look back for a time reads of it (BlockView._timed_forward)
    when the worker's parse says it: (its rank, its time) for a line of a rank of its own with a time no year
    changes, () for one with no time; None for the others (the scanner reads them)."""
    if timed is None:
        return None
    out: list = []
    for t in timed:
        p = parsed.get(t)
        out.append(None if p is None or p[1] is None or p[3] else (p[1], p[2]) if p[2] is not None else ())
    return out


_TB_START_B = b"Traceback (most recent call last):"


def tb_firsts(buf: bytes, hits: Dict[int, Set[int]]) -> List[Tuple[int, int]]:
    """(start, end) of each hit line of BUF that holds a traceback's first line, in HITS' order: for tb_bodies and
    tb_intros both (issue 44: each made two finds a hit line, a dense block's ~10,000; a search of the whole block
    for the words first costs ~0.3 ms a 2 MiB block here, where a production block's hits are mostly none)."""
    find = buf.find
    out = []
    for s in hits:
        e = find(b"\n", s)
        if e >= 0 and find(_TB_START_B, s, e) >= 0:
            out.append((s, e))
    return out


def tb_intros(buf: bytes, parsed: Dict[int, Parsed], firsts: List[Tuple[int, int]]) -> Dict[int, str]:
    """The text of the line introducing each traceback that opens at a hit line of BUF (Blocks._traceback_start:
    the newest of the INTRO_BACK lines before it of its rank, "" when none is), by the offset of the traceback's
    first line, where the worker's parse answers it as BlockView.newest_of_rank would: the traceback's line and
    each line looked at of a rank of its own, with no time a year changes, in the block (issue 44: the scanner
    parsed the two lines before each of a log's handled tracebacks; where this gives no answer, it still does)."""
    out: Dict[int, str] = {}
    find = buf.find
    for s, e in firsts:
        p = parsed.get(s)
        # (a line of a progress bar's updates opens its traceback with the Line of an update, whose rank may be
        # another than the whole line's: the review)
        if p is None or p[1] is None or find(b"\r", s, e) >= 0:
            continue
        text = _intro_text(buf, s, p[1], parsed)
        if text is not None:
            out[s] = text
    return out


def _intro_text(buf: bytes, s: int, rank: int, parsed: Dict[int, Parsed]) -> Optional[str]:
    """tb_intros' answer for the traceback line at S of RANK: the text of the newest of the INTRO_BACK lines before
    it of RANK ("" when none is), or None when a line of them is not in the block or not of a rank of its own with
    a time no year changes (none is read by the scanner: each must read the same later, the review)."""
    off, text = s, ""
    found = False
    for _ in range(INTRO_BACK):
        if off <= 0:
            return None
        off = buf.rfind(b"\n", 0, off - 1) + 1
        q = parsed.get(off)
        if q is None or q[1] is None or q[3]:
            return None
        if q[1] == rank and not found:
            found = True
            nl = buf.find(b"\n", off)
            text = normalise(decode_line(buf[off:min(nl if nl >= 0 else len(buf), off + MAX_RAW)]))[q[0]:][:INTRO_TEXT]
    return text


def passable(buf: bytes, starts: Sequence[int], hits: Dict[int, Set[int]], parsed: Dict[int, Parsed],
             bodies: Optional[Dict[int, "Body"]] = None) -> Dict[int, int]:
    """Of the lines at STARTS (the lines after each traceback's first, followed_lines'), those the scanner may pass
    by without feeding them when only Blocks follows them and their stream has no block open (blockscan._passed_by:
    all feeding them would do is close the blocks they pass): no hit, a rank of their own and no time (nor one a
    year could give them) in the worker's parse, a text Blocks would open no block with (_opens_nothing); not a
    line of a traceback's body (BODIES, tb_bodies': the scanner takes those whole).  {offset: rank}."""
    out: Dict[int, int] = {}
    passed = (_body_lines(buf, bodies) if bodies else set()) | hits.keys()      # (and those looked at)
    for s in starts:
        p = parsed.get(s)
        if s in passed or p is None or not _ranked_untimed(p):
            continue
        passed.add(s)
        e = buf.find(b"\n", s)
        if _opens_nothing(buf[s:min(len(buf) if e < 0 else e, s + MAX_RAW)], p[0]):
            out[s] = cast(int, p[1])
    return out


def plain_hits(buf: bytes, searched: Dict[int, "Searched"], parsed: Dict[int, Parsed],
               norms: Dict[int, str]) -> Dict[int, int]:
    """Of a dense block's hit lines that a worker searched with the catalog's rules (SEARCHED, rule_searches'),
    those whose text alone lets the scanner take them in a run without a Line made for each
    (blockscan._InputScan._plain_run): a rank and a time of their own in the worker's parse (PARSED), no progress
    bar's updates, no indented first character (rules.Rules.feed reads it so: a source-code echo has no searches
    sent, rule_searches; NORMS, its normalised texts of the lines in SEARCHED), no
    traceback started nor block opened (blocks.Blocks.feed: starts_traceback, _opens_block, the logger header's
    level).  {offset: flags -- PLAIN_DASH: its first 40 characters hold a `-` (a dated line may tell the year: the
    scanner then takes it only with a time in the year it knows, BlockView.learn_year); PLAIN_ASCII: it is printable
    ASCII of at most MAX_LINE bytes (its bytes decoded are its normalised text)} (issue 44: a storm of one message
    on every rank, every line a rule's match, was fed line by line: ~13 us each of the scanner's CPU)."""
    out: Dict[int, int] = {}
    n = len(buf)
    by_layout = _plain_blind()
    for s in searched:
        p = parsed.get(s)
        if p is None or p[1] is None or p[2] is None:
            continue
        e = buf.find(b"\n", s)
        e = n if e < 0 else e
        if buf.find(b"\r", s, e) >= 0:
            continue
        # (printable ASCII no longer than MAX_LINE: its bytes decoded are its normalised text; what follows is then
        # its layout's, the tests below blind to which digit is which: a storm's lines, ~5 us each, issue 44)
        line = buf[s:e]
        ascii_ = e - s <= MAX_LINE and not line.translate(None, _PRINTABLE)
        key = line.translate(state_.DIGITS) if by_layout and ascii_ and e - s <= PARSED_TEXT else None
        got = _PLAIN_LAYOUTS.get(key) if key is not None else None
        if got is None:
            norm = norms[s]
            text = norm[p[0]:]
            got = -1 if (text[:1] in (" ", "\t") or starts_traceback(text)
                         or (_maybe_error(text) and _opens_block(text))    # (_opens_block's own first test first)
                         or error_header_of(norm, text)) else (
                (PLAIN_DASH if "-" in norm[:40] else 0) | (PLAIN_ASCII if ascii_ else 0))
            if key is not None:
                _remember(_PLAIN_LAYOUTS, key, got)
        if got >= 0:
            out[s] = got
    return out


_PLAIN_LAYOUTS: Dict[bytes, int] = {}     # a worker's plain_hits flags by a line's layout (-1: no plain line)


@functools.lru_cache(maxsize=None)
def _plain_blind() -> bool:
    """plain_hits' tests read two lines the same but for their digits alike: the exception line's, the error line's
    and the logger header's regexes are digit-blind (the rest are words with no digit)."""
    return all(digit_blind(rx.pattern) for rx in (EXC_LINE, ERROR_LINE, ERR_HEAD))


def plain_runs(buf: bytes, starts: Sequence[int], hits: Dict[int, Set[int]], plain: Dict[int, int],
               parsed: Dict[int, Parsed], searched: Dict[int, "Searched"],
               index: Dict[int, int]) -> Dict[int, "PlainRun"]:
    """The runs of RUN_MIN or more plain hit lines (PLAIN, plain_hits') in a row among the block's hit lines
    (STARTS, sorted) that the scanner may take whole, with no step a line (blockscan._InputScan._plain_bulk): each
    line printable ASCII, with the same tags, the same rules matched (the searches' one object per set) and no
    search slow, timed out or skipped.  {the first line's offset: (offsets, texts' starts, ends, ranks, times,
    line numbers in the block (INDEX), each rank's last time in the order of its first line, the lowest and
    highest time of the lines with a `-` in their first 40 characters or None, {(rank, the text's bytes with its
    digits masked): (lines, the first MATCHES_PER_KEY of them by place in the run)} -- Core.admit_of's quota
    keys --, whether a time of one depends on the year, each line's RUN_DEP and RUN_DASH)} -- the lists arrays (a
    pickle's bytes) -- (issue 44: a storm of one message on every rank, the scanner's ~3 us a line taking each of a
    run's lines)."""
    out: Dict[int, PlainRun] = {}
    n = len(starts)
    i = 0
    while i < n:
        j = _run_end(starts, i, hits, plain, searched)
        if j - i >= RUN_MIN:
            out[starts[i]] = _run(buf, starts[i:j], plain, parsed, index, searched)
        i = max(j, i + 1)
    return out


def _run_end(starts: Sequence[int], i: int, hits: Dict[int, Set[int]], plain: Dict[int, int],
             searched: Dict[int, "Searched"]) -> int:
    """Where the run of plain hit lines from STARTS[I] on ends (plain_runs: printable ASCII, the same tags and
    rules matched, no search slow, timed out or skipped); I when STARTS[I] starts none."""
    s0 = starts[i]
    f0, d0 = plain.get(s0), searched.get(s0)
    if f0 is None or not f0 & PLAIN_ASCII or d0 is None or d0[2] or d0[3]:
        return i
    tags, matched = hits[s0], d0[1]
    j = i + 1
    while j < len(starts):
        s = starts[j]
        f, d = plain.get(s), searched.get(s)
        if (f is None or not f & PLAIN_ASCII or hits[s] is not tags or d is None or d[1] is not matched
                or d[2] or d[3]):
            break
        j += 1
    return j


def _run(buf: bytes, offs: Sequence[int], plain: Dict[int, int], parsed: Dict[int, Parsed],
         index: Dict[int, int], searched: Dict[int, "Searched"]) -> "PlainRun":
    """plain_runs' run of the lines at OFFS (SEARCHED: their searches, whose texts' hashes it carries)."""
    ends = [buf.find(b"\n", s) for s in offs]
    if ends[-1] < 0:
        ends[-1] = len(buf)
    ps = [parsed[s] for s in offs]
    return run_of(buf, 0, array("q", offs), array("q", [s + p[0] for s, p in zip(offs, ps)]), array("q", ends),
                  array("q", cast(List[int], [p[1] for p in ps])),       # (plain_hits': each has a rank and a time)
                  array("d", cast(List[float], [p[2] for p in ps])), array("q", [index[s] for s in offs]),
                  bytes((RUN_DEP if p[3] else 0) | (RUN_DASH if plain[s] & PLAIN_DASH else 0)
                        for s, p in zip(offs, ps)),
                  array("q", [searched[s][0] for s in offs]))


def run_of(buf: bytes, lo: int, offs: "array[int]", tstarts: "array[int]", ends: "array[int]", ranks: "array[int]",
           times: "array[float]", idxs: "array[int]", flags: bytes, hashes: "array[int]") -> "PlainRun":
    """A run (plain_runs') of the lines whose columns are given (offsets from LO in BUF; HASHES: the hashes of their
    texts, as the searches made them), what it holds of them worked out: each rank's last time, the lowest and
    highest time of its dated lines, its quota keys, whether a time of one depends on the year (the worker's runs;
    the rest of one from a line within it, blockscan._InputScan._rest_of_run)."""
    dashed = list(compress(times, (f & RUN_DASH for f in flags)))
    return (offs, tstarts, ends, ranks, times, idxs, dict(zip(ranks, times)),
            (min(dashed), max(dashed)) if dashed else None, _quota_keys(buf, lo, ranks, tstarts, ends),
            any(f & RUN_DEP for f in flags), flags, hashes)


def _quota_keys(buf: bytes, lo: int, ranks: Sequence[int], tstarts: Sequence[int],
                ends: Sequence[int]) -> Dict[Tuple[int, bytes], Tuple[int, List[int]]]:
    """Core.admit_of's quota keys of a run's lines (rank, text with its digits masked; the texts at TSTARTS to ENDS
    from LO in BUF): {key: (lines, the first MATCHES_PER_KEY of them by place in the run)}."""
    per_key = state_.MATCHES_PER_KEY      # (read at call time: tests patch the quotas)
    keys: Dict[Tuple[int, bytes], Tuple[int, List[int]]] = {}
    for k, (r, a, e) in enumerate(zip(ranks, tstarts, ends)):
        key = (r, buf[a + lo:e + lo].translate(state_.DIGITS))
        got = keys.get(key)
        if got is None:
            keys[key] = (1, [k])
        else:
            if len(got[1]) < per_key:
                got[1].append(k)
            keys[key] = (got[0] + 1, got[1])
    return keys


def strip_runs(runs: Dict[int, "PlainRun"], searched: Dict[int, "Searched"], parsed: Dict[int, Parsed],
               plain: Dict[int, int]) -> None:
    """Leave out of a worker's message what RUNS (plain_runs') hold of their lines but the first: their
    searches, parses and plain flags (the scanner makes them again from the run when it does not take it whole,
    blockscan._InputScan._restore_runs: a 2 MiB block of a storm's message 0.78 -> 0.30 MB, its unpickling 3.6 ->
    0.8 ms)."""
    for run in runs.values():
        for s in run[0][1:]:
            del searched[s], parsed[s], plain[s]


RUN_MIN = 16               # plain hit lines in a row that plain_runs gives as a run (fewer: the scanner's step a line)
RUN_DEP, RUN_DASH = 1, 2    # a run's flags of a line: its time depends on the year; a `-` in its first 40 characters
# a run of plain hit lines (plain_runs)
PlainRun = Tuple["array[int]", "array[int]", "array[int]", "array[int]", "array[float]", "array[int]",
                 Dict[int, float], Optional[Tuple[float, float]], Dict[Tuple[int, bytes], Tuple[int, List[int]]], bool,
                 bytes, "array[int]"]


PLAIN_DASH = 1             # plain_hits' flags of a line: a `-` in its first 40 characters ...
PLAIN_ASCII = 2            # ... printable ASCII, at most MAX_LINE bytes


def _ranked_untimed(p: Parsed) -> bool:
    """The parse P is of a line of a rank of its own, with no time (nor one a year could give it)."""
    return p[1] is not None and p[2] is None and not p[3]


def _opens_nothing(data: bytes, cut: int) -> bool:
    """The line DATA (its prefix CUT characters long) is no progress bar's updates, holds no ERROR or CRITICAL (a
    logger's header, Blocks._error_header) and no text Blocks.feed opens a block with -- more than its anchors hit:
    `Error` before a no-break space, `ValueError::` (the review).  A line of printable ASCII is its own text: one
    search in C for what could make it an error line, or its text's first `E`; another is parsed."""
    if len(data) <= MAX_LINE and not data.translate(None, _PRINTABLE):
        return _STOPS_B.search(data) is None and data[cut:cut + 1] != b"E"
    if b"\r" in data or b"ERROR" in data or b"CRITICAL" in data:
        return False
    text = normalise(decode_line(data))[cut:]
    return not (_opens_block(text) or starts_traceback(text))


_PRINTABLE = bytes(range(0x20, 0x7f))
# what blocks._maybe_error looks for (but a text's first `E`), a traceback's first line, and the levels of a logger's
# header (Blocks._error_header)
_STOPS_B = re.compile(rb"rror|ERROR|FATAL|xception|WARN|Interrupt|Exit|Failure|Traceback|CRITICAL")


def _body_lines(buf: bytes, bodies: Dict[int, "Body"]) -> Set[int]:
    """The starts of the lines of the traceback bodies BODIES (tb_bodies')."""
    out: Set[int] = set()
    find = buf.find
    for first, (after, _, _) in bodies.items():
        s = first
        while s < after:
            out.add(s)
            s = find(b"\n", s) + 1
            if s <= 0:
                break
    return out


def drop_timed(parsed: Dict[int, Parsed], timed: Optional[Sequence[int]], ranks: Optional[list],
               keep: Set[int]) -> None:
    """The worker's parse of the timed lines whose entry says what the scanner's look back for a time reads of them
    (timed_ranks': not None) left out of PARSED, but for the lines at KEEP (the hit lines, the lines after a
    traceback's first and before it): the scanner parses a line it reads for another reason itself (issue 44: half
    of a log of handled tracebacks' parsed lines were its timed lines, sent twice)."""
    if timed is None or ranks is None:
        return
    for t, e in zip(timed, ranks):
        if e is not None and t not in keep:
            parsed.pop(t, None)


def drop_bodies(buf: bytes, parsed: Dict[int, Parsed], bodies: Dict[int, "Body"]) -> None:
    """The worker's parse of the lines of the traceback bodies BODIES left out of PARSED: the scanner takes a body
    whole (Blocks.take_body), and where it cannot, it parses the lines it feeds itself (issue 44: a log of handled
    tracebacks sent a quarter of its parsed lines for nothing)."""
    for s in _body_lines(buf, bodies) if bodies else ():
        parsed.pop(s, None)


TB_BODY_MAX = 512          # lines of one traceback's body a worker reads ahead (tb_bodies)
# the body of a traceback as a worker read it: (offset after its last line, its rank, the lines' texts)
Body = Tuple[int, int, Tuple[str, ...]]


def tb_bodies(buf: bytes, hits: Dict[int, Set[int]], parsed: Dict[int, Parsed],
              file_rank: Optional[int], firsts: List[Tuple[int, int]]) -> Dict[int, Body]:
    """The bodies of the tracebacks that open at the hit lines of BUF (PARSED: parse_hits' parse of
    them), for the scanner to join each at once to its traceback's error block (Blocks.take_body)
    instead of feeding it line by line (issue 44: every line is fed while a traceback is open, a log
    of handled tracebacks a line in ten): {offset of the line after the traceback's first line: Body}.
    A body is the run of lines from there on that Blocks would only add to the open traceback, one by
    one, and no other observer is woken by: lines of the traceback line's own rank (sources.text_and_rank's:
    their prefix's, the file's or the one their message names), not a hit (a line a batch observer took as its
    record is none: it is fed to it in order anyway), with no time of their own, no exception line, no traceback
    start, no progress bar's updates, at most TB_BODY_MAX; none when that run is empty.  The scanner takes a
    body only where its state says the traceback is open and only Blocks follows the lines."""
    out: Dict[int, Body] = {}
    find = buf.find
    seen: Dict[bytes, Tuple[str, Optional[int], bool]] = {}
    for s, e in firsts:
        p = parsed.get(s)
        if p is None or p[1] is None:
            continue
        rank, first, after = p[1], e + 1, e + 1
        texts: List[str] = []
        while len(texts) < TB_BODY_MAX:
            a = e + 1
            e = find(b"\n", a)
            if e < 0 or a in hits:
                break
            data = buf[a:min(e, a + MAX_RAW)]
            got = seen.get(data)
            if got is None:
                got = _body_line(data, parsed.get(a), file_rank)
                if len(data) <= PARSED_TEXT and len(seen) < PARSED_KEEP:
                    seen[data] = got
            # (a progress bar's updates are fed one by one: blockscan._segments)
            if got[1] != rank or not got[2] or (find(b"\r", a, e) >= 0 and find(b"train_step_timing", a, e) >= 0):
                break
            texts.append(got[0])
            after = e + 1
        if texts:
            out[first] = (after, rank, tuple(texts))
    return out


def _body_line(data: bytes, p: Optional[Parsed], file_rank: Optional[int]) -> Tuple[str, Optional[int], bool]:
    """A line DATA after a traceback's first (P: parse_hits' parse of it, when it made one -- it parses the first
    TB_FOLLOWED: not parsed twice): its text, its rank, and whether it may be in a body (tb_bodies)."""
    norm = normalise(decode_line(data))
    if p is not None:
        text, r, ts, dep = norm[p[0]:], p[1], p[2], p[3]
    else:
        text, r = text_and_rank(norm, file_rank)
        ts, dep = parse_ts_ahead(norm)
    return text, r, ts is None and not dep and not exc_line(text) and not starts_traceback(text)


# a pool worker's line layouts (their digits masked, state.DIGITS) and how a line of each is read
# (sources.parse_template)
_LAYOUTS: Dict[bytes, Template] = {}


def _remember(memo: Dict[Any, Any], key: Any, value: Any) -> None:
    """MEMO[KEY] = VALUE, MEMO cleared first when it holds PARSED_KEEP entries (a worker's layouts, bounded)."""
    if len(memo) >= PARSED_KEEP:
        memo.clear()
    memo[key] = value


def _by_layout(data: bytes, norm: str, file_rank: Optional[int]) -> Parsed:
    """parse_hits' parse of the printable line DATA (NORM: it decoded), read by its layout."""
    key = data.translate(state_.DIGITS)
    tpl = _LAYOUTS.get(key)
    if tpl is not None:
        return from_template(tpl, norm, file_rank)
    p, tpl = parse_template(norm, file_rank)
    _remember(_LAYOUTS, key, tpl)
    return p


def parse_hits(buf: bytes, starts: Sequence[int], file_rank: Optional[int],
               texts: Optional[Dict[int, Tuple[str, str]]] = None) -> Dict[int, Parsed]:
    """The parse of the hit lines at STARTS (sources.make_line's prefix, rank and time), made by a pool
    worker ahead of the scanner (issue 44: the scanner's own parse of each hit was most of its work on a
    dense log): {line start: Parsed}.  The scanner decodes the line itself (C), takes its text, rank and
    time from here, and parses the time again only when it depends on the year and the scanner knows
    one by then other than the default year the worker read it in (glog's and vLLM's headers have
    none: BlockView.year).  TEXTS: filled with the normalised line and its text of each line parsed here (not
    one parsed as an earlier one: rule_searches reads them, the line decoded once).  A printable line is read by
    its layout (sources.parse_template: a storm's lines, the same but for their digits, ~14 us a line each)."""
    out: Dict[int, Parsed] = {}
    n = len(buf)
    seen: Dict[bytes, Parsed] = {}       # a block repeats its lines (warnings on every rank, every step)
    by_layout = templates_ok()           # (a printable line read by its layout: parse_template)
    for s in starts:
        for _ in range(RANK_BACK + 1):
            if s in out:
                break
            nl = buf.find(b"\n", s)
            data = buf[s:min(nl if nl >= 0 else n, s + MAX_RAW)]
            p = seen.get(data)
            if p is None:
                if by_layout and len(data) <= PARSED_TEXT and not data.translate(None, _PRINTABLE):
                    norm = data.decode("ascii")      # (printable ASCII: decode_line and normalise keep it as it is)
                    p = _by_layout(data, norm, file_rank)
                    text = norm[p[0]:]
                else:
                    norm = normalise(decode_line(data))
                    text, rank = text_and_rank(norm, file_rank)
                    ts, dep = parse_ts_ahead(norm)
                    p = (len(norm) - len(text), rank, ts, dep)
                if len(data) <= PARSED_TEXT and len(seen) < PARSED_KEEP:
                    seen[data] = p
                if texts is not None:
                    texts[s] = (norm, text)
            out[s] = p
            if p[1] is not None or s == 0:
                break
            s = buf.rfind(b"\n", 0, s - 1) + 1     # a line of no rank: the scanner reads the one before
    return out


def _date_read_otherwise(buf: bytes, s: int, normed: bytes) -> bool:
    """Whether the line at S, NORMED once normalised (UTF-8), holds a date that the raw search for dates
    (first_dated_in, year_changes: a line's first date, its `-` in its first 200 bytes) does not read as it is: none
    there, or another one (a control byte or an ANSI colour inside a date, or before it)."""
    n = _ISO_DATE_B.search(normed)
    if n is None:
        return False
    m = _ISO_DATE_B.search(buf, s, s + n.end() + 1024)       # (a date past a line's first 200 bytes: not read)
    return (m is None or m.start() - s > 200 or buf[m.start() - 4:m.end()] != normed[n.start() - 4:n.end()]
            or buf.find(b"\n", s, m.start()) >= 0)


def _retag_normalised(hits: Dict[int, Set[int]], buf: bytes, aset: AnchorSet,
                      facts: Optional[BlockFacts] = None) -> None:
    """Lines with control characters (ANSI colours, ...) are normalised first, then searched again
    (all of a block's such lines in one search): anchors are trusted only on normalised text (and the facts
    their normalised text may hold, and those of them that hold an ISO date, added to FACTS)."""
    starts = [s for s, t in hits.items() if NORM_TAG in t]
    if not starts:
        return
    texts = []
    bars: Dict[int, List[bytes]] = {}       # (a progress bar's lines: the updates the line reader reads)
    for i, s in enumerate(starts):
        nl = buf.find(b"\n", s)
        raw = decode_line(buf[s:min(nl if nl >= 0 else len(buf), s + MAX_RAW)])     # (the line driver's text)
        texts.append(normalise(raw).encode("utf-8", "replace"))
        segs = progress_updates(raw)
        if segs is not None:
            bars[i] = [normalise(seg).encode("utf-8", "replace") for seg in segs]
    lines = texts + [seg for i in sorted(bars) for seg in bars[i]]
    joined = b"\n".join(lines) + b"\n"
    offs = []
    o = 0
    for t in lines:
        offs.append(o)
        o += len(t) + 1
    found = aset.scan(joined, facts=facts.found if facts is not None else None)
    if facts is not None and facts.found & _JOINS_A_DATE:      # (the raw pass's: normalising may join a date)
        dated = sorted({bisect.bisect_right(offs, m.start()) - 1 for m in _ISO_DATE_B.finditer(joined)
                        if m.start() < offs[len(texts) - 1] + len(texts[-1])})
        facts.normed.extend(sorted(starts[i] for i in dated if _date_read_otherwise(buf, starts[i], texts[i])))
    k = len(texts)
    for i, s in enumerate(starts):
        if i in bars:                          # (its updates' hits, each read as a line)
            new: Set[int] = set()
            for _ in bars[i]:
                new.update(found.get(offs[k], ()))
                k += 1
        else:
            new = set(found.get(offs[i], ()))     # a copy: scan() shares equal tag sets among lines
        new.discard(NORM_TAG)
        if new:
            new.add(NORMED_TAG)
            hits[s] = new
        else:
            del hits[s]



def rule_searches(buf: bytes, hits: Dict[int, Set[int]], rules: Sequence[Optional["MatchRule"]],
                  guard: Optional["WorkerBudget"] = None, every: bool = False,
                  norms: Optional[Dict[int, str]] = None,
                  texts: Optional[Dict[int, Tuple[str, str]]] = None) -> Dict[int, "Searched"]:
    """The catalog's rule searches of the block's hit lines, made by a pool worker ahead of the
    scanner, for the rules whose anchors hit a line and whose literals it holds, of the lines whose
    searches took SHIP_SECONDS or more (or timed out; the scanner redoes the others): {line start:
    (hash of the line's text, the rules that matched, (rule, CPU seconds, timeouts) of the searches
    that were slow or timed out, the rules not searched)} -- a search neither slow nor timed out
    costs its rule nothing (rules.Rules.charge), so it is not sent.  The scanner charges each
    search to its rule in the log's order, as a search of its own (rules.Rules._hits), and
    searches itself a line whose text hashes otherwise (its hash is the forked worker's) or that
    is not here.  A rule this worker's own searches find slow (rules.py's thresholds) is no longer
    searched here: by then the scanner, charging every worker's searches in order, has switched
    it off (GUARD: the worker's tally, kept from block to block).  EVERY: every search is sent (a block
    dense in hits when there are workers to spare: the scanner's own searches were most of its work on a
    line, issue 44).  NORMS: filled with the normalised text of each line whose searches are sent (plain_hits
    reads it: the line decoded once).  TEXTS: the normalised lines and texts parse_hits made, by offset."""
    guard = guard if guard is not None else WorkerBudget(rules)
    out: Dict[int, "Searched"] = {}
    for start, tags in hits.items():
        ids = [t - RULE_TAG for t in tags if RULE_TAG <= t < ANCHOR_TAG]
        if not ids:
            continue
        got = texts.get(start) if texts is not None else None
        if got is None:
            nl = buf.find(b"\n", start)
            end = nl if nl >= 0 else len(buf)
            got = scanned(buf[start:min(end, start + MAX_RAW)])
        norm, text = got
        if not rules_.source_echo(text):     # a source-code echo line: the scanner searches nothing
            done, seconds = guard.search(text, ids)
            if every or seconds >= SHIP_SECONDS or done[2]:
                out[start] = done
                if norms is not None:
                    norms[start] = norm
    return out


class WorkerBudget:
    """A worker's rule searches, with its own tally of each rule's slow searches and timeouts
    (rules.py's thresholds): a rule past them is not searched any more by this worker."""

    def __init__(self, rules: Sequence[Optional["MatchRule"]]):
        self.rules = rules
        self.timeouts = Timeouts()
        self.tally = rules_.Tally()          # the scanner's own rule (rules.Rules keeps one too)
        self.off: Set[int] = set()
        self.ready: Set[int] = set()       # rules whose regexes are compiled (not timed as a search)
        self.shared: Dict[Tuple[int, ...], Tuple[int, ...]] = {}
        self.blind: Dict[int, bool] = {}   # rules whose result on a line is its layout's (_digit_blind_rule)
        self.layouts: Dict[Tuple[int, bytes], bool] = {}     # (rule, a line's layout): whether it matches

    def search(self, text: str, ids: List[int]) -> Tuple["Searched", float]:  # noqa: C901 - a hot loop, one frame
        """The searches of TEXT by the rules IDS (state.Searched) and the CPU time they took.  A rule blind to
        which digit is which (_digit_blind_rule) gives a line what it gave a line of the same layout (its digits
        masked) it searched untimed (rules.quick_rule): a storm's lines, one message on every rank, were ~9 us of a
        worker's each, issue 44."""
        lower: Optional[str] = None
        key: Optional[bytes] = None
        matched: List[int] = []
        costly: List[Tuple[int, float, int]] = []
        skipped: List[int] = []
        total = 0.0
        for i in ids:
            rule = self.rules[i]
            if rule is None:                   # switched off before the scan
                continue
            blind = self.blind.get(i)
            if blind is None:
                blind = self.blind[i] = _digit_blind_rule(rule)
            if blind and i not in self.off:
                if key is None:
                    key = text.encode("utf-8", "surrogatepass").translate(state_.DIGITS)
                known = self.layouts.get((i, key))
                if known is not None:
                    if known:
                        matched.append(i)
                    continue
            if lower is None:
                lower = text.lower()
            if not rules_.has_literal(rule, text, lower):
                if blind and key is not None:
                    _remember(self.layouts, (i, key), False)
                continue
            if i in self.off:
                skipped.append(i)
                continue
            if i not in self.ready:            # compiled first: a worker's compile is no slow search
                for rx in [rule.rx, *rule.negative]:
                    rx.compiled()
                self.ready.add(i)
            hit, seconds, n_out = rules_.search_rule(rule, text, self.timeouts)
            total += seconds
            if hit:
                matched.append(i)
            if blind and key is not None and not n_out and seconds == 0.0 and rules_.quick_rule(rule, text):
                _remember(self.layouts, (i, key), hit)
            if n_out or rules_.slow(seconds, len(text)):
                costly.append((i, seconds, n_out))
                over = self.tally.searched(i, seconds, len(text))
                if (n_out and self.tally.timed_out_once(i)) or over:
                    self.off.add(i)
        m = tuple(matched)      # (one object per distinct set of rules matched: pickled once a message, not per line)
        return (hash(text), self.shared.setdefault(m, m), tuple(costly), tuple(skipped)), total


def warm_workers(batchers: Sequence[Tuple[Feeder, int]], spare: bool) -> None:
    """What each of a pool's workers makes before its first block's results, made once before the fork (issue 44: each
    made it again, ~5-8 ms of its start here, the scanner waiting on the first): the record classes it makes instances
    of (record.ready: the input's description, the batch observers' summaries, Feeder.obj.worker_records); with
    workers to SPARE (they parse the hit lines: _spare_work), what it asks of digit_blind (the layouts' regexes:
    templates_ok; plain_hits': _plain_blind) -- each worker read them with the stdlib's parser again, ~5-7 ms, and
    the answers are kept between runs only by the scanner's process (rx.BLIND: a worker's additions go with it).
    (A rule's, _digit_blind_rule, is asked by a worker only of the rules its hit lines wake, a few of the ~200: all of
    them read here cost ~100 ms once.)"""
    from ..inputs.sources import Input
    from ..record import ready
    ready(Input, *(c for o, _ in batchers if o.summarises for c in getattr(o.obj, "worker_records", tuple)()))
    if spare:
        templates_ok()
        _plain_blind()


def _digit_blind_rule(rule: "MatchRule") -> bool:
    """RULE matches two lines the same but for their digits alike: its regexes digit-blind (rx.digit_blind), no digit
    in its literals, no min_share (a size's digits)."""
    pats = [rule.rx.pattern, *(n.pattern for n in rule.negative)]
    return (rule.min_share is None and not any(c.isdigit() for lit in rule.literals for c in lit)
            and all(map(digit_blind, pats)))
