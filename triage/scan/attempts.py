"""Observer: restarts (a second attempt-start banner of one kind in an input, a launcher restart line)."""
from __future__ import annotations

import re

from ..inputs.sources import Line
from ..match.rx import lazy, search
from .observer import Observer, core_observer, derived, lit
from .state import Core, Event

# Lines that start a (new) training attempt; a second one of the same kind in an input means a
# restart.  Declared once: the regexes the observer runs, and (derived) the anchors that wake it.
_BANNERS = [
    ("args", r"^-{10,} arguments -{10,}$"),
    ("task", r"^-{3,} Task Configuration -{3,}$"),
    ("torchrun", r"Setting OMP_NUM_THREADS environment variable for each process to be"),
    ("summary", r"^Configuration Summary \(Non-Default Values vs Megatron Core\)"),
]
# Launcher lines that announce a restart explicitly (torchelastic).
_RESTART_LINES = ("Restarting workers", "will restart worker group", "attempts left; will restart")
_ATTEMPT_KINDS = [(kind, lazy(rx)) for kind, rx in _BANNERS]
_RESTART = lazy("|".join(re.escape(x) for x in _RESTART_LINES))


@core_observer(10)
class Attempts(Observer):
    """A second attempt-start banner of the same kind in one input, or a launcher restart line."""
    anchors = [derived(rx) for _, rx in _BANNERS] + [lit(x) for x in _RESTART_LINES]

    def __init__(self, core: Core):
        self.core = core

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        if not ("---" in text or "Configuration Summary" in text or "estart" in text or "OMP_NUM_THREADS" in text):
            return
        inp = ev.inp
        for kind, rx_ in _ATTEMPT_KINDS:
            if search(rx_, text[:200]):
                if kind in inp.kinds:
                    inp.restarts += 1
                    inp.kinds = set()
                    self._boundary(line, ev)
                inp.kinds.add(kind)
                return
        if search(_RESTART, text):
            inp.restarts += 1
            inp.kinds = set()
            self._boundary(line, ev)

    def _boundary(self, line: Line, ev: Event) -> None:
        ts = ev.view.last_ts(line, ev.st)
        if ts is not None:
            self.core.boundaries.append(ts)

