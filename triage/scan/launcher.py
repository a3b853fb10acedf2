"""Observers of what the launcher reports: torchrun's root-cause rank (LauncherRoot) and a process's
death that only the launcher or the shell reports (LauncherExits)."""
from __future__ import annotations

import re

from ..inputs.sources import Line
from ..lazyre import lazy_re
from ..match.rx import lazy
from .observer import Observer, core_observer, lit, rxa
from .results import LauncherExit
from .state import Core, Event

_ROOT_RANK = lazy(r"^\s*rank\s+:\s+(\d+)\s+\(local_rank")


_ROOT_CAUSE = "Root Cause (first observed failure)"


@core_observer(20)
class LauncherRoot(Observer):
    """torchrun's error summary: "Root Cause (first observed failure):" ... "rank : 5 (local_rank: 5)"."""
    anchors = [lit(_ROOT_CAUSE), lit("local_rank")]

    def __init__(self, core: Core):
        self.core = core
        self.inside = False

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        if text.startswith(_ROOT_CAUSE):
            self.inside = True
        elif self.inside and "local_rank" in text:
            m = _ROOT_RANK.match(text)
            if m:
                self.core.root_rank = int(m.group(1))
                if len(self.core.root_summaries) < 64:
                    self.core.root_summaries.append((line.source, int(m.group(1))))
                self.inside = False


# A process's death reported by the launcher or the shell, when no error of its own made it to the
# log.  torch/distributed/elastic/multiprocessing/api.py: "failed (exitcode: %s) local_rank: %s
# (pid: %s) of binary: %s"; torch/distributed/elastic/multiprocessing/api.py SignalException:
# "Process %d got signal: %d"; bash: "Segmentation fault (core dumped)", "./run.sh: line 7:  4242
# Killed  python train.py" (job-control messages, strsignal texts).
# Each is declared once: its lead literal wakes the observer (an anchor) and starts its regex.
_TORCHRUN_LEAD = "failed (exitcode: "
_SIGNAL_LEAD = "SignalException: Process "
_TERMINATE_LEAD = "terminate called after throwing an instance of "
_EXIT_TORCHRUN = lazy_re(re.escape(_TORCHRUN_LEAD) + r"(-?\d+)\) local_rank: (\d+) \(pid: \d+\)")
_EXIT_SIGNAL = lazy_re(re.escape(_SIGNAL_LEAD) + r"\d+ got signal: (\d+)")
# libstdc++'s verbose terminate handler (the process aborts): "terminate called after throwing an
# instance of '%s'" then "  what():  %s"
_TERMINATE = lazy_re("^" + re.escape(_TERMINATE_LEAD))
_SIGNALS = r"(?:Segmentation fault|Aborted|Bus error|Killed|Floating point exception|Illegal instruction)"
_EXIT_SHELL = lazy_re(r"^(?:\S+: line \d+: +\d+ +" + _SIGNALS + r"\b.*|" + _SIGNALS + r"(?: +\(core dumped\))?\s*)$")


@core_observer(30)
class LauncherExits(Observer):
    """A non-zero exit or a fatal signal that torchrun or the shell reports (see _EXIT_*)."""
    anchors = [lit(_TORCHRUN_LEAD), lit(_SIGNAL_LEAD), lit(_TERMINATE_LEAD), rxa(_SIGNALS)]

    def __init__(self, core: "Core"):
        self.core = core

    def feed(self, line: Line, ev: Event) -> None:
        text = line.text
        rank = line.rank
        m = _EXIT_TORCHRUN.search(text)
        if m:
            if int(m.group(1)) == 0:
                return
            rank = int(m.group(2)) if rank is None else rank
        elif not (_EXIT_SIGNAL.search(text) or _EXIT_SHELL.match(text.strip()) or _TERMINATE.match(text)):
            return
        if len(self.core.exits) < 100:
            self.core.exits.append(LauncherExit(line.source, line.lineno, rank, text[:300], ev.seq,
                                                ev.view.last_ts(line, ev.st), ev.inp.attempt(line)))

