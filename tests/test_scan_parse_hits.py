"""Issue 44: a pool worker parses the hit lines ahead of the scanner (prepare.parse_hits); the scanner's
line built from that parse (BlockView._parse) is make_line's, for every line of the real logs, whatever
year the scanner knows by then (glog's headers carry none)."""
from __future__ import annotations

import glob
import os

import pytest

from triage.inputs.sources import MAX_RAW, Input, decode_line, make_line
from triage.scan.blockview import BlockView
from triage.scan.prepare import _TIMELIKE, PLAIN_MAX, parse_hits, timed_lines

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


@pytest.mark.parametrize("path", REAL[:80], ids=lambda p: os.path.relpath(p, HERE))
def test_a_workers_timed_lines_are_the_look_backs(path):
    """prepare.timed_lines (one search of a block) picks, with the long lines, the lines the look back's
    own test of each line would parse (BlockView._back): those with hh:mm:ss or a byte not printable
    ASCII."""
    with open(path, "rb") as f:
        buf = f.read()
    if not buf.endswith(b"\n"):
        buf += b"\n"
    starts = _starts(buf)
    want = set()
    for s in starts:
        end = buf.find(b"\n", s)
        if end - s > PLAIN_MAX or _TIMELIKE.search(buf, s, end):
            want.add(s)
    got = timed_lines(buf, len(starts) * 4)
    assert got is not None and got == sorted(set(got))        # (sorted, each once: the scanner bisects it)
    assert {s for s in starts if buf.find(b"\n", s) - s > PLAIN_MAX} | set(got) == want


def test_timed_lines_of_a_block_mostly_timed_are_not_sent():
    buf = b"".join(b"[2026-12-03 06:41:%02d] step %d\n" % (i % 60, i) for i in range(100)) + b"plain\n" * 10
    assert timed_lines(buf, 110) is None
    assert timed_lines(buf, 400) == _starts(buf)[:100]
