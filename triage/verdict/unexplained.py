"""Error blocks no pattern explains: continuation blocks merged into the message above them,
a block's error line (`exception_line`, `block_message`), tracebacks a log record introduces
(caught and logged), and the first block of each distinct masked signature (`Unmatched`)."""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from .. import hashing as hashlib
from ..inputs.sources import TORCH_CUDA_HINTS
from ..match.rx import TextMemo, lazy, search
from ..scan.blocks import EXC_LINE
from ..scan.blocks import LOG_RECORD as _LOG_RECORD
from ..scan.results import ErrorBlock, Match
from .fingerprint import MaskMemo, mask_lines
from .types import EVIDENCE_MAX, UNMATCHED_MAX, Unmatched

CONT_GAP = 4           # a continuation block ("Last error:", C++ frames) this close after its message

_TB_HEAD = "Traceback (most recent call last):"
# a block that only continues the message above it (NCCL's "Last error:", a C++ exception's trailer)
_CONT_HEAD = lazy(r"^(?:Last error:|Exception raised from |frame #\d+|terminate called after|  what\(\): |"
                  r"nccl[A-Z]\w*: )")


def _block_order(b: ErrorBlock) -> Tuple[float, int]:
    return (b.order_ts if b.order_ts is not None else float("inf"), b.seq)


_CARET = lazy(r"^\s*[~^]+\s*$")
_NOT_A_MESSAGE = lazy(r'^\s*File "[^"]*", line \d+|^\s*(?:frame )?#\d+[: ]|^Last error:|^Exception raised from |'
                      r"^Traceback \(most recent call last\):")


def exception_line(lines: Sequence[str]) -> Optional[str]:
    """The exception line of a traceback block (its last one: a chained or wrapped error ends with
    the one that was raised), never a frame, a source line or a caret line."""
    for ln in reversed(lines):
        if EXC_LINE.match(ln) and not _CARET.match(ln):
            return ln
    return None


def block_message(lines: Sequence[str], source: str = "", end: int = 0) -> str:
    """The error line of a block: a traceback's exception line, else the first line that is a
    message (not a frame, a caret line or a `Last error:` continuation)."""
    exc = exception_line(lines)
    if exc is not None:
        return exc[:200]
    for ln in lines:
        if not _NOT_A_MESSAGE.match(ln) and not is_boilerplate(ln) and not _CODE_ECHO.match(ln):
            return ln[:200]
    where = f" near {source}:{end}" if source else ""
    return f"an exception whose traceback runs past the lines the scanner keeps of it; its message is{where}"


def _block_message(b: ErrorBlock) -> str:
    return block_message(b.lines, b.source, b.end)


_CODE_ECHO = lazy(r"^\s{4,}\S")     # an indented source line under a frame


def _block_kind(b: ErrorBlock) -> str:
    first = b.lines[0] if b.lines else ""
    if first.startswith(_TB_HEAD):
        return "uncaught-exception"
    if first.startswith("Fatal Python error:"):
        return "fatal-python-error"
    return "error"


def _matched_lines(matches: List[Match]) -> Dict[Tuple[str, Optional[int]], List[int]]:
    """The line numbers of the matched lines per (input, rank) stream, sorted."""
    matched: Dict[Tuple[str, Optional[int]], List[int]] = {}
    for m in matches:
        matched.setdefault((m.line.source, m.line.rank), []).append(m.line.lineno)
    for v in matched.values():
        v.sort()
    return matched


def _follows_a_match(b: ErrorBlock, matched: Dict[Tuple[str, Optional[int]], List[int]]) -> bool:
    """Block B starts within CONT_GAP lines after a matched line of its stream (or of its rank-less input)."""
    for key in {(b.source, b.rank), (b.source, None)}:
        ls = matched.get(key)
        if ls:
            i = bisect_left(ls, b.start)
            if i and b.start - ls[i - 1] <= CONT_GAP:
                return True
    return False


def merge_continuations(blocks: List[ErrorBlock], matches: List[Match]) -> List[ErrorBlock]:
    """Blocks that only continue a message -- NCCL's `Last error:` and the line after it, a C++
    exception's `Exception raised from` trailer and its frames -- are part of the message above
    them: of the finding whose matched line they follow (dropped here: the finding's evidence shows
    them), or of the error block they follow (merged into it).  Returns copies, in scan order."""
    matched = _matched_lines(matches)
    out: List[ErrorBlock] = []
    last: Dict[Tuple[str, Optional[int]], ErrorBlock] = {}
    for b in sorted(blocks, key=lambda b: b.seq):
        key = (b.source, b.rank)
        if b.lines and _CONT_HEAD.match(b.lines[0]):
            if _follows_a_match(b, matched):
                continue
            prev = last.get(key)
            if prev is not None and 0 < b.start - prev.end <= CONT_GAP:
                prev.lines = (prev.lines + b.lines)[:2 * EVIDENCE_MAX * 10]
                prev.end = b.end
                continue
        nb = replace(b, lines=list(b.lines))
        out.append(nb)
        last[key] = nb
    return out




