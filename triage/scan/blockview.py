"""The block driver's View: context around a hit read back from the block (instead of ring buffers)."""
from __future__ import annotations

import calendar
import time
from typing import Dict, List, Optional, Tuple

from .sources import (
    MAX_LINE,
    MAX_RAW,
    Input,
    Line,
    continues,
    make_line,
)
from .state import _FRAME, CONTEXT_LINES, Stream, View

WALK_BACK = 400            # physical lines searched back for a stream's previous line / timestamp


class BlockView(View):
    """Walks back through the current buffer (the previous block's tail + this block)."""

    def __init__(self, window: int, inp: Input):
        super().__init__(window)
        self.inp = inp
        self.buf = b""
        self.cache: Dict[int, Line] = {}
        self.year: Optional[int] = None
        self.cur_off = 0
        self.cur_lineno = 0
        self._ts_memo: Tuple[Tuple[int, Optional[int]], Optional[float]] = ((-1, None), None)
        self._year_span: Tuple[float, float] = (0.0, 0.0)

    def reset(self, buf: bytes) -> None:
        self.buf = buf
        self.cache = {}

    def _parse(self, off: int, lineno: int) -> Line:
        buf = self.buf
        nl = buf.find(b"\n", off)
        end = nl if nl >= 0 else len(buf)
        raw = buf[off:min(end, off + MAX_RAW)].decode("utf-8", "replace")
        if len(raw) > MAX_LINE * 4:
            raw = raw[:MAX_LINE * 4]
        if raw.endswith("\r") and "\r" not in raw[:-1]:
            raw = raw[:-1]
        inp = self.inp
        return make_line(raw, inp.label, lineno, inp.file_rank, self.year, inp.attempt)

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
            if o == 0 or len(chain) > WALK_BACK:
                chain.append((o, cur, False))
                break
            po = self.buf.rfind(b"\n", 0, o - 1) + 1
            prev = self.cache.get(po)
            prev_line = prev if prev is not None else self._parse(po, n - 1)
            cont = continues(cur.text, prev_line.text)
            chain.append((o, cur, cont))
            if not cont:
                break
            if prev is not None:
                rank = prev.rank
                break
            o, n, cur = po, n - 1, prev_line
        for o, cur, cont in chain:
            if cont and cur.rank is None and rank is not None:
                cur.rank = rank
            self.cache[o] = cur
        return self.cache[off]

    def _walk(self, line: Line):
        """Previous lines of the buffer, newest first, as resolved Lines."""
        if line.source != self.inp.label:
            return
        off, n = self.cur_off, self.cur_lineno
        for _ in range(WALK_BACK):
            if off <= 0:
                return
            off = self.buf.rfind(b"\n", 0, off - 1) + 1
            n -= 1
            yield self.line_at(off, n)

    def last_ts(self, line: Line, st: Stream) -> Optional[float]:
        if line.ts is not None:
            return line.ts
        if self._ts_memo[0] == (line.lineno, line.rank):
            return self._ts_memo[1]
        for prev in self._walk(line):
            if prev.rank == line.rank and prev.ts is not None:
                st.last_ts = prev.ts
                break
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

    def recent_in_source(self, line: Line, n: int) -> List[Line]:
        out: List[Line] = []
        for prev in self._walk(line):
            out.append(prev)
            if len(out) >= n:
                break
        return out[::-1]

    def done(self, line: Line, st: Stream) -> None:
        ts = line.ts
        if ts is not None and not (self._year_span[0] <= ts < self._year_span[1]) and "-" in line.raw[:40]:
            y = time.gmtime(ts).tm_year     # a dated line tells glog lines (no year) their year
            self.year = y
            self._year_span = (calendar.timegm((y, 1, 1, 0, 0, 0)), calendar.timegm((y + 1, 1, 1, 0, 0, 0)))

