"""Scan stage: compiled patterns -> matches, plus the error blocks no pattern explained.

The work is split among line observers, each with a small `feed`/`following`/`finish`
interface, that declare the anchors (literals or small regexes) of the lines they react to:

- `Attempts`    restart / attempt detection (start banners, launcher restart lines)
- `LauncherRoot` torchrun's "Root Cause (first observed failure)" rank
- `Followups`   look-ahead context of rules and the lines after a match (report context)
- `Blocks`      error blocks (tracebacks, error lines) for `unmatched`
- `Rules`       the pattern catalog's match rules (source-code echo lines excluded)
- any extra observer (the config collector, the step-time parser) passed to a scan

Two drivers feed them.  `Engine.scan(lines)` feeds every line to every observer (small
inputs, examples, tests).  `Engine.scan_paths(paths)` reads each input in large binary blocks,
finds the candidate lines of every observer with ONE multi-pattern search per block
(anchors.AnchorSet, Hyperscan where installed), and runs Python only on those lines, plus
line by line while an observer says it is `following` (an open traceback, an arguments block,
pending look-ahead context).  Context that a line-by-line scan kept in ring buffers (the lines
before a match, the last timestamp of a stream, the line before a source echo) is taken from
the block around the hit instead.

The invariant that makes the block driver equal to the line driver: an observer's anchors hit
every line on which its `feed` changes state while it is not following, and feeding it a line
it does not react to changes nothing.
"""
from __future__ import annotations

import calendar
import functools
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Iterable, List, Optional, Sequence, Set, Tuple, cast

from .anchors import Anchor, AnchorSet
from .kinds import Role
from .patterns import ContextReq, MatchRule, Pattern
from .rx import TIMEOUT, Timeouts, lazy, search
from .sources import (
    MAX_LINE,
    MAX_RAW,
    Input,
    InputError,
    Line,
    continues,
    describe_input,
    expand_paths,
    inner_rank,
    iter_blocks,
    iter_blocks_with_tail,
    make_line,
    normalise,
    split_prefix,
)

StreamKey = Tuple[str, Optional[int]]

# A Python traceback frame line; the next line is source code, not a message.
_FRAME = lazy(r'^\s*File "[^"]*", line \d+')
# Source-code echo lines and caret markers never carry a message.
_CODE = lazy(r"^\s+(?:assert\b|raise\b|f?[\"'])|^\s*[~^]+\s*$")
# Error block detection (for `unmatched`)
_TB_START = "Traceback (most recent call last):"
EXC_LINE = lazy(    # an exception line "pkg.SomeError: ..." (findings and suggest read it too)
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::|$)"
)
_ERROR_LINE = lazy(
    r"(?:^|\s|\])(?:ERROR|FATAL|Error|error)(?:\]|:|\s)|^E\d{4} \d\d:\d\d:\d\d|^\S+:\d+:\d+ \[\d+\] .*NCCL WARN"
)
_WRAPPER = lazy(r"ChildFailedError|elastic/multiprocessing|torch\.distributed\.elastic|^\s*(?:time|host|rank|exitcode|error_file|traceback)\s+:")  # noqa: E501 - a regex reads best on one line
_ROOT_RANK = lazy(r"^\s*rank\s+:\s+(\d+)\s+\(local_rank")
BLOCK_MAX_LINES = 40
MAX_RULE_TIMEOUTS = 20     # a rule that times out this often in one scan is switched off
RESTART_MERGE_S = 60.0     # restart lines this close together (in different inputs) are one restart
CONTEXT_LINES = 3          # lines of context kept before / after a match (for the report)
CONTEXT_MATCHES = 300      # matches that get context (bounded memory on huge logs)
AFTER_SPAN = 200           # physical lines after a match searched for its "after" context
TB_IDLE = 5000             # physical lines a traceback is followed without a line of its own stream
WALK_BACK = 400            # physical lines searched back for a stream's previous line / timestamp
TAIL_BYTES = 256 << 10     # bytes of the previous block kept for walking back across a boundary
MATCHES_PER_KEY = 50       # matches kept per (rule, rank, message up to its digits)
MAX_MATCHES = 20_000       # matches kept in all; the rest are counted (ScanResult.dropped)
MAX_DROPPED_KEYS = 10_000  # distinct dropped messages counted apart; the rest per (pattern, rank)
_DIGITS = bytes.maketrans(b"0123456789", b"##########")
FOLLOW_MAX = 200_000       # physical lines an arguments / config block is followed at most
# Lines that start a (new) training attempt; a second one of the same kind in an input means a restart.
_ATTEMPT_KINDS = [
    ("args", lazy(r"^-{10,} arguments -{10,}$")),
    ("task", lazy(r"^-{3,} Task Configuration -{3,}$")),
    ("torchrun", lazy(r"Setting OMP_NUM_THREADS environment variable for each process to be")),
    ("summary", lazy(r"^Configuration Summary \(Non-Default Values vs Megatron Core\)")),
]
# Launcher lines that announce a restart explicitly (torchelastic).
_RESTART = lazy(r"Restarting workers|will restart worker group|attempts left; will restart")


@dataclass
class Match:
    pattern: Pattern
    rule: MatchRule
    line: Line
    seq: int                      # order of the line in the whole scan
    order_ts: Optional[float]     # the line's time, or the last time seen before it in its stream
    context: List[Line] = field(default_factory=list)   # lines that satisfied `context` requirements
    group: int = 0                # the attempt (restart segment) it belongs to
    before: List[Line] = field(default_factory=list)    # a few lines before it in its stream
    after: List[Line] = field(default_factory=list)     # and after it

    @property
    def role(self) -> Role:
        return self.rule.role


@dataclass
class ErrorBlock:
    source: str
    rank: Optional[int]
    start: int
    end: int
    lines: List[str]
    seq: int
    order_ts: Optional[float]
    explained: bool = False
    group: int = 0
    intro: str = ""          # a traceback's line before it in its stream ("Exception ignored in: ...")


@dataclass
class ScanResult:
    matches: List[Match]
    blocks: List[ErrorBlock]
    lines: int
    sources: List[str]
    launcher_root_rank: Optional[int] = None
    attempts: int = 1
    disabled_rules: List[str] = field(default_factory=list)
    # matches not kept (Core.add_match): (pattern id, rank, text of the first one) -> count;
    # the text fingerprints like the kept ones of the same message ("" when past MAX_DROPPED_KEYS)
    dropped: Dict[Tuple[str, Optional[int], str], int] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)        # about the inputs (unreadable, capped, ...)
    exits: List["LauncherExit"] = field(default_factory=list)   # deaths the launcher / shell reports
    bytes: int = 0                                        # bytes read (block driver)
    anchor_engine: str = ""                               # "hyperscan" or "re" (block driver)
    regex_timeouts: int = 0                               # catalog regex searches cut off by rx.TIMEOUT
    ranks_fn: Optional[Callable[[], Set[int]]] = field(default=None, repr=False)
    _ranks: Optional[List[int]] = field(default=None, repr=False)

    @property
    def ranks_seen(self) -> List[int]:
        """Ranks with any line in the last attempt.  The block driver works them out only when
        asked (a second C-level pass over the inputs; only hang verdicts need them)."""
        if self._ranks is None:
            self._ranks = sorted(self.ranks_fn()) if self.ranks_fn is not None else []
        return self._ranks


