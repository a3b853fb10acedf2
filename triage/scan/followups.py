"""Observer: the lines after a match (its report context) and the look-ahead `context`
requirements of rules."""
from __future__ import annotations

from collections import deque
from dataclasses import field
from heapq import merge
from time import thread_time
from typing import TYPE_CHECKING, Callable, Deque, Dict, List, Tuple

from ..inputs.sources import Line
from ..match.rx import Timeouts, search
from ..record import record
from .observer import Observer
from .results import Match, StreamKey
from .state import CONTEXT_LINES, Core, Event, InputState, Stream

if TYPE_CHECKING:
    from ..patterns import ContextReq, MatchRule

AFTER_SPAN = 200           # physical lines after a match searched for its "after" context


@record
class _Pending:
    """The matches of one rule in one input that wait for the same unmet context requirements: a
    line is checked against those requirements once for all of them (20,000 identical warnings
    each waiting 1,000 lines for a capture line cost 20 million checks, checked one by one)."""
    rule: MatchRule
    needs: List[int]              # indexes of context requirements still unmet
    # (last line number that can still satisfy them, seq, match), in that order
    waiting: Deque[Tuple[int, int, Match]] = field(default_factory=deque)

    def check(self, line: Line, timeouts: Timeouts) -> List[int]:
        """The requirements LINE leaves unmet."""
        ctx = self.rule.context
        return [i for i in self.needs if not _ctx_hit(ctx[i], line, timeouts)]

    def expire(self, lineno: int) -> None:
        w = self.waiting
        while w and w[0][0] < lineno:
            w.popleft()


def _ctx_hit(ctx: ContextReq, line: Line, timeouts: Timeouts) -> bool:
    return any(lit_ in line.text for lit_ in ctx.literals) and search(ctx.rx, line.text, timeouts) is not None


class Followups(Observer):
    """Lines after a match: its report context, and look-ahead `context` requirements of rules."""

    def __init__(self, core: Core):
        self.core = core
        # per input: the matches waiting for look-ahead context, per (rule, unmet requirements)
        self.pending: Dict[str, Dict[Tuple[int, Tuple[int, ...]], _Pending]] = {}
        # per input: the streams whose matches still wait for "after" lines -> last line no. to wait
        self.waiting: Dict[str, Dict[StreamKey, int]] = {}
        # counts the time of a rule's slow context checks; True when the rule is switched off (Rules.charge)
        self.charge: Callable[["MatchRule", float, int], bool] = lambda rule, seconds, chars: False

    def wait_context(self, m: Match, needs: List[int], deadline: int) -> None:
        """M counts once a line up to DEADLINE meets its rule's context requirements NEEDS."""
        groups = self.pending.setdefault(m.line.source, {})
        key = (id(m.rule), tuple(needs))
        pd = groups.get(key)
        if pd is None:
            pd = groups[key] = _Pending(m.rule, list(needs))
        pd.waiting.append((deadline, m.seq, m))

    def wait_after(self, m: Match, st: Stream) -> None:
        last = m.line.lineno + AFTER_SPAN
        st.want_after.append((m, last))
        self.waiting.setdefault(m.line.source, {})[(m.line.source, m.line.rank)] = last

    def following(self, inp: InputState, lineno: int) -> bool:
        if not self.pending and not self.waiting:      # (nothing of any input's: two look-ups a line saved)
            return False
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
        groups = self.pending.get(line.source)
        if groups:
            self._check_pending(line, groups)

    def _check_pending(self, line: Line, groups: Dict[Tuple[int, Tuple[int, ...]], _Pending]) -> None:
        """LINE against the waiting matches: those whose requirements it completes count, those whose
        last line it was stop waiting (as if each match were checked on its own, in the order made)."""
        moved: List[_Pending] = []
        for key, pd in list(groups.items()):
            c0 = thread_time()
            left = pd.check(line, self.core.timeouts)
            if self.charge(pd.rule, thread_time() - c0, len(line.text)):      # switched off: its matches stop waiting
                del groups[key]
                continue
            if not left:
                for _, _, m in pd.waiting:
                    m.context.append(line)
                    self.core.add_match(m)
                    self.core.stream(m.line.source, m.line.rank).block_matched = True
                del groups[key]
                continue
            pd.expire(line.lineno)
            if len(left) < len(pd.needs):      # some requirements met: it joins those that wait for the rest
                del groups[key]
                if pd.waiting:
                    pd.needs = left
                    moved.append(pd)
            elif not pd.waiting:
                del groups[key]
        for pd in moved:
            key = (id(pd.rule), tuple(pd.needs))
            other = groups.get(key)
            if other is None:
                groups[key] = pd
            else:
                other.waiting = deque(merge(other.waiting, pd.waiting, key=lambda x: (x[0], x[1])))

