"""Scan state the observers share: one Stream per (input, rank), one InputState per input, the
line driver's View (ring buffers), the Event a driver hands an observer, and Core (what the core
observers build: matches, blocks, restarts, ranks)."""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import field
from itertools import compress, repeat
from typing import Callable, Deque, Dict, Hashable, Iterable, List, Optional, Sequence, Set, Tuple, Union

from ..inputs.sources import (
    Input,
    Line,
)
from ..match.rx import DIGITS as DIGITS  # noqa: F401 - (the mask, read here as state.DIGITS)
from ..match.rx import TextMemo, Timeouts, lazy, search
from ..record import record
from .jobfacts import LogFacts
from .results import ErrorBlock, LauncherExit, Match, StreamKey

# A Python traceback frame line; the next line is source code, not a message.
_FRAME = lazy(r'^\s*File "[^"]*", line \d+')
_WRAPPER = lazy(r"ChildFailedError|elastic/multiprocessing|torch\.distributed\.elastic|^\s*(?:time|host|rank|exitcode|error_file|traceback)\s+:")  # noqa: E501 - a regex reads best on one line
_wrapper = TextMemo(lambda text: search(_WRAPPER, text))
CONTEXT_LINES = 3          # lines of context kept before / after a match (for the report)
MATCHES_PER_KEY = 50       # matches kept per (rule, rank, message up to its digits)
MAX_MATCHES = 20_000       # matches kept in all; the rest are counted (ScanResult.dropped)
MAX_DROPPED_KEYS = 10_000  # distinct dropped messages counted apart; the rest per (pattern, rank)


@record
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


@record
class InputState:
    inp: Input
    restarts: int = 0
    kinds: Set[str] = field(default_factory=set)       # attempt-start banners seen in this attempt
    seq_base: int = 0

    def attempt(self, line: Line) -> int:
        return self.restarts if line.attempt is None else line.attempt

    def current(self) -> int:
        return self.restarts if self.inp.attempt is None else self.inp.attempt


INTRO_TEXT = 300           # characters of a traceback's introducing line its block keeps (ErrorBlock.intro)


class View:
    """Context around the current line: the line driver keeps ring buffers, the block driver
    walks back through the block (see BlockView)."""

    def __init__(self, window: int):
        self.window = window
        self.by_source: Dict[str, Deque[Line]] = {}
        # per (input, key): the lowest line number not looked at yet, and the newest line that passed
        self._looked: Dict[Tuple[str, Hashable], Tuple[int, Optional[Line]]] = {}

    def last_ts(self, line: Line, st: Stream) -> Optional[float]:
        return st.last_ts

    def after_frame(self, line: Line, st: Stream) -> bool:
        return st.after_frame

    def before(self, line: Line, st: Stream) -> List[Line]:
        return list(st.recent)

    def newest_of_rank(self, line: Line, n: int) -> Optional[Line]:
        """The newest of the N lines of LINE's input before it that is of LINE's rank (None: none is)."""
        d = self.by_source.get(line.source)
        return next((x for x in reversed(list(d)[-n:]) if x.rank == line.rank), None) if d else None

    def intro_of(self, line: Line, n: int) -> str:
        """The text (its first INTRO_TEXT characters) of newest_of_rank(LINE, N), "" when none is: the line
        introducing a traceback (Blocks._traceback_start)."""
        prev = self.newest_of_rank(line, n)
        return prev.text[:INTRO_TEXT] if prev is not None else ""

    def newest_before(self, line: Line, n: int, key: Hashable, test: Callable[[Line], bool]) -> Optional[Line]:
        """The newest of the N lines of LINE's input before it that pass TEST (KEY names the test:
        the block driver remembers what it looked at per key), or None.  Amortised O(1) a call per
        key, as BlockView's: a look back stops at the lines an earlier call with KEY looked at (the
        newest of them that passed is remembered), so a run of lines waiting on a context that never
        comes costs each line one test, not N."""
        d = self.by_source.get(line.source)
        if not d:
            return None
        k = (line.source, key)
        stop, hit = self._looked.get(k, (0, None))
        found = None
        for i, x in enumerate(reversed(d)):
            if i >= n or x.lineno < stop:
                break
            if test(x):
                found = x
                break
        if found is None and hit is not None and hit.lineno >= d[-min(n, len(d))].lineno:
            found = hit
        self._looked[k] = (max(stop, line.lineno), found or hit)
        return found

    def done(self, line: Line, st: Stream) -> None:
        st.after_frame = bool(_FRAME.match(line.text)) if "File" in line.text else False
        st.recent.append(line)
        d = self.by_source.get(line.source)
        if d is None:
            d = self.by_source[line.source] = deque(maxlen=self.window)
        d.append(line)


