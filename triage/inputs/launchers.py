"""The rank prefixes launchers put before each line, and the rank forms messages carry: declared once, as
data (triage/inputs/launchers.yaml; a user's own rows from TRIAGE_LAUNCHERS=FILE come first).

Every matcher that reads a rank is generated from these two tables (triage/inputs/ranks.py): the str
side that tags one line (`split_prefix`, `inner_rank`) and the bytes side that finds the ranks of a
whole block in C (`ranks_in`: one search per launcher, the quoted `> ` forms, the lines without a
prefix).  Adding a launcher is one row of the YAML plus a fixture (a log of that launcher in
tests/fixtures/logs/); tests/test_launchers.py checks that both sides read every row's example alike.

A row's `prefix` is a regex valid for str and bytes alike (ASCII classes only; `[ \\t]` rather than
`\\s` where it could meet a newline), matched at the line start, with the rank as the one group
`(?P<rank>...)`; a prefix without that group names no rank (it is still stripped).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, List, Optional, Tuple

from .. import tables
from ..errors import TriageError
from ..record import record

RANK_GROUP = "(?P<rank>"       # how a prefix regex marks the digits of its rank
# a group referred to by its number: \1, \g<1>, (?(1)...) (over-cautious on an escaped backslash before a digit)
GROUP_NUMBER = re.compile(r"\\[1-9]|\\g<\d|\(\?\(\d")


@record(frozen=True)
class Launcher:
    name: str
    example: str              # a line as the launcher prints it (rank `rank`)
    prefix: str               # regex at the line start, up to the end of the prefix (see the module doc)
    probe: Optional[str]      # a literal every block holding such a line holds (bytes side); None: always search
    rank: Optional[int] = 3   # the rank `example` is tagged with (None: the prefix names none)
    sep: str = r"\s?"         # what after the prefix is stripped with it (str side only)
    keeps_time: bool = False  # a logger's header carrying the line's time (read from the raw line): the
    #                           message starts after it, so no launcher prefix is looked for past it

    @property
    def has_rank(self) -> bool:
        return RANK_GROUP in self.prefix


@record(frozen=True)
class InnerRank:
    """A rank named inside a message (not stripped; only read when no prefix or file name gives one)."""
    name: str
    example: str
    rx: str                   # regex valid for str and bytes, one group: the rank
    probe: str                # a literal every such line holds


LAUNCHER_FIELDS = {"name", "why", "example", "prefix", "probe", "rank", "sep", "keeps_time"}
INNER_FIELDS = {"name", "why", "example", "rx", "probe"}


def _launcher(d: Any, where: str, compiled: bool = True) -> Launcher:
    """A launcher row of the table.  COMPILED: its prefix is compiled (str and bytes) to say here, in one
    line, that it is no regex; the shipped rows skip that (tests/test_launchers.py compiles each; ~2.4 ms of
    every start, issue 44)."""
    if not isinstance(d, dict) or set(d) - LAUNCHER_FIELDS or not all(
            isinstance(d.get(k), str) and d[k] for k in ("name", "example", "prefix")):
        raise TriageError(f"{where}: a launcher row is a mapping with name, example, prefix (and probe, rank, sep, "
                          "keeps_time, why)")
    try:
        if compiled:
            rx = re.compile(d["prefix"], re.ASCII)
            re.compile(d["prefix"].encode(), re.ASCII)
            if rx.groups > len(rx.groupindex.keys() & {"rank"}):
                # (the bytes side reads a line's rank as the prefix's one group: another group made it read
                # that group's text instead, and fail)
                raise TriageError(f"{where}: prefix {d['prefix']!r} has a group other than (?P<rank>...): "
                                  "write (?:...) for the others")
            if GROUP_NUMBER.search(d["prefix"]):
                # (the rows are joined into alternations, where a group's number is not the row's own)
                raise TriageError(f"{where}: prefix {d['prefix']!r} refers to a group by its number (the rows "
                                  "are matched as one regex, which numbers the groups anew): write it out again")
    except (re.error, UnicodeEncodeError) as e:
        raise TriageError(f"{where}: prefix {d['prefix']!r} is no regex valid for str and bytes ({e})") from None
    rank = d.get("rank", 3 if RANK_GROUP in d["prefix"] else None)
    if rank is not None and not isinstance(rank, int):
        raise TriageError(f"{where}: rank must be a number or null")
    return Launcher(d["name"], d["example"], d["prefix"], d.get("probe"), rank, d.get("sep", r"\s?"),
                    bool(d.get("keeps_time", False)))


def _inner(d: Any, where: str) -> InnerRank:
    if not isinstance(d, dict) or set(d) - INNER_FIELDS or not all(
            isinstance(d.get(k), str) and d[k] for k in ("name", "example", "rx", "probe")):
        raise TriageError(f"{where}: an inner rank row is a mapping with name, example, rx, probe")
    return InnerRank(d["name"], d["example"], d["rx"], d["probe"])


def _user_rows() -> Tuple[List[Launcher], List[InnerRank]]:
    """A user's own rows (TRIAGE_LAUNCHERS=FILE: YAML or JSON of the table's shape), first in the table."""
    path = os.environ.get("TRIAGE_LAUNCHERS", "")
    if not path:
        return [], []
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(1 << 20)
        if path.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml
            data = yaml.safe_load(text)
    except (OSError, ValueError) as e:
        raise TriageError(f"TRIAGE_LAUNCHERS={path!r}: cannot read it ({e})") from None
    except Exception as e:  # noqa: BLE001 - a YAML error: one line
        raise TriageError(f"TRIAGE_LAUNCHERS={path!r}: not a launcher table ({str(e).splitlines()[0][:200]})") from None
    if not isinstance(data, dict):
        raise TriageError(f"TRIAGE_LAUNCHERS={path!r}: a mapping with `launchers` and/or `inner_ranks`")
    where = f"TRIAGE_LAUNCHERS={path}"
    return ([_launcher(d, f"{where} launchers[{i}]") for i, d in enumerate(data.get("launchers") or [])],
            [_inner(d, f"{where} inner_ranks[{i}]") for i, d in enumerate(data.get("inner_ranks") or [])])


def _table() -> Tuple[Tuple[Launcher, ...], Tuple[InnerRank, ...]]:
    data = tables.load("inputs/launchers")
    user, user_inner = _user_rows()
    return (tuple(user + [_launcher(d, f"launchers.yaml launchers[{i}]", compiled=False)
                          for i, d in enumerate(data["launchers"])]),
            tuple(user_inner + [_inner(d, f"launchers.yaml inner_ranks[{i}]")
                                for i, d in enumerate(data["inner_ranks"])]))


LAUNCHERS, INNER_RANKS = _table()
