"""Step-time analysis: steady-state step times, capture excluded, noise-aware comparison.

Parses per-iteration times from Megatron-LM / Megatron Bridge step lines (`elapsed time per
iteration (ms)`), NeMo / Lightning (`train_step_timing in s`), on any rank.  Steady state drops
the first `cuda_graph_warmup_steps` iterations (default 3, and always iteration 1) and every
iteration that contains a CUDA graph capture (the first step line after a capture line).  Two
sets of steps are compared by their medians with a seeded bootstrap 95% interval of the relative
difference; a change counts only when the interval excludes zero and the effect is at least
MIN_EFFECT_PCT.
"""
from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Sequence as SequenceABC
from dataclasses import field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union, cast, overload

from ..inputs.ranks import split_prefix
from ..inputs.sources import Line, parse_ts, parse_ts_ahead_ascii, reparse_in, scanned_text
from ..inputs.text import MAX_LINE, normalise
from ..lazyre import lazy_re
from ..match.anchors import Anchor
from ..match.rx import ASCII, GroupsMemo, lazy, search
from ..record import record

DEFAULT_WARMUP = 3        # megatron-core's cuda_graph_warmup_steps default
MIN_EFFECT_PCT = 1.5      # smaller changes are treated as noise even when "significant"
EVIDENCE_KEEP = 64       # iterations whose step line is kept as evidence (plus those around a capture)
MAX_STEPS = 1 << 17       # iterations whose time is kept (issue 46: a watched log of millions of step lines grew
#                           without bound, 5 GB); past it every other one is let go, the first HEAD_STEPS and the
#                           capture steps kept, and only every STRIDE-th is taken from then on (a sample of the
#                           steady steps, evenly spread: their median and the comparisons need no more)
HEAD_STEPS = 4096
MIN_SAMPLES = 4           # fewer steady-state steps on either side: no verdict (a bootstrap of 2-3 is not honest)
BOOTSTRAP = 2000

_MEGATRON = lazy(
    r"iteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([\d.]+)"
    r"(?:.*?throughput per GPU \(TFLOP/s/GPU\):\s*([\d.]+))?"
)
_MS_KEY = b"elapsed time per iteration (ms):"
_LOSS_KEY = b"lm loss:"
_LOSS_B = re.compile(rb"[ \t\x0b\x0c]*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf|NaN|Inf))")
_LOSS = lazy(r"\blm loss:\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf|NaN|Inf))")


_TF_KEY = b"throughput per GPU (TFLOP/s/GPU):"


# a capture line that feed() would only mark (_feed_graph: a capture literal, none of the lines it reads
# more of), on the bytes of a plain line
_HMS_B = re.compile(rb"\d\d:\d\d:\d\d")        # (what every time parse_ts reads holds)
_HMS_COLON_B = re.compile(rb":\d\d:\d\d")
_CAPTURE_LITS = (b"create cuda graphs", b"Start CUDA Graphs capture", b"Capturing CUDA graph")
_NOT_ONLY_CAPTURE = (b"NCCL", b"> built ", b"Time spent in CUDA Graphs capture", b" graphable layers",
                     b"elapsed time per iteration", b"train_step_timing")


def _ts_ahead(buf: bytes, ls: int, le: int) -> Tuple[Optional[float], bool]:
    return parse_ts_ahead_ascii(buf, ls, min(le, ls + 200))


def _rec_ts(rec: tuple, buf: bytes, ls: int, length: int, year: Optional[int]) -> Optional[float]:
    """The time of the step line at buf[ls:ls + length] in YEAR: a worker's parse (REC[5:7], see
    scan_lines' AHEAD) when the record has one, else parsed here."""
    if len(rec) > 5 and not reparse_in(year, rec[6]):
        return rec[5]
    return parse_ts(buf[ls:ls + min(length, 200)].decode("ascii"), year)


# (as one search: a line of a dense log met a generator of finds per literal, ~1 us a line)
_NOT_ONLY_CAPTURE_B = re.compile(b"|".join(re.escape(x) for x in _NOT_ONLY_CAPTURE))


def _capture_only(buf: bytes, ls: int, le: int) -> bool:
    """A capture line feed() would only mark, with no time of its own (megatron-core's progress lines
    have none): a timed one goes through feed(), which tells the scan its year and its stream's time."""
    find = buf.find
    for lit_ in _CAPTURE_LITS:          # (a find each: the three as one `re` search cost twice as much)
        if find(lit_, ls, le) >= 0:
            return _NOT_ONLY_CAPTURE_B.search(buf, ls, le) is None and not _timed(buf, ls, le)
    return False


def _timed(buf: bytes, ls: int, le: int) -> bool:
    """The plain line buf[ls:le] may carry a time (what parse_ts reads: hh:mm:ss in its first 200 bytes).  (What
    _HMS_B matches _HMS_COLON_B does, two bytes on: `re` finds its leading colon by a literal scan, ~3x faster on a
    line with none.)"""
    e = min(le, ls + 200)
    return _HMS_COLON_B.search(buf, ls, e) is not None and _HMS_B.search(buf, ls, e) is not None


# megatron-core's "> built N cuda graph(s) in S sec[, with total memory usage: allocated A, reserved R]." with
# no other line feed() reads more of
_BUILT_OTHER = tuple(x for x in _NOT_ONLY_CAPTURE if x != b"> built ")
Built = Tuple[int, float, Optional[str]]     # graphs built, the capture's seconds, its memory (_built_fields)


def _capture_rec(buf: bytes, ls: int, le: int) -> Optional[tuple]:
    """The record of a plain capture line feed() would only mark (_capture_only): (None, length); of megatron-
    core's "> built N cuda graph(s)" line with no time of its own, which also tells the graphs built, the
    capture's seconds and memory: (None, length, Built) (issue 44: one a few steps, each fed through feed(),
    cut a dense log's runs of records short of a pool worker's summary); None for any other line."""
    if _capture_only(buf, ls, le):
        return (None, le - ls)
    find = buf.find
    if find(b"> built ", ls, le) < 0 or any(find(x, ls, le) >= 0 for x in _BUILT_OTHER) or _timed(buf, ls, le):
        return None
    t = scanned_text(buf[ls:le])    # (the text feed() reads: a line's leading "> " is a quote the launcher
    if "> built " not in t:         # table strips, and a bare "> built ..." line is then none, issue 44's review)
        return None
    g = _built(t)
    return (None, le - ls, _built_fields(g)) if g else None


def _built_fields(g: Tuple[Optional[str], ...]) -> Built:
    """What _BUILT's groups G say: the graphs built, the capture's seconds, its memory (None: not said)."""
    return (int(g[0] or 0), _num(g[1]) or 0.0,
            f"allocated {(g[2] or '').strip()}, reserved {(g[3] or '').strip()}" if g[2] else None)


def _num(s) -> Optional[float]:
    """A `[\\d.]+` capture as a float, or None ("1.2.3" from a garbled line is no number)."""
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def step_of(buf: bytes, ls: int, le: int) -> Optional[Tuple[int, float, Optional[float]]]:
    """The Megatron step line buf[ls:le]'s (iteration, ms, TFLOP/s or None), or None when it is none: _MEGATRON_B
    matched at the line's first "iteration", else searched from the line's start when the line holds
    "elapsed time per iteration (ms):" (which it requires).  The one step-line parse: StepLog.scan_lines runs the
    same steps inline (its hot loop; a test holds the two equal on a grid of layouts), `watch` calls this."""
    i = buf.find(b"iteration", ls, le)
    m = _MEGATRON_B.match(buf, i, le) if i >= 0 else None
    if m is None:
        m = _MEGATRON_B.search(buf, ls, le) if buf.find(_MS_KEY, ls, le) >= 0 else None
        if m is None:
            return None
    it, ms_s, tf_s = m.groups()
    try:
        return int(it), float(ms_s), float(tf_s) if tf_s else None
    except ValueError:                  # ("1.2.3" fits [\d.]+ but is no number: no step line)
        return None


