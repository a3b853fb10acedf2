"""The block driver's View: context around a hit read back from the block (instead of ring buffers)."""
from __future__ import annotations

import bisect
import time
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Set, Tuple, Union

from ..inputs.sources import (
    _DOTTED_EXC,
    MAX_RAW,
    Input,
    Line,
    continues,
    decode_line,
    make_line,
    normalise,
    parse_ts,
    reparse_in,
    timegm,
    updates_of,
)
from ..match.rx import TextMemo
from .prepare import (
    _TIMELIKE,
    DATED_UNKNOWN,
    PARSED_KEEP,
    PARSED_TEXT,
    PLAIN_MAX,
    Parsed,
    first_dated_in,
    year_changes,
)
from .state import _FRAME, CONTEXT_LINES, Stream, View

WALK_BACK = 400            # physical lines searched back for a stream's previous line / timestamp
# parsed lines kept behind the current one (a look back reaches WALK_BACK lines, and resolving the rank
# of the line it reaches up to WALK_BACK more): more are dropped, so that a block of a million short
# hit lines does not keep a million Line objects
CACHE_KEEP = 2 * WALK_BACK + 64



# continues(text, prev) is this test of TEXT, or PREV is NCCL's "Last error:" line
_continues = TextMemo(lambda text: continues(text, ""))
_dotted_exc = TextMemo(lambda text: bool(_DOTTED_EXC.match(text)))


