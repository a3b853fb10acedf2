"""The block driver over one input: feeds the lines of each block that wake an observer, in order."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import replace
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union, cast, overload

from ..caps import BLOCK_MAX_LINES
from ..inputs.ranks import ranks_in
from ..inputs.sources import (
    MAX_RAW,
    Input,
    Line,
    decode_line,
    make_line,
    normalise,
    parse_ts,
    reparse_in,
    updates_of,
)
from .blocks import Blocks
from .blockview import CACHE_KEEP, WALK_BACK, BlockView
from .forms import FailureForm, FailureForms
from .observer import Feeder, Observer
from .prepare import (
    ANCHOR_STRIDE,
    ANCHOR_TAG,
    DATED_UNKNOWN,
    PLAIN_ASCII,
    PLAIN_DASH,
    RULE_TAG,
    RUN_DASH,
    RUN_DEP,
    RUN_MIN,
    BlockFacts,
    Body,
    PlainRun,
    _batchers,
    run_of,
)
from .rules import Rules
from .state import Core, Event, InputState, Searched, _wrapper


class _InputScan:
    """The block driver over one input: feeds the lines of each block that wake an observer (an
    anchor hit, or an observer following every line) and records where the attempt changes."""

    def __init__(self, inp: InputState, core: Core, obs: List[Observer], rules_idx: int, view: BlockView):
        self.inp = inp
        self.core = core
        self.obs = obs
        self.rules_obs = obs[rules_idx]
        self.view = view
        # (a Feeder with nothing to follow -- the step log -- is asked nothing: a call a line saved)
        self.followers = [o for o in obs if type(o).following is not Observer.following
                          and not (isinstance(o, Feeder) and o.never_follows)]
        self.blocks_obs = next((o for o in obs if isinstance(o, Blocks)), None)
        self.forms_obs = next((o for o in obs if isinstance(o, FailureForms)), None)
        self.skippable = {id(o) for o in obs if o.skippable}    # observers a run of copies needs not feed
        self.obs_ids = [(id(o), o) for o in obs]                # (their ids, looked up for each line fed)
        self.batchers = _batchers(obs)
        self.file_rank = inp.inp.file_rank
        self.eager_ranks = inp.inp.path == "-"          # stdin cannot be read twice
        self.changes: List[Tuple[int, int]] = [(0, inp.current())]   # (stream offset, attempt from there)
        self.lineno = 0           # line number of the last line processed / passed
        self.nbytes = 0           # stream offset of the current block
        self.seg_start = 0        # buffer offset where the current attempt's lines start in this block
        self.seg_attempt = inp.current()
        self.dated: Optional[Tuple[int, float, str]] = None
        self.dated_next: List[Tuple[int, float, str]] = []
        self.passable: Dict[int, int] = {}      # a worker's lines to pass by (_worker_view)
        self.plain: Dict[int, int] = {}         # ... its plain hit lines (_worker_view, _plain_run)
        self.runs: Dict[int, PlainRun] = {}     # ... and runs of them (_worker_view, _plain_bulk)
        self.run_marks: List[Tuple[int, int]] = []     # ... their second lines' offsets in order (_restore_runs)
        self.run_firsts: List[int] = []                # ... and first lines' (_rest_of_run)
        self.run_mark = _NEVER
        self.plain_spec: Dict[int, Optional[_PlainSpec]] = {}   # what a run's tags wake, by id(tags) (_spec)

    def block(self, buf: bytes, lo: int, prepared: tuple, facts: Optional[BlockFacts] = None) -> None:  # noqa: C901
        """Scan buf[lo:] (buf[:lo] is the previous block's tail, for walking back).  PREPARED is
        prepare_block's (hits, batch records, line count; FACTS: what its anchor pass told beyond them, None when
        not known, prepare.BlockFacts), and from a pool worker also the line
        index of the hits (prepare.line_index)."""
        hits, recs_all, block_nl = prepared[:3]
        index: Optional[Dict[int, int]] = prepared[3] if len(prepared) > 3 else None
        self.searched: Dict[int, Searched] = prepared[4] if len(prepared) > 4 else {}
        # id(tag set of the hits), with the ids of the observers following if any -> what _woken makes of them
        # (the sets live as long as HITS, this block: their ids stay theirs)
        self.woken_of: Dict[object, Tuple[Set[int], Set[int], Optional[Dict[int, Set[int]]], List[Observer]]] = {}
        self._worker_view(prepared, lo)
        # the block's first dated line: its year told to the lines after it, fed or not (BlockView.first_dated)
        # (a pool worker's search for it, offsets in the block, prepared[7])
        normed = facts.normed if facts is not None else ()
        self.dated = (self.view.first_dated(lo, prepared[7] if len(prepared) > 7 else DATED_UNKNOWN, normed)
                      if self.view.buf is buf else None)
        # ... and the dated lines after it where the year changes (a worker's: prepared[10]), in order
        self.dated_next = (self.view.year_changes(lo, self.dated, prepared[10] if len(prepared) > 10 else None,
                                                  facts.found if facts is not None else None, normed)
                           if self.dated is not None else [])
        inp = self.inp
        followers = self.followers
        first = self.lineno + 1      # line number of the block's first line
        n = len(buf)
        # lines an observer parsed in one pass over the block (see prepare_block) are fed back
        # to it in line order, interleaved with the lines it gets through feed()
        # (a pool worker's summaries of the records, per batch observer: prepared[8])
        summaries = prepared[8] if len(prepared) > 8 and prepared[8] is not None else [None] * len(recs_all)
        # a pool worker's traceback bodies (prepare.tb_bodies), by offset in the block: prepared[9]
        bodies: Dict[int, Body] = prepared[9] if len(prepared) > 9 else {}
        # (a worker's batch records keep their offsets in the block, engine._prepared: from LO in the buffer)
        base = lo if index is not None else 0
        batches = [_Batch(o, recs, lo, first, inp.inp.label, self.view, summ, base)
                   for (o, _), recs, summ in zip(self.batchers, recs_all, summaries) if o.batch]
        def flush_before(upto: int) -> None:       # (BlockView.done: a dated line changes the year)
            for b in batches:
                b.flush(buf, upto)
        self.view.before_year = flush_before
        # records of lines an observer may follow (Feeder.records), by observer
        followed = {id(o): recs for (o, _), recs in zip(self.batchers, recs_all) if not o.batch and recs}
        starts = sorted(hits)
        hi_idx = 0
        pos = lo
        self.seg_start, self.seg_attempt = lo, inp.current()
        checks = [(o, o.following) for o in followers]      # (bound once a block: a look-up an observer a line)
        while pos < n:
            nxt = self.lineno + 1
            following = [o for o, f in checks if f(inp, nxt)]
            if following:
                start = pos
                if start >= self.run_mark:
                    self._restore_runs(buf, lo, start)
                tags = hits.get(start)
                after = self._taken(buf, lo, start, following, followed, bodies) if tags is None else None
                if after is not None:
                    pos = after
                    continue
            else:
                while hi_idx < len(starts) and starts[hi_idx] < pos:
                    hi_idx += 1
                if hi_idx >= len(starts):
                    break
                start = starts[hi_idx]
                if start >= self.run_mark:
                    self._restore_runs(buf, lo, start)
                # (pos: the start of line self.lineno + 1)
                self.lineno = first - 1 + index[start] if index is not None else self.lineno + buf.count(b"\n", pos,
                                                                                                         start)
                tags = hits[start]
                # (a run of plain hit lines a worker found: prepare.plain_hits)
                pos = self._plain_run(buf, lo, hits, starts, hi_idx, index, first) if start - lo in self.plain else 0
                if pos:
                    continue
            nl = buf.find(b"\n", start)
            end = nl if nl >= 0 else n
            skip = self._repeats(buf, lo, start, end, tags, following, batches) if nl >= 0 else 0
            if skip:                  # a run of identical error lines: its first `skip` only counted
                self.lineno += skip
                pos = start + skip * (end + 1 - start)
                continue
            pos = end + 1
            self.lineno += 1
            self._line(buf, lo, (start, end), tags, following, batches)
        self.lineno = first - 1 + block_nl
        self._end(buf, lo, batches)

    def _worker_view(self, prepared: tuple, lo: int) -> None:
        """What a pool worker read of the block buf[lo:] (offsets in it) that the view and the scanner look up."""
        view, n = self.view, len(prepared)
        # its parse of the hit lines (prepare.parse_hits), by offset in the block
        view.pre, view.pre_lo = (prepared[5] if n > 5 else {}), lo
        view.timed = prepared[6] if n > 6 else None
        # ... their line numbers in the block (prepared[11]) and the block's first line's number
        view.timed_n = prepared[11] if n > 11 else None
        view.pre_first = self.lineno + 1
        # ... the introducing line of each traceback it found (prepare.tb_intros), by offset from pre_lo
        view.intros = prepared[12] if n > 12 else {}
        # ... what its parse says of the timed lines (prepare.timed_ranks)
        view.timed_rt = prepared[14] if n > 14 else None
        # ... and the lines it says may be passed by (prepare.passable: offset in the block -> rank)
        self.passable = prepared[13] if n > 13 else {}
        # ... and the hit lines it says may be taken in a run (prepare.plain_hits: offset in the block -> flags)
        self.plain = prepared[15] if n > 15 else {}
        # ... and the runs of them it says may be taken whole (prepare.plain_runs: first line's offset -> run); what
        # it left out of its message of their lines but the first (prepare.strip_runs) is made again from a run when
        # the scan reaches its second line other than taking it whole (_restore_runs): where, in order
        self.runs = prepared[16] if n > 16 else {}
        self.run_marks = sorted((r[0][1] + lo, off) for off, r in self.runs.items())
        self.run_firsts = sorted(self.runs)
        self.run_mark = self.run_marks[0][0] if self.run_marks else _NEVER
        self.plain_spec = {}

    def _end(self, buf: bytes, lo: int, batches: List["_Batch"]) -> None:
        """The block buf[lo:] is scanned: the batch records left fed, the observers told (block_done)."""
        n = len(buf)
        while self.dated is not None:
            self._dated_passed()
        for b in batches:
            b.flush(buf, n)
        self.view.before_year = None         # (its closure holds the block: not past the block's end)
        for o in self.obs:
            o.block_done()
        if self.eager_ranks:
            self.core.ranks_seen.setdefault(self.seg_attempt, set()).update(
                ranks_in(buf, self.seg_start, n, self.file_rank))
        self.nbytes += n - lo

    def _taken(self, buf: bytes, lo: int, start: int, following: List[Observer],
               followed: Dict[int, Dict[int, tuple]], bodies: Dict[int, Body]) -> Optional[int]:
        """The line at START, no hit, that observers FOLLOWING follow, taken without a Line made: as its
        record (Feeder.records) or with the lines after it as a traceback's body (prepare.tb_bodies); the
        offset after the lines taken (self.lineno counted past them), or None when it is to be fed."""
        if followed and _took_record(following, followed, start):
            nl = buf.find(b"\n", start)
            self.lineno += 1
            return nl + 1 if nl >= 0 else len(buf)
        body = bodies.get(start - lo) if bodies else None
        if body is not None and self._take_body(start, body, following):
            return body[0] + lo
        if len(following) == 1 and following[0] is self.blocks_obs:
            return self._passed_by(buf, lo, start)
        return None

    def _passed_by(self, buf: bytes, lo: int, start: int) -> Optional[int]:
        """The line at START, no hit, that only the Blocks observer follows, taken without a Line made when all
        feeding it would do is close the blocks it passes (Blocks._close_passed; issue 44: in a log of handled
        tracebacks the line after each exception line was fed for that): a line a pool worker found passable
        (prepare.passable: no hit, a rank of its own, no time nor one a year could give it, no progress bar's
        updates, no ERROR or CRITICAL -- a logger's header, Blocks._error_header -- and a text Blocks opens no block
        with), its stream with no block open.  The offset after it (self.lineno counted), or None when it is to be
        fed."""
        rank = self.passable.get(start - lo)
        if rank is None:                    # (what the line holds: a pool worker's prepare.passable)
            return None
        view = self.view
        label = self.inp.inp.label
        st = self.core.streams.get((label, rank))
        if st is not None and st.block is not None:
            return None
        nl = buf.find(b"\n", start)
        end = nl if nl >= 0 else len(buf)
        while self.dated is not None and self.dated[0] < start:
            self._dated_passed()
        self.lineno += 1
        lineno = view.cur_lineno = self.lineno
        view.cur_off = start
        st = self.core.stream(label, rank)
        cast(Blocks, self.blocks_obs)._close_passed(label, lineno, st)
        view.passed(lineno, 1)
        self._attempt_at(buf, lo, start, self.inp.current())   # (a Line's attempt is its input's)
        return end + 1

    def _take_body(self, start: int, body: Body, following: List[Observer]) -> bool:
        """A traceback's body (a pool worker's, prepare.tb_bodies) starting at buffer offset START joins its
        open traceback at once (Blocks.take_body), when the Blocks observer alone follows the line and the
        traceback of the body's stream is open: the state line by line feeding would leave (the other
        observers, not following the first line, follow none of the others: none of them is fed)."""
        blocks = self.blocks_obs
        if len(following) != 1 or following[0] is not blocks or blocks is None:
            return False
        label = self.inp.inp.label
        st = self.core.streams.get((label, body[1]))
        if st is None or st.block is None or not st.in_tb:
            return False
        while self.dated is not None and self.dated[0] < start:
            self._dated_passed()
        texts = body[2]
        first = self.lineno + 1
        blocks.take_body(st, texts, label, first)
        self.view.passed(first, len(texts))
        self.lineno += len(texts)
        return True

    def _dated_passed(self) -> None:
        """The scan has passed the block's next dated line that tells a year (its first, or one where the year
        changes): its year is the scan's from there on."""
        at, ts, raw = cast("Tuple[int, float, str]", self.dated)   # (a string: no subscript made a call)
        self.dated = self.dated_next.pop(0) if self.dated_next else None
        self.view.learn_year(ts, raw, at)

    def _repeats(self, buf: bytes, lo: int, start: int, end: int, tags: Optional[Set[int]],
                 following: List[Observer], batches: List["_Batch"]) -> int:
        """How many lines from START on are skipped as repeats (0: none): the line is an error line
        identical to the one before it (that one opened its stream's open block, unexplained), and
        the run of identical lines it starts is longer than the error blocks kept at the end
        (Core.tail_blocks). Then each line of the run would only close the block of the line before
        it into a full ring of kept blocks, pushing the oldest out: the first lines of the run are
        counted (Core.blocks_dropped) and the last RUN_KEEP ones scanned, which leaves the scan's
        result as it would be line by line (the views read back through the buffer itself, so the
        skipped lines are still there for a look back)."""
        x = buf[start:end + 1]
        size = len(x)
        if start - size < lo or buf[start - size:start] != x:
            return 0
        core = self.core
        tail = core.tail_blocks
        blocks = self.blocks_obs
        if tail is None or tail.maxlen is None or len(tail) < tail.maxlen or blocks is None:
            return 0
        if not buf.startswith(x * (tail.maxlen + 2), start):     # not a long enough run (cheap test first)
            return 0
        if any(o is not blocks for o in following):
            return 0
        woken, rule_ids, _ = _woken(tags, following, self.obs, self.rules_obs)
        woken = {w for w in woken if w not in self.skippable}
        if rule_ids or woken != {id(blocks)} or any(b.has(start) for b in batches):
            return 0
        ln = self.view.line_at(start, self.lineno + 1)
        st = core.streams.get((ln.source, ln.rank))
        b = st.block if st is not None else None
        period = blocks.period(ln)
        # the stream's open block: the line before's own (period 1), or a full block of copies (period
        # BLOCK_MAX_LINES), unexplained, not a traceback, kept when closed (no launcher wrapper line)
        if (period == 0 or b is None or st is None or st.in_tb or st.block_matched or b.end != self.lineno
                or b.lines != [ln.text] * (1 if period == 1 else BLOCK_MAX_LINES) or _wrapper(ln.text)):
            return 0
        # no other stream of the input has a block open (one the skipped lines could close, or that
        # would be closed among them: the kept blocks' order would differ)
        if any(k != (ln.source, ln.rank) and core.streams[k].block is not None
               for k in blocks.open.get(self.inp.inp.label, ())):
            return 0
        keep = (tail.maxlen + 2) * period
        # a skip needs at least keep + period copies: when the last of them is not there, none is
        # skipped (the lines left of a run after its skip get here one by one: no count of them each)
        if not buf.startswith(x, start + (keep + period - 1) * size):
            return 0
        count = _copies(buf, x, start)
        skip = (count - keep) // period * period if count > keep else 0
        if skip:
            core.blocks_dropped += skip // period
            # the last skipped line as the line by line scan would have it (a continuation line takes
            # the rank of the line before it: the next line's look back stops here)
            self.view.cache[start + (skip - 1) * size] = replace(ln, lineno=self.lineno + skip)
        return skip

    def _line(self, buf: bytes, lo: int, span: Tuple[int, int], tags: Optional[Set[int]],
              following: List[Observer], batches: List["_Batch"]) -> None:
        """The line at SPAN of BUF (line number self.lineno): fed to the observers it wakes."""
        while self.dated is not None and self.dated[0] < span[0]:
            self._dated_passed()
        # lines with equal tags share one set (anchors._put; a worker's pickle keeps that): what it wakes is worked
        # out once a set a block, and the observers following (a line no anchor hits: tags None) -- the sets live
        # as long as the block's hits, their ids stay theirs
        key = (id(tags), *map(id, following)) if following else id(tags)
        w = self.woken_of.get(key)
        if w is None:
            woken, rule_ids, anchored = _woken(tags, following, self.obs, self.rules_obs)
            w = self.woken_of[key] = (woken, rule_ids, anchored, [o for i, o in self.obs_ids if i in woken])
        woken, rule_ids, anchored, fed = w
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
        _feed_segments(ln, buf, span, inp.seq_base + lineno, inp, self.core, fed, view, rule_ids,
                       self.searched.get(start), anchored)
        att = inp.attempt(ln)
        if att != self.seg_attempt:
            self._attempt_at(buf, lo, start, att)
            if ln.rank is not None:     # (its own, or the line's before it that it continues: sources.continues,
                self.core.ranks_seen.setdefault(att, set()).add(ln.rank)   # which ranks_in does not read)

    def _spec(self, tags: Set[int]) -> Optional["_PlainSpec"]:
        """What a plain hit line with the tags TAGS wakes, when no observer follows the block, if a run may
        take it (_plain_run): the failure forms' `tail` form that alone is tried on it and their observer (or
        None, None: the forms are not woken), the Blocks observer if woken, and the rules whose literals it holds
        -- each with no context to wait for -- by index, in the order Rules.feed tries them; None when the line
        wakes another observer, or more than one form (worked out once a set of tags a block)."""
        key = id(tags)
        if key not in self.plain_spec:
            self.plain_spec[key] = self._spec_of(tags)
        return self.plain_spec[key]

    def _spec_of(self, tags: Set[int]) -> Optional["_PlainSpec"]:
        woken, rule_ids, anchored = _woken(tags, [], self.obs, self.rules_obs)
        rules_obs = cast(Rules, self.rules_obs)
        rules = {i: rules_obs.rules[i] for i in sorted(rule_ids)}
        forms, blocks = self.forms_obs, self.blocks_obs
        if not rules or woken - {id(rules_obs), id(forms), id(blocks)} or any(r.context for _, r in rules.values()):
            return None
        woke_blocks = blocks if blocks is not None and id(blocks) in woken else None
        if forms is None or id(forms) not in woken:
            return None, None, woke_blocks, rules
        hit = anchored.get(id(forms)) if anchored is not None else None
        if hit is None or len(hit) != 1:
            return None
        return forms.forms[next(iter(hit))], forms, woke_blocks, rules

    def _plain_run(self, buf: bytes, lo: int, hits: Dict[int, Set[int]], starts: List[int], i: int,
                   index: Optional[Dict[int, int]], first: int) -> int:
        """Take the hit lines from STARTS[I] on that a pool worker found plain (prepare.plain_hits) as a run,
        each doing what feeding it would do, with no Line made for it but for the matches kept and the lines a
        look back may read (issue 44: a storm of one message on every rank fed each line through every
        observer, ~13 us of the scanner's CPU a line).  A line of the run has the tags of the first (what it
        wakes was worked out once: _spec) and, with no observer following the block (none starts to: the run
        opens no block, waits for no context), the same as feeding it:
        - the failure forms: it waits for its `tail` form (FailureForms.pend) -- the form's first hit of the
          attempt is kept and the line has its own time;
        - Blocks: it closes the blocks it passes (the first line: the others find none) and opens none;
        - Rules: each rule the worker's search matched (its hash the text's; no search slow, timed out or
          skipped) that is not switched off counts it, kept or dropped (Core.admit_of), as Rules._take with
          CONTEXT_MATCHES matches given context already;
        - its stream's time, the view's times per rank, no year learnt (no `-` in its first 40 characters, or a
          time in the year known).
        The run stops at the first line that is not so, or that a dated line comes before.  The offset after
        the run (self.lineno its last line's number), or 0 when no line was taken."""
        spec = self._spec(hits[starts[i]])
        inp = self.inp
        if (spec is None or index is None or not cast(Rules, self.rules_obs).context_spent()
                or inp.current() != self.seg_attempt):
            return 0
        form, forms, _, _ = spec
        key = forms.deferring(cast(FailureForm, form), inp.current()) if forms is not None else None
        if forms is not None and key is None:
            return 0
        seen: Deque[_Seen] = deque(maxlen=RUN_SEEN)        # (the lines a look back may read)
        run = self.runs.get(starts[i] - lo)
        after = self._plain_bulk(buf, lo, starts, i, index, first, spec, key, seen, run) if run is not None else 0
        if after:
            marks = self.run_marks      # (taken whole: nothing of it to make again)
            if marks and marks[0][1] == starts[i] - lo:
                marks.pop(0)
                self.run_mark = marks[0][0] if marks else _NEVER
        else:
            if run is not None:
                self._restore_runs(buf, lo, run[0][1] + lo)
            else:           # (within a run the scan came into otherwise, its first line followed: the rest whole)
                rest = self._rest_of_run(buf, lo, starts[i] - lo)
                after = self._plain_bulk(buf, lo, starts, i, index, first, spec, key, seen, rest) if rest else 0
            if not after:
                after = self._plain_lines(buf, lo, hits, starts, i, index, first, spec, key, seen)
        if not after:
            return 0
        # the run's last lines as line_at would have kept them (a later look back reads them: their times as read now)
        view = self.view
        cache = view.cache
        label, attempt = inp.inp.label, inp.inp.attempt
        for s, lineno, rank, ts, text, norm in seen:
            cache[s] = Line(text, label, lineno, rank, ts, norm, attempt)
        self.lineno = view.cur_lineno = seen[-1][1]
        view.cur_off = seen[-1][0]
        if len(cache) > 2 * CACHE_KEEP + view._cache_floor:
            view._prune()
        return after

    def _plain_lines(self, buf: bytes, lo: int, hits: Dict[int, Set[int]], starts: List[int], i: int,  # noqa: C901
                     index: Dict[int, int], first: int, spec: "_PlainSpec", key: Optional[Tuple[str, int]],
                     seen: Deque["_Seen"]) -> int:
        """_plain_run's lines (a hot loop, one frame): the offset after the last taken, 0 when none was."""
        core, view, inp = self.core, self.view, self.inp
        form, forms, blocks, rules = spec
        tags = hits[starts[i]]
        group = inp.current()
        pend = forms.pend if forms is not None and key is not None else None
        pkey, pform = cast(Tuple[str, int], key), cast(FailureForm, form)     # (read only with PEND)
        raw = form is not None and form.raw
        label, attempt, seq_base = inp.inp.label, inp.inp.attempt, inp.seq_base
        plain, pre, searched, streams, runs = self.plain, view.pre, self.searched, core.streams, self.runs
        counted = cast(Rules, self.rules_obs).counted
        year = view.year
        reparse = reparse_in(year, True)      # (a time that depends on the year is parsed again in it)
        ys0, ys1 = view._year_span
        dated_at = self.dated[0] if self.dated is not None else len(buf)
        ts_rank = view._ts_rank
        disabled = cast(Rules, self.rules_obs).disabled
        n = len(buf)
        j = i
        after = 0
        while j < len(starts):
            s = starts[j]
            flags = plain.get(s - lo)
            if flags is None or hits[s] is not tags or dated_at < s or (j > i and s - lo in runs):
                break       # (a worker's run from here: _plain_run tries it whole)
            p = pre.get(s - lo)
            if p is None:
                break
            cut, rank, ts, dep = p
            nl = buf.find(b"\n", s)
            end = nl if nl >= 0 else n
            norm = (buf[s:end].decode("ascii") if flags & PLAIN_ASCII
                    else normalise(decode_line(buf[s:min(end, s + MAX_RAW)])))
            if dep and reparse:
                ts = parse_ts(norm, year)
            if rank is None or ts is None or (flags & PLAIN_DASH and not ys0 <= ts < ys1):
                break
            text = norm[cut:]
            done = searched.get(s)
            if done is None or done[0] != hash(text) or done[2] or done[3]:
                break
            st = streams.get((label, rank))
            if st is not None and st.block is not None:
                break
            lineno = first + index[s]
            seq = seq_base + lineno
            # (as fed: the failure forms, Blocks, Rules, in their order; then the view)
            if st is None:
                st = core.stream(label, rank)
            st.last_ts = ts
            if pend is not None:
                pend(pkey, (pform, label, lineno, rank, text, seq, ts, (norm or text)[:2000] if raw else text[:2000]))
            if after == 0 and blocks is not None and blocks.open.get(label):
                blocks._close_passed(label, lineno, st)
            matched = done[1] if len(done[1]) < 2 else sorted(done[1])
            hit = False
            for k in matched:
                r = rules.get(k)
                if r is None or id(r[1]) in disabled:
                    continue
                hit = True
                counted(r[0], r[1], rank, text, ts, seq, group,
                        lambda: Line(text, label, lineno, rank, ts, norm, attempt))     # noqa: B023 - called at once
            if hit:
                st.block_matched = True
            ts_rank[rank] = ts
            if lineno == view._ts_from:
                view._ts_from += 1
            seen.append((s, lineno, rank, ts, text, norm))
            after = end + 1
            j += 1
        return after

    def _rest_of_run(self, buf: bytes, lo: int, at: int) -> Optional[PlainRun]:
        """The lines of a worker's run (prepare.plain_runs) from its line at offset AT (not its first) on, as a
        run of their own (prepare.run_of), when RUN_MIN or more."""
        firsts = self.run_firsts
        j = bisect_right(firsts, at) - 1
        if j < 0:
            return None
        run = self.runs[firsts[j]]
        offs = run[0]
        k = bisect_left(offs, at)
        if k >= len(offs) or offs[k] != at or len(offs) - k < RUN_MIN:
            return None
        _, tstarts, ends, ranks, times, idxs, _, _, _, _, flags, hashes = run
        return run_of(buf, lo, offs[k:], tstarts[k:], ends[k:], ranks[k:], times[k:], idxs[k:], flags[k:], hashes[k:])

    def _restore_runs(self, buf: bytes, lo: int, upto: int) -> None:
        """What the worker left out of its message of the runs whose second line is at UPTO or before (the scan
        reached it other than taking the run whole) made again from the runs: their lines' searches, parses and
        plain flags as the worker made them (prepare.strip_runs)."""
        pre, plain, searched = self.view.pre, self.plain, self.searched
        marks = self.run_marks
        while marks and marks[0][0] <= upto:
            _, off0 = marks.pop(0)
            offs, tstarts, ends, ranks, times, _, _, _, _, _, flags, hashes = self.runs[off0]
            matched = searched[off0 + lo][1]
            for k in range(1, len(offs)):
                s, f = offs[k], flags[k]
                pre[s] = (tstarts[k] - s, ranks[k], times[k], bool(f & RUN_DEP))
                plain[s] = PLAIN_ASCII | (PLAIN_DASH if f & RUN_DASH else 0)
                searched[s + lo] = (hashes[k], matched, (), ())
        self.run_mark = marks[0][0] if marks else _NEVER

    def _plain_bulk(self, buf: bytes, lo: int, starts: List[int], i: int, index: Dict[int, int],
                    first: int, spec: "_PlainSpec", key: Optional[Tuple[str, int]], seen: Deque["_Seen"],
                    run: PlainRun) -> int:
        """The run of plain hit lines a worker found from STARTS[I] on (prepare.plain_runs) taken whole, as
        _plain_lines would take it line by line, when nothing of the scanner's own state stops it before its end
        (_bulk_rules).  Its lines' effects, each in bulk: the streams' and the view's last times per rank
        (_bulk_times), the lines waiting for the form (FailureForms.pend_run: made only where tried), the matches
        kept per quota key and the others counted (Core.admit_run).  The offset after the run, or 0 when it is not
        taken so (nothing changed)."""
        got = self._bulk_rules(buf, lo, starts, i, spec, run)
        if got is None:
            return 0
        enabled, quota = got
        offs, tstarts, ends, ranks, times, _, _, _, _, _, _, hashes = run
        m = len(offs)
        form, forms, _, _ = spec
        inp = self.inp
        label, attempt, seq_base = inp.inp.label, inp.inp.attempt, inp.seq_base
        group = inp.current()
        linenos = self._bulk_times(spec, run, first, bool(enabled))
        if forms is not None and key is not None:
            raw = cast(FailureForm, form).raw

            def item(k: int) -> Any:
                norm = buf[offs[k] + lo:ends[k] + lo].decode("ascii")
                text = norm[tstarts[k] - offs[k]:]
                return (form, label, linenos[k], ranks[k], text, seq_base + linenos[k], times[k],
                        (norm if raw else text)[:2000])
            forms.pend_run(key, m, item)
        if enabled:
            def texts() -> List[str]:       # (made when the lines counted need them: Core.admit_run)
                cuts = (map(slice, tstarts, ends) if not lo else
                        map(slice, map(lo.__add__, tstarts), map(lo.__add__, ends)))
                return list(map(bytes.decode, map(buf.__getitem__, cuts)))

            def line_at(k: int) -> Tuple[Line, int, float]:
                ln = linenos[k]
                norm = buf[offs[k] + lo:ends[k] + lo].decode("ascii")
                return (Line(norm[tstarts[k] - offs[k]:], label, ln, ranks[k], times[k], norm, attempt), seq_base + ln,
                        times[k])
            pat, rule = enabled[0]
            cast(Rules, self.rules_obs).counted_run(pat, rule, cast(list, quota), ranks, texts, line_at, group, hashes)
        for k in range(max(0, m - RUN_SEEN), m):
            norm = buf[offs[k] + lo:ends[k] + lo].decode("ascii")
            seen.append((offs[k] + lo, linenos[k], ranks[k], times[k], norm[tstarts[k] - offs[k]:], norm))
        return ends[-1] + lo + 1

    def _bulk_rules(self, buf: bytes, lo: int, starts: List[int], i: int, spec: "_PlainSpec",
                    run: PlainRun) -> Optional[Tuple[List[Tuple[Any, Any]], Optional[list]]]:
        """(the rules counting RUN's lines -- one at most --, Core.run_quota's plan) when _plain_bulk may take
        RUN whole: it is the lines from STARTS[I] on, no dated line comes before its last (its year), its dated
        lines' times are in the year known, none of its times is read again in the year known, no stream of its
        ranks has a block open, and the matches kept in all are not reached within it; else None."""
        offs, _, ends, _, _, _, last, dash, keys, dep, _, _ = run
        m = len(offs)
        view = self.view
        s_last, e_last = offs[-1] + lo, ends[-1] + lo
        nl = buf.find(b"\n", s_last)
        if (i + m > len(starts) or starts[i + m - 1] != s_last or (nl if nl >= 0 else len(buf)) != e_last
                or (self.dated is not None and self.dated[0] < s_last)
                or (dash is not None and not view._year_span[0] <= dash[0] <= dash[1] < view._year_span[1])
                or (dep and reparse_in(view.year, True))):
            return None
        done = self.searched.get(offs[0] + lo)
        if done is None:
            return None
        rules, disabled = spec[3], cast(Rules, self.rules_obs).disabled
        enabled = [r for k in (done[1] if len(done[1]) < 2 else sorted(done[1]))
                   for r in (rules.get(k),) if r is not None and id(r[1]) not in disabled]
        label, streams = self.inp.inp.label, self.core.streams
        if len(enabled) > 1 or any(st.block is not None for st in (streams.get((label, r)) for r in last)
                                   if st is not None):
            return None
        quota = self.core.run_quota(enabled[0][1], keys) if enabled else None
        return None if enabled and quota is None else (enabled, quota)

    def _bulk_times(self, spec: "_PlainSpec", run: PlainRun, first: int, matched: bool) -> List[int]:
        """A run taken whole (_plain_bulk): its ranks' streams (made in the order of their first lines), their last
        times and whether a rule matched in them, the blocks its first line passes closed, the view's times per
        rank and its first line of unknown time.  The run's line numbers."""
        _, _, _, ranks, times, idxs, last, _, _, _, _, _ = run
        core, view = self.core, self.view
        blocks = spec[2]
        label, streams = self.inp.inp.label, core.streams
        for r in last:
            if (label, r) not in streams:
                core.stream(label, r)
        st0 = streams[(label, ranks[0])]
        st0.last_ts = times[0]
        if blocks is not None and blocks.open.get(label):
            blocks._close_passed(label, first + idxs[0], st0)
        for r, ts in last.items():
            st = streams[(label, r)]
            st.last_ts = ts
            if matched:
                st.block_matched = True
        view._ts_rank.update(cast(Dict[Optional[int], float], last))
        linenos = [first + x for x in idxs]
        view.timed_through(linenos)
        return linenos

    def _attempt_at(self, buf: bytes, lo: int, start: int, att: int) -> None:
        """The line at START fed is of attempt ATT: a restart when another than the last one's."""
        if att != self.seg_attempt:          # a restart: the ranks seen so far belong to the attempt before
            if self.eager_ranks:
                self.core.ranks_seen.setdefault(self.seg_attempt, set()).update(
                    ranks_in(buf, self.seg_start, start, self.file_rank))
            self.changes.append((self.nbytes + start - lo, att))
            self.seg_start, self.seg_attempt = start, att