# the same on the bytes of a plain line (no `\\s` that could cross a newline; linear per line)
_SP = rb"[ \t\x0b\x0c]"
_MEGATRON_B = lazy_re(
    rb"iteration" + _SP + rb"+(\d+)" + _SP + rb"*/" + _SP + rb"*\d+" + _SP + rb"*\|[^\n]*?elapsed time per iteration "
    rb"\(ms\):" + _SP + rb"*([\d.]+)(?:[^\n]*?throughput per GPU \(TFLOP/s/GPU\):" + _SP + rb"*([\d.]+))?")
_NEMO = lazy(r"train_step_timing in s[=:]\s*([\d.]+)")
_NEMO_STEP = lazy(r"global_step[=:]\s*(\d+)(?:\.\d+)?")
# NCCL's own lines that a collective ran in a captured CUDA graph (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS
# with REG / COLL): the graph registration of a buffer, and 2.29's warning about graphUsageMode (issue 43:
# a hang inside a replayed graph).  NCCL src/transport/p2p.cc v2.23.4-1 "rank %d - IPC graph register
# buffer %p ...", src/register/register.cc v2.29.7-1 "Skipping graph registration for buffer %p ...",
# src/plugin/profiler.cc v2.29.7-1 "Comm config graphUsageMode is set to %d but the user is capturing
# graphs on the stream. ..."
NCCL_GRAPH_LINES = ("IPC graph register buffer", "Skipping graph registration for buffer",
                    "but the user is capturing graphs on the stream")
# (ASCII: their anchors -- ANCHORS, Hyperscan's -- read `\d` so; a str regex's would read a digit of any script,
# a line the block scan's anchors pass over: issue 44, random mixes with such digits put in)
_CAPTURE = lazy(
    r"Start CUDA Graphs capture|Capture CUDA graph for (?:training|validation)|Creating \d+ CUDA graphs"
    r"|create cuda graphs|Capturing CUDA graph", ASCII
)
_BUILT = lazy(r"> built (\d+) cuda graph\(s\) in ([\d.]+) sec(?:, with total memory usage: allocated ([^,]+), reserved ([^.]+(?:\.\d+ ?\w+)?))?", ASCII)  # noqa: E501 - a regex reads best on one line
_TIME_SPENT = lazy(r"Time spent in CUDA Graphs capture on rank (\d+): ([\d.]+)s", ASCII)
_GRAPHABLE = lazy(r"Rank (\d+): (\d+) graphable layers", ASCII)
_capture, _built, _time_spent, _graphable = (GroupsMemo(x) for x in (_CAPTURE, _BUILT, _TIME_SPENT, _GRAPHABLE))