# --- scan state shared by the observers ----------------------------------------------------
@dataclass
class Stream:
    """What is known of one (input, rank) stream."""
    last_ts: Optional[float] = None
    after_frame: bool = False                          # line driver: the previous line was a frame
    recent: Deque[Line] = field(default_factory=lambda: deque(maxlen=CONTEXT_LINES))
    want_after: List[Tuple[Match, int]] = field(default_factory=list)   # (match, last line no.)
    block: Optional[ErrorBlock] = None
    block_matched: bool = False
    in_tb: bool = False
    block_seen: int = 0                                # line no. of the block's last line of this stream


@dataclass
class InputState:
    inp: Input
    restarts: int = 0
    kinds: Set[str] = field(default_factory=set)       # attempt-start banners seen in this attempt
    seq_base: int = 0

    def attempt(self, line: Line) -> int:
        return self.restarts if line.attempt is None else line.attempt

    def current(self) -> int:
        return self.restarts if self.inp.attempt is None else self.inp.attempt


class View:
    """Context around the current line: the line driver keeps ring buffers, the block driver
    walks back through the block (see BlockView)."""

    def __init__(self, window: int):
        self.window = window
        self.by_source: Dict[str, Deque[Line]] = {}

    def last_ts(self, line: Line, st: Stream) -> Optional[float]:
        return st.last_ts

    def after_frame(self, line: Line, st: Stream) -> bool:
        return st.after_frame

    def before(self, line: Line, st: Stream) -> List[Line]:
        return list(st.recent)

    def recent_in_source(self, line: Line, n: int) -> List[Line]:
        d = self.by_source.get(line.source)
        return list(d)[-n:] if d else []

    def done(self, line: Line, st: Stream) -> None:
        st.after_frame = bool(_FRAME.match(line.text)) if "File" in line.text else False
        st.recent.append(line)
        d = self.by_source.get(line.source)
        if d is None:
            d = self.by_source[line.source] = deque(maxlen=self.window)
        d.append(line)


@dataclass
class Event:
    """What the driver tells an observer about the line it feeds."""
    seq: int
    st: Stream
    inp: InputState
    view: View
    rule_ids: Optional[Set[int]] = None     # rules whose anchors hit (None: every rule)


class Observer:
    """A line observer: `anchors` hit every line it reacts to when it is not following."""
    anchors: Sequence[Anchor] = ()

    def feed(self, line: Line, ev: Event) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def following(self, inp: InputState, lineno: int) -> bool:
        """True while the observer must see every line of this input (an open block)."""
        return False

    def finish(self) -> None:
        pass


class Feeder(Observer):
    """Adapts an object with `feed(line)` (the config collector, the step-time parser)."""

    def __init__(self, obj, anchors: Sequence[Anchor], following: Optional[Callable[[], bool]] = None,
                 batch: bool = False):
        self.obj = obj
        self.anchors = list(anchors)
        self._following = following
        # batch: the lines of a block that wake only this observer go to obj.scan_lines(buf,
        # starts) first, which parses those it can ({line start: record}); the scanner hands the
        # records back in line order with obj.feed_records(buf, [(start, record)], source,
        # lineno_at, year), interleaved with the lines fed through feed()
        self.batch = batch
        self._since: Dict[str, int] = {}

    def feed(self, line: Line, ev: Event) -> None:
        self.obj.feed(line)

    def following(self, inp: InputState, lineno: int) -> bool:
        if self._following is None or not self._following():
            self._since.pop(inp.inp.label, None)
            return False
        first = self._since.setdefault(inp.inp.label, lineno)
        return lineno - first <= FOLLOW_MAX


def lit(text: str, ignore_case: bool = False) -> Anchor:
    return Anchor(text, 0, ignore_case)


def rxa(text: str, ignore_case: bool = False) -> Anchor:
    return Anchor(text, 0, ignore_case, regex=True)


# --- the core observers ------------------------------------------------------------------------
class Core:
    """State the core observers share and the result they build."""

    def __init__(self) -> None:
        self.streams: Dict[StreamKey, Stream] = {}
        self.matches: List[Match] = []
        self.blocks: List[ErrorBlock] = []
        self.blocks_limit = 500
        self.boundaries: List[float] = []          # times of restarts (to place inputs that show none)
        self.root_rank: Optional[int] = None
        self.ranks_seen: Dict[int, Set[int]] = {}
        # block driver, re-readable inputs: (path, file rank, [(stream offset, attempt from there)])
        # (path, file rank, [(stream offset, attempt from there)], [bytes scanned])
        self.rank_segments: List[Tuple[str, Optional[int], List[Tuple[int, int]], List[int]]] = []
        self.inputs: Dict[str, InputState] = {}
        self._kept: Dict[Tuple[int, Optional[int], bytes], int] = {}
        self.notes: List[str] = []          # about the inputs (unreadable, capped, a decompression bomb)
        self.exits: List["LauncherExit"] = []   # processes the launcher or the shell says died
        self.max_bytes = 0
        # (pattern id, rank, text of the first dropped line) -> matches not kept (see add_match)
        self.dropped: Dict[Tuple[str, Optional[int], str], int] = {}
        self.timeouts = Timeouts()          # regex searches of the catalog cut off by rx.TIMEOUT

    def add_match(self, m: Match) -> None:
        """Keep a match, or only count it: a message repeated on every rank a million times keeps
        its first MATCHES_PER_KEY occurrences per (rule, rank, message up to its digits), at most
        MAX_MATCHES in all; the rest are counted in `dropped` (memory stays bounded)."""
        key = (id(m.rule), m.line.rank, m.line.text.encode("utf-8", "replace").translate(_DIGITS))
        n = self._kept.get(key, 0)
        if n < MATCHES_PER_KEY and len(self.matches) < MAX_MATCHES:
            self._kept[key] = n + 1
            self.matches.append(m)
            return
        dkey = (m.pattern.id, m.line.rank, m.line.text)
        if dkey not in self.dropped and len(self.dropped) >= MAX_DROPPED_KEYS:
            dkey = (m.pattern.id, m.line.rank, "")
        self.dropped[dkey] = self.dropped.get(dkey, 0) + 1

    def stream(self, source: str, rank: Optional[int]) -> Stream:
        st = self.streams.get((source, rank))
        if st is None:
            st = self.streams[(source, rank)] = Stream()
        return st

    def close_block(self, st: Stream) -> None:
        b = st.block
        if b is None:
            return
        b.explained = st.block_matched
        if not b.explained and not any(_WRAPPER.search(x, timeout=TIMEOUT) for x in b.lines):
            if len(self.blocks) < self.blocks_limit:
                self.blocks.append(b)
        st.block = None
        st.block_matched = False
        st.in_tb = False