# a pool worker's searches of one line (prepare.rule_searches): (hash of its text, the rules that
# matched, (rule, CPU seconds, timeouts) of the searches slow or timed out, the rules not searched)
Searched = Tuple[int, Tuple[int, ...], Tuple[Tuple[int, float, int], ...], Tuple[int, ...]]


@record
class Event:
    """What the driver tells an observer about the line it feeds."""
    seq: int
    st: Stream
    inp: InputState
    view: View
    rule_ids: Optional[Set[int]] = None     # rules whose anchors hit (None: every rule)
    # the rule searches a pool worker made for the line (prepare.rule_searches), used when the text
    # fed hashes as the worker's did
    searched: Optional[Searched] = None
    # per observer (id) that asked for it (Observer.per_anchor): the indexes of its anchors that hit the line
    anchored: Optional[Dict[int, Set[int]]] = None



class Core:
    """State the core observers share and the result they build."""

    def __init__(self) -> None:
        self.streams: Dict[StreamKey, Stream] = {}
        self.matches: List[Match] = []
        self.blocks: List[ErrorBlock] = []
        self.blocks_limit = 500
        self.tail_blocks: Optional[Deque[ErrorBlock]] = None    # the latest blocks past the first half
        self.blocks_dropped = 0             # blocks between the first and the latest ones, only counted
        self._dropped_noted = False
        self.boundaries: List[float] = []          # times of restarts (to place inputs that show none)
        self.root_rank: Optional[int] = None
        self.root_summaries: List[Tuple[str, int]] = []    # (input, root-cause rank) of each launcher summary
        self.ranks_seen: Dict[int, Set[int]] = {}
        # block driver, re-readable inputs: (path, file rank, [(stream offset, attempt from there)])
        # (path, file rank, [(stream offset, attempt from there)], [bytes scanned])
        self.rank_segments: List[Tuple[str, Optional[int], List[Tuple[int, int]], List[int]]] = []
        self.inputs: Dict[str, InputState] = {}
        self._kept: Dict[Tuple[int, Optional[int], bytes], int] = {}
        self.notes: List[str] = []          # about the inputs (unreadable, capped, a decompression bomb)
        self.exits: List["LauncherExit"] = []   # processes the launcher or the shell says died
        # failure forms' hits (forms.py): the first and the last of each (form, attempt); how many in all
        self.form_hits: Dict[Tuple[str, int], List["LauncherExit"]] = {}
        self.form_seen = 0
        self.max_bytes = 0
        # (pattern id, rank, text of the first dropped line) -> matches not kept (see add_match)
        self.dropped: Counter[Tuple[str, Optional[int], str]] = Counter()
        # per pattern id, the hashes of the texts of its keys in `dropped` (what a run's lines are looked up in first,
        # _count_dropped, before a key is made of each, or their texts at all: admit_run)
        self._dropped_hashes: Dict[str, Set[int]] = {}
        self.timeouts = Timeouts()          # regex searches of the catalog cut off by rx.TIMEOUT
        self.facts = LogFacts()             # the inputs' first/last timestamps and hosts (block driver)

    def add_match(self, m: Match) -> None:
        """Keep a match, or only count it: a message repeated on every rank a million times keeps
        its first MATCHES_PER_KEY occurrences per (rule, rank, message up to its digits), at most
        MAX_MATCHES in all; the rest are counted in `dropped` (memory stays bounded)."""
        if self.admit(m.pattern.id, m.rule, m.line):
            self.matches.append(m)

    def admit(self, pattern_id: str, rule: object, line: Line) -> bool:
        """Whether a match of RULE (of pattern PATTERN_ID) on LINE is kept (add_match's quotas; it is counted
        as kept), else it is counted in `dropped`: a caller that learns it is not kept need not make it."""
        return self.admit_of(pattern_id, rule, line.rank, line.text)

    def admit_of(self, pattern_id: str, rule: object, rank: Optional[int], text: str) -> bool:
        """admit() of a line of RANK and TEXT (the block driver's runs of plain hit lines make no Line for
        a match that is not kept: blockscan._plain_run)."""
        if len(self.matches) < MAX_MATCHES:
            key = (id(rule), rank, text.encode("utf-8", "replace").translate(DIGITS))
            n = self._kept.get(key, 0)
            if n < MATCHES_PER_KEY:
                self._kept[key] = n + 1
                return True
        dkey = (pattern_id, rank, text)
        if dkey not in self.dropped:
            if len(self.dropped) >= MAX_DROPPED_KEYS:
                dkey = (pattern_id, rank, "")
            self._dropped_hashes.setdefault(pattern_id, set()).add(hash(dkey[2]))
        self.dropped[dkey] = self.dropped.get(dkey, 0) + 1
        return False

    def run_quota(self, rule: object, keys: Dict[Tuple[int, bytes], Tuple[int, List[int]]]) -> Optional[list]:
        """What admit_of() would keep of a run of lines, RULE's matches (the block driver's runs taken whole,
        blockscan._InputScan._plain_bulk), from KEYS (prepare.plain_runs: per rank and text with its digits
        masked, the lines and the first MATCHES_PER_KEY of them): [(quota key, its count after, the lines kept
        under it)], or None when the matches kept in all would be reached within the run (its order decides)."""
        n_kept = len(self.matches)
        if n_kept >= MAX_MATCHES:
            return []
        plan = []
        total = 0
        for (rank, masked), (_, first) in keys.items():
            key = (id(rule), rank, masked)
            have = self._kept.get(key, 0)
            if have < MATCHES_PER_KEY:
                take = first[:MATCHES_PER_KEY - have]
                plan.append((key, have + len(take), take))
                total += len(take)
        return plan if n_kept + total <= MAX_MATCHES else None

    def admit_run(self, pattern_id: str, quota: list, ranks: Sequence[int],
                  texts: Union[Sequence[str], Callable[[], Sequence[str]]],
                  hashes: Optional[Sequence[int]] = None) -> List[int]:
        """admit_of() of each line of a run (RANKS, TEXTS -- or TEXTS() -- and HASHES, their texts' hashes) in its
        order, as QUOTA (run_quota's) says: the places of the lines kept, in order; the others counted in
        `dropped`, as many apart as there is room for.  Once there is no room left and none of the lines' hashes is
        one of a text counted apart, each is its rank's: counted with no text made (a storm's runs, issue 44)."""
        kept = sorted(k for _, _, take in quota for k in take)
        for key, n, _ in quota:
            self._kept[key] = n
        mask: Optional[List[bool]] = None
        if kept:
            mask = [True] * len(ranks)
            for k in kept:
                mask[k] = False
        if hashes is not None and len(self.dropped) >= MAX_DROPPED_KEYS:
            seen = self._dropped_hashes.setdefault(pattern_id, set())
            if seen.isdisjoint(compress(hashes, mask) if mask else hashes):
                self._per_rank(pattern_id, compress(ranks, mask) if mask else ranks, seen)
                return kept
        if callable(texts):
            texts = texts()
        if mask:
            ranks, texts = list(compress(ranks, mask)), list(compress(texts, mask))
        self._count_dropped(pattern_id, ranks, texts)
        return kept

    def _count_dropped(self, pattern_id: str, ranks: Sequence[Optional[int]], texts: Sequence[str]) -> None:
        """admit_of()'s count of the lines of RANKS and TEXTS not kept, in their order: each apart while there is
        room for distinct ones, then one of its own or its rank's ("") -- a storm's lines, each text its own, all
        counted per rank in C, their texts' hashes looked up (_dropped_hashes: no key made of each, issue 44)."""
        dropped = self.dropped
        seen = self._dropped_hashes.setdefault(pattern_id, set())
        n = len(ranks)
        if len(dropped) + n > MAX_DROPPED_KEYS:     # (may fill: one by one while there is room)
            i = 0
            while i < n and len(dropped) < MAX_DROPPED_KEYS:
                dropped[(pattern_id, ranks[i], texts[i])] += 1
                seen.add(hash(texts[i]))
                i += 1
            if i:
                ranks, texts = ranks[i:], texts[i:]
            if seen.isdisjoint(map(hash, texts)):   # (no key of theirs can be in: each its rank's)
                self._per_rank(pattern_id, ranks, seen)
                return
            seen.add(hash(""))
            dropped.update([k if k in dropped else (pattern_id, k[1], "")
                            for k in zip(repeat(pattern_id), ranks, texts)])
            return
        dropped.update(zip(repeat(pattern_id), ranks, texts))
        seen.update(map(hash, texts))

    def _per_rank(self, pattern_id: str, ranks: Iterable[Optional[int]], seen: Set[int]) -> None:
        """Lines of RANKS not kept, none of whose texts is counted apart, with no room left: each counted as its
        rank's (the text ""), in C; SEEN: the hashes of the pattern's texts counted apart."""
        dropped = self.dropped
        for rank, c in Counter(ranks).items():
            dropped[(pattern_id, rank, "")] += c
        seen.add(hash(""))

    def stream(self, source: str, rank: Optional[int]) -> Stream:
        st = self.streams.get((source, rank))
        if st is None:
            st = self.streams[(source, rank)] = Stream()
        return st

    def _keep_block(self, b: ErrorBlock) -> None:
        """Keep the first half of blocks_limit blocks and the latest other half (a crash comes last,
        after any number of caught errors); the ones in between are only counted (blocks_dropped)."""
        head = self.blocks_limit - self.blocks_limit // 2
        if len(self.blocks) < head:
            self.blocks.append(b)
            return
        tail_n = self.blocks_limit - head
        if tail_n <= 0:
            self.blocks_dropped += 1
            return
        if self.tail_blocks is None:
            self.tail_blocks = deque(maxlen=tail_n)
        if len(self.tail_blocks) == tail_n:
            self.blocks_dropped += 1         # the oldest of the latest ones leaves the window
        self.tail_blocks.append(b)

    def kept_blocks(self) -> List[ErrorBlock]:
        """Every kept block (the first ones, then the latest), with a note of those only counted."""
        if self.blocks_dropped and not self._dropped_noted:
            self._dropped_noted = True
            self.notes.append(f"{self.blocks_dropped:,} error blocks no pattern explains were only counted (more "
                              f"than {self.blocks_limit}): the first and the latest ones are kept")
        return self.blocks + list(self.tail_blocks or ())

    def close_block(self, st: Stream) -> None:
        b = st.block
        if b is None:
            return
        b.explained = st.block_matched
        if not b.explained and not any(_wrapper(x) for x in b.lines):
            self._keep_block(b)
        st.block = None
        st.block_matched = False
        st.in_tb = False