@record
class StepLog:
    times: Dict[int, float] = field(default_factory=dict)          # iteration -> ms (slowest rank)
    tflops: Dict[int, float] = field(default_factory=dict)
    losses: Dict[int, float] = field(default_factory=dict)         # iteration -> lm loss (issue 42: numerics)
    capture_iters: List[int] = field(default_factory=list)
    capture_seconds: Optional[float] = None
    graphs_built: Optional[int] = None
    graph_memory: Optional[str] = None
    graphable_layers: Optional[int] = None
    # the first capture line: source, line, rank, text (issue 43: a hang after it may be in a replayed graph)
    capture_line: Optional[Tuple[str, int, Optional[int], str]] = None
    evidence: Dict[int, Tuple[str, int, Union[str, bytes]]] = field(default_factory=dict)   # it -> (source, line, text)
    _capture_pending: Dict[str, bool] = field(default_factory=dict)   # per input
    _capture_ts: List[float] = field(default_factory=list)
    _step_ts: Dict[int, float] = field(default_factory=dict)
    _nemo_i: int = 0
    _capture_set: set = field(default_factory=set)
    _ev_window: set = field(default_factory=set)           # the latest capture and the steps after it
    _ev_next: int = 0                                      # steps after the latest capture still to keep
    _ev_early: set = field(default_factory=set)            # the first EVIDENCE_KEEP iterations
    _cts_open: List[float] = field(default_factory=list)   # capture times no step has passed yet
    _order: List[int] = field(default_factory=list)        # sorted(times), while no iteration is added
    # per input, the highest iteration of each run of rising iteration numbers (a restart resumes lower,
    # from its checkpoint): whether a restarted job got further than the attempt before (issue 43)
    _runs: Dict[str, List[int]] = field(default_factory=dict)
    _last_it: Dict[str, int] = field(default_factory=dict)
    _stride: int = 1                                       # > 1: only every _stride-th iteration is kept (thinned)
    _let_go: int = 0                                       # distinct iterations not kept (thinned, or not sampled)
    _top: int = -1                                         # the highest iteration seen
    _head_top: int = -1                                    # the last of the first HEAD_STEPS (kept whole)

    # anchors (anchors.Anchor) of every line `feed` reacts to: step lines and the capture regexes
    ANCHORS = [
        Anchor("elapsed time per iteration", 0), Anchor("train_step_timing", 0),
        Anchor(r"Start CUDA Graphs capture|Capture CUDA graph for (?:training|validation)|Creating \d+ CUDA graphs"
               r"|create cuda graphs|Capturing CUDA graph", 0, regex=True),
        Anchor(r"> built \d+ cuda graph\(s\) in [\d.]+ sec", 0, regex=True),
        Anchor(r"Time spent in CUDA Graphs capture on rank \d+: [\d.]+s", 0, regex=True),
        Anchor(r"Rank \d+: \d+ graphable layers", 0, regex=True),
        *[Anchor(x, 0) for x in NCCL_GRAPH_LINES],
    ]

    def scan_lines(self, buf: bytes, starts: Sequence[int], ahead: bool = False) -> Dict[int, tuple]:  # noqa: C901 - a hot loop, one frame
        """Parse the Megatron step lines among the lines starting at `starts`: {line start: record}.

        The block scanner's batch path: only plain lines are claimed (ASCII, no carriage return
        or control character, short enough not to be clipped), on which the bytes regex finds
        what `_MEGATRON` finds in the normalised text; every other line goes through `feed`.
        The scanner hands the records back in line order with `feed_record`.  A record is
        (iteration, ms, TFLOP/s, line length, loss), or (None, line length) for a capture line, (None, line
        length, Built) for megatron-core's "> built N cuda graph(s)" line (_capture_rec);
        AHEAD (a pool worker's): the step records of a block with a capture line have the line's
        time after them (sources.parse_ts_ahead), which the scanner then parses no more (a step's
        time matters only around a capture: _needs_ts; the others are parsed by the scanner when it
        needs them)."""
        out: Dict[int, tuple] = {}
        find, search = buf.find, _MEGATRON_B.search
        step, loss_at = _MEGATRON_B.match, _LOSS_B.match
        ascii_block = buf.isascii()
        cr = b"\r" in buf        # (one pass in C: no find a line where the block has none)
        for ls in starts:
            le = find(b"\n", ls)
            le = len(buf) if le < 0 else le
            if le - ls > MAX_LINE or (cr and find(b"\r", ls, le) >= 0) or not (ascii_block or buf[ls:le].isascii()):
                continue
            # step_of's steps, inline: one match at the line's first "iteration", where _MEGATRON_B's search from
            # the line's start matches when it matches there (issue 44: a step line took ~11 C calls, ~5 us here, in
            # a pool worker of a production log about what its Hyperscan scan took; ~5.0 -> ~4.5 us here); else that
            # search, when the line has "elapsed time per iteration (ms):", which it requires (none: a capture line,
            # or no record)
            i = find(b"iteration", ls, le)
            m = step(buf, i, le) if i >= 0 else None
            if m is None:
                m = search(buf, ls, le) if find(_MS_KEY, ls, le) >= 0 else None
                if m is None:
                    cap = _capture_rec(buf, ls, le)     # a capture line: its record says its length (and graphs)
                    if cap is not None:
                        out[ls] = cap
                    continue
            it, ms_s, tf_s = m.groups()
            try:                      # (_num's, inline: a call a number was ~0.2 us a line)
                ms, tf = float(ms_s), float(tf_s) if tf_s else None
            except ValueError:
                continue              # "1.2.3" is no number: not a step line
            # (the number after the line's first "lm loss:", if it reads as one)
            li = find(_LOSS_KEY, ls, le)
            n = loss_at(buf, li + len(_LOSS_KEY), le) if li >= 0 else None
            try:
                loss = float(n.group(1)) if n else None
            except ValueError:
                loss = None
            out[ls] = (int(it), ms, tf, le - ls, loss)
        if ahead and any(r[0] is None for r in out.values()):
            for ls, r in out.items():
                if r[0] is not None:
                    out[ls] = r + _ts_ahead(buf, ls, ls + r[3])
        return out

    def feed_records(self, buf: bytes, items: Sequence[Tuple[int, tuple]], source: str,
                     lineno_at: Callable[[int], int], year: Optional[int] = None,
                     line_at: Optional[Callable[[int], Line]] = None,
                     deltas: Optional["BlockDeltas"] = None, first_lineno: int = 0) -> None:
        """Records of scan_lines in line order: [(line start, record)].  A step that needs nothing
        but its time (no capture around it, no evidence kept) takes a tight path; the others go
        through feed_record, so the result is the same.  A capture line's record (issue 44: a dense
        log of capture progress lines fed each one through the scanner) marks the capture as
        _mark_capture does; LINE_AT(start) gives its Line when the first capture line is wanted
        whole (capture_line).  DELTAS: a pool worker's summary of ITEMS, a run of a block's records fed at
        once (summarise; FIRST_LINENO: the line number of the block's first line), merged instead of
        replaying the records when the step log's state allows it (_merge; ITEMS then may be a sequence that lists
        its records only when read: a run merged whole reads none of them, blockscan._Run)."""
        if deltas is not None:
            rest = self._merge(deltas, items, buf, source, lineno_at, year, line_at, first_lineno)
            if rest is None:
                return
            items = rest
        self._replay(buf, self._filled(buf, items), source, lineno_at, year, line_at)

    def _filled(self, buf: bytes, items: Sequence[Tuple[int, Optional[tuple]]]) -> List[Tuple[int, tuple]]:
        """ITEMS with the records a pool worker left out (None: a run it summarised, prepare.leave_out) parsed
        here again, as the scanner's own scan_lines parses them (the summary did not fit, or the run was fed in
        other cuts than the worker's)."""
        items = items if isinstance(items, list) else list(items)       # (read by index and in slices from here)
        missing = [at for at, r in items if r is None]
        if not missing:
            return cast(List[Tuple[int, tuple]], items)
        got = self.scan_lines(buf, missing)
        return [(at, r if r is not None else got[at]) for at, r in items]

    def _replay(self, buf: bytes, items: List[Tuple[int, tuple]], source: str,
                lineno_at: Callable[[int], int], year: Optional[int] = None,
                line_at: Optional[Callable[[int], Line]] = None) -> None:
        """feed_records, record by record: a step nothing waits on by the tight path (_tight), the others by
        feed_record."""
        ev, pending = self.evidence, self._capture_pending
        # what sends every step the long way; only that way changes it (a capture, evidence kept)
        every = bool(self._cts_open or pending.get(source) or len(ev) < EVIDENCE_KEEP or self._ev_next)
        i, n = 0, len(items)
        while i < n:
            at, rec = items[i]
            it = rec[0]
            if it is None:                      # a capture line (scan_lines, _capture_rec)
                if self.capture_line is None:
                    self._capture_record(at, source, line_at)
                else:                           # (_capture_record past the first capture line)
                    pending[source] = True
                if len(rec) > 2:                # "> built N cuda graph(s)" (_capture_rec)
                    self._add_built(rec[2])
                every = True                    # (a capture now waits for its step)
            elif every or it in self._capture_set or it in ev or it in self._ev_window:
                self.feed_record(rec, buf, at, source, lineno_at, year)
                every = bool(self._cts_open or pending.get(source) or len(ev) < EVIDENCE_KEEP or self._ev_next)
            else:
                i = self._tight(items, i, source)
                continue
            i += 1

    def _tight(self, items: List[Tuple[int, tuple]], i: int, source: str) -> int:  # noqa: C901 - a hot loop, one frame
        """The steps from ITEMS[I] on that nothing waits on (no capture waiting, no evidence to keep: _replay's
        test), each in a few dict stores: its time (the slowest rank's), TFLOP/s, loss and run of rising iterations
        (_run_step's, inline: a call a step made this loop 1.8x slower), past MAX_STEPS only those sampled
        (_sampled); returns the index of the first record that is not one."""
        times, tfl, losses, capset, ev, window = (self.times, self.tflops, self.losses, self._capture_set,
                                                  self.evidence, self._ev_window)
        runs = self._runs.get(source)
        if runs is None:                # (the first step of a source starts its first run)
            runs = self._runs[source] = [items[i][1][0]]
            last = runs[0]
        else:
            last = self._last_it[source]
        top, most, k = runs[-1], MAX_STEPS, i           # (top: runs[-1], the current run's highest)
        for _, rec in items[i:]:
            it = rec[0]
            if it is None or it in capset or it in ev or it in window:
                break
            k += 1
            if it > top:
                runs[-1] = top = it
            elif it < last:             # (a restart: a lower iteration starts another run)
                runs.append(it)
                top = it
            last = it
            if self._stride > 1 and not self._sampled(it):
                continue
            ms = rec[1]
            old = times.get(it)
            if old is None or ms > old:
                times[it] = ms
            if rec[2] is not None:
                tfl[it] = rec[2]
            if rec[4] is not None:
                losses[it] = rec[4]
            if len(times) > most:       # (at the step that passes it, as _add_step: not at the batch's end, where a
                self._thin()            # restart in between read other iterations as let go)
        self._last_it[source] = last
        return k

    def feed_record(self, rec: tuple, buf: bytes, at: int, source: str, lineno_at: Callable[[int], int],
                    year: Optional[int] = None) -> None:
        """A record of scan_lines for the line at buf[at:]; `lineno_at(at)` counts its line number.  With no
        capture time waiting (_cts_open) and no thinning (_stride 1), what _add_step does in this one call
        (issue 44: a dense log of capture progress lines between the step lines of every rank sent each step
        through five calls and a partial for its line number; feed_records of a 32 MiB such log 110 -> 75 ms)."""
        it, ms, tflops, length, loss = rec[:5]
        if self._stride > 1 or self._cts_open:
            ts = _rec_ts(rec, buf, at, length, year) if self._needs_ts(it, source) else None
            self._add_step(it, ms, source, functools.partial(lineno_at, at), ts, (buf, at, at + length), tflops)
            if loss is not None and it in self.times:
                self.losses[it] = loss
            return
        capset, pending, times = self._capture_set, self._capture_pending, self.times
        pend = pending.get(source)
        ts = _rec_ts(rec, buf, at, length, year) if pend or it in capset else None     # (_needs_ts)
        self._run_step(source, it)
        if pend:
            self._add_capture(it)
            pending[source] = False
        if ts is not None and it in capset:
            old = self._step_ts.get(it)
            self._step_ts[it] = ts if old is None or ts < old else old
        if ms >= times.get(it, -1.0):
            times[it] = ms
            self._keep_evidence(it, source, lineno_at, (buf, at, at + length), (at,))
        if tflops is not None:
            self.tflops[it] = tflops
        if len(times) > MAX_STEPS:
            self._thin()
        if loss is not None and it in times:
            self.losses[it] = loss

    # ---- a block's step records summarised by a pool worker (issue 44: a dense log's steps were replayed
    # one by one in the scanner's process, its critical path) ----

    @staticmethod
    def worker_records() -> Tuple[type, ...]:
        """The record classes summarise makes (a pool worker's: record.ready before the fork, scan/prepare.py)."""
        return (StepDelta, BlockDeltas)

    @staticmethod
    def summarise(buf: bytes, recs: Dict[int, tuple], cuts: Sequence[int] = ()) -> Optional[
            Dict[int, Tuple[int, "BlockDeltas"]]]:
        """What the records RECS of a block (scan_lines') do to a step log, worked out from the block
        alone (a pool worker's, ahead of the scanner), per run of records between the lines at CUTS (the
        block's lines fed through feed(): the scanner feeds the records before one of them first):
        {index of a run's first record in line order: (index past its last, its BlockDeltas)}, of the
        runs it can summarise (enough steps, no step time that depends on the year);
        None when none."""
        keys = sorted(recs)
        out: Dict[int, Tuple[int, BlockDeltas]] = {}
        i = 0
        for c in list(cuts) + [len(buf) + 1]:
            j = bisect.bisect_left(keys, c, i)
            if j > i:
                d = StepLog._summarise_run(buf, [(k, recs[k]) for k in keys[i:j]])
                if d is not None:
                    out[i] = (j, d)
            i = j
        return out or None

    @staticmethod
    def _summarise_run(buf: bytes, items: List[Tuple[int, tuple]]) -> Optional["BlockDeltas"]:
        """summarise, of the records ITEMS (a run fed at once)."""
        steps = [i for i, (_, r) in enumerate(items) if r[0] is not None]
        if len(steps) < DELTA_MIN_STEPS:
            return None
        # (every run, with capture lines or none: a summary costs the workers a few % -- measured on the grid's
        # dense, iteration and production shapes, once "> built" lines no longer cut the runs short -- and
        # halves the scanner's step work; a step's time is read where a capture waits on it: every step of a
        # run with a capture line carries one that depends on no year, scan_lines' AHEAD)
        if len(items) > len(steps) and not all(len(items[i][1]) > 6 and not items[i][1][6] for i in steps):
            return None
        plain = _simulate(buf, items)
        if plain is None:
            return None
        # F0, the first step after the first capture line, takes a capture: the evidence window starts afresh
        # there whatever the state before, and the steps before it changed only their own iterations (the
        # tight path) -- from F0 on, the run does what the plain replay did
        first_cap = next((i for i, (_, r) in enumerate(items) if r[0] is None), len(items))
        f0 = next((i for i in steps if i > first_cap), None)
        if f0 is None:
            return BlockDeltas(len(items), plain, -1)
        its = [items[i][1][0] for i in steps if i >= f0]
        only_before = set(items[i][1][0] for i in steps if i < f0).difference(its)
        return BlockDeltas(len(items), plain, f0, (tuple(only_before), _runs_of(its), its[0],
                                                   any(r[0] is None for _, r in items[f0:])))

    def _merge(self, d: "BlockDeltas", items: Sequence[Tuple[int, tuple]], buf: bytes, source: str,
               lineno_at: Callable[[int], int], year: Optional[int], line_at: Optional[Callable[[int], Line]],
               first_lineno: int) -> Optional[Sequence[Tuple[int, tuple]]]:
        """Merge a run's summary when the state allows it (_fits): what the records would do, in a few dict
        updates.  Returns the records left to replay (None: none)."""
        if len(items) != d.n or self._stride > 1 or self._cts_open or len(self._ev_early) < EVIDENCE_KEEP:
            return items
        if self._capture_pending.get(source) or self._ev_next:
            # a capture line before the run (its first step takes it) or an evidence window open (the next
            # steps join it): the records before F0 are replayed
            delta, start = d.from_f0(), d.f0
        else:
            delta, start = d.plain, 0
        if delta is None:
            return items
        if start:
            self._replay(buf, self._filled(buf, items[:start]), source, lineno_at, year, line_at)
            if self._stride > 1 or self._cts_open or not self._capture_pending.get(source):
                return items[start:]
        shared = self._fits(delta)
        if shared is None:
            return items[start:]
        self._apply(delta, source, first_lineno, shared)
        return None

    def _fits(self, d: "StepDelta") -> Optional[Set[int]]:
        """Whether D, worked out on a stand-in state (_simulate), is what its records do to this step log:
        no thinning on the way, a capture line of it not the first (capture_line wants its Line) nor a capture
        step the first, and every iteration it shares with the log one that both passed by the tight path
        (the log's own capture steps, evidence and window are not on it; D's long path steps compared their
        times with the block's alone).  Returns those shared iterations, None when D does not fit."""
        times = self.times
        if len(times) + len(d.times) > MAX_STEPS or (d.captured and self.capture_line is None) or (
                d.caps and not self.capture_iters):
            return None
        if times.keys().isdisjoint(d.times):
            return set()
        over = times.keys() & d.times.keys()
        fits = (over.isdisjoint(d.long) and over.isdisjoint(self._capture_set) and over.isdisjoint(self.evidence)
                and over.isdisjoint(self._ev_window))
        return over if fits else None

    def _join_runs(self, d: "StepDelta", source: str) -> None:
        """D's runs of rising iterations after SOURCE's (_run_step: only D's first step meets the runs before)."""
        runs = self._runs.get(source)
        if not runs:
            self._runs[source] = list(d.runs)
        elif d.first_it < self._last_it[source]:
            runs.extend(d.runs)
        else:
            runs[-1] = max(runs[-1], d.runs[0])
            runs.extend(d.runs[1:])
        self._last_it[source] = d.last_it

    def _apply(self, d: "StepDelta", source: str, first_lineno: int, shared: Set[int]) -> None:
        """The records summarised as D, merged (see _merge for when; SHARED: the iterations D shares with the
        log, _fits')."""
        if d.caps:
            self._apply_caps(d)
        if d.runs:
            self._join_runs(d, source)
        times = self.times
        over = {k: times[k] for k in shared}    # (by the tight path: the slowest rank's)
        times.update(d.times)
        for k, v in over.items():
            if v > times[k]:
                times[k] = v
        self.tflops.update(d.tflops)
        self.losses.update(d.losses)
        self._step_ts.update(d.step_ts)
        for it, rel, text in d.evidence:
            self.evidence[it] = (source, first_lineno + rel, text)
        if d.pending is not None:
            self._capture_pending[source] = d.pending
        if d.built is not None:        # (the whole run's, from F0 on too: the last said and the most, again)
            self._add_built(d.built)

    def _apply_caps(self, d: "StepDelta") -> None:
        """_apply's capture steps of D: the run's first capture lets the open window's evidence go; D's capture
        steps join the log's, and its evidence window is the log's."""
        first, early, ev = self.capture_iters[0], self._ev_early, self.evidence
        for j in self._ev_window:
            if j != first and j not in early:
                ev.pop(j, None)
        self._capture_set.update(d.caps)
        self.capture_iters.extend(d.caps)
        self._ev_window = set(d.window)
        self._ev_next = d.ev_next

    def _sampled(self, it: int) -> bool:
        """Thinned (_stride > 1): whether iteration IT is kept -- a multiple of the stride, the first
        HEAD_STEPS, a capture step, one kept already; one let go is counted once (the highest seen grows)."""
        if it % self._stride == 0 or it in self.times or it in self._capture_set or it <= self._head_top:
            return True
        if it > self._top:
            self._top = it
            self._let_go += 1
        return False

    def _thin(self) -> None:
        """Past MAX_STEPS iterations: every other one of those after the first HEAD_STEPS is let go
        (capture steps and evidence kept), and the stride doubles for those to come."""
        its = self.iterations()
        if self._stride == 1:
            self._head_top = its[min(HEAD_STEPS, len(its)) - 1]
        self._stride *= 2
        keep = self._capture_set | set(self.evidence)
        gone = [i for i in its if i > self._head_top and i % self._stride and i not in keep]
        for i in gone:
            del self.times[i]
            self.tflops.pop(i, None)
            self.losses.pop(i, None)
            self._step_ts.pop(i, None)
        self._let_go += len(gone)
        self._top = max(self._top, its[-1])
        self._order = []

    def count(self) -> int:
        """Distinct iterations with a time, those let go by the thinning included."""
        return len(self.times) + self._let_go

    def _needs_ts(self, it: int, source: str) -> bool:
        """A step's time matters only to place a capture by time: while a capture time waits for
        its step, and for the capture iterations themselves (see _add_step)."""
        return bool(self._cts_open) or it in self._capture_set or bool(self._capture_pending.get(source))

    def feed(self, line: Line) -> None:
        t = line.text
        if "iteration" in t and "elapsed time per iteration" in t:
            self._feed_megatron(line)
        elif "train_step_timing" in t:
            self._feed_nemo(line)
        elif "raph" in t:
            self._feed_graph(line)

    def _feed_megatron(self, line: Line) -> None:
        m = search(_MEGATRON, line.text)
        if m:
            ms, tf = _num(m.group(2)), _num(m.group(3)) if m.group(3) else None
            if ms is not None and (tf is not None or not m.group(3)):
                self._add(int(m.group(1)), ms, line, tf)
                lm = search(_LOSS, line.text) if int(m.group(1)) in self.times else None
                if lm:
                    try:
                        self.losses[int(m.group(1))] = float(lm.group(1))
                    except ValueError:
                        pass

    def _feed_nemo(self, line: Line) -> None:
        t = line.text
        m = search(_NEMO, t)
        if m:
            s = search(_NEMO_STEP, t)
            self._nemo_i += 1
            it = int(s.group(1)) + 1 if s else self._nemo_i
            sec = _num(m.group(1))
            if sec is not None:
                self._add(it, sec * 1000.0, line, None)

    def _feed_graph(self, line: Line) -> None:
        """A CUDA graph line: a capture starting or done, its time and memory, the graphable layers."""
        t = line.text
        if "NCCL" in t and any(x in t for x in NCCL_GRAPH_LINES):
            if self.capture_line is None:      # (a collective captured: no step-time capture boundary)
                self.capture_line = (line.source, line.lineno, line.rank, line.text[:500])
            return
        # (each regex only on a line holding a literal every match of it holds: a dense log of capture
        # progress lines ran four regex searches a line, issue 44)
        if "create cuda graphs" in t or "Start CUDA Graphs capture" in t or "Capturing CUDA graph" in t or (
                "CUDA graph" in t and _capture(t) is not None):     # (_CAPTURE's plain-text branches first:
            self._mark_capture(line)                                # a capture progress line each)
        g = _built(t) if "> built " in t else None         # (each line of a rank alike: searched once)
        if g:
            self._mark_capture(line)
            self._add_built(_built_fields(g))
        g = _time_spent(t) if "Time spent in CUDA Graphs capture" in t else None
        if g:
            self._mark_capture(line)
            self.capture_seconds = max(self.capture_seconds or 0.0, _num(g[1]) or 0.0)
        g = _graphable(t) if " graphable layers" in t else None
        if g:
            self.graphable_layers = int(g[1] or 0)

    def _add_built(self, b: Built) -> None:
        """megatron-core's "> built N cuda graph(s) in S sec" line (or a run of them, _apply): the graphs built
        (the last said), the capture's seconds (the most), its memory (the last said)."""
        self.graphs_built = b[0]
        self.capture_seconds = max(self.capture_seconds or 0.0, b[1])
        if b[2]:
            self.graph_memory = b[2]

    def _capture_record(self, ls: int, source: str, line_at: Optional[Callable[[int], Line]]) -> None:
        """The capture line at buffer offset LS (a plain line with no time: _capture_rec): as feed()
        would mark it."""
        if self.capture_line is None and line_at is not None:
            self._mark_capture(line_at(ls))
            return
        self._capture_pending[source] = True        # (a claimed capture line has no time: _capture_rec)

    def _mark_capture(self, line: Line) -> None:
        if self.capture_line is None:      # issue 43: a hang after it may be inside a replayed graph
            self.capture_line = (line.source, line.lineno, line.rank, line.text[:500])
        self._capture_pending[line.source] = True
        if line.ts is not None:
            self._capture_ts.append(line.ts)
            self._cts_open.append(line.ts)

    def _add(self, it: int, ms: float, line: Line, tflops: Optional[float]) -> None:
        self._add_step(it, ms, line.source, line.lineno, line.ts, line.text, tflops)

    def _add_step(self, it: int, ms: float, source: str, lineno: Union[int, Callable[[], int]], ts: Optional[float],
                  text: Union[str, Tuple[bytes, int, int]], tflops: Optional[float]) -> None:
        """Step IT took MS; LINENO is its line number or counts it; TEXT is its line, or (buf, start,
        end) of a plain line in a block (decoded only when it is kept as evidence)."""
        self._run_step(source, it)
        if self._capture_pending.get(source):
            self._add_capture(it)
            self._capture_pending[source] = False
        if ts is not None and (self._cts_open or it in self._capture_set):
            self._place_captures(it, ts)
        if self._stride > 1 and not self._sampled(it):
            return
        if ms >= self.times.get(it, -1.0):
            self.times[it] = ms
            self._keep_evidence(it, source, lineno, text)
        if tflops is not None:
            self.tflops[it] = tflops
        if len(self.times) > MAX_STEPS:
            self._thin()

    def _run_step(self, source: str, it: int) -> None:
        """Step IT of SOURCE in its run of rising iterations (a lower one starts another run: a restart)."""
        runs = self._runs.get(source)
        if runs is None:
            runs = self._runs[source] = []
        if not runs or it < self._last_it[source]:
            runs.append(it)
        elif it > runs[-1]:
            runs[-1] = it
        self._last_it[source] = it

    def reached(self) -> Optional[int]:
        """The highest iteration the last run of iterations reached (any input); None: no step line."""
        return max((r[-1] for r in self._runs.values() if r), default=None)

    def progressed(self) -> bool:
        """Whether the last run of iterations (the last attempt of a restarted job) got past the highest
        iteration of the run before it, in some input."""
        return any(len(r) >= 2 and r[-1] > r[-2] for r in self._runs.values())

    def _place_captures(self, it: int, line_ts: float) -> None:
        """Step IT ended at LINE_TS: capture lines in another input (rank 0's file) place the capture
        by time: the first step that ends after the capture contains it (each capture time is placed once)."""
        self._step_ts[it] = min(self._step_ts.get(it, line_ts), line_ts)
        if self._cts_open:
            ready = [c for c in self._cts_open if c <= line_ts]
            if ready:
                self._cts_open = [c for c in self._cts_open if c > line_ts]
                for cts in ready:       # newest capture iterations first: the usual hit
                    if not any(self._step_ts.get(c, float("inf")) >= cts for c in reversed(self.capture_iters)):
                        self._add_capture(it)

    def _keep_evidence(self, it: int, source: str, lineno: Union[int, Callable[..., int]],
                       text: Union[str, Tuple[bytes, int, int]], at: Tuple[int, ...] = ()) -> None:
        """Evidence lines are kept for the first iterations and those around a capture (the report
        quotes the first steady steps and the capture step), not for every step.  LINENO: the line's
        number, or what counts it when called with AT (the line's start, for a block's lineno_at:
        feed_record makes no partial a step)."""
        if self._ev_next and it not in self._ev_window and it > max(self._ev_window):
            self._ev_window.add(it)
            self._ev_next -= 1
        if it in self.evidence or len(self.evidence) < EVIDENCE_KEEP or it in self._ev_window:
            if len(self.evidence) < EVIDENCE_KEEP and it not in self.evidence:
                self._ev_early.add(it)
            kept: Union[str, bytes] = text if isinstance(text, str) else text[0][text[1]:text[2]]
            # a plain line in a block is kept as its bytes, decoded when read (a capture every few
            # steps lets most kept lines go again)
            self.evidence[it] = (source, lineno if isinstance(lineno, int) else lineno(*at), kept)

    def evidence_of(self, it: int) -> Tuple[str, int, str]:
        """The evidence line kept for iteration IT: (source, line number, text)."""
        source, lineno, text = self.evidence[it]
        if isinstance(text, bytes):
            text = split_prefix(normalise(text.decode("ascii")))[0]
        return source, lineno, text

    def _add_capture(self, it: int) -> None:
        if it not in self._capture_set:
            self._capture_set.add(it)
            self.capture_iters.append(it)
            # evidence: the report quotes the first capture step and the first steady steps after the
            # last capture; the steps kept for an earlier capture are let go (the window's few steps
            # looked up, not the early ones copied: a capture every other step, issue 44)
            first, early = self.capture_iters[0], self._ev_early
            for j in self._ev_window:
                if j != first and j not in early:
                    self.evidence.pop(j, None)
            self._ev_window = {it}
            self._ev_next = 3

    @property
    def graphs_seen(self) -> bool:
        return bool(self.capture_iters) or self.graphs_built is not None

    def iterations(self) -> List[int]:
        """The iterations with a time, in order (sorted once while no iteration is added; a
        million-step log asks for them several times)."""
        if len(self._order) != len(self.times):
            self._order = sorted(self.times)
        return self._order

    def steady_its(self, warmup: Optional[int] = None) -> List[int]:
        """The steady steps' iterations, in order: after the warmup and the capture steps."""
        w = DEFAULT_WARMUP if warmup is None else max(int(warmup), 0)
        first = max([w, 1] + self.capture_iters)
        its = self.iterations()
        return its[bisect.bisect_right(its, first):]

    def steady(self, warmup: Optional[int] = None) -> List[Tuple[int, float]]:
        """The steady steps (steady_its) with their times."""
        steady = self.steady_its(warmup)
        return list(zip(steady, map(self.times.__getitem__, steady)))

    def pre_capture(self) -> List[Tuple[int, float]]:
        """Eager steps of a graph run: after iteration 1, before the first capture step."""
        if not self.capture_iters:
            return []
        c = min(self.capture_iters)
        its = self.iterations()
        eager = its[bisect.bisect_right(its, 1):bisect.bisect_left(its, c)]
        return list(zip(eager, map(self.times.__getitem__, eager)))


