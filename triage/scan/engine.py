"""Scan stage: compiled patterns -> matches, plus the error blocks no pattern explained.

The work is split among line observers, each with a small `feed`/`following`/`finish`
interface, that declare the anchors (literals or small regexes) of the lines they react to:

- `Attempts`    restart / attempt detection (start banners, launcher restart lines)
- `LauncherRoot` torchrun's "Root Cause (first observed failure)" rank
- `LauncherExits` a death only the launcher or the shell reports
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

Each observer is a module of this package (attempts, launcher, followups, blocks, rules); the block
driver's parts are blockview (context), blockscan (one input's blocks), prepare (the C-heavy part of
a block) and pool (worker processes).  This module wires them and holds both drivers.

The invariant that makes the block driver equal to the line driver: an observer's anchors hit
every line on which its `feed` changes state while it is not following, and feeding it a line
it does not react to changes nothing.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .. import regexwarm
from ..inputs.paste import PASTE_MAX
from ..inputs.ranks import ranks_in
from ..inputs.sources import (
    Input,
    InputError,
    Line,
    describe_input,
    expand_paths,
    iter_blocks_with_tail,
    without_gaps,
)
from ..match.anchors import Anchor, AnchorSet

# the modules of the core observers: each registers its own (observer.core_observer)
from . import attempts as _attempts  # noqa: F401
from . import forms as _forms  # noqa: F401
from . import launcher as _launcher  # noqa: F401
from .blocks import Blocks
from .blockscan import _InputScan
from .blockview import BlockView
from .followups import Followups
from .geometry import open_plain, plain_inputs
from .jobfacts import EDGE_BYTES, facts_of
from .observer import Feeder, Observer, registered
from .pool import READER_CORES, _Pool, _size, pool_block_size
from .prepare import (
    _CTRL_RX,
    ANCHOR_STRIDE,
    ANCHOR_TAG,
    NORM_TAG,
    PARSE_MIN_WORKERS,
    RULE_TAG,
    BlockFacts,
    _batchers,
    anchor_set,
    prepare_gapless,
)
from .results import Match, ScanResult
from .rules import Rules
from .state import CONTEXT_LINES, Core, Event, InputState, View

if TYPE_CHECKING:
    from ..inputs.digest import InputHash, InputsDigest
    from ..patterns import MatchRule, Pattern

RESTART_MERGE_S = 60.0     # restart lines this close together (in different inputs) are one restart
TAIL_BYTES = 256 << 10     # bytes of the previous block kept for walking back across a boundary


class Engine:
    def __init__(self, patterns: List[Pattern]):
        self.patterns = patterns
        self.rules: List[Tuple[Pattern, MatchRule]] = [(p, r) for p in patterns for r in p.match]
        self.window = max([c.window for _, r in self.rules for c in r.context] + [CONTEXT_LINES])
        self.disabled: Dict[int, str] = {}

    # --- wiring -------------------------------------------------------------------------------
    def wire(self, extra: Sequence[Observer]):
        core = Core()
        follow = Followups(core)
        rules = Rules(core, self.rules, follow)
        rules.disabled = self.disabled
        blocks = Blocks(core)
        # the order is the order of the checks of one line
        obs: List[Observer] = list(extra) + [cls(core) for cls in registered()] + [follow, blocks, rules]
        return core, obs, rules

    def anchor_set_of(self, obs: Sequence[Observer]) -> AnchorSet:
        anchors: List[Anchor] = [Anchor(_CTRL_RX, NORM_TAG, regex=True)]
        for i, o in enumerate(obs):
            if o.per_anchor:          # each anchor its own tag: the scan says which of them hit (Event.anchored)
                anchors += [Anchor(a.text, ANCHOR_TAG + i * ANCHOR_STRIDE + k, a.ignore_case, a.regex)
                            for k, a in enumerate(o.anchors)]
            else:
                anchors += [Anchor(a.text, i, a.ignore_case, a.regex) for a in o.anchors]
        for r, (_, rule) in enumerate(self.rules):
            for lit_ in rule.literals:
                anchors.append(Anchor(lit_, RULE_TAG + r, rule.ignore_case))
        return anchor_set(tuple(anchors))

    @staticmethod
    def result(core: Core, obs: Sequence[Observer], rules: Rules, lines: int, sources: List[str],
                nbytes: int = 0, engine: str = "") -> ScanResult:
        for o in obs:
            o.finish()
        matches = sorted(core.matches, key=lambda m: m.seq)
        blocks = sorted(core.kept_blocks(), key=lambda b: b.seq)
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

        # the ranks of each attempt, worked out when asked: what it needs, not the scanner's whole state
        seen0, segments = core.ranks_seen, core.rank_segments
        memo: List[Set[int]] = []         # (asked by the hang suspects and the hang's wavefront: read once)

        def ranks() -> Set[int]:
            if memo:
                return set(memo[0])
            seen = seen0
            if segments:
                seen = _ranks_by_attempt(segments, seen)
            memo.append(seen.get(attempts - 1, set()) | (seen.get(0, set()) if attempts == 1 else set()))
            return set(memo[0])
        return ScanResult(matches=matches, blocks=blocks, lines=lines, sources=sources,
                          launcher_root_rank=core.root_rank, attempts=attempts,
                          launcher_summaries=list(core.root_summaries),
                          disabled_rules=sorted(rules.disabled.values()), dropped=dict(core.dropped),
                          notes=list(core.notes), exits=list(core.exits),
                          bytes=nbytes, anchor_engine=engine, regex_timeouts=core.timeouts.count, ranks_fn=ranks,
                          facts=core.facts)

    # --- the line driver ------------------------------------------------------------------------
    def scan(self, lines: Iterable[Line], blocks_limit: int = 500, extra: Sequence[Observer] = ()) -> ScanResult:
        """Feed every line to every observer (small inputs; the reference for scan_paths)."""
        core, obs, rules = self.wire(extra)
        core.blocks_limit = blocks_limit
        view = View(self.window)
        sources: List[str] = []
        ends: Dict[str, int] = {}     # each input's last line (seq): where it ends, whatever else shows
        seq = 0
        prev: Tuple[str, int] = ("", -1)
        for line in lines:
            if (line.source, line.lineno) != prev:    # the updates of a progress bar share one line
                seq += 1
                prev = (line.source, line.lineno)
            ends[line.source] = seq
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
        res = self.result(core, obs, rules, seq, sources)
        res.input_ends = ends
        return res

    # --- the block driver ---------------------------------------------------------------------
    def scan_paths(self, paths: Sequence[str], extra: Sequence[Observer] = (), blocks_limit: int = 500,
                   progress: Optional[Callable[[int], None]] = None, block_size: int = 0,
                   max_bytes: int = 0, content_hash: bool = False) -> ScanResult:
        """Scan files / directories / stdin in large blocks; the same result as `scan` over their lines.
        `max_bytes` > 0 reads at most that much of each input (a note says so).  An input that
        cannot be read is a note when others can be; an InputError when it is the only one.
        `content_hash`: hash the inputs' bytes as they are read (ScanResult.content_hash, see digest.py)."""
        core, obs, rules = self.wire(extra)
        core.blocks_limit = blocks_limit
        rules_idx = obs.index(rules)
        aset = self.anchor_set_of(obs)
        sources: List[str] = []
        ends: Dict[str, int] = {}     # each input's last line (seq): an input without a match or a block
        total_lines = 0               # of its own still ends where it ends (crashes._input_ends)
        nbytes = 0
        done_bytes = 0
        all_paths = expand_paths(paths, core.notes)
        digest = _digest(paths, all_paths) if content_hash else None
        batchers = _batchers(obs)
        plan, k, bs = _plan(all_paths, block_size, max_bytes, aset, batchers)
        live = [None if id(r) in rules.disabled else r for _, r in rules.rules]   # (switched off: not searched)
        pool = _start_pool(plan, aset, batchers, k, live) if k else None
        warmer = _warm(k) if pool is not None else None
        core.max_bytes = max_bytes
        failed: List[InputError] = []
        try:
            for path in all_paths:
                sink = digest.input(path) if digest is not None else None
                try:
                    n_lines, n_bytes = self._scan_one(path, core, obs, rules_idx, aset, bs, progress,
                                                      pool, total_lines, done_bytes, sink)
                except InputError as e:
                    if digest is not None:
                        digest.failed()
                    if len(all_paths) == 1:
                        raise
                    failed.append(e)
                    core.notes.append(f"{e} (the other inputs were triaged)")
                    if pool is not None:
                        pool.broken = True
                    continue
                if n_lines:
                    sources.append(describe_input(path).label)
                    ends[sources[-1]] = total_lines + n_lines
                total_lines += n_lines
                nbytes += n_bytes
                done_bytes += _size(path)
        finally:
            _close(pool, warmer, digest)
        if failed and len(failed) == len(all_paths):
            raise InputError(f"no input could be read: {failed[0]}")
        res = self.result(core, obs, rules, total_lines, sources, nbytes, aset.engine)
        res.input_ends = ends
        res.content_hash = digest.hexdigest() if digest is not None else None    # closed: all hashed
        return res

    def _scan_one(self, path: str, core: Core, obs: List[Observer], rules_idx: int, aset: AnchorSet,
                  block_size: int, progress, pool: Optional["_Pool"], seq_base: int,
                  done_bytes: int, sink: Optional["InputHash"] = None) -> Tuple[int, int]:
        from ..inputs.sources import BLOCK_SIZE
        inp = InputState(describe_input(path), seq_base=seq_base)
        core.inputs[inp.inp.label] = inp

        def prog(n: int) -> None:
            if progress is not None:
                progress(done_bytes + n)
        return self._scan_input(inp, core, obs, rules_idx, aset, block_size or BLOCK_SIZE,
                                prog if progress is not None else None, pool, sink)

    def _scan_input(self, inp: InputState, core: Core, obs: List[Observer], rules_idx: int,
                    aset: AnchorSet, block_size: int, progress, pool: Optional["_Pool"] = None,
                    sink: Optional["InputHash"] = None) -> Tuple[int, int]:
        view = BlockView(self.window, inp.inp)
        scan = _InputScan(inp, core, obs, rules_idx, view)
        scanned = [0]             # bytes scanned, for reading a re-readable input again (_ranks_by_attempt)
        if not scan.eager_ranks:
            core.rank_segments.append((inp.inp.path, inp.inp.file_rank, scan.changes, scanned))
        consumed = [0]
        path = inp.inp.path

        # (a small input is read whole by the reader: a hard-wrapped paste is joined there, paste.py)
        # (a pooled scan's chunks ramped up to its block size, as the workers' plan's: geometry.chunk_edges; a file
        # of PASTE_MAX or less is read by sources' reader, in even chunks, and so in the plan)
        plain = (open_plain(path, block_size, core.max_bytes, pool is not None)
                 if _size(path) > max(block_size, PASTE_MAX) else None)

        def make(notes, prog):
            if plain is not None:      # one read per block (geometry.py), the same blocks
                return plain.blocks(prog, TAIL_BYTES, core.max_bytes, notes, consumed, sink)
            return iter_blocks_with_tail(path, block_size, prog, TAIL_BYTES, core.max_bytes, notes, consumed, sink,
                                         paste=True)
        # a big local file is read ahead by a thread (prefetch.py); anything else as the scanner asks
        ahead = _size(path) > block_size and "://" not in path
        if ahead:
            from .prefetch import Prefetched  # (here: a small log's run starts no thread, loads no queue)
            blocks = Prefetched(make, core.notes, progress)
        else:
            blocks = make(core.notes, progress)
        head, last = b"", b""       # the input's first and last bytes: its job facts (jobfacts)
        at = 0                      # the input's bytes read before the block (scan.nbytes: scanned, as read)
        gaps = False                # (a block was read without_gaps: the next one's tail is, and it likely)
        try:
            for bi, (buf, lo) in enumerate(blocks):
                n = len(buf) - lo
                buf, lo = _gapless(buf, lo, gaps)
                last = buf                  # (the block before, and what the view parsed of it, let go first)
                view.reset(buf, lo)
                found = BlockFacts()        # (what the block's anchor pass tells beyond its hits)
                read, lo, prepared = _prepared(pool, path, bi, at, n, buf, lo, aset, scan.batchers, found, gaps)
                at += n
                if read is not buf:         # (its NUL runs left out: its tail as it was)
                    buf = last = read
                    gaps = True
                    view.rebase(buf)
                del read
                if bi == 0:
                    head = buf[lo:lo + EDGE_BYTES]
                scan.block(buf, lo, prepared, found)
                del prepared                # (not held while the next block is read and prepared)
        finally:
            if ahead:
                blocks.close()
        scanned[0] = consumed[0]
        if last:
            # (a buffer starts at a line's start, its tail's or its block's: its last EDGE_BYTES do when they are all
            # of it or follow a newline; issue 44's review: after a line longer than a block, the last block has no
            # tail, and its first line, the log's last dated one, was dropped as a partial line)
            whole = len(last) <= EDGE_BYTES or last[-EDGE_BYTES - 1:-EDGE_BYTES] == b"\n"
            core.facts.merge(facts_of(head, last[-EDGE_BYTES:], view.year, whole))
        return scan.lineno, at