class Attempts(Observer):
    """A second attempt-start banner of the same kind in one input, or a launcher restart line."""
    anchors = [rxa(r"-{10} arguments -{10}"), rxa(r"-{3} Task Configuration -{3}"),
               lit("Setting OMP_NUM_THREADS environment variable for each process to be"),
               lit("Configuration Summary (Non-Default Values vs Megatron Core)"),
               lit("Restarting workers"), lit("will restart worker group"), lit("attempts left; will restart")]

    def __init__(self, core: Core):
        self.core = core

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        if not ("---" in text or "Configuration Summary" in text or "estart" in text or "OMP_NUM_THREADS" in text):
            return
        inp = ev.inp
        for kind, rx_ in _ATTEMPT_KINDS:
            if rx_.search(text[:200], timeout=TIMEOUT):
                if kind in inp.kinds:
                    inp.restarts += 1
                    inp.kinds = set()
                    self._boundary(line, ev)
                inp.kinds.add(kind)
                return
        if _RESTART.search(text, timeout=TIMEOUT):
            inp.restarts += 1
            inp.kinds = set()
            self._boundary(line, ev)

    def _boundary(self, line: Line, ev: Event) -> None:
        ts = ev.view.last_ts(line, ev.st)
        if ts is not None:
            self.core.boundaries.append(ts)


class LauncherRoot(Observer):
    """torchrun's error summary: "Root Cause (first observed failure):" ... "rank : 5 (local_rank: 5)"."""
    anchors = [lit("Root Cause (first observed failure)"), lit("local_rank")]

    def __init__(self, core: Core):
        self.core = core
        self.inside = False

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        if text.startswith("Root Cause (first observed failure)"):
            self.inside = True
        elif self.inside and "local_rank" in text:
            m = _ROOT_RANK.match(text)
            if m:
                self.core.root_rank = int(m.group(1))
                self.inside = False


# A process's death reported by the launcher or the shell, when no error of its own made it to the
# log.  torch/distributed/elastic/multiprocessing/api.py: "failed (exitcode: %s) local_rank: %s
# (pid: %s) of binary: %s"; torch/distributed/elastic/multiprocessing/api.py SignalException:
# "Process %d got signal: %d"; bash: "Segmentation fault (core dumped)", "./run.sh: line 7:  4242
# Killed  python train.py" (job-control messages, strsignal texts).
_EXIT_TORCHRUN = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: \d+\)")
_EXIT_SIGNAL = re.compile(r"SignalException: Process \d+ got signal: (\d+)")
# libstdc++'s verbose terminate handler (the process aborts): "terminate called after throwing an
# instance of '%s'" then "  what():  %s"
_TERMINATE = re.compile(r"^terminate called after throwing an instance of ")
_SIGNALS = r"(?:Segmentation fault|Aborted|Bus error|Killed|Floating point exception|Illegal instruction)"
_EXIT_SHELL = re.compile(r"^(?:\S+: line \d+: +\d+ +" + _SIGNALS + r"\b.*|" + _SIGNALS + r"(?: +\(core dumped\))?\s*)$")


class LauncherExits(Observer):
    """A non-zero exit or a fatal signal that torchrun or the shell reports (see _EXIT_*)."""
    anchors = [lit("failed (exitcode: "), lit("SignalException: Process "), lit("terminate called after throwing"),
               rxa(r"(?:Segmentation fault|Aborted|Bus error|Killed|Floating point exception|Illegal instruction)")]

    def __init__(self, core: "Core"):
        self.core = core

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        rank = line.rank
        m = _EXIT_TORCHRUN.search(text)
        if m:
            if int(m.group(1)) == 0:
                return
            rank = int(m.group(2)) if rank is None else rank
        elif not (_EXIT_SIGNAL.search(text) or _EXIT_SHELL.match(text.strip()) or _TERMINATE.match(text)):
            return
        if len(self.core.exits) < 100:
            self.core.exits.append(LauncherExit(line.source, line.lineno, rank, text[:300], ev.seq,
                                                ev.view.last_ts(line, ev.st), ev.inp.attempt(line)))


@dataclass
class LauncherExit:
    source: str
    line: int
    rank: Optional[int]
    text: str
    seq: int
    order_ts: Optional[float]
    group: int = 0


@dataclass
class _Pending:
    match: Match
    needs: List[int]              # indexes of context requirements still unmet
    deadline: int                 # last line number that can still satisfy them


def _ctx_hit(ctx: ContextReq, line: Line, timeouts: Timeouts) -> bool:
    return any(lit_ in line.text for lit_ in ctx.literals) and search(ctx.rx, line.text, timeouts) is not None


class Followups(Observer):
    """Lines after a match: its report context, and look-ahead `context` requirements of rules."""

    def __init__(self, core: Core):
        self.core = core
        self.pending: Dict[str, List[_Pending]] = {}
        # per input: the streams whose matches still wait for "after" lines -> last line no. to wait
        self.waiting: Dict[str, Dict[StreamKey, int]] = {}

    def wait_after(self, m: Match, st: Stream) -> None:
        last = m.line.lineno + AFTER_SPAN
        st.want_after.append((m, last))
        self.waiting.setdefault(m.line.source, {})[(m.line.source, m.line.rank)] = last

    def following(self, inp: InputState, lineno: int) -> bool:
        label = inp.inp.label
        if self.pending.get(label):
            return True
        w = self.waiting.get(label)
        if not w:
            return False
        for k, last in list(w.items()):
            st = self.core.streams[k]
            if last < lineno:
                st.want_after = [x for x in st.want_after if x[1] >= lineno]
            if not st.want_after:
                del w[k]
        return bool(w)

    def feed(self, line: Line, ev: Event) -> None:
        st = ev.st
        if st.want_after:
            keep = []
            for m, last in st.want_after:
                if line.lineno <= last:
                    m.after.append(line)
                    if len(m.after) < CONTEXT_LINES:
                        keep.append((m, last))
            st.want_after = keep
        pend = self.pending.get(line.source)
        if pend:
            keep_p = []
            for pd in pend:
                pd.needs = [i for i in pd.needs if not _ctx_hit(pd.match.rule.context[i], line, self.core.timeouts)]
                if not pd.needs:
                    pd.match.context.append(line)
                    self.core.add_match(pd.match)
                    self.core.stream(pd.match.line.source, pd.match.line.rank).block_matched = True
                elif line.lineno <= pd.deadline:
                    keep_p.append(pd)
            self.pending[line.source] = keep_p