DELTA_MIN_STEPS = 32       # step records a run needs for a pool worker to summarise them (StepLog.summarise)
_DUMMY = -(1 << 62)        # the iteration of the stand-in state a summary is worked out on (iterations are >= 0)


@record
class StepDelta:
    """What a run of step records does from one of them on, on a step log that meets StepLog._merge's
    conditions: the iterations' times, TFLOP/s, losses and step times, the capture steps in order, the
    evidence window after them and the lines kept (iteration, line in the block, bytes), the capture
    waiting at the end (None: the records never set it), the runs of rising iterations, the iterations
    of the steps that went the long way (feed_record), and whether a capture line is among the records."""
    times: Dict[int, float]
    tflops: Dict[int, float]
    losses: Dict[int, float]
    step_ts: Dict[int, float]
    caps: List[int]
    window: Tuple[int, ...]
    ev_next: int
    evidence: List[Tuple[int, int, Union[str, bytes]]]
    pending: Optional[bool]
    runs: List[int]
    first_it: int
    last_it: int
    long: Set[int]
    captured: bool
    built: Optional[Built] = None      # what its "> built" lines say, together (StepLog._add_built; None: none)


@record
class BlockDeltas:
    """A pool worker's summary of a run of N step records (StepLog.summarise): PLAIN, what they do to a
    step log with no capture waiting and no evidence window open; F0, the first step after the run's first
    capture line (-1: none), from which on the run does what PLAIN did whatever the state before (from_f0)."""
    n: int
    plain: StepDelta
    f0: int
    # how the records from F0 on differ from the whole run (None: no F0): the iterations of its steps before F0
    # only, and from F0 on, the runs of rising iterations, the first iteration, whether a capture line is among them
    cut: Optional[Tuple[Tuple[int, ...], List[int], int, bool]] = None

    def leave_from(self) -> Optional[int]:
        """The first of the run's records a pool worker need not send (prepare.leave_out; None: none), those the
        scanner will likely not replay: from F0 on (the records before it are replayed whenever a capture waits
        at the run's start), none in a run past iteration MAX_STEPS (a step log thinned by then merges no
        summary: _merge)."""
        return None if self.plain.last_it > MAX_STEPS else max(self.f0, 0)

    def from_f0(self) -> Optional[StepDelta]:
        """What the records from F0 on do whatever the state before F0, the records before it replayed (None:
        no F0): PLAIN less the iterations of the steps before F0 only (they went the tight path: they changed only
        their own iterations' times, TFLOP/s and losses, which an iteration of them seen again from F0 on keeps
        whole) -- made here, from a few numbers, when the scanner asks (sent whole with PLAIN it was half of a
        dense log's summaries' bulk, unpickled by the scanner; cut from PLAIN, a copy of most of it each time)."""
        if self.cut is None:
            return None
        only_before, runs, first_it, captured = self.cut
        d, drop = self.plain, set(only_before)

        def cut(x: Dict[int, float]) -> Dict[int, float]:
            if not drop.intersection(x):
                return x                  # (_apply only reads it)
            y = dict(x)
            for k in drop:
                y.pop(k, None)
            return y
        return StepDelta(cut(d.times), cut(d.tflops), cut(d.losses), cut(d.step_ts), d.caps, d.window, d.ev_next,
                         [e for e in d.evidence if e[0] not in drop], d.pending, runs, first_it, d.last_it,
                         d.long - drop, captured, d.built)