def _start_pool(plan, aset: AnchorSet, batchers, k: int, rules) -> Optional["_Pool"]:
    """The workers, or None when none can be started (no process or pipe left to make: EAGAIN, ENOMEM,
    EMFILE): the scanner then prepares every block itself, with the same result."""
    try:
        return _Pool(plan, aset, batchers, k, rules)
    except OSError:
        return None


def _warm(k: int) -> Optional["regexwarm.Warmer"]:
    """A scan with K workers: what this run compiles is saved for the next when it exits; with workers to
    spare (prepare.PARSE_MIN_WORKERS: the scanner then waits on them), the regexes the last such run compiled
    are compiled while it does (regexwarm.py; with one or two, the scanner is as busy as they are: the
    thread would only take turns with it)."""
    regexwarm.save_at_exit()
    return regexwarm.Warmer().start() if k >= PARSE_MIN_WORKERS else None


def _close(pool: Optional["_Pool"], warmer: Optional["regexwarm.Warmer"], digest: Optional["InputsDigest"]) -> None:
    if pool is not None:
        pool.close()
    if warmer is not None:
        warmer.stop()
    if digest is not None:
        digest.close()


def _plan(all_paths: List[str], block_size: int, max_bytes: int, aset: Optional[AnchorSet] = None,
          batchers: Sequence[Tuple[Feeder, int]] = ()) -> Tuple[list, int, int]:
    """The plain inputs a pool's workers prepare, with their blocks (geometry.plain_inputs), the
    workers to start, and the block size: the one given (0: sources.BLOCK_SIZE), or for a pool
    one that gives every process several blocks (pool.pool_block_size).  Inputs under the pool's size
    get workers when dense in hits (_dense, with the anchor set ASET and the batch observers BATCHERS); big ones
    light in work one fewer from pool.READER_CORES cores on (_light: the scanner's reader thread's core)."""
    from ..inputs.sources import BLOCK_SIZE
    k0 = _Pool.jobs(all_paths)
    dense = light = False
    if not k0 and aset is not None:
        kd = _Pool.jobs(all_paths, dense=True)
        dense = kd > 0 and _dense(all_paths, aset, batchers)
        k0 = kd if dense else 0
    if not k0:
        return [], 0, block_size
    if not dense and aset is not None and _Pool.cores() >= READER_CORES and _light(all_paths, aset, batchers):
        light = True
        k0 = _Pool.jobs(all_paths, light=True)
    bs = block_size or pool_block_size(sum(_size(p) for p in all_paths), k0)
    plan = plain_inputs(all_paths, bs or BLOCK_SIZE, max_bytes, ramp=True)
    k = _Pool.jobs([p for p, _ in plan], dense=dense, light=light)
    return plan, k, (bs if k else block_size)


