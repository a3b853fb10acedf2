"""Observer: the pattern catalog's match rules (a hit line meets only the rules whose literals it holds)."""
from __future__ import annotations

import functools
from time import thread_time
from typing import TYPE_CHECKING, Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from ..inputs.sources import Line
from ..lazyre import lazy_re
from ..match.rx import Timeouts, lazy, quick, search
from .followups import Followups, _ctx_hit
from .observer import Observer
from .results import Match
from .state import CONTEXT_LINES, Core, Event, Searched, View

if TYPE_CHECKING:
    from ..patterns import ContextReq, MatchRule, Pattern

# Source-code echo lines and caret markers never carry a message.
SOURCE_ECHO = lazy(r"^\s+(?:assert\b|raise\b|f?[\"'])|^\s*[~^]+\s*$")


def source_echo(text: str) -> bool:
    """TEXT is a source-code echo line (SOURCE_ECHO): its first character a space (\\s: str.isspace), `~` or `^`
    first, the regex then (~0.8 us a line saved on the others)."""
    c = text[:1]
    return (c.isspace() or c in "~^") and SOURCE_ECHO.match(text) is not None
MAX_RULE_TIMEOUTS = 20     # a rule that times out this often in one scan is switched off
# ... and so is a rule whose slow searches add up to RULE_TIME_BUDGET in one scan: a regex that costs
# 14 ms a line, under the timeout, must not make the scan crawl either.  A search of one line (its
# regex and `not` regexes, or its context regexes) is slow when it takes more than SLOW_SEARCH plus
# LINEAR_COST a character of the line: superlinear.  The slowest shipped regex takes ~2 ms on a
# 4,000-character line (lines are clipped to MAX_LINE), a `.*` followed by alternatives 10-14 ms on a
# crafted one; only slow searches count, so a rule that matches millions of lines is never switched off.
# A search's time is the CPU time of the scanning thread (time.thread_time): a scan preempted on a busy
# host (other jobs, a loaded CI runner) has not searched slowly, and switched no rule off for it.
SLOW_SEARCH = 0.001        # seconds
LINEAR_COST = 1e-6         # seconds a character
RULE_TIME_BUDGET = 0.5     # seconds
CONTEXT_MATCHES = 300      # matches that get context (bounded memory on huge logs)