class Blocks(Observer):
    """Error blocks (a traceback up to its exception line, an error line and its continuation)."""
    anchors = [lit(_TB_START), rxa(r"(?:Error|Exception|Interrupt|Exit|Failure)(?::|[ \t\r]*$)"),
               rxa(r"(?:ERROR|FATAL|Error|error)(?:[\]: \t\r\x0b\x0c]|$)"),
               rxa(r"E\d{4} \d\d:\d\d:\d\d"), lit("NCCL WARN")]

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
        self._close_passed(line, st)
        text = line.text
        if text.startswith(_TB_START) or (text.strip() == _TB_START):
            self._traceback_start(line, ev)
            return
        b = st.block
        if b is not None:
            if self._extend(line, st, b):
                return
            self.core.close_block(st)
        if _maybe_error(text) and (EXC_LINE.match(text) or _ERROR_LINE.search(text[:300], timeout=TIMEOUT)):
            self._open(line, ev, [text])
            st.in_tb = False

    def _open(self, line: Line, ev: Event, lines: List[str]) -> ErrorBlock:
        """A new block of LINE's stream, starting at LINE."""
        st = ev.st
        st.block = ErrorBlock(line.source, line.rank, line.lineno, line.lineno, lines, ev.seq,
                              ev.view.last_ts(line, st), group=ev.inp.attempt(line))
        self.open.setdefault(line.source, set()).add((line.source, line.rank))
        return st.block

    def _close_passed(self, line: Line, st: Stream) -> None:
        """A non-traceback block of another stream whose next line is not its own continuation is complete."""
        keys = self.open.get(line.source)
        if not keys:
            return
        for k in list(keys):
            o = self.core.streams[k]
            if o is st:
                continue
            if o.block is None:
                keys.discard(k)
            elif not o.in_tb and line.lineno > o.block.end:
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
            prev = [x for x in ev.view.recent_in_source(line, 2) if x.rank == line.rank]
            b.intro = prev[-1].text[:300] if prev else ""
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
            exc = bool(EXC_LINE.match(text))
            if len(b.lines) < BLOCK_MAX_LINES:
                b.lines.append(text)
            elif exc:             # a long traceback keeps its head and its exception line
                b.lines[-1] = text
            b.end = st.block_seen = line.lineno
            if exc:
                st.in_tb = False  # exception line reached; keep following message lines briefly
            return True
        if text.strip() and (line.lineno - b.end) <= 1 and len(b.lines) < BLOCK_MAX_LINES \
                and not _ERROR_LINE.search(text[:300], timeout=TIMEOUT):
            if text.startswith((" ", "\t")) or not _looks_like_new_record(text):
                b.lines.append(text)
                b.end = line.lineno
                return True
        return False

    def finish(self) -> None:
        for st in self.core.streams.values():
            self.core.close_block(st)


class Rules(Observer):
    """The catalog's match rules; each hit line meets only the rules whose literals it holds."""

    def __init__(self, core: Core, rules: List[Tuple[Pattern, MatchRule]], followups: Followups):
        self.core = core
        self.rules = rules
        self.followups = followups
        self.with_context = 0
        self._timeouts: Dict[int, int] = {}
        self.disabled: Dict[int, str] = {}

    def _hits(self, rule: MatchRule, text: str, lower: str) -> bool:
        if rule.ignore_case:
            if not any(lit_.lower() in lower for lit_ in rule.literals):
                return False
        elif not any(lit_ in text for lit_ in rule.literals):
            return False
        if id(rule) in self.disabled:
            return False
        timeouts = self.core.timeouts
        t0 = timeouts.count
        hit = search(rule.rx, text, timeouts) is not None and not any(search(n, text, timeouts) for n in rule.negative)
        if timeouts.count > t0:
            n = self._timeouts[id(rule)] = self._timeouts.get(id(rule), 0) + 1
            if n >= MAX_RULE_TIMEOUTS:     # a pathological regex must not make the scan crawl
                self.disabled[id(rule)] = rule.source_text
        return hit

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        st = ev.st
        view = ev.view
        # the line after a frame line is its source code only when indented (a frame without
        # source, e.g. File "<frozen runpy>", is followed directly by the exception line)
        if (text[:1] in (" ", "\t") and view.after_frame(line, st)) or _CODE.match(text):
            return
        ids = range(len(self.rules)) if ev.rule_ids is None else sorted(ev.rule_ids)
        lower = text.lower()
        hit_any = False
        for i in ids:
            pat, rule = self.rules[i]
            if not self._hits(rule, text, lower):
                continue
            m = Match(pat, rule, line, ev.seq, view.last_ts(line, st), group=ev.inp.attempt(line))
            if self.with_context < CONTEXT_MATCHES:
                self.with_context += 1
                m.before = view.before(line, st)[-CONTEXT_LINES:]
                self.followups.wait_after(m, st)
            if rule.context:
                needs = []
                for j, c in enumerate(rule.context):
                    found = [x for x in view.recent_in_source(line, c.window) if _ctx_hit(c, x, self.core.timeouts)]
                    if found:
                        m.context.append(found[-1])
                    else:
                        needs.append(j)
                if needs:
                    deadline = line.lineno + max(rule.context[j].window for j in needs)
                    self.followups.pending.setdefault(line.source, []).append(_Pending(m, needs, deadline))
                    continue
            self.core.add_match(m)
            hit_any = True
        if hit_any:
            st.block_matched = True


# --- the block driver's view: context from the block around a hit ----------------------------
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


# rank prefixes at a line start (sources.split_prefix), for the ranks seen in a block: one
# search per kind finds the next line of a rank not seen yet (a lookahead excludes the known ones)
_RANK_KINDS: List[Tuple[Optional[bytes], bytes, bytes]] = [
    (b"\n[", rb"\n\[(?:rank|default|trainer|worker)", rb"(\d+)\]:"),      # torchrun
    (b"]<std", rb"\n\[\d+,", rb"(\d+)\]<std(?:out|err)>:"),                 # Open MPI --tag-output
    (None, rb"\n {0,4}", rb"(\d{1,6}): "),                                  # srun -l
]
_QUOTED_RANK_B = re.compile(
    rb"\n(?:> ?)+(?:\[(?:rank|default|trainer|worker)(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>:|[ ]{0,4}(\d{1,6}): )")
_INNER_RANK_B = re.compile(
    rb"\[(?:PG (?:ID )?\d+ (?:PG GUID \d+)?[ \t]*(?:\([^)\n]*\)[ \t]*)?)?Rank (\d+)\]|\[rank: ?(\d+)\]|\bglobal rank (\d+)\b")  # noqa: E501 - a regex reads best on one line