DENSE_SAMPLE = 128 << 10    # bytes read at each of DENSE_AT of an input to tell a dense one
DENSE_AT = (0.25, 0.5, 0.9)  # (not its start: the arguments' dump is dense in hits and records in every log)
DENSE_POOL_WORK = 16_000    # the work an input's densest sample promises in all that gives it workers: a hit line 8, a
#                             batch observer's record 1 (here, 2 cores, -j 4, best of 3: 4 MiB of a storm 0.70 -> 0.50
#                             s, 8 MiB of tracebacks 0.38 -> 0.27 s, 16 MiB of megatron's capture and step lines 0.39
#                             -> 0.32 s; 4 MiB of those, ~13,000: 0.18 s in-process, 0.21 s with workers; 16 MiB of
#                             the prod mix, a step record every 27 lines, ~3,400: 0.16 s either way)
DENSE_HIT_WORK = 8


LIGHT_WORK = 600            # the most work a MiB of an input light in work promises, its middle sample's (_light; the
#                             grid's shapes, 32 MiB each: the production mixes 0-303 -- a failure section in one sample
#                             1,157 --, the dense ones 1,235 (iteration lines of every rank) to 32,760 (a storm))
LIGHT_SAMPLED = 4           # the biggest inputs sampled to tell it (a directory of a job's rank files: a few tell)


