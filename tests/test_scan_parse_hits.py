"""Issue 44: a pool worker parses the hit lines ahead of the scanner (prepare.parse_hits); the scanner's
line built from that parse (BlockView._parse) is make_line's, for every line of the real logs, whatever
year the scanner knows by then (glog's headers carry none)."""
from __future__ import annotations

import glob
import os

import pytest

from triage.inputs.sources import MAX_RAW, Input, decode_line, make_line
from triage.scan.blockview import BlockView
from triage.scan.prepare import parse_hits

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = sorted(glob.glob(os.path.join(HERE, "fixtures", "logs", "real", "**", "*.log"), recursive=True))


def _starts(buf: bytes):
    out, at = [], 0
    while at < len(buf):
        out.append(at)
        nl = buf.find(b"\n", at)
        at = nl + 1 if nl >= 0 else len(buf)
    return out


@pytest.mark.parametrize("path", REAL[:80], ids=lambda p: os.path.relpath(p, HERE))
@pytest.mark.parametrize("year", [None, 2024, 2025, 2026])
def test_a_workers_parse_is_make_lines(path, year):
    with open(path, "rb") as f:
        buf = f.read()
    starts = _starts(buf)
    inp = Input(path, "log", None, None)
    pre = parse_hits(buf, starts, None)
    view = BlockView(3, inp)
    view.reset(buf)
    view.year = year
    view.pre, view.pre_lo = pre, 0
    for n, s in enumerate(starts, 1):
        nl = buf.find(b"\n", s)
        want = make_line(decode_line(buf[s:min(nl if nl >= 0 else len(buf), s + MAX_RAW)]), "log", n, None, year)
        got = view._parse(s, n)
        assert (got.text, got.rank, got.ts, got.raw) == (want.text, want.rank, want.ts, want.raw), (s, want.raw)


def test_a_year_less_time_follows_the_scanners_year():
    line = b"[rank3]:[E0229 08:32:05.443767990 ProcessGroupNCCL.cpp:689] [Rank 3] Watchdog caught collective\n"
    pre = parse_hits(line, [0], None)
    assert pre[0][3] is True                    # its time depends on the year
    view = BlockView(3, Input("x", "x", None, None))
    view.reset(line)
    view.pre, view.pre_lo = pre, 0
    for year in (None, 2024, 2025, 2026):
        view.year = year
        view._parsed.clear()
        assert view._parse(0, 1).ts == make_line(line[:-1].decode(), "x", 1, None, year).ts
    iso = b"[2026-12-03 06:41:56.123456] iteration 1/ 10 |\n"
    assert parse_hits(iso, [0], None)[0][3] is False
