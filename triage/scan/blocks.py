"""Observer: error blocks (a traceback up to its exception line, an error line and its continuation),
for `unmatched`."""
from __future__ import annotations

from typing import Dict, List, Sequence, Set

from ..caps import BLOCK_HEAD_LINES, BLOCK_MAX_LINES
from ..inputs.sources import Line
from ..lazyre import lazy_re
from ..match.rx import TextMemo, lazy, search
from .observer import Observer, lit, rxa
from .results import ErrorBlock, StreamKey
from .state import Core, Event, InputState, Stream

# Error block detection (for `unmatched`)
_TB_START = "Traceback (most recent call last):"
EXC_LINE = lazy(    # an exception line "pkg.SomeError: ..." (findings and suggest read it too)
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::|$)"
)
_TB_AFTER = ": " + _TB_START
# a log record's level in a stripped logger header (vLLM "ERROR 12-04 07:00:05 [core.py:1759] ")
LOG_RECORD = lazy(r"(?:^|[\s\[|])(?:ERROR|CRITICAL|FATAL|WARNING|EXCEPTION)(?:[\]:|]|\s)")
_ERR_HEAD = lazy_re(r"(?:^|[\s\[|])(?:ERROR|CRITICAL|FATAL)(?:[\]:|]|\s)")
_ERROR_LINE = lazy(
    r"(?:^|\s|\])(?:ERROR|FATAL|Error|error)(?:\]|:|\s)|^E\d{4} \d\d:\d\d:\d\d|^\S+:\d+:\d+ \[\d+\] .*NCCL WARN"
)
ERR_HEAD, ERROR_LINE = _ERR_HEAD, _ERROR_LINE      # (read by a pool worker's plain_hits: prepare._plain_blind)
# where a traceback longer than BLOCK_MAX_LINES lost its middle lines (indented as a source line: never
# a block's message)
TB_CUT = "    [... traceback lines not kept ...]"
TB_IDLE = 5000             # physical lines a traceback is followed without a line of its own stream
INTRO_BACK = 2             # physical lines before a traceback's first looked at for the line introducing it


class Blocks(Observer):
    """Error blocks (a traceback up to its exception line, an error line and its continuation)."""
    # (`Error::` is C++'s scope, no message: c10's `frame #0: c10::Error::Error(...)` lines woke the
    # observer for nothing, a line in ten of a production log, issue 44; a line whose text starts with
    # it is still read when another anchor wakes it)
    anchors = [lit(_TB_START), rxa(r"(?:Error|Exception|Interrupt|Exit|Failure)(?::[^:\n]|:?[ \t\r]*$)"),
               rxa(r"(?:ERROR|FATAL|Error|error)(?:[\] \t\r\x0b\x0c]|:[^:\n]|:?$)"),
               rxa(r"E\d{4} \d\d:\d\d:\d\d"), lit("NCCL WARN"),
               # (... but a level or an exception name itself followed by `::` is: `ERROR:: ...`,
               # `RuntimeError::what(): ...`; not c10's `c10::Error::`, a scope after a scope; no \s: an anchor
               # never crosses a newline)
               rxa(r"(?:^|[ \t\]])(?:ERROR|FATAL|Error|error)::"
                   r"|(?:^|[ \t\]:])[A-Z][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)::")]

    def __init__(self, core: Core):
        self.core = core
        self.open: Dict[str, Set[StreamKey]] = {}     # per input: streams with an open block

    def following(self, inp: InputState, lineno: int) -> bool:
        keys = self.open.get(inp.inp.label)
        if not keys:
            return False
        for k in list(keys):
            st = self.core.streams[k]
            b = st.block
            if b is None:
                keys.discard(k)
            elif (st.in_tb and lineno - st.block_seen <= TB_IDLE) or (not st.in_tb and lineno <= b.end + 1):
                return True
        return False

    def feed(self, line: Line, ev: Event) -> None:
        st = ev.st
        self._close_passed(line.source, line.lineno, st)
        text = line.text
        # (a message with the traceback text after it opens one too: SGLang's logger.error(f"Scheduler hit
        # an exception: {traceback}") -- the engine-death rule reads that first line)
        if starts_traceback(text):
            self._traceback_start(line, ev)
            return
        b = st.block
        if b is not None:
            if self._extend(line, st, b):
                return
            self.core.close_block(st)
        if _opens_block(text) or _error_header(line):
            self._open(line, ev, [text])
            st.in_tb = False

    def period(self, line: Line) -> int:
        """How LINE, repeated right after the open error block of its stream, makes blocks: 1 when each
        copy closes the block before it and opens its own (an error line, or an exception line that is a
        new record); BLOCK_MAX_LINES when the copies continue the block before them until it is full,
        then open the next one (an exception line that is no new record, "RuntimeError: ..."); 0
        otherwise (no repeat fast path).  The same tests as feed() and _extend()."""
        text = line.text
        if starts_traceback(text) or not (_opens_block(text) or _error_header(line)):
            return 0
        if (_maybe_error(text) and _error_line(text)) or _error_header(line):
            return 1                  # an error line never continues a block (_extend)
        if text.strip() and not text.startswith((" ", "\t")) and _looks_like_new_record(text):
            return 1
        return BLOCK_MAX_LINES

    def _open(self, line: Line, ev: Event, lines: List[str]) -> ErrorBlock:
        """A new block of LINE's stream, starting at LINE."""
        st = ev.st
        st.block = ErrorBlock(line.source, line.rank, line.lineno, line.lineno, lines, ev.seq,
                              ev.view.last_ts(line, st), group=ev.inp.attempt(line))
        self.open.setdefault(line.source, set()).add((line.source, line.rank))
        return st.block

    def take_body(self, st: Stream, texts: Sequence[str], source: str, lineno: int) -> None:
        """TEXTS, the lines numbered LINENO on of input SOURCE (a traceback's body, prepare.tb_bodies),
        join ST's open traceback at once, as feed() would add them one by one: each a line of ST's own
        stream that is no exception line and starts no traceback, no other observer woken by it."""
        self._close_passed(source, lineno, st)      # (the first line closes them; the others find none)
        b = st.block
        assert b is not None and st.in_tb
        for text in texts:
            _tb_append(b, text)
        b.end = st.block_seen = lineno + len(texts) - 1

    def _close_passed(self, source: str, lineno: int, st: Stream) -> None:
        """A non-traceback block of another stream whose next line (number LINENO of input SOURCE) is not
        its own continuation is complete."""
        keys = self.open.get(source)
        if not keys:
            return
        for k in list(keys):
            o = self.core.streams[k]
            if o is st:
                continue
            if o.block is None:
                keys.discard(k)
            elif not o.in_tb and lineno > o.block.end:
                self.core.close_block(o)
                keys.discard(k)

    def _traceback_start(self, line: Line, ev: Event) -> None:
        """"Traceback (most recent call last):" opens a block, or goes on with an open traceback."""
        st = ev.st
        if st.block is not None and not st.in_tb:
            self.core.close_block(st)
        if st.block is None:
            b = self._open(line, ev, [])
            # the physical line before, when its stream's (rank-interleaved output: a bounded look)
            b.intro = ev.view.intro_of(line, INTRO_BACK)
            # a logger's header the launcher table stripped (vLLM prints every line of a record under it)
            head = _header(line)
            b.logged = bool(head) and _logged(head[-120:])
        else:
            b = st.block
        st.in_tb = True
        b.lines.append(line.text)
        b.end = st.block_seen = line.lineno

    def _extend(self, line: Line, st: Stream, b: ErrorBlock) -> bool:
        """LINE joins the open block B of its stream: a traceback line, or a continuation line
        after the message (indented / not a new record, up to a few).  False when it does not."""
        text = line.text
        if st.in_tb:
            exc = exc_line(text)
            _tb_append(b, text)
            b.end = st.block_seen = line.lineno
            if exc:
                st.in_tb = False  # exception line reached; keep following message lines briefly
                b.exc_line = line.lineno
            return True
        if text.strip() and (line.lineno - b.end) <= 1 and len(b.lines) < BLOCK_MAX_LINES \
                and not _error_line(text) and not _error_header(line):
            if text.startswith((" ", "\t")) or not _new_record(text):
                b.lines.append(text)
                b.end = line.lineno
                return True
        return False

    def finish(self) -> None:
        for st in self.core.streams.values():
            self.core.close_block(st)