def _dense(paths: Sequence[str], aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]]) -> bool:
    """Whether inputs too small for the pool's size hold enough work to be worth workers: samples of each
    (_samples), the work the densest promises in all (DENSE_POOL_WORK) enough.  An input that cannot be read is
    not."""
    got = _samples(paths, aset, batchers)
    return bool(got) and max(got) * sum(_size(p) for p in paths) >= DENSE_POOL_WORK


def _light(paths: Sequence[str], aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]]) -> bool:
    """Whether big inputs are light in work (the scanner's reader thread then wants a core of its own,
    pool.READER_CORES): the middle of the samples (_samples) of the LIGHT_SAMPLED biggest under LIGHT_WORK a MiB
    (the middle one: a failure's lines in one sample do not make a production log dense)."""
    got = sorted(_samples(sorted(paths, key=_size, reverse=True)[:LIGHT_SAMPLED], aset, batchers))
    return bool(got) and got[len(got) // 2] * (1 << 20) < LIGHT_WORK


def _samples(paths: Sequence[str], aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]]) -> List[float]:
    """The work per byte of samples of each of PATHS (DENSE_SAMPLE bytes at DENSE_AT of it, from a line's start)
    searched as a block is: its hit lines (DENSE_HIT_WORK each) and batch records (1 each).  An input that cannot be
    read gives none."""
    out: List[float] = []
    for path in paths:
        size = _size(path)
        if size <= 0:
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            for at in DENSE_AT:
                off = int(size * at)
                data = os.pread(fd, DENSE_SAMPLE + (4096 if off else 0), off)
                if off:             # (from the first line's start in it)
                    data = data[data.find(b"\n") + 1:]
                data = data[:data.rfind(b"\n") + 1]
                if data:
                    _, _, (hits, recs, _) = prepare_gapless(data, 0, aset, batchers)   # (as the scan reads it)
                    out.append((len(hits) * DENSE_HIT_WORK + sum(map(len, recs))) / len(data))
        except OSError:
            continue
        finally:
            os.close(fd)
    return out


