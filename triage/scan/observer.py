"""The line observer protocol (feed / following / finish, with the anchors of the lines it reacts
to), the Feeder that adapts a plain `feed(line)` object, and the anchor helpers lit / rxa."""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type, TypeVar

from ..inputs.sources import Line
from ..match.anchors import Anchor
from .state import Event, InputState

_O = TypeVar("_O", bound="Observer")
FOLLOW_MAX = 200_000       # physical lines an arguments / config block is followed at most


class Observer:
    """A line observer: `anchors` hit every line it reacts to when it is not following."""
    anchors: Sequence[Anchor] = ()
    # a copy of a line it was just fed changes nothing it keeps (the scanner may skip runs of copies)
    skippable = False
    # the block driver says which of its anchors hit a line it is fed (Event.anchored: their indexes in
    # `anchors`; None from the line driver or when it is fed for another reason: any of them may hold)
    per_anchor = False

    def feed(self, line: Line, ev: Event) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def following(self, inp: InputState, lineno: int) -> bool:
        """True while the observer must see every line of this input (an open block)."""
        return False

    def block_done(self) -> None:
        """The block driver has fed the lines of a block (what waits for a later look is settled now)."""

    def finish(self) -> None:
        pass


# The core observers that see a line before the follow-ups, the error blocks and the rules, registered by
# their modules in the order a line meets them (issue 41: registered, not listed in the engine)
_REGISTERED: List[Tuple[int, Callable[[Any], Observer]]] = []


def core_observer(order: int) -> Callable[[Type[_O]], Type[_O]]:
    """Class decorator: CLS(core) is one of every scan's observers, ORDER its place among them."""
    def add(cls: Type[_O]) -> Type[_O]:
        _REGISTERED.append((order, cls))
        _REGISTERED.sort(key=lambda x: x[0])
        return cls
    return add


def registered() -> List[Callable[[Any], Observer]]:
    """The registered core observers, in order."""
    return [cls for _, cls in _REGISTERED]


class Feeder(Observer):
    """Adapts an object with `feed(line)` (the config collector, the step-time parser)."""

    def __init__(self, obj, anchors: Sequence[Anchor], following: Optional[Callable[[], bool]] = None,
                 batch: bool = False, records: bool = False):
        self.obj = obj
        self.anchors = list(anchors)
        self._following = following
        # batch: the lines of a block that wake only this observer go to obj.scan_lines(buf,
        # starts) first, which parses those it can ({line start: record}); the scanner hands the
        # records back in line order with obj.feed_records(buf, [(start, record)], source,
        # lineno_at, year), interleaved with the lines fed through feed()
        self.batch = batch
        # records: obj.follow_records(buf, lo) parses, ahead of the scanner (a pool worker), the
        # lines of the block buf[lo:] it may follow ({line start: record}; pure: it knows nothing of
        # the scan); a line the observer follows alone, that no anchor hits and that has a record,
        # goes to obj.feed_follow(record) first, and through feed() only when that returns False
        self.records = records
        self._since: Dict[str, int] = {}

    def feed(self, line: Line, ev: Event) -> None:
        self.obj.feed(line)

    @property
    def summarises(self) -> bool:
        """A batch observer whose object summarises runs of a block's records ahead of the scanner
        (obj.summarise(buf, records, cuts), a pool worker's, cut at the lines it is fed through feed());
        a run's summary is handed back to obj.feed_records as its DELTAS when the run is fed at once."""
        return self.batch and callable(getattr(self.obj, "summarise", None))

    @property
    def never_follows(self) -> bool:
        """No `following` was given: the observer never follows a block (following() is always False)."""
        return self._following is None

    def following(self, inp: InputState, lineno: int) -> bool:
        if self._following is None or not self._following():
            if self._since:                     # (a look-up a line saved while nothing is followed)
                self._since.pop(inp.inp.label, None)
            return False
        first = self._since.setdefault(inp.inp.label, lineno)
        return lineno - first <= FOLLOW_MAX


def lit(text: str, ignore_case: bool = False) -> Anchor:
    return Anchor(text, 0, ignore_case)


def rxa(text: str, ignore_case: bool = False) -> Anchor:
    return Anchor(text, 0, ignore_case, regex=True)


_META = re.compile(r"(?<!\\)[.^$*+?{}\[\]|()]|\\[A-Za-z0-9]")     # a metacharacter, a class (\d, \s, ...)
_OPEN_REPEAT = re.compile(r"\{(\d+),\}")


def derived(rx: str) -> Anchor:
    """The anchor of a line regex, so an observer declares each line it reacts to once: the regex
    without its line anchors (^, $) and with open repeats {n,} cut to {n} (every line the regex
    matches holds it); a literal when that is plain text.  For simple line shapes (no \\s, no `.`:
    anchors do not cross a newline)."""
    core = _OPEN_REPEAT.sub(r"{\1}", rx.removeprefix("^").removesuffix("$"))
    if _META.search(core):
        return rxa(core)
    return lit(re.sub(r"\\(.)", r"\1", core))