_CTRL_B = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
_DIRTY_LINE_B = re.compile(rb"\n[^\n]*[\x00-\x08\x0b-\x1f\x7f][^\n]*")
# a line that starts with no rank prefix (it takes the rank of its file name)
_UNPREFIXED_B = re.compile(
    rb"\n(?!(?:> ?)*(?:\[(?:rank|default|trainer|worker)\d+\]:|\[\d+,\d+\]<std(?:out|err)>:|[ ]{0,4}\d{1,6}: ))")
MAX_ELIMINATE = 64        # past this many ranks in one block, one findall is cheaper


def _distinct_ranks(seg: bytes, head: bytes, tail: bytes) -> Set[int]:
    known: List[bytes] = []
    pos = 0
    while len(known) <= MAX_ELIMINATE:
        ex = b"(?!(?:" + b"|".join(known) + b")\\D)" if known else b""
        m = re.compile(head + ex + tail).search(seg, pos)
        if m is None:
            return {int(k) for k in known}
        known.append(m.group(1))
        pos = m.start()
    return {int(k) for k in known} | {int(k) for k in re.findall(head + tail, seg[pos:])}


def _dirty_ranks(seg: bytes, file_rank: Optional[int], out: Set[int]) -> bytes:
    """Lines with ANSI codes, carriage returns or other control characters are normalised in Python
    (their prefix may follow a colour code): their ranks go to OUT; returns SEG without them (the
    rest stays C-level)."""
    keep, pos = [], 0
    for m in _DIRTY_LINE_B.finditer(seg):
        keep.append(seg[pos:m.start()])
        pos = m.end()
        text, rank = split_prefix(normalise(m.group()[1:].decode("utf-8", "replace")))
        if rank is None:
            rank = file_rank if file_rank is not None else inner_rank(text)
        if rank is not None:
            out.add(rank)
    keep.append(seg[pos:])
    return b"".join(keep)


def _prefixed_ranks(seg: bytes) -> Set[int]:
    """The ranks of the launcher prefixes (_RANK_KINDS, quoted ones too) at the line starts of SEG."""
    out: Set[int] = set()
    for probe, head, tail in _RANK_KINDS:
        if probe is None or probe in seg:
            out |= _distinct_ranks(seg, head, tail)
    if b"\n>" in seg:
        for m in _QUOTED_RANK_B.finditer(seg):
            out.add(int(m.group(1) or m.group(2) or m.group(3)))
    return out


def _inner_ranks(seg: bytes) -> Set[int]:
    """The ranks that lines without a prefix name in their text (sources.inner_rank)."""
    if not (b"Rank " in seg or b"[rank:" in seg or b"global rank" in seg):
        return set()
    return {int(m.group(1) or m.group(2) or m.group(3)) for m in _INNER_RANK_B.finditer(seg)}


def _ranks_in(buf: bytes, lo: int, hi: int, file_rank: Optional[int]) -> Set[int]:
    """The ranks of the lines in buf[lo:hi], as make_line would tag them (C-level searches only)."""
    if hi <= lo:
        return set()
    seg = b"\n" + buf[lo:hi]
    out: Set[int] = set()
    if _CTRL_B.search(seg):
        seg = _dirty_ranks(seg, file_rank, out)
        if seg in (b"", b"\n"):
            return out
    out |= _prefixed_ranks(seg)
    if file_rank is not None:             # a launcher prefix beats the file name; other lines are its
        if not out or _UNPREFIXED_B.search(seg[:-1] if seg.endswith(b"\n") else seg):
            out.add(file_rank)
        return out
    if not out:
        out |= _inner_ranks(seg)
    return out


_CTRL_RX = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
NORM_TAG = -1            # a line with control characters: normalise it before trusting anchors
NORMED_TAG = -2          # ... and its tags come from its normalised text
RULE_TAG = 1000          # tags >= RULE_TAG name a rule (tag - RULE_TAG); lower tags an observer


@functools.lru_cache(maxsize=8)
def anchor_set(anchors: Tuple[Anchor, ...]) -> AnchorSet:
    """The compiled anchors of one observer set, built once per process (a fleet worker analyses
    hundreds of jobs with the same catalog: the database is not rebuilt or reloaded per job)."""
    return AnchorSet(anchors)