class _LinesIn:
    """Line numbers in a block (from 0), counted forward from the last offset asked."""

    def __init__(self, buf: bytes):
        self.buf, self.off, self.n = buf, 0, 0

    def __call__(self, at: int) -> int:
        self.n += self.buf.count(b"\n", self.off, at)
        self.off = at
        return self.n


def _runs_of(its: Sequence[int]) -> List[int]:
    """The runs of rising iterations (StepLog._run_step) of ITS from an empty start."""
    runs: List[int] = []
    last = 0
    for it in its:
        if not runs:
            runs = [it]
        elif it < last:
            runs.append(it)
        elif it > runs[-1]:
            runs[-1] = it
        last = it
    return runs


def _simulate(buf: bytes, items: List[Tuple[int, tuple]]) -> Optional[StepDelta]:
    """ITEMS replayed on a stand-in step log in the state StepLog._merge asks for (a first capture
    and the early evidence kept, of iterations no log has; no capture waiting, no window open), by the same
    code as the scanner's, and read back as a delta (None: the run thinned it, StepLog._thin)."""
    s = StepLog()
    s.capture_line = ("", 0, None, "")
    s.capture_iters, s._capture_set, s._ev_window = [_DUMMY], {_DUMMY}, {_DUMMY}
    s.evidence = {_DUMMY - 1 - k: ("", 0, b"") for k in range(EVIDENCE_KEEP)}
    s._ev_early = set(s.evidence)
    long: Set[int] = set()
    real = s.feed_record

    def feed_record(rec: tuple, *a: Any) -> None:      # (the steps that go the long way, noted)
        long.add(rec[0])
        real(rec, *a)
    s.feed_record = feed_record         # type: ignore[method-assign, assignment]
    s._replay(buf, items, "", _LinesIn(buf))
    if s._stride > 1:       # (a run of more than MAX_STEPS iterations thinned the stand-in: no delta says how)
        return None
    caps = s.capture_iters[1:]
    its = [r[0] for _, r in items if r[0] is not None]
    return StepDelta(s.times, s.tflops, s.losses, s._step_ts, caps, tuple(s._ev_window) if caps else (),
                     s._ev_next, [(it, ln, text) for it, (_, ln, text) in s.evidence.items() if it >= 0],
                     s._capture_pending.get(""), _runs_of(its), its[0] if its else 0, its[-1] if its else 0,
                     long, any(r[0] is None for _, r in items),
                     None if s.graphs_built is None else (s.graphs_built, s.capture_seconds or 0.0, s.graph_memory))


