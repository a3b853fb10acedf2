"""The incremental driver: the block driver fed new bytes as they arrive (`triage watch`).

`LiveScan(engine, extra)` is the same observers, anchor set and per-input block
scanner (_InputScan) as `Engine.scan_paths`, fed one chunk of new bytes at a time.  Only complete
lines are scanned: a partial trailing line is kept until its newline arrives (or the input ends);
the previous chunk's last TAIL_BYTES of whole lines are kept in front of the next one for walking
back across the boundary, exactly as scan_paths keeps them between its blocks.  `snapshot()`
finishes a copy of the state into a ScanResult, so feeding goes on afterwards.

Feeding a file in any chunking and then taking a snapshot gives the same result as scan_paths over
the whole file (tests/test_watch.py checks it on corpus logs).  Memory stays bounded: the
observers' own caps (matches, error blocks, evidence) and one look-back tail per input.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from ..inputs.sources import MAX_RAW, Input, _tail_of, describe_input, without_gaps
from .blockscan import _InputScan
from .blockview import BlockView
from .observer import Observer
from .prepare import BlockFacts, _batchers, prepare_gapless
from .results import ScanResult
from .state import InputState

if TYPE_CHECKING:
    from .engine import Engine

SEQ_STRIDE = 10 ** 12      # scan order of input i starts at i * SEQ_STRIDE (inputs in the order they appeared)


class _LiveInput:
    """One followed input: its block scanner and the bytes not scanned yet."""

    def __init__(self, inp: InputState, scan: _InputScan, view: BlockView):
        self.inp = inp
        self.scan = scan
        self.view = view
        self.carry = b""          # a partial line waiting for its newline
        self.prev = b""           # whole lines of the previous chunk (look-back tail)
        self.skipping = False     # inside the over-long remainder of a line (MAX_RAW)


class LiveScan:
    """The block driver, fed incrementally (see the module docstring)."""

    def __init__(self, engine: "Engine", extra: Sequence[Observer] = (), blocks_limit: int = 500):
        from .engine import TAIL_BYTES
        self.engine = engine
        self.core, self.obs, self.rules = engine.wire(extra)
        self.core.blocks_limit = blocks_limit
        self.rules_idx = self.obs.index(self.rules)
        self.aset = engine.anchor_set_of(self.obs)
        self.batchers = _batchers(self.obs)
        self.tail = TAIL_BYTES
        self.inputs: Dict[str, _LiveInput] = {}
        self.order: List[str] = []          # labels, in the order they appeared
        self.extra = list(extra)
        self.skipped: Dict[str, int] = {}   # bytes of each input not read (skip: the follower fell behind)

    # --- feeding --------------------------------------------------------------------------------
    def _input(self, label: str, path: Optional[str]) -> _LiveInput:
        li = self.inputs.get(label)
        if li is not None:
            return li
        desc = describe_input(path) if path else Input(label, label, None, None)
        if desc.label != label:
            desc = Input(desc.path, label, desc.file_rank, desc.attempt)
        inp = InputState(desc, seq_base=len(self.order) * SEQ_STRIDE)
        self.core.inputs[label] = inp
        view = BlockView(self.engine.window, desc)
        scan = _InputScan(inp, self.core, self.obs, self.rules_idx, view)
        scan.eager_ranks = True           # a followed file rotates and grows: never read it twice
        li = self.inputs[label] = _LiveInput(inp, scan, view)
        self.order.append(label)
        return li

    def feed(self, label: str, data: bytes, path: Optional[str] = None) -> int:
        """Scan the complete lines of DATA (new bytes of input LABEL, whose file is PATH); a partial
        last line waits for the next call.  Returns the number of bytes scanned."""
        li = self._input(label, path)
        if li.skipping:
            nl = data.find(b"\n")
            if nl < 0:
                return 0
            data = data[nl + 1:]
            li.skipping = False
        cut = data.rfind(b"\n")
        if cut < 0:
            li.carry += data
            if len(li.carry) > MAX_RAW:      # (its NUL runs are no part of it: the line reader's rule)
                li.carry = without_gaps(li.carry)
            if len(li.carry) > MAX_RAW:      # an over-long line keeps its first MAX_RAW bytes
                whole = li.carry[:MAX_RAW] + b"\n"
                li.carry = b""
                li.skipping = True
                return self._block(li, whole)
            return 0
        rest = data[cut + 1:]
        extra = b""
        if len(rest) > MAX_RAW:
            rest = without_gaps(rest)
        if len(rest) > MAX_RAW:
            extra = rest[:MAX_RAW] + b"\n"
            rest = b""
            li.skipping = True
        whole = b"".join((li.carry, memoryview(data)[:cut + 1], extra))
        li.carry = rest
        return self._block(li, whole)

    def skip(self, label: str, nbytes: int) -> None:
        """NBYTES of input LABEL were not read (the follower fell behind its writer and skipped to its tail):
        its partial line is dropped, and so is the first, partial, line after the gap; the result notes it."""
        li = self.inputs.get(label)
        if li is not None:
            li.carry = b""
            li.prev = b""
        else:
            li = self._input(label, None)
        li.skipping = True
        self.skipped[label] = self.skipped.get(label, 0) + nbytes

    def end_input(self, label: str) -> int:
        """The input ended (or was truncated / replaced): its partial last line is scanned as a line."""
        li = self.inputs.get(label)
        if li is None or not li.carry:
            if li is not None:
                li.skipping = False
            return 0
        whole = li.carry + b"\n"
        li.carry = b""
        li.skipping = False
        return self._block(li, whole)

    def _block(self, li: _LiveInput, whole: bytes) -> int:
        if not whole:
            return 0
        buf = li.prev + whole
        lo = len(li.prev)
        facts = BlockFacts()      # (a block with NUL runs read without them, as the line reader reads it)
        buf, lo, prepared = prepare_gapless(buf, lo, self.aset, li.scan.batchers, facts=facts)
        li.view.reset(buf, lo)
        li.scan.block(buf, lo, prepared, facts)
        li.prev = _tail_of(buf, self.tail)
        return len(whole)

    # --- results --------------------------------------------------------------------------------
    @property
    def lines(self) -> int:
        return sum(li.scan.lineno for li in self.inputs.values())

    @property
    def nbytes(self) -> int:
        return sum(li.scan.nbytes for li in self.inputs.values())

    def snapshot(self, extra_copy: Sequence[object] = ()) -> Tuple[ScanResult, Tuple[object, ...]]:
        """A ScanResult of everything fed so far (partial last lines included, as if each input
        ended here), built from a copy of the state: feeding goes on afterwards.  EXTRA_COPY (the
        objects behind the extra observers, e.g. a pipeline.Seen) are copied along with it, sharing
        what the observers share; their copies are returned."""
        patterns = self.engine.patterns
        memo: Dict[int, object] = {id(p): p for p in patterns}
        for pair in self.engine.rules:
            memo[id(pair)] = pair
            memo[id(pair[1])] = pair[1]
        memo[id(self.engine.rules)] = self.engine.rules
        memo[id(self.engine)] = self.engine
        memo[id(self.aset)] = self.aset
        state = (self.core, self.obs, self.rules, self.inputs, tuple(extra_copy))
        core, obs, rules, inputs, extra = copy.deepcopy(state, memo)
        lines = 0
        sources: List[str] = []
        ends: Dict[str, int] = {}
        for label in self.order:
            li = inputs[label]
            if li.carry:                     # a partial last line is a line of its own at the end
                whole = li.carry + b"\n"
                li.scan.obs = obs
                facts = BlockFacts()
                buf, lo, prepared = prepare_gapless(li.prev + whole, len(li.prev), self.aset, li.scan.batchers,
                                                    facts=facts)
                li.view.reset(buf, lo)
                li.scan.block(buf, lo, prepared, facts)
            if li.scan.lineno:
                sources.append(label)
            lines += li.scan.lineno
            ends[label] = li.inp.seq_base + li.scan.lineno
        nbytes = sum(li.scan.nbytes for li in inputs.values())
        res = self.engine.result(core, obs, rules, lines, sources, nbytes, self.aset.engine)
        res.input_ends = ends
        res.notes += [f"fell behind the writer of {label}: skipped {n / (1 << 20):,.0f} MiB of it to read on from its "
                      "end (the lines in them were not triaged)" for label, n in self.skipped.items()]
        return res, extra