class Engine:
    def __init__(self, patterns: List[Pattern]):
        self.patterns = patterns
        self.rules: List[Tuple[Pattern, MatchRule]] = [(p, r) for p in patterns for r in p.match]
        self.window = max([c.window for _, r in self.rules for c in r.context] + [CONTEXT_LINES])
        self.disabled: Dict[int, str] = {}

    # --- wiring -------------------------------------------------------------------------------
    def _observers(self, extra: Sequence[Observer]):
        core = Core()
        follow = Followups(core)
        rules = Rules(core, self.rules, follow)
        rules.disabled = self.disabled
        blocks = Blocks(core)
        # the order is the order of the checks of one line
        obs: List[Observer] = list(extra) + [Attempts(core), LauncherRoot(core), LauncherExits(core), follow,
                                             blocks, rules]
        return core, obs, rules

    def _anchor_set(self, obs: Sequence[Observer]) -> AnchorSet:
        anchors: List[Anchor] = [Anchor(_CTRL_RX, NORM_TAG, regex=True)]
        for i, o in enumerate(obs):
            anchors += [Anchor(a.text, i, a.ignore_case, a.regex) for a in o.anchors]
        for r, (_, rule) in enumerate(self.rules):
            for lit_ in rule.literals:
                anchors.append(Anchor(lit_, RULE_TAG + r, rule.ignore_case))
        return anchor_set(tuple(anchors))

    @staticmethod
    def _result(core: Core, obs: Sequence[Observer], rules: Rules, lines: int, sources: List[str],
                nbytes: int = 0, engine: str = "") -> ScanResult:
        for o in obs:
            o.finish()
        matches = sorted(core.matches, key=lambda m: m.seq)
        blocks = sorted(core.blocks, key=lambda b: b.seq)
        # An input that shows no restart of its own (rank 1's file when rank 0 prints the banner)
        # is split at the restart times seen elsewhere.
        marked = {src for src, s in core.inputs.items() if s.restarts > 0 or (s.inp.attempt or 0) > 0}
        bs: List[float] = []
        for b in sorted(core.boundaries):        # one restart seen by several inputs is one boundary
            if not bs or b - bs[-1] > RESTART_MERGE_S:
                bs.append(b)
        if bs:
            for item in list(matches) + list(blocks):
                src = item.line.source if isinstance(item, Match) else item.source
                if src not in marked and item.order_ts is not None:
                    item.group = sum(1 for b in bs if item.order_ts >= b)
        restarts = [s.restarts for s in core.inputs.values()]
        path_attempts = [s.inp.attempt for s in core.inputs.values() if s.inp.attempt is not None]
        attempts = 1 + max(restarts + path_attempts + [len(bs), 0])

        def ranks() -> Set[int]:
            seen = core.ranks_seen
            if core.rank_segments:
                seen = _ranks_by_attempt(core.rank_segments, seen)
            return seen.get(attempts - 1, set()) | (seen.get(0, set()) if attempts == 1 else set())
        return ScanResult(matches=matches, blocks=blocks, lines=lines, sources=sources,
                          launcher_root_rank=core.root_rank, attempts=attempts,
                          disabled_rules=sorted(rules.disabled.values()), dropped=dict(core.dropped),
                          notes=list(core.notes), exits=list(core.exits),
                          bytes=nbytes, anchor_engine=engine, regex_timeouts=core.timeouts.count, ranks_fn=ranks)

    # --- the line driver ------------------------------------------------------------------------
    def scan(self, lines: Iterable[Line], blocks_limit: int = 500, extra: Sequence[Observer] = ()) -> ScanResult:
        """Feed every line to every observer (small inputs; the reference for scan_paths)."""
        core, obs, rules = self._observers(extra)
        core.blocks_limit = blocks_limit
        view = View(self.window)
        sources: List[str] = []
        seq = 0
        prev: Tuple[str, int] = ("", -1)
        for line in lines:
            if (line.source, line.lineno) != prev:    # the updates of a progress bar share one line
                seq += 1
                prev = (line.source, line.lineno)
            if not sources or sources[-1] != line.source:
                if line.source not in sources:
                    sources.append(line.source)
            inp = core.inputs.get(line.source)
            if inp is None:
                inp = core.inputs[line.source] = InputState(Input(line.source, line.source, None, line.attempt))
            if line.attempt is not None:
                inp.inp.attempt = line.attempt
            st = core.stream(line.source, line.rank)
            if line.ts is not None:
                st.last_ts = line.ts
            ev = Event(seq, st, inp, view)
            for o in obs:
                o.feed(line, ev)
            if line.rank is not None:
                core.ranks_seen.setdefault(inp.attempt(line), set()).add(line.rank)
            view.done(line, st)
        return self._result(core, obs, rules, seq, sources)

    # --- the block driver ---------------------------------------------------------------------
    def scan_paths(self, paths: Sequence[str], extra: Sequence[Observer] = (), blocks_limit: int = 500,
                   progress: Optional[Callable[[int], None]] = None, block_size: int = 0,
                   max_bytes: int = 0) -> ScanResult:
        """Scan files / directories / stdin in large blocks; the same result as `scan` over their lines.
        `max_bytes` > 0 reads at most that much of each input (a note says so).  An input that
        cannot be read is a note when others can be; an InputError when it is the only one."""
        from .sources import BLOCK_SIZE
        core, obs, rules = self._observers(extra)
        core.blocks_limit = blocks_limit
        rules_idx = obs.index(rules)
        aset = self._anchor_set(obs)
        sources: List[str] = []
        total_lines = 0
        nbytes = 0
        done_bytes = 0
        all_paths = expand_paths(paths)
        batchers = _batchers(obs)
        k = _Pool.jobs(all_paths)
        pool = _Pool(all_paths, aset, batchers, block_size or BLOCK_SIZE, k, max_bytes) if k else None
        core.max_bytes = max_bytes
        failed: List[InputError] = []
        try:
            for path in all_paths:
                try:
                    n_lines, n_bytes = self._scan_one(path, core, obs, rules_idx, aset, block_size, progress,
                                                      pool, total_lines, done_bytes)
                except InputError as e:
                    if len(all_paths) == 1:
                        raise
                    failed.append(e)
                    core.notes.append(f"{e} (the other inputs were triaged)")
                    if pool is not None:
                        pool.broken = True
                    continue
                if n_lines:
                    sources.append(describe_input(path).label)
                total_lines += n_lines
                nbytes += n_bytes
                done_bytes += _size(path)
        finally:
            if pool is not None:
                pool.close()
        if failed and len(failed) == len(all_paths):
            raise InputError(f"no input could be read: {failed[0]}")
        return self._result(core, obs, rules, total_lines, sources, nbytes, aset.engine)

    def _scan_one(self, path: str, core: Core, obs: List[Observer], rules_idx: int, aset: AnchorSet,
                  block_size: int, progress, pool: Optional["_Pool"], seq_base: int,
                  done_bytes: int) -> Tuple[int, int]:
        from .sources import BLOCK_SIZE
        inp = InputState(describe_input(path), seq_base=seq_base)
        core.inputs[inp.inp.label] = inp

        def prog(n: int) -> None:
            if progress is not None:
                progress(done_bytes + n)
        return self._scan_input(inp, core, obs, rules_idx, aset, block_size or BLOCK_SIZE,
                                prog if progress is not None else None, pool)

    def _scan_input(self, inp: InputState, core: Core, obs: List[Observer], rules_idx: int,
                    aset: AnchorSet, block_size: int, progress, pool: Optional["_Pool"] = None) -> Tuple[int, int]:
        view = BlockView(self.window, inp.inp)
        scan = _InputScan(inp, core, obs, rules_idx, view)
        scanned = [0]             # bytes scanned, for reading a re-readable input again (_ranks_by_attempt)
        if not scan.eager_ranks:
            core.rank_segments.append((inp.inp.path, inp.inp.file_rank, scan.changes, scanned))
        consumed = [0]
        blocks = iter_blocks_with_tail(inp.inp.path, block_size, progress, TAIL_BYTES, core.max_bytes, core.notes,
                                       consumed)
        for bi, (buf, lo) in enumerate(blocks):
            view.reset(buf)
            scan.block(buf, lo, _prepared(pool, inp.inp.path, bi, buf, lo, aset, scan.batchers))
        scanned[0] = consumed[0]
        return scan.lineno, scan.nbytes