@record
class Comparison:
    base_median: float
    cur_median: float
    delta_pct: float
    ci_low: float
    ci_high: float
    n_base: int
    n_cur: int
    p_slower: float = 1.0     # one-sided Mann-Whitney p that current is slower
    p_faster: float = 1.0

    @property
    def slower(self) -> bool:
        return self.ci_low > 0 and self.delta_pct >= MIN_EFFECT_PCT and self.p_slower < ALPHA

    @property
    def faster(self) -> bool:
        return self.ci_high < 0 and self.delta_pct <= -MIN_EFFECT_PCT and self.p_faster < ALPHA

    def as_dict(self) -> Dict[str, Any]:
        return {"baseline_median_ms": round(self.base_median, 3), "current_median_ms": round(self.cur_median, 3),
                "delta_pct": round(self.delta_pct, 2), "ci95_pct": [round(self.ci_low, 2), round(self.ci_high, 2)],
                "n_baseline": self.n_base, "n_current": self.n_cur,
                "p_slower": round(self.p_slower, 4), "p_faster": round(self.p_faster, 4),
                "verdict": "slower" if self.slower else "faster" if self.faster else "no significant change"}


ALPHA = 0.025             # one-sided significance for the rank test


def mann_whitney(base: List[float], cur: List[float]) -> Tuple[float, float]:
    """One-sided p-values (cur > base, cur < base) of the Mann-Whitney U test, normal
    approximation with tie correction (conservative enough for n >= 4 per side)."""
    from bisect import bisect_left, bisect_right
    from collections import Counter
    from itertools import repeat
    n1, n2 = len(base), len(cur)
    allv = sorted([*base, *cur])
    # the rank sum of the current values, a value tied with others at their mean rank: a value whose
    # equals sit at [lo, hi) of all the values sorted ranks (lo + hi + 1) / 2.  Summed in integers (in C:
    # a million steps took seconds value by value), then halved: exact, as the sum of the ranks was.
    twice = sum(map(bisect_left, repeat(allv), cur)) + sum(map(bisect_right, repeat(allv), cur)) + n2
    r_cur = twice / 2
    tie_term = 0.0                # added group by group in the values' order, as it always was (a group
    if len(set(allv)) != len(allv):  # of over ~208,000 ties makes t ** 3 inexact as a float)
        for t in Counter(allv).values():
            if t > 1:
                tie_term += t ** 3 - t
    u = r_cur - n2 * (n2 + 1) / 2          # U of the current sample
    mu = n1 * n2 / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return 1.0, 1.0
    sd = math.sqrt(var)
    z_hi = (u - mu - 0.5) / sd             # continuity correction
    z_lo = (u - mu + 0.5) / sd
    p_slower = 0.5 * math.erfc(z_hi / math.sqrt(2))
    p_faster = 0.5 * math.erfc(-z_lo / math.sqrt(2))
    return p_slower, p_faster


