"""The pure, C-heavy part of scanning a block (anchor hits, batch records, line indexes): what a
worker process can do ahead of the scanner; the compiled anchor set of an observer set."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple, cast

from .anchors import Anchor, AnchorSet
from .observer import Feeder, Observer
from .ranks import split_prefix
from .rx import Timeouts
from .sources import (
    MAX_LINE,
    MAX_RAW,
    decode_line,
    normalise,
)

if TYPE_CHECKING:
    from ..patterns import MatchRule
    from .rules import Searched

# a line with a control byte, hit once (at its end) however many it holds: an anchor hit per byte
# made a 4 MiB line of control bytes 4 million hits
_CTRL_RX = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f][^\n]*$"
NORM_TAG = -1            # a line with control characters: normalise it before trusting anchors
NORMED_TAG = -2          # ... and its tags come from its normalised text
RULE_TAG = 1000          # tags >= RULE_TAG name a rule (tag - RULE_TAG); lower tags an observer


@functools.lru_cache(maxsize=8)
def anchor_set(anchors: Tuple[Anchor, ...]) -> AnchorSet:
    """The compiled anchors of one observer set, built once per process (a fleet worker analyses
    hundreds of jobs with the same catalog: the database is not rebuilt or reloaded per job)."""
    return AnchorSet(anchors)



def _batchers(obs: Sequence[Observer]) -> List[Tuple[Feeder, int]]:
    """The batch observers of OBS (see Feeder.batch) with their indexes."""
    return [(o, i) for i, o in enumerate(obs) if isinstance(o, Feeder) and o.batch]


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


def prepare_block(buf: bytes, lo: int, aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]]
                  ) -> Tuple[Dict[int, Set[int]], List[Dict[int, tuple]], int]:
    """The pure, C-heavy part of scanning the block buf[lo:] (a worker process can do it ahead
    of the scanner): the anchor hits per line start, the lines each batch observer parsed itself
    (those leave the hits when they wake nobody else) and the block's line count.  Offsets are
    offsets in buf.  (The scanner counts the lines before a hit itself: an index per hit line
    cost a dict entry per line of a block of dense hits.)"""
    # a zero-copy view of the block: AnchorSet.scan reads any bytes-like buffer (annotated `bytes`)
    data = cast(bytes, memoryview(buf)[lo:]) if lo else buf
    hits = aset.scan(data, lo, buf)
    _retag_normalised(hits, buf, aset)
    recs_all: List[Dict[int, tuple]] = []
    for o, idx in batchers:
        only = {idx}
        mine = [ls for ls, t in hits.items() if t == only]
        recs = o.obj.scan_lines(buf, mine)
        for ls in recs:
            del hits[ls]
        recs_all.append(recs)
    return hits, recs_all, buf.count(b"\n", lo)


def _retag_normalised(hits: Dict[int, Set[int]], buf: bytes, aset: AnchorSet) -> None:
    """Lines with control characters (ANSI colours, ...) are normalised first, then searched again
    (all of a block's such lines in one search): anchors are trusted only on normalised text."""
    starts = [s for s, t in hits.items() if NORM_TAG in t]
    if not starts:
        return
    texts = []
    for s in starts:
        nl = buf.find(b"\n", s)
        raw = buf[s:min(nl if nl >= 0 else len(buf), s + MAX_RAW)].decode("utf-8", "replace")
        texts.append(normalise(raw[:MAX_LINE * 4]).encode("utf-8", "replace"))
    joined = b"\n".join(texts) + b"\n"
    offs = []
    o = 0
    for t in texts:
        offs.append(o)
        o += len(t) + 1
    found = aset.scan(joined)
    for i, s in enumerate(starts):
        new = set(found.get(offs[i], ()))     # a copy: scan() shares equal tag sets among lines
        new.discard(NORM_TAG)
        if new:
            new.add(NORMED_TAG)
            hits[s] = new
        else:
            del hits[s]



def rule_searches(buf: bytes, hits: Dict[int, Set[int]], rules: Sequence[Optional["MatchRule"]]
                  ) -> Dict[int, Tuple[str, Dict[int, "Searched"]]]:
    """The catalog's rule searches of the block's hit lines, made by a pool worker ahead of the
    scanner: {line start: (the line's text, {rule index: (hit, CPU seconds, timeouts)})} for the
    rules whose anchors hit the line and whose literals it holds.  The scanner charges each search
    to its rule in the log's order, as a search of its own (rules.Rules._hits), and searches itself
    any line or rule not here.  A rule this worker's own searches find slow (rules.py's thresholds)
    is no longer searched here: by then the scanner, charging every worker's searches in order,
    has switched it off."""
    from .rules import _CODE, MAX_RULE_TIMEOUTS, RULE_TIME_BUDGET, has_literal, search_rule, slow
    out: Dict[int, Tuple[str, Dict[int, "Searched"]]] = {}
    timeouts = Timeouts()
    spent: Dict[int, float] = {}
    timed_out: Dict[int, int] = {}
    off: Set[int] = set()
    for start, tags in hits.items():
        ids = [t - RULE_TAG for t in tags if t >= RULE_TAG and t - RULE_TAG not in off]
        if not ids:
            continue
        nl = buf.find(b"\n", start)
        end = nl if nl >= 0 else len(buf)
        text = split_prefix(normalise(decode_line(buf[start:min(end, start + MAX_RAW)])))[0]
        if _CODE.match(text):                   # a source-code echo line: the scanner searches nothing
            continue
        lower = text.lower()
        done: Dict[int, "Searched"] = {}
        for i in ids:
            rule = rules[i]
            if rule is None or not has_literal(rule, text, lower):      # None: switched off before the scan
                continue
            r = done[i] = search_rule(rule, text, timeouts)
            if r[2]:
                timed_out[i] = timed_out.get(i, 0) + 1
            if slow(r[1], len(text)):
                spent[i] = spent.get(i, 0.0) + r[1]
            if timed_out.get(i, 0) >= MAX_RULE_TIMEOUTS or spent.get(i, 0.0) >= RULE_TIME_BUDGET:
                off.add(i)
        if done:
            out[start] = (text, done)
    return out