class _InputScan:
    """The block driver over one input: feeds the lines of each block that wake an observer (an
    anchor hit, or an observer following every line) and records where the attempt changes."""

    def __init__(self, inp: InputState, core: Core, obs: List[Observer], rules_idx: int, view: BlockView):
        self.inp = inp
        self.core = core
        self.obs = obs
        self.rules_obs = obs[rules_idx]
        self.view = view
        self.followers = [o for o in obs if type(o).following is not Observer.following]
        self.batchers = _batchers(obs)
        self.file_rank = inp.inp.file_rank
        self.eager_ranks = inp.inp.path == "-"          # stdin cannot be read twice
        self.changes: List[Tuple[int, int]] = [(0, inp.current())]   # (stream offset, attempt from there)
        self.lineno = 0           # line number of the last line processed / passed
        self.nbytes = 0           # stream offset of the current block
        self.seg_start = 0        # buffer offset where the current attempt's lines start in this block
        self.seg_attempt = inp.current()

    def block(self, buf: bytes, lo: int,
              prepared: Tuple[Dict[int, Set[int]], List[Dict[int, tuple]], Dict[int, int], int]) -> None:
        """Scan buf[lo:] (buf[:lo] is the previous block's tail, for walking back)."""
        hits, recs_all, line_idx, block_nl = prepared
        inp = self.inp
        followers = self.followers
        first = self.lineno + 1      # line number of the block's first line
        n = len(buf)
        # lines an observer parsed in one pass over the block (see prepare_block) are fed back
        # to it in line order, interleaved with the lines it gets through feed()
        batches = [_Batch(o, recs, lo, first, inp.inp.label, self.view.year)
                   for (o, _), recs in zip(self.batchers, recs_all)]
        starts = sorted(hits)
        hi_idx = 0
        pos = lo
        self.seg_start, self.seg_attempt = lo, inp.current()
        while pos < n:
            following = [o for o in followers if o.following(inp, self.lineno + 1)]
            if following:
                start = pos
                tags = hits.get(start)
            else:
                while hi_idx < len(starts) and starts[hi_idx] < pos:
                    hi_idx += 1
                if hi_idx >= len(starts):
                    break
                start = starts[hi_idx]
                self.lineno = first + line_idx[start] - 1
                tags = hits[start]
            nl = buf.find(b"\n", start)
            end = nl if nl >= 0 else n
            pos = end + 1
            self.lineno += 1
            self._line(buf, lo, (start, end), tags, following, batches)
        self.lineno = first - 1 + block_nl
        for b in batches:
            b.flush(buf, n)
        if self.eager_ranks:
            self.core.ranks_seen.setdefault(self.seg_attempt, set()).update(
                _ranks_in(buf, self.seg_start, n, self.file_rank))
        self.nbytes += len(buf) - lo

    def _line(self, buf: bytes, lo: int, span: Tuple[int, int], tags: Optional[Set[int]],
              following: List[Observer], batches: List["_Batch"]) -> None:
        """The line at SPAN of BUF (line number self.lineno): fed to the observers it wakes."""
        woken, rule_ids = _woken(tags, following, self.obs, self.rules_obs)
        if not woken:
            return
        start = span[0]
        for b in batches:
            if id(b.obs) in woken:
                b.flush(buf, start)
                b.drop(start)
        inp, view, lineno = self.inp, self.view, self.lineno
        view.cur_off, view.cur_lineno = start, lineno
        ln = view.line_at(start, lineno)
        _feed_segments(ln, buf, span, inp.seq_base + lineno, inp, self.core, self.obs, woken, view, rule_ids)
        att = inp.attempt(ln)
        if att != self.seg_attempt:          # a restart: the ranks seen so far belong to the attempt before
            if self.eager_ranks:
                self.core.ranks_seen.setdefault(self.seg_attempt, set()).update(
                    _ranks_in(buf, self.seg_start, start, self.file_rank))
            self.changes.append((self.nbytes + start - lo, att))
            self.seg_start, self.seg_attempt = start, att


def _batchers(obs: Sequence[Observer]) -> List[Tuple[Feeder, int]]:
    """The batch observers of OBS (see Feeder.batch) with their indexes."""
    return [(o, i) for i, o in enumerate(obs) if isinstance(o, Feeder) and o.batch]


def _prepared(pool: Optional["_Pool"], path: str, bi: int, buf: bytes, lo: int, aset: AnchorSet,
              batchers: Sequence[Tuple[Feeder, int]]) -> tuple:
    """Anchor hits, batch records, line indexes and line count of block BI: a worker's, else made here."""
    prepared = pool.get(path, bi, len(buf) - lo) if pool is not None else None
    if prepared is not None and lo:      # a worker's offsets are relative to the block
        h, r, li, nl_ = prepared
        prepared = ({k + lo: v for k, v in h.items()}, [{k + lo: v for k, v in x.items()} for x in r],
                    {k + lo: v for k, v in li.items()}, nl_)
    if prepared is None:
        prepared = prepare_block(buf, lo, aset, batchers)
    return prepared


def _woken(tags: Optional[Set[int]], following: List[Observer], obs: List[Observer],
           rules_obs: Observer) -> Tuple[Set[int], Set[int]]:
    """ids of the observers a line wakes (those following a block, those its anchors hit) and the
    indexes of the rules whose literals it holds."""
    woken: Set[int] = set(id(o) for o in following)
    rule_ids: Set[int] = set()
    if tags:
        n_obs = len(obs)
        for t in tags:
            if t >= RULE_TAG:
                rule_ids.add(t - RULE_TAG)
            elif 0 <= t < n_obs:
                woken.add(id(obs[t]))
        if rule_ids:
            woken.add(id(rules_obs))
    return woken, rule_ids


def _feed_segments(ln: Line, buf: bytes, span: Tuple[int, int], seq: int, inp: InputState, core: Core,
                   obs: List[Observer], woken: Set[int], view: "BlockView", rule_ids: Set[int]) -> None:
    """Feed the line at SPAN of BUF (each update of a progress bar line) to the woken observers."""
    for seg_line in _segments(ln, buf, span[0], span[1], inp.inp, view.year):
        st = core.stream(seg_line.source, seg_line.rank)
        if seg_line.ts is not None:
            st.last_ts = seg_line.ts
        ev = Event(seq, st, inp, view, rule_ids)
        for o in obs:
            if id(o) in woken:
                o.feed(seg_line, ev)
        view.done(seg_line, st)


class _Batch:
    """Records a batch observer parsed from one block (offsets relative to the block), fed back
    in line order; a record's line number is counted only when the observer asks for it."""

    def __init__(self, obs: Feeder, recs: Dict[int, tuple], lo: int, lineno: int, label: str,
                 year: Optional[int]):
        self.obs = obs
        self.recs = recs
        self.label = label
        self.year = year
        self.keys = sorted(recs)
        self.i = 0
        self.off = lo             # a line start in the buffer ...
        self.ln = lineno          # ... and its line number

    def lineno(self, buf: bytes, at: int) -> int:
        self.ln += buf.count(b"\n", self.off, at)
        self.off = at
        return self.ln

    def flush(self, buf: bytes, upto: int) -> None:
        """Feed the records of the lines before buffer offset `upto`."""
        keys, recs = self.keys, self.recs
        i = j = self.i
        while j < len(keys) and keys[j] < upto:
            j += 1
        if j == i:
            return
        self.i = j
        items = [(at, recs[at]) for at in keys[i:j] if at in recs]
        self.obs.obj.feed_records(buf, items, self.label, lambda at: self.lineno(buf, at), self.year)

    def drop(self, at: int) -> None:
        """The line at buffer offset `at` went through feed(): forget its record."""
        self.recs.pop(at, None)