def _median(xs: Sequence[float]) -> float:
    """The median, as statistics.median computes it (statistics' import costs a start-up 5 ms)."""
    data = sorted(xs)
    n = len(data)
    if n == 0:
        raise ValueError("no median for empty data")
    return data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2


# Samples larger than this are bootstrapped without drawing each resample: sorting BOOTSTRAP resamples
# of each side cost ~0.4 s a side at 1,000 steps and ~20 s at 50,000 (a graph run logged every step).
BOOTSTRAP_RESAMPLE_MAX = 1000


def _resampled_median(rng: Any, data: Sequence[float]) -> float:
    """The median of a bootstrap resample of DATA, drawn (len(data) draws with replacement)."""
    return _median(rng.choices(data, k=len(data)))


def _resample_median(rng: Any, data: Sequence[float]) -> float:
    """The median of a bootstrap resample of sorted DATA (len(data) draws with replacement), drawn
    from its exact law without drawing the resample: the j-th smallest of n uniform indices is
    floor(n * U(j)), U(j) the j-th smallest of n uniforms on [0, 1), which is Beta(j, n - j + 1); the
    next one is U(j) + (1 - U(j)) * Beta(1, n - j) (the smallest of the n - j above it).  O(1) a
    resample, where resampling and sorting cost O(n log n)."""
    n = len(data)
    m = (n + 1) // 2                      # the (lower) middle rank, 1-based
    u = rng.betavariate(m, n - m + 1)
    lo = data[min(int(n * u), n - 1)]
    if n % 2:
        return lo
    u2 = u + (1.0 - u) * rng.betavariate(1, n - m)
    return (lo + data[min(int(n * u2), n - 1)]) / 2


def compare(base: List[float], cur: List[float], seed: int = 0) -> Optional[Comparison]:
    """Relative difference of medians (cur vs base, %) with a bootstrap 95% interval."""
    if len(base) < MIN_SAMPLES or len(cur) < MIN_SAMPLES:
        return None
    mb, mc = _median(base), _median(cur)
    if mb <= 0:
        return None
    import random  # (only when two runs are compared)
    rng = random.Random(seed)
    draw: Callable[[Any, Sequence[float]], float] = _resampled_median
    if max(len(base), len(cur)) > BOOTSTRAP_RESAMPLE_MAX:
        draw, base, cur = _resample_median, sorted(base), sorted(cur)
    deltas = []
    for _ in range(BOOTSTRAP):
        b, c = draw(rng, base), draw(rng, cur)
        deltas.append((c - b) / b * 100.0)
    deltas.sort()
    lo, hi = deltas[int(0.025 * BOOTSTRAP)], deltas[int(0.975 * BOOTSTRAP) - 1]
    ps, pf = mann_whitney(base, cur)
    return Comparison(mb, mc, (mc - mb) / mb * 100.0, lo, hi, len(base), len(cur), ps, pf)


class StepSeries(SequenceABC):
    """[iteration, ms] of each of ITS (in order), made when read: the report keeps at most SERIES_MAX
    of them, and a million-step run's list of pairs took a tenth of a second to make.  A sequence of
    lists, equal to the list of them (`list(series)` is that list)."""
    __slots__ = ("its", "times")

    def __init__(self, its: Sequence[int], times: Dict[int, float]):
        self.its = its
        self.times = times

    def __len__(self) -> int:
        return len(self.its)

    @overload
    def __getitem__(self, k: int) -> List[float]: ...
    @overload
    def __getitem__(self, k: slice) -> List[List[float]]: ...

    def __getitem__(self, k: Union[int, slice]) -> Any:
        if isinstance(k, slice):
            return [[i, self.times[i]] for i in self.its[k]]
        i = self.its[k]
        return [i, self.times[i]]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, StepSeries)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StepSeries({len(self)} iterations)"

    def tolist(self) -> List[List[float]]:
        """The pairs as a list (what summary()'s "series" was before it was made when read)."""
        return self[:]


def _warmup(v: object) -> Optional[int]:
    """A config's cuda_graph_warmup_steps as a number of steps, None when it is none (a garbled log's
    arguments block can hold any text there: found by fuzzing)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return max(v, 0) if v < 1 << 31 else None
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) < 10:
        return int(v.strip())
    return None


def _steady_of(s: StepLog, warmup: Optional[int]) -> Tuple[List[int], List[float]]:
    """S's steady steps: their iterations (StepLog.steady_its) and times, in order."""
    its = s.steady_its(warmup)
    return its, list(map(s.times.__getitem__, its))


def summary(s: StepLog, warmup: Optional[int], st: Optional[Tuple[List[int], List[float]]] = None) -> Dict[str, object]:
    """The numbers of a run's steps; ST: its steady steps' iterations and times when the caller has them
    (_steady_of).  Its "series" is a StepSeries, a sequence made when read (`.tolist()` for JSON): the JSON report
    takes at most SERIES_MAX of its pairs (report/contract.py)."""
    steady_its, steady_ms = st if st is not None else _steady_of(s, warmup)
    times = s.times
    its = s.iterations()
    # (C-level passes: a million-step run's lists took a tenth of a second in comprehensions; no list of pairs:
    # 41,596 steps' pairs were ~5 ms of a 256 MiB log's verdict)
    d: Dict[str, object] = {
        "iterations": s.count(),
        "steady_iterations": steady_its,
        "steady_median_ms": round(_median(steady_ms), 3) if steady_ms else None,
        "capture_iterations": s.capture_iters,
        "warmup_steps": DEFAULT_WARMUP if warmup is None else warmup,
        "series": StepSeries(its, times),
    }
    if s.capture_seconds is not None:
        d["capture_seconds"] = s.capture_seconds
    if s.graph_memory:
        d["graph_memory"] = s.graph_memory
    if s.graphs_built is not None:
        d["graphs_built"] = s.graphs_built
    if s.graphable_layers is not None:
        d["graphable_layers"] = s.graphable_layers
    if s.tflops:
        # (the steady steps' TFLOP/s where logged, C-level: a comprehension took ~45 ms of 131,072 steps here)
        got = list(map(s.tflops.get, steady_its))
        tf = cast(List[float], got if None not in got else [x for x in got if x is not None])
        if tf:
            d["steady_median_tflops"] = round(_median(tf), 2)
    return d