def logged_tracebacks(blocks: List[ErrorBlock]) -> set:
    """Ids of the traceback blocks that a log record of their own stream introduces (the line just
    before them: "2026-12-03 14:54:45,023 ERROR train: skipping a bad sample", as logging.exception
    and logger.error(..., exc_info=True) print a caught exception)."""
    out = set()
    prev: Dict[Tuple[str, Optional[int]], ErrorBlock] = {}
    for b in sorted(blocks, key=lambda b: b.seq):
        key = (b.source, b.rank)
        p = prev.get(key)
        if getattr(b, "logged", False):
            out.add(id(b))
        elif (p is not None and b.lines and b.lines[0].startswith(_TB_HEAD) and p.lines
                and not p.lines[0].startswith(_TB_HEAD) and 0 < b.start - p.end <= CONT_GAP
                and search(_LOG_RECORD, p.lines[-1][:300])):
            out.add(id(b))
        prev[key] = b
    return out


# PyTorch's boilerplate around an error (issue 40): hints after a CUDA error, the lines that chain one
# traceback to the next, caret lines, empty lines -- never an error of their own, never a block's message
# (torch c10/cuda/CUDAException.cpp, CUDAMiscFunctions.cpp 2.1-2.11; CPython traceback.py)
_CHAIN = lazy(r"^(?:During handling of the above exception|The above exception was the direct cause)")
_BOILERPLATE = lazy(r"^\s*$|" + _CARET.pattern + "|^(?:" + TORCH_CUDA_HINTS + ")|" + _CHAIN.pattern + ".*:$")
TB_CHAIN_GAP = 3       # lines between two tracebacks of one stream that chain ("During handling ...")
# a one-line block that introduces the traceback after it (vLLM's "EngineCore failed to start.",
# "WorkerProc hit an exception.", a logger's "...: " line)
_INTRO_MAX = 1


def is_boilerplate(line: str) -> bool:
    """PyTorch's hint, chain, caret or empty line around an error: never an error's message."""
    return _boilerplate(line)


# (remembered by text: a log of handled tracebacks keeps hundreds of blocks of the same lines, and a `regex` match
# costs microseconds where a look-up costs tens of nanoseconds -- its 500 kept blocks took ~47 ms here in
# _unmatched, issue 44)
_boilerplate = TextMemo(lambda line: _BOILERPLATE.match(line))
_chains = TextMemo(lambda line: _CHAIN.match(line))


def _starts_tb(b: ErrorBlock) -> bool:
    return bool(b.lines) and (b.lines[0].startswith(_TB_HEAD) or b.lines[0].rstrip().endswith(_TB_HEAD))


def one_per_traceback(blocks: Sequence[ErrorBlock]) -> List[ErrorBlock]:
    """The error blocks as a reader sees them: one block per traceback (with the line that introduced
    it, and the tracebacks chained to it by "During handling of the above exception"), PyTorch's
    boilerplate left out, blocks of nothing but boilerplate dropped.  Copies, in scan order."""
    out: List[ErrorBlock] = []
    last: Dict[Tuple[str, Optional[int]], ErrorBlock] = {}
    reach: Dict[Tuple[str, Optional[int]], int] = {}     # the last line of the stream's block or its boilerplate
    chained: Dict[Tuple[str, Optional[int]], bool] = {}  # ... and that boilerplate chains a traceback to it
    for b in sorted(blocks, key=lambda b: b.seq):
        key = (b.source, b.rank)
        lines = [ln for ln in b.lines if not _boilerplate(ln)]
        chain = any(map(_chains, b.lines))
        prev = last.get(key)
        near = prev is not None and 0 < b.start - reach.get(key, prev.end) <= TB_CHAIN_GAP
        if not lines:
            if near:
                reach[key] = b.end
                chained[key] = chained.get(key, False) or chain
            continue
        chains = bool(chained.get(key)) and prev is not None and any(x.startswith(_TB_HEAD) for x in prev.lines)
        intro = prev is not None and len(prev.lines) <= _INTRO_MAX and not _starts_tb(prev)
        if near and prev is not None and _starts_tb(b) and (chains or intro):
            prev.lines = (prev.lines + lines)[:2 * EVIDENCE_MAX * 10]
            prev.end = reach[key] = b.end
            prev.exc_line = b.exc_line or prev.exc_line
            chained[key] = chain
            continue
        nb = replace(b, lines=lines)
        out.append(nb)
        last[key] = nb
        reach[key] = nb.end
        chained[key] = chain
    return out


def _unmatched(blocks: List[ErrorBlock], limit: int = UNMATCHED_MAX) -> Tuple[List[Unmatched], int]:
    """The first block of each distinct masked signature (one per traceback: one_per_traceback), with the
    ranks (or rank-less inputs) that printed it; at most LIMIT of them, plus how many signatures were left
    out."""
    by_fp: Dict[str, Unmatched] = {}
    streams: Dict[str, set] = {}
    masked: MaskMemo = {}
    fps: Dict[Tuple[str, ...], str] = {}        # (a block's signature by its lines: kept blocks repeat theirs)
    for b in sorted(one_per_traceback(blocks), key=_block_order):
        stream = (b.source if b.rank is None else None, b.rank)
        key = tuple(b.lines)
        fp = fps.get(key)
        if fp is None:
            sig = mask_lines(b.lines, masked)       # secrets redacted first (fingerprint.py)
            fp = fps[key] = hashlib.sha1("\n".join(sig).encode("utf-8", "replace")).hexdigest()[:12]
        u = by_fp.get(fp)
        if u is None:
            by_fp[fp] = Unmatched(b.source, b.start, b.rank, [b.rank] if b.rank is not None else [], 1,
                                  list(b.lines), fp)
            streams[fp] = {stream}
        elif stream not in streams[fp]:
            streams[fp].add(stream)
            u.count += 1
            if b.rank is not None:
                u.ranks.append(b.rank)
    out = list(by_fp.values())
    return out[:limit], max(0, len(out) - limit)