class BlockView(View):
    """Walks back through the current buffer (the previous block's tail + this block)."""

    def __init__(self, window: int, inp: Input):
        super().__init__(window)
        self.inp = inp
        self.buf = b""
        self.cache: Dict[int, Line] = {}
        self.year: Optional[int] = None
        # where in the buffer a dated line told the lines after it another year (in order), and the year before it: a
        # line before it read now (a look back) is read in its own year, as the line driver read it (year_of)
        self._year_marks: List[int] = []
        self._year_before: List[Optional[int]] = []
        self.cur_off = 0
        self.cur_lineno = 0
        self._ts_memo: Tuple[Tuple[int, Optional[int]], Optional[float]] = ((-1, None), None)
        self._year_span: Tuple[float, float] = (0.0, 0.0)
        # timestamps carried forward: per rank, the time of the newest timestamped line looked at, and
        # the line number before which every line was looked at (a look back stops there: each line
        # is read for its timestamp once, not once per later line)
        self._ts_rank: Dict[Optional[int], float] = {}
        self._ts_from = 0
        self._cache_floor = 0     # cache size after the last pruning
        # newest_before: per key, the first line number not yet looked at and the newest line that passed
        self._newest: Dict[Hashable, Tuple[int, Optional[Line]]] = {}
        # bytes of a short line -> (year hint, text, rank, time, normalised raw) of its parse
        self._parsed: Dict[bytes, Tuple[Optional[int], str, Optional[int], Optional[float], str]] = {}
        # a pool worker's parse of the current block's hit lines (prepare.parse_hits), by offset from pre_lo
        self.pre: Dict[int, Parsed] = {}
        self.pre_lo = 0
        self.timed: Optional[List[int]] = None     # ... and the lines of it that may carry a time, sorted
        self.timed_n: Optional[List[int]] = None   # ... their line numbers in the block (0: its first line)
        self.pre_first = 0                         # ... and the number of the block's first line
        self.intros: Dict[int, str] = {}           # ... and the introducing lines' texts it found (prepare.tb_intros)
        self.timed_rt: Optional[list] = None       # ... and its timed lines' ranks and times (prepare.timed_ranks)
        # the block driver's: feeds the batch records before buffer offset N (a dated line is about to
        # tell the lines after it another year: the records before it are in the year before)
        self.before_year: Optional[Callable[[int], None]] = None

    def reset(self, buf: bytes, lo: int = 0) -> None:
        """The next buffer: BUF[:LO] is the end of the previous one (its tail, for looking back).
        The lines resolved there are kept, moved to their new offsets: a line's rank resolved
        before a block boundary is the one a look back from after it finds, as in one big block
        (else a run of continuation lines longer than a look back would lose its rank at a block
        boundary, and the scan would depend on the block size)."""
        old = self.buf
        shift = len(old) - lo
        if 0 < lo <= len(old) and old.endswith(buf[:lo]):
            self.cache = {o - shift: x for o, x in self.cache.items() if o >= shift}
        else:
            self.cache = {}
        self.buf = buf
        self._cache_floor = len(self.cache)
        if self._year_marks:            # (those in the previous buffer's tail, moved with it)
            k = bisect.bisect_left(self._year_marks, shift) if lo else len(self._year_marks)
            self._year_marks = [at - shift for at in self._year_marks[k:]]
            self._year_before = self._year_before[k:]

    def rebase(self, buf: bytes) -> None:
        """The buffer reset() took, its block's NUL runs left out (engine: prepare_gapless): its tail, and what was
        resolved and marked there, the same."""
        self.buf = buf

    def year_of(self, off: int) -> Optional[int]:
        """The year the line at buffer offset OFF is read in: the one the last dated line before it told (a line read
        after a later dated line told another -- a look back -- is not read in that one: the line driver read it
        before; issue 44's property test, a year-less glog line before a 2025 line read as 2025's)."""
        marks = self._year_marks
        if not marks:
            return self.year
        i = bisect.bisect_right(marks, off)
        return self._year_before[i] if i < len(marks) else self.year

    def _parse(self, off: int, lineno: int) -> Line:
        buf = self.buf
        nl = buf.find(b"\n", off)
        end = nl if nl >= 0 else len(buf)
        data = buf[off:min(end, off + MAX_RAW)]
        inp = self.inp
        year = self.year_of(off)
        memo = self._parsed.get(data)          # a repeated line is parsed once (see _parsed)
        if memo is not None and memo[0] == year:
            _, text, rank, ts, norm = memo
            return Line(text, inp.label, lineno, rank, ts, norm, inp.attempt)
        pre = self.pre.get(off - self.pre_lo)
        segs = updates_of(data)
        if segs is not None:              # a progress bar: the line driver's last line of it, its last update
            ln = make_line(segs[-1], inp.label, lineno, inp.file_rank, year, inp.attempt)
        elif pre is not None:             # a worker parsed it: as make_line, but for decoding it
            cut, rank, ts, dep = pre
            norm = normalise(decode_line(data))
            if reparse_in(year, dep):                # (the worker's year was none)
                ts = parse_ts(norm, year)
            ln = Line(norm[cut:], inp.label, lineno, rank, ts, norm, inp.attempt)
        else:
            ln = make_line(decode_line(data), inp.label, lineno, inp.file_rank, year, inp.attempt)
        if len(data) <= PARSED_TEXT:
            if len(self._parsed) >= PARSED_KEEP:
                self._parsed.clear()
            self._parsed[data] = (year, ln.text, ln.rank, ln.ts, ln.raw)
        return ln

    def line_at(self, off: int, lineno: int) -> Line:
        """The line starting at `off` (line number `lineno`), its rank resolved as the line
        driver would (a continuation line takes the rank of the line before it)."""
        ln = self.cache.get(off)
        if ln is not None:
            return ln
        chain: List[Tuple[int, Line, bool]] = []      # (offset, line, continues the line before)
        o, n = off, lineno
        cur = self._parse(o, n)
        rank: Optional[int] = None
        while True:
            if cur.rank is not None:
                rank = cur.rank
                chain.append((o, cur, False))
                break
            if o == 0 or len(chain) > WALK_BACK or self._progress_bar(o, self.buf.find(b"\n", o)):
                chain.append((o, cur, False))     # (a progress bar's update continues nothing: the line driver's)
                break
            po, pn = self._before(o, n)
            prev = self.cache.get(po)
            prev_line = prev if prev is not None else self._parse(po, pn)
            cont = (prev_line.text.startswith("Last error:") or _continues(cur.text)
                    or (prev_line.text[:1] in (" ", "\t") and _dotted_exc(cur.text)))
            chain.append((o, cur, cont))
            if not cont:
                break
            if prev is not None:
                rank = prev.rank
                break
            o, n, cur = po, pn, prev_line
        for o, cur, cont in chain:
            if cont and cur.rank is None and rank is not None:
                cur.rank = rank
            self.cache[o] = cur
        ln = self.cache[off]
        if len(self.cache) > 2 * CACHE_KEEP + self._cache_floor:
            self._prune()
        return ln

    def _before(self, off: int, lineno: int) -> Tuple[int, int]:
        """The start and number of the line the line driver read before the one at OFF (LINENO): the physical line
        before it, a progress bar's passed over (its updates are lines of their own, which no line continues)."""
        po, pn, pe = self.buf.rfind(b"\n", 0, off - 1) + 1, lineno - 1, off - 1
        while po and self._progress_bar(po, pe):
            pe, po, pn = po - 1, self.buf.rfind(b"\n", 0, po - 1) + 1, pn - 1
        return po, pn

    def _progress_bar(self, start: int, end: int) -> bool:
        """Whether the line buf[start:end] (END -1: to the buffer's end) is a progress bar's updates
        (text.progress_updates): the line driver reads them as lines of their own, and the line after them
        continues the line before them."""
        end = len(self.buf) if end < 0 else end
        return updates_of(self.buf[start:min(end, start + MAX_RAW)]) is not None

    def _prune(self) -> None:
        """Forget the parsed lines more than CACHE_KEEP lines behind the current one (no look back
        reaches them), amortised O(1) per line."""
        floor = self.cur_lineno - CACHE_KEEP
        self.cache = {o: x for o, x in self.cache.items() if x.lineno >= floor}
        self._cache_floor = len(self.cache)

    def _walk(self, line: Line):
        """Previous lines of the buffer, newest first, as resolved Lines."""
        if line.source == self.inp.label:
            yield from self._back(0, WALK_BACK)

    def _back(self, stop: int, limit: int):
        """The lines before the current one, newest first, as resolved Lines: at most LIMIT of
        them, none numbered below STOP (a look back that an earlier one already covered)."""
        off, n = self.cur_off, self.cur_lineno
        buf = self.buf
        for _ in range(limit):
            if off <= 0 or n - 1 < stop:
                return
            end = off - 1
            off = buf.rfind(b"\n", 0, end) + 1
            n -= 1
            yield self.line_at(off, n)

    def _times_back(self, stop: int, limit: int) -> None:
        """The newest time of each rank among the lines before the current one (at most LIMIT lines back,
        none numbered below STOP), newest first, into _ts_rank: a line whose bytes cannot carry a time is
        passed over unparsed (a look back for a time read every line of a log of handled tracebacks, issue
        44); in a block a worker read, only its timed lines are visited, oldest first, from its entries
        (_timed_forward).  (Loops, no generator: a traceback's first line looks back, in a log of handled
        tracebacks one line in sixty.)"""
        floor = max(stop, self.cur_lineno - limit)          # the lowest line number looked at
        if (self.timed_rt is not None and self.timed is not None and self.timed_n is not None
                and self.cur_off > self.pre_lo):
            self._timed_forward(floor)
        else:
            self._tail_back(self.cur_off, self.cur_lineno, floor, set())

    def _timed_forward(self, floor: int) -> None:
        """_times_back through a block a worker read, oldest first: the lines before the block first (the tail of
        the one before, newest first, when FLOOR is below the block's first line), then the block's timed lines from
        FLOOR on, each time overwriting its rank's -- the newest of each rank wins, as newest first where the
        first of a rank wins.  A timed line of a rank of its own and a time no year changes is the worker's entry
        (prepare.timed_ranks: its rank and time, () when it has none); the others are read (_rank_time)."""
        timed, numbers, rt = self.timed, self.timed_n, self.timed_rt
        if timed is None or numbers is None or rt is None:       # (_times_back tested them)
            return
        pre_lo, first, ts_rank = self.pre_lo, self.pre_first, self._ts_rank
        if floor < first:
            self._tail_back(pre_lo, first, floor, set())
        a = bisect.bisect_left(numbers, floor - first)
        b = bisect.bisect_left(timed, self.cur_off - pre_lo, a)
        for i in range(a, b):
            e = rt[i]
            if e is None:
                e = self._rank_time(timed[i], first + numbers[i])
            if e:
                ts_rank[e[0]] = e[1]

    def _rank_time(self, at: int, lineno: int) -> Tuple:
        """The rank and time of the timed line at offset AT of the block a worker read (number LINENO): its Line's
        when one is kept, else the worker's parse's when no year changes it, else its Line read now; () when it has
        no time."""
        ln = self.cache.get(at + self.pre_lo)
        if ln is None:
            p = self.pre.get(at)
            if p is not None and p[1] is not None and not reparse_in(self.year_of(at + self.pre_lo), p[3]):
                return (p[1], p[2]) if p[2] is not None else ()
            ln = self.line_at(at + self.pre_lo, lineno)
        return (ln.rank, ln.ts) if ln.ts is not None else ()

    def _tail_back(self, off: int, n: int, floor: int, seen: Set[Optional[int]]) -> None:
        """_times_back from the line at OFF (number N) on back, line by line: the buffer's tail of the block
        before, or a block no worker read."""
        buf, cache, ts_rank = self.buf, self.cache, self._ts_rank
        while True:
            if off <= 0 or n - 1 < floor:
                return
            end = off - 1
            off = buf.rfind(b"\n", 0, end) + 1
            n -= 1
            ln = cache.get(off)
            if ln is None:
                if end - off <= PLAIN_MAX and not _TIMELIKE.search(buf, off, end):
                    continue
                ln = self.line_at(off, n)
            if ln.ts is not None and ln.rank not in seen:
                seen.add(ln.rank)
                ts_rank[ln.rank] = ln.ts

    def timed_through(self, linenos: List[int]) -> None:
        """Lines LINENOS (in order) were taken, each of a time of its own (a run of plain hit lines taken whole,
        _InputScan._plain_bulk): the first line of no known time moves past those that reach it in a row."""
        tf = self._ts_from
        if not linenos[0] <= tf <= linenos[-1]:
            return
        if linenos[-1] - linenos[0] == len(linenos) - 1:
            self._ts_from = linenos[-1] + 1
            return
        for ln in linenos:
            if ln == tf:
                tf += 1
        self._ts_from = tf

    def last_ts(self, line: Line, st: Stream) -> Optional[float]:
        """The time of the stream's newest timestamped line before LINE: the lines since the last look
        back (at most WALK_BACK of them) are read once, and the newest time of each rank among them
        is carried forward, so a run of untimed lines costs O(1) a line, not O(WALK_BACK)."""
        if line.ts is not None:
            return line.ts
        if self._ts_memo[0] == (line.lineno, line.rank):
            return self._ts_memo[1]
        if line.source == self.inp.label:
            stop = self._ts_from
            self._times_back(stop, WALK_BACK)
            self._ts_from = max(stop, self.cur_lineno)
            ts = self._ts_rank.get(line.rank)
            if ts is not None:
                st.last_ts = ts
        self._ts_memo = ((line.lineno, line.rank), st.last_ts)
        return st.last_ts

    def after_frame(self, line: Line, st: Stream) -> bool:
        for prev in self._walk(line):
            if prev.rank == line.rank:
                return bool(_FRAME.match(prev.text)) if "File" in prev.text else False
        return False

    def before(self, line: Line, st: Stream) -> List[Line]:
        out: List[Line] = []
        for prev in self._walk(line):
            if prev.rank == line.rank:
                out.append(prev)
                if len(out) == CONTEXT_LINES:
                    break
        return out[::-1]

    def newest_of_rank(self, line: Line, n: int) -> Optional[Line]:
        """As View.newest_of_rank, walking back through the buffer.  Each of the N lines is read (BlockView.line_at),
        not only those up to the first of LINE's rank: a line read is kept, parsed in the year known now, and a
        later look back for a time reads it so -- passing over another rank's line unread made a year-less time
        after a dated traceback line read in the new year (issue 44's review)."""
        found: Optional[Line] = None
        for prev in self._walk(line):
            n -= 1
            if found is None and prev.rank == line.rank:
                found = prev
            if n <= 0:
                break
        return found

    def intro_of(self, line: Line, n: int) -> str:
        """What a traceback's block keeps of its introducing line: a pool worker's (prepare.tb_intros), else
        newest_of_rank's."""
        if line.source == self.inp.label and self.intros:
            text = self.intros.get(self.cur_off - self.pre_lo)
            if text is not None:
                return text
        return super().intro_of(line, n)

    def newest_before(self, line: Line, n: int, key: Hashable, test: Callable[[Line], bool]) -> Optional[Line]:
        """As View.newest_before, within N lines (its window, as the line scan's; WALK_BACK before the seventeenth
        pass of issue 44: a rule's context 400 to 1,000 lines back was missed), amortised O(1) a call per key: a look
        back stops at the line of the previous call with KEY (the lines before it were looked at then, and the
        newest that passed is remembered)."""
        if line.source != self.inp.label:
            return None
        limit = n               # (a rule's context window, caps.MAX_WINDOW at most: the buffer's tail holds that many)
        frontier, hit = self._newest.get(key, (0, None))
        found = next((x for x in self._back(frontier, limit) if test(x)), None)
        if found is None and hit is not None and self.cur_lineno - hit.lineno <= limit:
            found = hit
        self._newest[key] = (max(frontier, self.cur_lineno), found or hit)
        return found

    def passed(self, lineno: int, n: int) -> None:
        """done() for N lines from LINENO on, fed with no time of their own (a traceback's body)."""
        if lineno <= self._ts_from < lineno + n:
            self._ts_from = lineno + n

    def done(self, line: Line, st: Stream) -> None:
        ts = line.ts
        if ts is not None:
            self._ts_rank[line.rank] = ts
        if line.lineno == self._ts_from:      # the lines before the next one are all looked at
            self._ts_from += 1
        self.learn_year(ts, line.raw, self.cur_off)

    def learn_year(self, ts: Optional[float], raw: str, at: int) -> None:
        """A dated line (time TS, normalised text RAW, at buffer offset AT) tells the year-less lines
        after it (glog's, vLLM's headers) their year."""
        if ts is not None and not (self._year_span[0] <= ts < self._year_span[1]) and "-" in raw[:40]:
            y = time.gmtime(ts).tm_year
            if 1 <= y <= 9999:              # (9999-12-31 23:59 with a zone west of UTC is 10000 there)
                if y != self.year and self.before_year is not None:
                    self.before_year(at)
                if y != self.year and (not self._year_marks or at >= self._year_marks[-1]):
                    self._year_marks.append(at)
                    self._year_before.append(self.year)
                self.year = y
                self._year_span = (timegm(y, 1, 1), timegm(y, 12, 31) + 86400)

    def first_dated(self, lo: int, ahead: Union[None, int, Tuple[int, float, str]] = DATED_UNKNOWN,
                    normed: Sequence[int] = ()) -> Optional[Tuple[int, float, str]]:
        """The first line of the block buf[lo:] with a dated time (prepare.first_dated_in): (its offset, its
        time, its normalised text), or None.  The scanner feeds a line only when an observer wants it, so a
        dated line no observer wants told the lines after it nothing of their year: a 2025 log's glog lines
        read as 2026's while its dated lines were 2025's (issue 44's review).  AHEAD: a pool worker's
        first_dated_in of the block (offsets in it), unless DATED_UNKNOWN; NORMED: BlockFacts.normed, offsets in
        the buffer."""
        if ahead is None:
            return None
        if isinstance(ahead, tuple):
            return ahead[0] + lo, ahead[1], ahead[2]
        found = first_dated_in(self.buf, lo, self.year, normed=normed)
        return found if isinstance(found, tuple) else None

    def year_changes(self, lo: int, first: Tuple[int, float, str], ahead: Optional[List[Tuple[int, float, str]]] = None,
                     facts: Optional[Set[int]] = None, normed: Sequence[int] = ()) -> List[Tuple[int, float, str]]:
        """The dated lines of the block buf[lo:] after its first (FIRST) where the year changes
        (prepare.year_changes), in order; AHEAD: a pool worker's (offsets in the block), else looked for here
        (FACTS, NORMED: BlockFacts', of the block's anchor pass; FACTS None: not known)."""
        if ahead is not None:
            return [(at + lo, ts, raw) for at, ts, raw in ahead]
        return year_changes(self.buf, first[0], first[1], self.year, facts=facts, normed=normed)