def _digest(paths: Sequence[str], all_paths: List[str]) -> "InputsDigest":
    """The content hash of a recorded job's inputs (digest.py: hashlib only when one is recorded)."""
    from ..inputs.digest import InputsDigest
    return InputsDigest(paths, all_paths)


def _gapless(buf: bytes, lo: int, gaps: bool) -> Tuple[bytes, int]:
    """BUF (a block, its tail BUF[:LO] as read) read without_gaps, and its tail's length so, where GAPS (a block before
    was: the view's buffer before ends so; its lines are whole, each read by itself: one pass over the buffer, not a
    tail and a block joined); else BUF and LO."""
    if not gaps:
        return buf, lo
    return without_gaps(buf), len(without_gaps(buf[:lo])) if lo else 0


def _prepared(pool: Optional["_Pool"], path: str, bi: int, start: int, nbytes: int, buf: bytes, lo: int,
              aset: AnchorSet, batchers: Sequence[Tuple[Feeder, int]], facts: BlockFacts,
              gapless: bool = False) -> Tuple[bytes, int, tuple]:
    """(buf, lo, anchor hits, batch records and line count) of block BI (at offset START of the input, its bytes
    as read): a worker's, else made here (what its anchor pass tells beyond them in FACTS: a worker's year changes
    are its own, and its facts not known here; the lines it read normalised that hold a date, its).  A block with
    NUL runs, CRLF line ends or escapes is read without them (sources.without_gaps: prepare_gapless; a worker's says
    so): BUF then the block's so (its tail BUF[:LO], whole lines, as it was).  NBYTES: the block's length as read;
    GAPLESS: BUF is so already (_gapless)."""
    prepared = pool.get(path, bi, start, nbytes) if pool is not None else None
    if prepared is None:
        return prepare_gapless(buf, lo, aset, batchers, facts=facts)
    if prepared[18] and not gapless:
        buf = without_gaps(buf)       # (its tail is so already, whole lines: the rule is a line's)
    facts.found.update(range(len(aset.facts)))
    facts.normed.extend(at + lo for at in prepared[17])
    if lo:      # a worker's offsets are relative to the block
        (h, r, nl_, idx, done, parsed, timed, dated, deltas, bodies, changes, timed_n, intros, passable,
         timed_rt, plain, runs, normed, _gapped) = prepared
        prepared = ({k + lo: v for k, v in h.items()},
                    [x if o.batch else {k + lo: v for k, v in x.items()} for (o, _), x in zip(batchers, r)], nl_,
                    {k + lo: v for k, v in idx.items()}, {k + lo: v for k, v in done.items()},
                    parsed, timed, dated, deltas, bodies, changes, timed_n, intros, passable, timed_rt, plain, runs,
                    normed)
    # (offsets in the block: BlockView reads them so, and a batch observer's records, _Batch's BASE; from pre_lo;
    # a summary's are the records' order and lines in the block; the bodies' keys, the introducing lines', the
    # lines to pass by, the plain hit lines' and their runs', from lo; the timed lines' numbers are the block's)
    return buf, lo, prepared