@record
class PerfVerdict:
    pitfall: str
    message: str
    evidence: List[Tuple[str, int, str]]
    graph_change: bool = False     # slower with a CUDA-graph setting changed (blame: the measurement backs it)


def _graphs_on(cfg: Dict[str, object], s: StepLog) -> bool:
    return cfg.get("cuda_graph_impl") in ("local", "transformer_engine") or s.graphs_seen


GRAPH_CFG_KEYS = ("cuda_graph_impl", "cuda_graph_scope", "cuda_graph_warmup_steps")


JUMP = 0.15           # the first replayed loss this much above the capture iteration's: a jump
STALL = 0.10          # the replayed losses improving less than this (while the eager ones did): a stall


def _numerics(cur: StepLog, base: Optional[StepLog]) -> Optional[str]:
    """Wrong, not slower (issue 42): the loss goes NaN at the first replayed iterations, or jumps at the first
    replay and stops improving while the eager steps before capture improved -- a graph that replays a stale
    input (rebound instead of copied into its static buffer).  A jump the training then recovers from is
    no alarm (a loss that moves by chance).  (The replayed iterations are read by their numbers, sorted once:
    a dense log's 40k steps were copied into three lists, issue 44.)"""
    if not cur.capture_iters or not cur.losses:
        return None
    c = min(cur.capture_iters)
    loss = cur.losses
    its = sorted(loss)
    split = bisect.bisect_right(its, c)
    pre = [loss[i] for i in its[:split]]
    post = its[split:]                      # the replayed iterations
    if len(pre) < 3 or len(post) < 5 or not all(math.isfinite(v) for v in pre):
        return None
    # the first non-finite loss, looked for among the first two replayed iterations only (one after them is
    # no alarm)
    bad = [i for i in post[:2] if i <= post[0] + 1 and not math.isfinite(loss[i])]
    if bad:
        return (f"triage: the loss went NaN at the first replayed iteration after CUDA graph capture: iteration "
                f"{bad[0]} (the eager steps before the capture at iteration {c} were finite, last {pre[-1]:.4g})")
    k = min(5, len(post) // 2)
    first = loss[post[0]]
    head, tail = _median([loss[i] for i in post[:k]]), _median([loss[i] for i in post[-k:]])
    improved_pre = (pre[0] - pre[-1]) / abs(pre[0]) if pre[0] else 0.0
    # the eager steps were still improving right up to the capture (a loss already turning up before it,
    # as an unstable run's does whether graphed or not, is no onset at the capture)
    still_improving = all(b < a for a, b in zip(pre[-3:], pre[-2:]))
    if not (first > pre[-1] * (1 + JUMP) and improved_pre > STALL and still_improving
            and tail >= head * (1 - STALL)):
        return None
    msg = (f"triage: the loss jumped at the first replayed iteration after CUDA graph capture and stopped improving: "
           f"iteration {post[0]} loss {first:.4g} after {pre[-1]:.4g} at the capture iteration {c} (the eager "
           f"steps before it went {pre[0]:.4g} -> {pre[-1]:.4g}); over {len(post)} replayed iterations "
           f"{head:.4g} -> {tail:.4g}")
    if base is not None and base.losses:
        bl = base.losses
        both = [(loss[i], bl[i]) for i in post if i in bl and bl[i] > 0]
        if len(both) >= k:
            good = _median([b for _, b in both[-k:]])
            msg += (f"; the last good run's loss at the same iterations: {good:.4g}"
                    f" (this run: {_median([a for a, _ in both[-k:]]):.4g})")
    return msg


def _numerics_verdict(cur: StepLog, base: Optional[StepLog]) -> List[PerfVerdict]:
    stale = _numerics(cur, base)
    if stale is None:
        return []
    caps = set(cur.capture_iters)
    around = [cur.evidence_of(i) for i in sorted(cur.evidence) if i in caps or i - 1 in caps]
    return [PerfVerdict("graph-stale-input", stale, around)]


def assess(cur: StepLog, cur_cfg: Dict[str, object], base: Optional[StepLog] = None,
           base_cfg: Optional[Dict[str, object]] = None) -> Tuple[List[PerfVerdict], Dict[str, object]]:
    """Compare steady-state step times; return perf verdicts and the numbers behind them."""
    base_cfg = base_cfg or {}
    info: Dict[str, object] = {}
    verdicts: List[PerfVerdict] = []
    if not cur.times:
        return verdicts, info
    w_cur = _warmup(cur_cfg.get("cuda_graph_warmup_steps"))
    verdicts += _numerics_verdict(cur, base)
    cur_steady = _steady_of(cur, w_cur)  # type: ignore[arg-type]
    info["current"] = summary(cur, w_cur, cur_steady)  # type: ignore[arg-type]
    ev = [cur.evidence_of(i) for i in cur_steady[0][:2] if i in cur.evidence] + [
        cur.evidence_of(i) for i in cur.capture_iters[:1] if i in cur.evidence]
    on_cur = _graphs_on(cur_cfg, cur)
    if base is not None and base.times:
        w_base = _warmup(base_cfg.get("cuda_graph_warmup_steps"))
        base_steady = _steady_of(base, w_base)  # type: ignore[arg-type]
        info["baseline"] = summary(base, w_base, base_steady)  # type: ignore[arg-type]
        c = compare(base_steady[1], cur_steady[1])
        if c is not None:
            info["run_vs_run"] = c.as_dict()
            on_base = _graphs_on(base_cfg, base)
            graph_changed = on_cur != on_base or any(cur_cfg.get(k) != base_cfg.get(k) for k in GRAPH_CFG_KEYS
                                                     if k in cur_cfg or k in base_cfg)
            nums = (f"steady-state median {c.cur_median:.1f} ms vs {c.base_median:.1f} ms baseline "
                    f"({c.delta_pct:+.2f}%, 95% CI [{c.ci_low:+.2f}%, {c.ci_high:+.2f}%], "
                    f"n={c.n_cur}/{c.n_base}, capture and warmup excluded)")
            if on_cur and not on_base and not c.faster:
                verdicts.append(PerfVerdict("graph-no-speedup",
                                            f"triage: CUDA graphs gave no steady-state speedup over eager: {nums}", ev))
            elif graph_changed and c.slower:
                # slower, either way (issue 42): graphs turned off, the scope narrowed or widened, the warmup
                # changed -- a regression the graph change is blamed for (its pattern implicates the keys)
                what = ("after CUDA graphs were turned off" if on_base and not on_cur
                        else "after the CUDA-graph settings changed")
                verdicts.append(PerfVerdict("step-time-regression",
                                            f"triage: steady-state step time regression {what}: {nums}", ev,
                                            graph_change=True))
            elif not graph_changed and c.slower:
                verdicts.append(PerfVerdict("step-time-regression",
                                            "triage: steady-state step time regression with no CUDA-graph change: "
                                            f"{nums}", ev))
    pre = cur.pre_capture()
    if len(pre) >= 3 and cur_steady[0]:
        c2 = compare([t for _, t in pre], cur_steady[1], seed=1)
        if c2 is not None:
            info["before_vs_after_capture"] = c2.as_dict()
            if not verdicts and base is None and not c2.faster:
                verdicts.append(PerfVerdict(
                    "graph-no-speedup",
                    f"triage: CUDA graphs gave no steady-state speedup: replay median {c2.cur_median:.1f} ms vs "
                    f"{c2.base_median:.1f} ms eager before capture ({c2.delta_pct:+.2f}%, 95% CI "
                    f"[{c2.ci_low:+.2f}%, {c2.ci_high:+.2f}%])", ev))
    return verdicts, info