def _tb_append(b: ErrorBlock, text: str) -> None:
    """A traceback's line joins its block B: a long traceback keeps its head (its first frames), TB_CUT
    and its tail: the most recent frames, where it was raised, and its exception line (what groupkey.py
    reads)."""
    if len(b.lines) >= BLOCK_MAX_LINES:
        b.lines[BLOCK_HEAD_LINES] = TB_CUT
        del b.lines[BLOCK_HEAD_LINES + 1]
    b.lines.append(text)


_RECORD = lazy(r"^(?:\[|\d{4}-\d\d-\d\d|[IWEF]\d{4} |INFO|WARNING|DEBUG|\S+:\d+:\d+ \[\d+\])")


def _header(line: Line) -> str:
    """What the launcher table stripped from LINE (its prefixes and a logger's header), or ""."""
    return _header_of(line.raw, line.text)


def _header_of(raw: str, text: str) -> str:
    return raw[:len(raw) - len(text)] if len(raw) > len(text) and raw.endswith(text) else ""


def _error_header(line: Line) -> bool:
    """LINE's stripped logger header has an error level (vLLM "ERROR 12-04 07:00:05 [core.py:1759] "):
    the record is an error line whatever its words."""
    return error_header_of(line.raw, line.text)


def error_header_of(raw: str, text: str) -> bool:
    """_error_header of the line whose normalised text is RAW and whose text is TEXT (a pool worker's test,
    prepare.plain_hits, with no Line made)."""
    if "ERROR" not in raw[:120] and "CRITICAL" not in raw[:120]:
        return False
    head = _header_of(raw, text)
    return bool(head) and bool(_ERR_HEAD.search(head[-120:]))


def _maybe_error(text: str) -> bool:
    """Cheap test before the error-line regexes (most lines hold none of these)."""
    return ("rror" in text or "ERROR" in text or "FATAL" in text or "xception" in text or "WARN" in text
            or "Interrupt" in text or "Exit" in text or "Failure" in text or text[:1] == "E")


def _looks_like_new_record(text: str) -> bool:
    return bool(_RECORD.match(text))


# the tests of a line's text above, remembered for repeated lines (see TextMemo)
exc_line = TextMemo(EXC_LINE.match)
_error_line = TextMemo(lambda text: search(_ERROR_LINE, text[:300]))
_new_record = TextMemo(_looks_like_new_record)
def starts_traceback(text: str) -> bool:
    """"Traceback (most recent call last):" (or a message with the traceback's text after it)."""
    return text.startswith(_TB_START) or text.strip() == _TB_START or text.rstrip().endswith(_TB_AFTER)


_logged = TextMemo(lambda head: search(LOG_RECORD, head))    # (a rank's prefix repeats)
_opens_block = TextMemo(lambda text: _maybe_error(text) and bool(EXC_LINE.match(text) or _error_line(text)))

