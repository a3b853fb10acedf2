"""Scan stage: compiled patterns -> matches, plus the error blocks no pattern explained.

One pass over the lines.  A combined literal prefilter rejects most lines with a
single C-level search; only lines that contain a rule's literal meet its regex.
Rules with `context` requirements look back through a small per-stream ring buffer
and keep pending matches to look ahead.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, Iterable, List, Optional, Tuple

import regex

from .patterns import MatchRule, Pattern
from . import rx as _rx
from .rx import TIMEOUT, search
from .sources import Line

StreamKey = Tuple[str, Optional[int]]

# A Python traceback frame line; the next line is source code, not a message.
_FRAME = regex.compile(r'^\s*File "[^"]*", line \d+')
# Source-code echo lines and caret markers never carry a message.
_CODE = regex.compile(r"^\s+(?:assert\b|raise\b|f?[\"'])|^\s*[~^]+\s*$")
# Error block detection (for `unmatched`)
_TB_START = "Traceback (most recent call last):"
_EXC_LINE = regex.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::|$)"
)
_ERROR_LINE = regex.compile(
    r"(?:^|\s|\])(?:ERROR|FATAL|Error|error)(?:\]|:|\s)|^E\d{4} \d\d:\d\d:\d\d|^\S+:\d+:\d+ \[\d+\] .*NCCL WARN"
)
_WRAPPER = regex.compile(r"ChildFailedError|elastic/multiprocessing|torch\.distributed\.elastic|^\s*(?:time|host|rank|exitcode|error_file|traceback)\s+:")
_ROOT_RANK = regex.compile(r"^\s*rank\s+:\s+(\d+)\s+\(local_rank")
BLOCK_MAX_LINES = 40
MAX_RULE_TIMEOUTS = 20     # a rule that times out this often in one scan is switched off
RESTART_MERGE_S = 60.0     # restart lines this close together (in different inputs) are one restart
CONTEXT_LINES = 3          # lines of context kept before / after a match (for the report)
CONTEXT_MATCHES = 300      # matches that get context (bounded memory on huge logs)
# Lines that start a (new) training attempt; a second one in the same stream means a restart.
_ATTEMPT_START = regex.compile(
    r"^-{10,} arguments -{10,}$|^-{3,} Task Configuration -{3,}$"
    r"|Setting OMP_NUM_THREADS environment variable for each process to be"   # torchrun's start banner
    r"|^Configuration Summary \(Non-Default Values vs Megatron Core\)"
)
# Launcher lines that announce a restart explicitly (torchelastic).
_RESTART = regex.compile(r"Restarting workers|will restart worker group|attempts left; will restart")


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
    def role(self) -> str:
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


@dataclass
class ScanResult:
    matches: List[Match]
    blocks: List[ErrorBlock]
    lines: int
    sources: List[str]
    launcher_root_rank: Optional[int] = None
    attempts: int = 1
    disabled_rules: List[str] = field(default_factory=list)
    ranks_seen: List[int] = field(default_factory=list)   # ranks with any line in the last attempt


@dataclass
class _Pending:
    match: Match
    needs: List[int]              # indexes of context requirements still unmet
    deadline: int                 # last line number that can still satisfy them


@dataclass
class _Stream:
    recent: Deque[Line]
    after_frame: bool = False
    last_ts: Optional[float] = None
    want_after: List[Match] = field(default_factory=list)
    block: Optional[ErrorBlock] = None
    block_matched: bool = False
    in_tb: bool = False


class Engine:
    def __init__(self, patterns: List[Pattern]):
        self.patterns = patterns
        self.rules: List[Tuple[Pattern, MatchRule]] = [(p, r) for p in patterns for r in p.match]
        lits = {lit.lower() for _, r in self.rules for lit in r.literals}
        # one trie-shaped regex over every literal (lower-cased): most lines are rejected by a single search
        self._gate = regex.compile(trie_regex(lits)) if lits else None
        self._lower_rules = any(r.ignore_case for _, r in self.rules)
        self._rule_timeouts: Dict[int, int] = {}
        self.disabled: Dict[int, str] = {}      # rules switched off after repeated timeouts
        self.window = max([c.window for _, r in self.rules for c in r.context] + [CONTEXT_LINES])

    # --- single-rule evaluation -------------------------------------------------
    @staticmethod
    def _literal_hit(rule: MatchRule, text: str, lower: str) -> bool:
        if rule.ignore_case:
            return any(lit.lower() in lower for lit in rule.literals)
        return any(lit in text for lit in rule.literals)

    def _rule_hits(self, rule: MatchRule, text: str, lower: str) -> bool:
        if not self._literal_hit(rule, text, lower) or id(rule) in self.disabled:
            return False
        t0 = _rx.timeouts
        hit = search(rule.rx, text) is not None and not any(search(n, text) for n in rule.negative)
        if _rx.timeouts > t0:
            n = self._rule_timeouts[id(rule)] = self._rule_timeouts.get(id(rule), 0) + 1
            if n >= MAX_RULE_TIMEOUTS:     # a pathological regex must not make the scan crawl
                self.disabled[id(rule)] = rule.source_text
        return hit

    @staticmethod
    def _ctx_hit(ctx, line: Line) -> bool:
        return any(lit in line.text for lit in ctx.literals) and search(ctx.rx, line.text) is not None

    # --- the scan -------------------------------------------------------------------
    def scan(self, lines: Iterable[Line], blocks_limit: int = 500) -> ScanResult:
        matches: List[Match] = []
        blocks: List[ErrorBlock] = []
        streams: Dict[StreamKey, _Stream] = {}
        by_source: Dict[str, Deque[Line]] = {}      # recent lines of an input, all ranks (for context)
        pending_src: Dict[str, List[_Pending]] = {}  # look-ahead context, any rank of the same input
        sources: List[str] = []
        root_rank: Optional[int] = None   # torchrun's "Root Cause (first observed failure)" rank
        in_root_cause = False
        seq = 0
        with_context = 0
        attempt: Dict[str, int] = {}     # restart count per input
        boundaries: List[float] = []     # times of restarts (to place inputs that show none)
        ranks_seen: Dict[int, set] = {}
        started: set = set()             # inputs whose first attempt banner was seen

        def close_block(st: _Stream) -> None:
            b = st.block
            if b is None:
                return
            b.explained = st.block_matched
            if not b.explained and not any(_WRAPPER.search(x, timeout=TIMEOUT) for x in b.lines):
                if len(blocks) < blocks_limit:
                    blocks.append(b)
            st.block = None
            st.block_matched = False
            st.in_tb = False

        for line in lines:
            seq += 1
            if not sources or sources[-1] != line.source:
                if line.source not in sources:
                    sources.append(line.source)
            key = (line.source, line.rank)
            st = streams.get(key)
            if st is None:
                st = streams[key] = _Stream(recent=deque(maxlen=CONTEXT_LINES))
            if line.ts is not None:
                st.last_ts = line.ts
            text = line.text

            # restarts: a second attempt-start banner in one input, or a launcher restart line
            if "---" in text or "Configuration Summary" in text or "estart" in text or "OMP_NUM_THREADS" in text:
                if _ATTEMPT_START.search(text[:200], timeout=TIMEOUT):
                    if line.source in started:
                        attempt[line.source] = attempt.get(line.source, 0) + 1
                        if st.last_ts is not None:
                            boundaries.append(st.last_ts)
                    started.add(line.source)
                elif _RESTART.search(text, timeout=TIMEOUT):
                    attempt[line.source] = attempt.get(line.source, 0) + 1
                    started.discard(line.source)
                    if st.last_ts is not None:
                        boundaries.append(st.last_ts)
            cur_attempt = attempt.get(line.source, 0) if line.attempt is None else line.attempt
            if line.rank is not None:
                ranks_seen.setdefault(cur_attempt, set()).add(line.rank)
            if line.attempt is not None:
                attempt[line.source] = line.attempt

            # launcher's own root-cause summary
            if text.startswith("Root Cause (first observed failure)"):
                in_root_cause = True
            elif in_root_cause and "local_rank" in text:
                m = _ROOT_RANK.match(text)
                if m:
                    root_rank = int(m.group(1))
                    in_root_cause = False

            # the line after a frame line is its source code only when indented (a frame without
            # source, e.g. File "<frozen runpy>", is followed directly by the exception line)
            is_code = (st.after_frame and text[:1] in (" ", "\t")) or bool(_CODE.match(text))
            st.after_frame = bool(_FRAME.match(text)) if "File" in text else False

            if st.want_after:
                for wm in st.want_after:
                    wm.after.append(line)
                st.want_after = [wm for wm in st.want_after if len(wm.after) < CONTEXT_LINES]

            # pending look-ahead context (any rank of the same input)
            src_recent = by_source.get(line.source)
            if src_recent is None:
                src_recent = by_source[line.source] = deque(maxlen=self.window)
            pend = pending_src.get(line.source)
            if pend:
                keep = []
                for pd in pend:
                    pd.needs = [i for i in pd.needs if not self._ctx_hit(pd.match.rule.context[i], line)]
                    if not pd.needs:
                        pd.match.context.append(line)
                        matches.append(pd.match)
                        streams[(pd.match.line.source, pd.match.line.rank)].block_matched = True
                    elif line.lineno <= pd.deadline:
                        keep.append(pd)
                pending_src[line.source] = keep

            # error-block tracking (for unmatched)
            self._track_block(st, line, seq, close_block, cur_attempt)

            hit_any = False
            if not is_code and self._gate is not None and self._gate.search(text.lower(), timeout=TIMEOUT) is not None:
                lower = text.lower() if self._lower_rules else text
                for pat, rule in self.rules:
                    if not self._rule_hits(rule, text, lower):
                        continue
                    m = Match(pat, rule, line, seq, st.last_ts, group=cur_attempt)
                    if with_context < CONTEXT_MATCHES:
                        with_context += 1
                        m.before = list(st.recent)[-CONTEXT_LINES:]
                        st.want_after.append(m)
                    if rule.context:
                        needs = []
                        for i, c in enumerate(rule.context):
                            found = [x for x in list(src_recent)[-c.window:] if self._ctx_hit(c, x)]
                            if found:
                                m.context.append(found[-1])
                            else:
                                needs.append(i)
                        if needs:
                            pending_src.setdefault(line.source, []).append(
                                _Pending(m, needs, line.lineno + max(rule.context[i].window for i in needs)))
                            continue
                    matches.append(m)
                    hit_any = True
            if hit_any:
                st.block_matched = True
            st.recent.append(line)
            src_recent.append(line)

        for st in streams.values():
            close_block(st)
        matches.sort(key=lambda m: m.seq)
        # An input that shows no restart of its own (rank 1's file when rank 0 prints the banner)
        # is split at the restart times seen elsewhere.
        marked = {src for src, n in attempt.items() if n > 0}
        bs: List[float] = []
        for b in sorted(boundaries):        # one restart seen by several inputs is one boundary
            if not bs or b - bs[-1] > RESTART_MERGE_S:
                bs.append(b)
        if bs:
            for item in list(matches) + list(blocks):
                src = item.line.source if isinstance(item, Match) else item.source
                if src not in marked and item.order_ts is not None:
                    item.group = sum(1 for b in bs if item.order_ts >= b)
        attempts = 1 + max(list(attempt.values()) + [len(bs), 0])
        return ScanResult(matches=matches, blocks=blocks, lines=seq, sources=sources,
                          launcher_root_rank=root_rank, attempts=attempts,
                          disabled_rules=sorted(self.disabled.values()),
                          ranks_seen=sorted(ranks_seen.get(attempts - 1, set()) | (
                              ranks_seen.get(0, set()) if attempts == 1 else set())))

    @staticmethod
    def _track_block(st: _Stream, line: Line, seq: int, close_block, cur_attempt: int) -> None:
        text = line.text
        if text.startswith(_TB_START) or (text.strip() == _TB_START):
            if st.block is not None and not st.in_tb:
                close_block(st)
            if st.block is None:
                st.block = ErrorBlock(line.source, line.rank, line.lineno, line.lineno, [], seq, st.last_ts,
                                      group=cur_attempt)
            st.in_tb = True
            st.block.lines.append(text)
            st.block.end = line.lineno
            return
        b = st.block
        if b is not None:
            if st.in_tb:
                if len(b.lines) < BLOCK_MAX_LINES:
                    b.lines.append(text)
                b.end = line.lineno
                if _EXC_LINE.match(text):
                    st.in_tb = False  # exception line reached; keep following message lines briefly
                return
            # after the exception line: continuation lines (indented / non-empty) up to a few
            if text.strip() and (line.lineno - b.end) <= 1 and len(b.lines) < BLOCK_MAX_LINES and not _ERROR_LINE.search(text[:300], timeout=TIMEOUT):
                if text.startswith((" ", "\t")) or not _looks_like_new_record(text):
                    b.lines.append(text)
                    b.end = line.lineno
                    return
            close_block(st)
        if _maybe_error(text) and (_EXC_LINE.match(text) or _ERROR_LINE.search(text[:300], timeout=TIMEOUT)):
            st.block = ErrorBlock(line.source, line.rank, line.lineno, line.lineno, [text], seq, st.last_ts,
                                  group=cur_attempt)
            st.in_tb = False


def trie_regex(words) -> str:
    """A regex matching any of `words`, shaped as a trie (shared prefixes factored out).

    The `regex` package tries alternatives one by one; factoring prefixes makes the literal
    prefilter several times faster than a flat alternation."""
    trie: Dict[str, dict] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: Dict[str, dict]) -> str:
        if list(node) == [""]:
            return ""
        alts = [regex.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return build(trie)


_RECORD = regex.compile(r"^(?:\[|\d{4}-\d\d-\d\d|[IWEF]\d{4} |INFO|WARNING|DEBUG|\S+:\d+:\d+ \[\d+\])")


def _maybe_error(text: str) -> bool:
    """Cheap test before the error-line regexes (most lines hold none of these)."""
    return ("rror" in text or "ERROR" in text or "FATAL" in text or "xception" in text or "WARN" in text
            or "Interrupt" in text or "Exit" in text or "Failure" in text or text[:1] == "E")


def _looks_like_new_record(text: str) -> bool:
    return bool(_RECORD.match(text))