def _safe(blocks):
    """Blocks of an input read again, stopping quietly where it cannot be read any more."""
    try:
        yield from blocks
    except InputError:
        return


def _by_parts(path: str, file_rank: Optional[int], changes: List[Tuple[int, int]], upto: int,
              out: Dict[int, Set[int]]) -> bool:
    """The ranks of an input of one attempt (CHANGES: its attempt from its start) read by processes side by side
    (reread.py), added to OUT's; False where the serial read must read them."""
    if len(changes) != 1 or changes[0][0] != 0 or "://" in path:
        return False
    from .reread import ranks_parallel
    got = ranks_parallel(path, file_rank, upto, _Pool.cores())
    if got is None:
        return False
    out.setdefault(changes[0][1], set()).update(got)
    return True


def _ranks_by_attempt(segments, seen: Dict[int, Set[int]]) -> Dict[int, Set[int]]:
    """Ranks per attempt of re-readable inputs: read them again (only as far as they were scanned:
    a file still being written has grown since), split at the attempt changes; a big input of one attempt by
    processes side by side (reread.py)."""
    out = {k: set(v) for k, v in seen.items()}
    for path, file_rank, changes, scanned in segments:
        if scanned[0] and not _by_parts(path, file_rank, changes, scanned[0], out):
            _serial_ranks(path, file_rank, changes, scanned[0], out)
    return out


def _serial_ranks(path: str, file_rank: Optional[int], changes: List[Tuple[int, int]], upto: int,
                  out: Dict[int, Set[int]]) -> None:
    """The ranks of PATH's first UPTO bytes (as read) read again in blocks, each attempt's (CHANGES) added to OUT's."""
    off = 0
    try:       # (as the scan read them: a paste's dressing taken off, its wrapped lines joined)
        blocks = (buf for buf, _ in iter_blocks_with_tail(path, max_bytes=upto, paste=True))
    except InputError:
        return
    for block in _safe(blocks):
        block = without_gaps(block)     # (as the scan read it: its offsets, NUL runs, CRs, colours left out)
        end = off + len(block)
        for i, (c_off, att) in enumerate(changes):
            c_end = changes[i + 1][0] if i + 1 < len(changes) else end
            lo, hi = max(c_off, off), min(c_end, end)
            if lo < hi:
                out.setdefault(att, set()).update(ranks_in(block, lo - off, hi - off, file_rank))
        off = end