# Inputs smaller than this are scanned in one process.  Measured on a 2-core machine (bench/):
# 1 GiB production-like log 3.9-4.4 s with a worker vs 4.6-4.7 s without; 256 MiB 1.22-1.41 s vs
# 1.14-1.81 s (no gain); 64 MiB worst case 1.76-1.90 s vs 1.64-2.02 s (no gain).
POOL_MIN_BYTES = 512 << 20


MAIN_EVERY = 4             # with one worker, the scanner prepares every 4th block itself (balance)


def _owner(g: int, k: int) -> int:
    """Who prepares the g-th block of a scan: a worker's index, or -1 for the scanner itself."""
    if k == 1:
        return -1 if g % MAIN_EVERY == MAIN_EVERY - 1 else 0
    return g % k


def _worker(conn, paths: Sequence[str], aset: AnchorSet, batchers, block_size: int, w: int, k: int,
            max_bytes: int = 0) -> None:
    """Worker process: prepare_block for its share of the blocks of the inputs (_owner), in order."""
    try:
        g = 0
        for path in paths:
            for bi, block in enumerate(iter_blocks(path, block_size, max_bytes=max_bytes)):
                if _owner(g, k) == w:
                    conn.send((path, bi, len(block), prepare_block(block, 0, aset, batchers)))
                g += 1
    except BaseException as e:  # noqa: BLE001 - the scanner then prepares the blocks itself
        try:
            conn.send(("error", str(e)))
        except Exception:  # noqa: BLE001
            pass
    finally:
        try:
            conn.close()
        finally:
            os._exit(0)


class _Pool:
    """Worker processes that run prepare_block ahead of the scanner (see _owner for who does which).

    Each worker reads the inputs itself (regular files only); the scanner takes their results in
    block order and checks path, block number and size, so results merge exactly as a serial scan;
    on any mismatch or a dead worker it prepares the remaining blocks itself."""

    def __init__(self, paths: Sequence[str], aset: AnchorSet, batchers, block_size: int, k: int,
                 max_bytes: int = 0):
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        self.k = k
        self.conns = []
        self.procs = []
        for w in range(k):
            r, wr = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(wr, list(paths), aset, batchers, block_size, w, k, max_bytes),
                            daemon=True)
            p.start()
            wr.close()
            self.conns.append(r)
            self.procs.append(p)
        self.counter = 0
        self.broken = False

    @staticmethod
    def jobs(paths: Sequence[str]) -> int:
        """Workers to start: one per core beyond the scanner's own, none for small or piped inputs."""
        env = os.environ.get("TRIAGE_JOBS", "")
        cores = int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)
        if cores < 2 or any(p == "-" for p in paths):
            return 0
        if not hasattr(os, "fork"):
            return 0
        if sum(_size(p) for p in paths) < POOL_MIN_BYTES:
            return 0
        if any(p.endswith(".gz") for p in paths):     # each worker would decompress every block
            return 1
        return cores - 1

    def get(self, path: str, bi: int, nbytes: int):
        """The prepared block, or None when the scanner prepares it (its share, or a broken pool)."""
        w = _owner(self.counter, self.k)
        self.counter += 1
        if self.broken or w < 0:
            return None
        conn = self.conns[w]
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            self.broken = True
            return None
        if msg[0] != path or msg[1] != bi or msg[2] != nbytes:     # a file that changed under us
            self.broken = True
            return None
        return msg[3]

    def close(self) -> None:
        for c in self.conns:
            c.close()
        for p in self.procs:
            if p.is_alive():
                p.terminate()
            p.join(timeout=5)


def prepare_block(buf: bytes, lo: int, aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]]
                  ) -> Tuple[Dict[int, Set[int]], List[Dict[int, tuple]], Dict[int, int], int]:
    """The pure, C-heavy part of scanning the block buf[lo:] (a worker process can do it ahead
    of the scanner): the anchor hits per line start, the lines each batch observer parsed itself
    (those leave the hits when they wake nobody else), the index in the block of each hit line
    and the block's line count.  Offsets are offsets in buf."""
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
    line_idx: Dict[int, int] = {}
    prev, n = lo, 0
    for s in sorted(hits):
        n += buf.count(b"\n", prev, s)
        line_idx[s] = n
        prev = s
    return hits, recs_all, line_idx, n + buf.count(b"\n", prev)


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
        new = found.get(offs[i], set())
        new.discard(NORM_TAG)
        if new:
            new.add(NORMED_TAG)
            hits[s] = new
        else:
            del hits[s]


def _safe(blocks):
    """Blocks of an input read again, stopping quietly where it cannot be read any more."""
    try:
        yield from blocks
    except InputError:
        return


def _ranks_by_attempt(segments, seen: Dict[int, Set[int]]) -> Dict[int, Set[int]]:
    """Ranks per attempt of re-readable inputs: read them again (only as far as they were scanned:
    a file still being written has grown since), split at the attempt changes."""
    out = {k: set(v) for k, v in seen.items()}
    for path, file_rank, changes, scanned in segments:
        off = 0
        if not scanned[0]:
            continue
        try:
            blocks = iter_blocks(path, max_bytes=scanned[0])
        except InputError:
            continue
        for block in _safe(blocks):
            end = off + len(block)
            for i, (c_off, att) in enumerate(changes):
                c_end = changes[i + 1][0] if i + 1 < len(changes) else end
                lo, hi = max(c_off, off), min(c_end, end)
                if lo < hi:
                    out.setdefault(att, set()).update(_ranks_in(block, lo - off, hi - off, file_rank))
            off = end
    return out


def _segments(ln: Line, buf: bytes, start: int, end: int, inp: Input, year: Optional[int]) -> List[Line]:
    """A progress bar written to a file ("\\r"-separated updates) holds one step record per update."""
    if buf.find(b"\r", start, end) < 0 or buf.find(b"train_step_timing", start, end) < 0:
        return [ln]
    raw = buf[start:min(end, start + MAX_RAW)].decode("utf-8", "replace")
    return [make_line(seg, inp.label, ln.lineno, inp.file_rank, year, inp.attempt)
            for seg in raw.split("\r") if "train_step_timing" in seg]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0


_RECORD = lazy(r"^(?:\[|\d{4}-\d\d-\d\d|[IWEF]\d{4} |INFO|WARNING|DEBUG|\S+:\d+:\d+ \[\d+\])")


def _maybe_error(text: str) -> bool:
    """Cheap test before the error-line regexes (most lines hold none of these)."""
    return ("rror" in text or "ERROR" in text or "FATAL" in text or "xception" in text or "WARN" in text
            or "Interrupt" in text or "Exit" in text or "Failure" in text or text[:1] == "E")


def _looks_like_new_record(text: str) -> bool:
    return bool(_RECORD.match(text))
