"""Observer: the pattern catalog's match rules (a hit line meets only the rules whose literals it holds)."""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .followups import Followups, _ctx_hit
from .observer import Observer
from .results import Match
from .rx import lazy, search
from .sources import Line
from .state import CONTEXT_LINES, Core, Event

if TYPE_CHECKING:
    from ..patterns import MatchRule, Pattern

# Source-code echo lines and caret markers never carry a message.
_CODE = lazy(r"^\s+(?:assert\b|raise\b|f?[\"'])|^\s*[~^]+\s*$")
MAX_RULE_TIMEOUTS = 20     # a rule that times out this often in one scan is switched off
CONTEXT_MATCHES = 300      # matches that get context (bounded memory on huge logs)


_UNITS = {"bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(bytes|B|[KMGTP]iB)\s*$")


def size_bytes(text: str) -> Optional[float]:
    """'21.71 MiB' -> bytes (PyTorch's format_size units), None for anything else."""
    m = _SIZE.match(text or "")
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def share_of(m: Any) -> float:
    """A match's `part` size over its `whole` size (a rule's min_share); 0 when either is unreadable."""
    part, whole = size_bytes(m.group("part")), size_bytes(m.group("whole"))
    return part / whole if part is not None and whole else 0.0


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
        m = search(rule.rx, text, timeouts)
        hit = m is not None and not any(search(n, text, timeouts) for n in rule.negative) and (
            rule.min_share is None or share_of(m) >= rule.min_share)
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
        tmo = self.core.timeouts
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
                    found = view.newest_before(line, c.window, (i, j), functools.partial(_ctx_hit, c, timeouts=tmo))
                    if found is not None:
                        m.context.append(found)
                    else:
                        needs.append(j)
                if needs:
                    deadline = line.lineno + max(rule.context[j].window for j in needs)
                    self.followups.wait_context(m, needs, deadline)
                    continue
            self.core.add_match(m)
            hit_any = True
        if hit_any:
            st.block_matched = True

