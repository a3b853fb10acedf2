"""Observer: the lines after a match (its report context) and the look-ahead `context`
requirements of rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List

from .observer import Observer
from .results import Match, StreamKey
from .rx import Timeouts, search
from .sources import Line
from .state import CONTEXT_LINES, Core, Event, InputState, Stream

if TYPE_CHECKING:
    from ..patterns import ContextReq

AFTER_SPAN = 200           # physical lines after a match searched for its "after" context


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