# The lines of a run taken (_plain_run) put in the view's cache, its last ones: a look back from a later line reads
# WALK_BACK lines at most (BlockView._back, _times_back), and the rank of a line it reads is looked for further back
# only through lines of no rank of their own (line_at) -- a run's lines each have one, so such a search stops at
# the run's last line.  Its lines further back than WALK_BACK + 1 from the line after it are never read again (the
# view keeps CACHE_KEEP lines for the ranks of lines of no rank; a storm's runs made ~860 Lines each, ~460 read by
# nothing: issue 44, the scanner's work a run).  A rule's context look back (BlockView.newest_before) reads up to its
# window, caps.MAX_WINDOW lines, but only their text, which a line read again has as it had: it reads them anew.
RUN_SEEN = WALK_BACK + 2
_NEVER = 1 << 62      # (an offset no block reaches: no run's line to make again)
# what a run of plain hit lines with one set of tags wakes (_InputScan._spec): the `tail` form tried on them and the
# failure forms' observer (or None, None), the Blocks observer (or None), the rules by index (pattern, rule)
# a line of such a run that a look back may read: (offset, line number, rank, time, text, normalised text)
_Seen = Tuple[int, int, int, float, str, str]
_PlainSpec = Tuple[Optional[FailureForm], Optional[FailureForms], Optional[Blocks], Dict[int, Tuple[Any, Any]]]


