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


PREFIXES = ["", "[rank3]:", "[default3]:[rank3]:", "3: ", "  12: ", "[1,3]<stdout>:", "(VllmWorker rank=3 pid=412) ",
            "(EngineCore_DP0 pid=2210) ", "[2026-12-03 06:41:56 TP3] ", "[12/03/2026-06:41:56] [TRT-LLM] [RANK 3] [E] ",
            "2026-12-03T06:41:56.123456789Z ", "2026-12-03T06:41:56.123456789Z stdout F ", "[pod/trainer-0/main] ",
            "> ", "> > [rank3]: ", "(pid=12, ip=10.0.0.3) ", "[NeMo W 2026-12-03 06:41:56 exp_manager:12] "]
MESSAGES = ["[E1203 06:40:19.930319803 ProcessGroupNCCL.cpp:689] [Rank 3] Watchdog caught collective operation",
            "[2026-12-03 06:41:56.123456] iteration        3/ 5000000 | elapsed time per iteration (ms): 5135.9",
            "ERROR 12-04 07:00:05 [core.py:1759] EngineCore encountered a fatal error.", "W1203 06:40:19.930319 12 x.cc:12]",
            "2026-12-03 06:41:56,123 - root - ERROR - global rank 7 failed", "node-0:24310:24310 [0] NCCL INFO AllReduce",
            "no time here [rank: 5]", "E0229 08:32:05.443767990 a 2026-02-29 10:00:00 b", "12:34:56 only a time"]


def test_a_line_read_by_its_layout_is_read_as_each_line_alone(monkeypatch):
    """parse_hits reads a printable line by its layout (issue 44: sources.parse_template, a storm's lines the same
    but for their digits): on every launcher prefix and timestamp kind, each with random digits -- months, days,
    hours and seconds out of range, 29 Februaries, ranks of other lengths --, its parse and texts are those of the
    line read alone, whichever line of a layout came first."""
    import random

    import triage.scan.prepare as prepare
    from triage.inputs.ranks import RANKS
    from triage.match.rx import digit_blind
    from triage.inputs.sources import templates_ok
    assert templates_ok() and RANKS.digit_blind()         # (the regexes are digit-blind: the layouts are used)
    assert digit_blind(r"\[rank(\d+)\]:") and not digit_blind(r"\[1,(\d+)\]") and not digit_blind(r"[0-5]\d")
    rnd = random.Random(44)
    lines = []
    for pre in PREFIXES:
        for msg in MESSAGES:
            line = pre + msg
            for _ in range(6):      # the same layout, other digits (the same count: one layout)
                lines.append("".join(rnd.choice("0123456789") if c.isdigit() and rnd.random() < 0.7 else c
                                     for c in line))
    buf = ("\n".join(lines) + "\n").encode()
    starts = _starts(buf)
    for file_rank in (None, 9):
        prepare._LAYOUTS.clear()
        texts_fast: dict = {}
        fast = parse_hits(buf, starts, file_rank, texts_fast)
        assert prepare._LAYOUTS                                # (read by their layouts)
        monkeypatch.setattr(prepare, "templates_ok", lambda: False)
        texts_slow: dict = {}
        slow = parse_hits(buf, starts, file_rank, texts_slow)
        monkeypatch.undo()
        assert fast == slow and texts_fast == texts_slow
        assert any(p[2] is None for p in slow.values()) and any(p[2] is not None for p in slow.values())


def test_a_line_without_hh_mm_ss_is_not_searched_for_a_time(monkeypatch):
    """Every timestamp regex's match holds "\\d\\d:\\d\\d:\\d\\d", so a line without one is not searched (issue 44: a log
    of handled tracebacks, most lines of no time, searched each with every regex).  The time and year dependence
    parse_ts_ahead, parse_ts and parse_template give are those of every regex searched -- on every prefix and message
    above, on near misses, and on lines whose digits are not ASCII (`\\d` reads them; the C test does not)."""
    import triage.inputs.sources as sources
    near = ["12:34:5 x", "1:23:45 y", "12:3456:78", "12:34:56", "E1203 06:40:19.930319 x", "ERROR 12-04 07:00:05 [a]",
            "2026-12-03 06:41:56", "١٢:٣٤:٥٦ arabic-indic", "E١٢٠٣ ٠٦:٤٠:١٩.٩٣٠٣ glog", "2026-12-03 ٠٦:٤١:٥٦ mixed",
            "café 2026-12-03 06:41:56,1 - non-ascii before", "１２:３４:５６ fullwidth", "[rank3]:: : : 00:00:0",
            "a:b:c", "", ":"]
    lines = [pre + msg for pre in PREFIXES for msg in MESSAGES + near]
    gated = [(sources.parse_ts_ahead(x), sources.parse_ts(x, 2024), sources.parse_template(x, None)[0])
             for x in lines]
    monkeypatch.setattr(sources, "_holds_hms", lambda probe: True)
    searched = [(sources.parse_ts_ahead(x), sources.parse_ts(x, 2024), sources.parse_template(x, None)[0])
                for x in lines]
    assert gated == searched
    assert sum(g[0][0] is not None for g in gated) > len(PREFIXES) * 3     # (times were found: the test reads some)
    monkeypatch.undo()
    assert not sources._holds_hms("12:34:5 x") and sources._holds_hms("١٢:٣٤:٥٦") and sources._holds_hms("a 00:00:00")