_UNITS = {"bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}
_SIZE = lazy_re(r"^\s*(\d+(?:\.\d+)?)\s*(bytes|B|[KMGTP]iB)\s*$")


def size_bytes(text: str) -> Optional[float]:
    """'21.71 MiB' -> bytes (PyTorch's format_size units), None for anything else."""
    m = _SIZE.match(text or "")
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def share_of(m: Any) -> float:
    """A match's `part` size over its `whole` size (a rule's min_share); 0 when either is unreadable."""
    part, whole = size_bytes(m.group("part")), size_bytes(m.group("whole"))
    return part / whole if part is not None and whole else 0.0


Search = Tuple[bool, float, int]        # one rule's search of one line: (hit, CPU seconds, timeouts)


def _done(searched: Searched, i: int) -> Optional[Search]:
    """Rule I's search of the line as the worker made it, or None (not searched there)."""
    _, matched, costly, skipped = searched
    if i in skipped:
        return None
    for j, seconds, n_out in costly:
        if j == i:
            return i in matched, seconds, n_out
    return i in matched, 0.0, 0


def slow(seconds: float, chars: int) -> bool:
    """A search of a line of CHARS characters that took SECONDS is slow (superlinear): it counts
    toward its rule's RULE_TIME_BUDGET."""
    return seconds > SLOW_SEARCH + chars * LINEAR_COST


def has_literal(rule: MatchRule, text: str, lower: str) -> bool:
    """TEXT holds one of RULE's literals (LOWER: TEXT in lower case), the cheap test before its regex."""
    if rule.ignore_case:
        text = lower
        for lit_ in rule.literals:      # (a loop, not any(): called for every rule a line may wake)
            if lit_.lower() in text:
                return True
        return False
    for lit_ in rule.literals:
        if lit_ in text:
            return True
    return False


def quick_rule(rule: MatchRule, text: str) -> bool:
    """RULE's searches of TEXT are bounded to a few steps (rx.quick): never slow, never timed, never cut off."""
    return quick(rule.rx, text) and all(quick(n, text) for n in rule.negative)


def search_rule(rule: MatchRule, text: str, timeouts: Timeouts) -> Search:
    """RULE's regex, `not` regexes and min_share on TEXT: a pure function of the line (what a pool
    worker runs ahead of the scanner), with the CPU time it took and the searches that timed out.  Searches
    bounded to a few steps (rx.quick) are not timed: 0.0 seconds, never slow, in the worker and the scanner
    alike."""
    timed = not quick_rule(rule, text)
    t0 = timeouts.count
    c0 = thread_time() if timed else 0.0
    m = search(rule.rx, text, timeouts)
    hit = m is not None and not any(search(n, text, timeouts) for n in rule.negative) and (
        rule.min_share is None or share_of(m) >= rule.min_share)
    return hit, (thread_time() - c0 if timed else 0.0), timeouts.count - t0


class Tally:
    """Each rule's slow searches and timed-out searches in one scan: a rule whose slow searches add up
    to RULE_TIME_BUDGET seconds, or whose searches timed out MAX_RULE_TIMEOUTS times, is to be switched
    off.  The scanner keeps one (Rules), and so does each pool worker (prepare.WorkerBudget), so that a
    worker stops searching a rule exactly where the scanner, charging its searches in order, stops."""

    def __init__(self) -> None:
        self.spent: Dict[Hashable, float] = {}
        self.timed_out: Dict[Hashable, int] = {}

    def searched(self, key: Hashable, seconds: float, chars: int) -> bool:
        """A search of rule KEY on CHARS characters took SECONDS: True when the rule is over budget."""
        if not slow(seconds, chars):
            return False
        spent = self.spent[key] = self.spent.get(key, 0.0) + seconds
        return spent >= RULE_TIME_BUDGET

    def timed_out_once(self, key: Hashable) -> bool:
        """A search of rule KEY timed out: True when the rule has timed out too often."""
        n = self.timed_out[key] = self.timed_out.get(key, 0) + 1
        return n >= MAX_RULE_TIMEOUTS


class Rules(Observer):
    """The catalog's match rules; each hit line meets only the rules whose literals it holds."""

    def __init__(self, core: Core, rules: List[Tuple[Pattern, MatchRule]], followups: Followups):
        self.core = core
        self.rules = rules
        self.followups = followups
        self.with_context = 0
        self._tally = Tally()
        self.disabled: Dict[int, str] = {}
        followups.charge = self.charge

    def context_spent(self) -> bool:
        """CONTEXT_MATCHES matches have their context lines: a match from now on gets none (_take), and one with
        no context requirement to wait for is only kept or counted (the block driver's runs of plain hit lines,
        blockscan._plain_run)."""
        return self.with_context >= CONTEXT_MATCHES

    def counted(self, pat: Pattern, rule: MatchRule, rank: Optional[int], text: str, ts: float, seq: int, group: int,
                line: Callable[[], Line]) -> None:
        """A match of RULE on a line of RANK and TEXT with its own time TS and nothing to wait for (no context
        requirement, context_spent): kept, its Line then made by LINE(), or only counted (Core.admit_of) -- a storm
        of one error on every rank counted most of its matches after making each (_take; the block driver's runs
        of plain hit lines, blockscan._plain_run, make no Line for a line not kept)."""
        if self.core.admit_of(pat.id, rule, rank, text):
            self.core.matches.append(Match(pat, rule, line(), seq, ts, group=group))

    def counted_run(self, pat: Pattern, rule: MatchRule, quota: list, ranks: Sequence[int],
                    texts: Callable[[], Sequence[str]], line_at: Callable[[int], Tuple[Line, int, float]], group: int,
                    hashes: Sequence[int]) -> None:
        """counted() of a run of lines of RANKS and TEXTS() (made when needed; HASHES: theirs), RULE's matches with
        nothing to wait for (the block driver's runs taken whole, blockscan._InputScan._plain_bulk), QUOTA
        Core.run_quota's: the Line, seq and time of each kept made by LINE_AT(its place in the run)."""
        matches = self.core.matches
        for k in self.core.admit_run(pat.id, quota, ranks, texts, hashes):
            line, seq, ts = line_at(k)
            matches.append(Match(pat, rule, line, seq, ts, group=group))

    def charge(self, rule: MatchRule, seconds: float, chars: int) -> bool:
        """Count a search of RULE on a line of CHARS characters that took SECONDS when it was slow;
        True when the rule is (now) switched off."""
        if self._tally.searched(id(rule), seconds, chars):
            self.disabled[id(rule)] = rule.source_text
        return id(rule) in self.disabled

    def _hits(self, rule: MatchRule, text: str, lower: str, done: Optional[Search] = None) -> bool:
        """RULE matches TEXT (its regex, not its `not` regexes, its min_share), its search's time and
        timeouts charged to it in the log's order.  DONE: the search as a pool worker made it ahead of
        the scanner (prepare.rule_searches), charged here exactly as a search made here."""
        if not has_literal(rule, text, lower) or id(rule) in self.disabled:
            return False
        timeouts = self.core.timeouts
        t0 = timeouts.count
        if done is None:
            done = search_rule(rule, text, timeouts)
        else:
            timeouts.count += done[2]
        hit, seconds, _ = done
        self.charge(rule, seconds, len(text))
        if timeouts.count > t0 and self._tally.timed_out_once(id(rule)):   # a pathological regex must
            self.disabled[id(rule)] = rule.source_text                       # not make the scan crawl
        return hit

    def _take(self, i: int, pat: Pattern, rule: MatchRule, line: Line, ev: Event) -> bool:
        """Rule I (of pattern PAT) matched LINE: the match is kept or counted (True), or it waits for its
        context lines or its rule was switched off meanwhile (False: not yet a match)."""
        st, view = ev.st, ev.view
        if not rule.context and self.with_context >= CONTEXT_MATCHES and line.ts is not None:
            self.counted(pat, rule, line.rank, line.text, line.ts, ev.seq, ev.inp.attempt(line), lambda: line)
            return True
        m = Match(pat, rule, line, ev.seq, view.last_ts(line, st), group=ev.inp.attempt(line))
        if self.with_context < CONTEXT_MATCHES:
            self.with_context += 1
            m.before = view.before(line, st)[-CONTEXT_LINES:]
            self.followups.wait_after(m, st)
        if rule.context:
            needs = self._context_before(i, m, view)
            if needs is None:
                return False
            if needs:
                deadline = line.lineno + max(rule.context[j].window for j in needs)
                self.followups.wait_context(m, needs, deadline)
                return False
        self.core.add_match(m)
        return True

    def _context_before(self, i: int, m: Match, view: View) -> Optional[List[int]]:
        """The context requirements of rule I that the lines before M's line leave unmet (those met
        add their newest line to M's context); None when the rule is switched off meanwhile."""
        rule = m.rule
        needs = []
        for j, c in enumerate(rule.context):
            found = view.newest_before(m.line, c.window, (i, j), functools.partial(self._ctx_test, rule, c))
            if found is not None:
                m.context.append(found)
            else:
                needs.append(j)
        return None if id(rule) in self.disabled else needs

    def _ctx_test(self, rule: MatchRule, ctx: ContextReq, line: Line) -> bool:
        """LINE meets the context requirement CTX of RULE (the search's time charged to RULE)."""
        c0 = thread_time()
        hit = _ctx_hit(ctx, line, self.core.timeouts)
        return not self.charge(rule, thread_time() - c0, len(line.text)) and hit

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        st = ev.st
        view = ev.view
        # the line after a frame line is its source code only when indented (a frame without
        # source, e.g. File "<frozen runpy>", is followed directly by the exception line)
        if (text[:1] in (" ", "\t") and view.after_frame(line, st)) or source_echo(text):
            return
        ids = range(len(self.rules)) if ev.rule_ids is None else sorted(ev.rule_ids)
        lower = text.lower()
        # the searches a pool worker made for this line, when it read the very text fed here
        done = ev.searched if ev.searched is not None and ev.searched[0] == hash(text) else None
        hit_any = False
        for i in ids:
            pat, rule = self.rules[i]
            if self._hits(rule, text, lower, _done(done, i) if done is not None else None) and self._take(
                    i, pat, rule, line, ev):
                hit_any = True
        if hit_any:
            st.block_matched = True