def _took_record(following: List[Observer], followed: Dict[int, Dict[int, tuple]], start: int) -> bool:
    """Whether the one observer following the line at START took its record (Feeder.records)."""
    if len(following) != 1:
        return False
    rec = followed.get(id(following[0]), {}).get(start)
    return rec is not None and bool(cast(Feeder, following[0]).obj.feed_follow(rec))


def _woken(tags: Optional[Set[int]], following: List[Observer], obs: List[Observer],
           rules_obs: Observer) -> Tuple[Set[int], Set[int], Optional[Dict[int, Set[int]]]]:
    """ids of the observers a line wakes (those following a block, those its anchors hit), the
    indexes of the rules whose literals it holds, and per observer that asks (Observer.per_anchor)
    the indexes of its anchors that hit (None when none does; an observer following the line gets
    no entry: any of its anchors may hold)."""
    woken: Set[int] = set(id(o) for o in following)
    rule_ids: Set[int] = set()
    anchored: Optional[Dict[int, Set[int]]] = None
    if tags:
        n_obs = len(obs)
        for t in tags:
            if t >= ANCHOR_TAG:
                o = obs[(t - ANCHOR_TAG) // ANCHOR_STRIDE]
                if o in following:
                    woken.add(id(o))
                    continue
                if anchored is None:
                    anchored = {}
                anchored.setdefault(id(o), set()).add((t - ANCHOR_TAG) % ANCHOR_STRIDE)
                woken.add(id(o))
            elif t >= RULE_TAG:
                rule_ids.add(t - RULE_TAG)
            elif 0 <= t < n_obs:
                woken.add(id(obs[t]))
        if rule_ids:
            woken.add(id(rules_obs))
    return woken, rule_ids, anchored


def _feed_segments(ln: Line, buf: bytes, span: Tuple[int, int], seq: int, inp: InputState, core: Core,
                   fed: List[Observer], view: "BlockView", rule_ids: Set[int],
                   searched: Optional[Searched] = None, anchored: Optional[Dict[int, Set[int]]] = None) -> None:
    """Feed the line at SPAN of BUF (each update of a progress bar line) to the woken observers FED, in
    their order (SEARCHED: the rule searches a pool worker made for the line)."""
    # (a line with no carriage return is one line: _segments not asked)
    segs = [ln] if buf.find(b"\r", span[0], span[1]) < 0 else _segments(ln, buf, span[0], span[1], inp.inp, view.year)
    for seg_line in segs:
        st = core.stream(seg_line.source, seg_line.rank)
        if seg_line.ts is not None:
            st.last_ts = seg_line.ts
        ev = Event(seq, st, inp, view, rule_ids, searched, anchored)
        for o in fed:
            o.feed(seg_line, ev)
        view.done(seg_line, st)


class _Batch:
    """Records a batch observer parsed from one block, fed back in line order; a record's line number is
    counted only when the observer asks for it.  A pool worker's records keep their offsets in the block
    (BASE: the block's start in the buffer, added when one is read; the scanner's own: BASE 0): a dense log's
    tens of thousands of records a block were each moved to the buffer's offsets, and listed again to be fed,
    where a run the worker summarised is merged whole (_Run: listed only when read)."""

    def __init__(self, obs: Feeder, recs: Dict[int, tuple], lo: int, lineno: int, label: str,
                 view: BlockView, summary: Optional[Dict[int, Tuple[int, Any]]] = None, base: int = 0):
        self.obs = obs
        self.recs = recs
        self.base = base
        self.summary = summary    # a pool worker's summaries of runs of the records (Feeder.summarises)
        self.first = lineno
        self.label = label
        self.view = view          # (its year as the lines fed before a record left it)
        self.keys = sorted(recs)
        self.gone: List[int] = []  # records dropped (drop), by their key
        self.i = 0
        self.off = lo             # a line start in the buffer ...
        self.ln = lineno          # ... and its line number

    def lineno(self, buf: bytes, at: int) -> int:
        self.ln += buf.count(b"\n", self.off, at)
        self.off = at
        return self.ln

    def flush(self, buf: bytes, upto: int) -> None:
        """Feed the records of the lines before buffer offset `upto`."""
        keys, recs, base = self.keys, self.recs, self.base
        i = self.i
        j = bisect_left(keys, upto - base, i)       # (a look per record was 45k len() calls in a dense 32 MiB)
        if j == i:
            return
        self.i = j
        view = self.view
        lineno_at = lambda at: self.lineno(buf, at)      # noqa: E731
        line_at = lambda at: view.line_at(at, self.lineno(buf, at))     # noqa: E731
        run = self.summary.get(i) if self.summary is not None else None
        if run is not None and run[0] == j and not any(keys[i] <= g <= keys[j - 1] for g in self.gone):
            # a run of records the worker summarised, fed at once (as it cut them: at the lines fed
            # through feed(); no year told in between, none of them fed through feed())
            self.obs.obj.feed_records(buf, _Run(keys, recs, base, i, j), self.label, lineno_at, view.year, line_at,
                                      deltas=run[1], first_lineno=self.first)
            return
        items = [(at + base, recs[at]) for at in keys[i:j] if at in recs]
        self.obs.obj.feed_records(buf, items, self.label, lineno_at, view.year, line_at)

    def has(self, at: int) -> bool:
        """The line at buffer offset `at` has a record (not fed yet)."""
        return at - self.base in self.recs

    def drop(self, at: int) -> None:
        """The line at buffer offset `at` went through feed(): forget its record."""
        if self.recs.pop(at - self.base, _ABSENT) is not _ABSENT:
            self.gone.append(at - self.base)


_ABSENT = object()


class _Run(Sequence[Tuple[int, Any]]):
    """The records KEYS[I:J] of a batch, as (buffer offset, record) pairs, listed only when read: a run a pool
    worker summarised is merged whole (StepLog._merge reads its length), its records read only when replayed."""
    __slots__ = ("keys", "recs", "base", "i", "j", "_all")

    def __init__(self, keys: List[int], recs: Dict[int, Any], base: int, i: int, j: int):
        self.keys, self.recs, self.base, self.i, self.j = keys, recs, base, i, j
        self._all: Optional[List[Tuple[int, Any]]] = None

    def __len__(self) -> int:
        return self.j - self.i

    def _list(self, keys: List[int]) -> List[Tuple[int, Any]]:
        recs, base = self.recs, self.base
        return [(at + base, recs[at]) for at in keys]

    @overload
    def __getitem__(self, x: int) -> Tuple[int, Any]: ...

    @overload
    def __getitem__(self, x: slice) -> List[Tuple[int, Any]]: ...

    def __getitem__(self, x: Union[int, slice]) -> Union[Tuple[int, Any], List[Tuple[int, Any]]]:
        if self._all is None and isinstance(x, slice):      # (a part: only its records listed)
            return self._list(self.keys[self.i:self.j][x])
        if self._all is None:
            self._all = self._list(self.keys[self.i:self.j])
        return self._all[x]

    def __iter__(self) -> Iterator[Tuple[int, Any]]:
        if self._all is None:
            self._all = self._list(self.keys[self.i:self.j])
        return iter(self._all)



def _segments(ln: Line, buf: bytes, start: int, end: int, inp: Input, year: Optional[int]) -> List[Line]:
    """A progress bar written to a file ("\\r"-separated updates) holds one step record per update."""
    segs = updates_of(buf[start:min(end, start + MAX_RAW)])
    if segs is None:
        return [ln]
    return [make_line(seg, inp.label, ln.lineno, inp.file_rank, year, inp.attempt) for seg in segs]


def _copies(buf: bytes, x: bytes, start: int) -> int:
    """How many copies of X follow each other in BUF from START on (64 a comparison, then one by one)."""
    size = len(x)
    count = 0
    at = start
    many = x * 64
    while buf.startswith(many, at):
        at += 64 * size
        count += 64
    while buf.startswith(x, at):
        at += size
        count += 1
    return count
