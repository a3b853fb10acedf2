"""Issue 44's tenth pass: cheap tests before a regex search, checked against the searches themselves on every
line of the fixture logs (the real ones, and the synthetic ones labelled so; none written for these tests) and on
the wordings the tables hold.

- sources._parse_ts skips the timestamp forms whose every match holds a `-` on a line of none;
- collectives._found skips a search when the line lacks the plain text every match holds (derive_literals);
- prepare.parse_hits hands rule_searches the lines it decoded (TEXTS): the searches are the same."""
from __future__ import annotations

import os
import random

import pytest

from triage.inputs import sources
from triage.verdict import collectives

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")


def _raw_fixture_lines():
    """Every line of the plain fixture logs (their first 4 MiB each), as bytes."""
    out = []
    for root, _, files in os.walk(LOGS):
        for f in sorted(files):
            if f.endswith((".gz", ".zst", ".xz", ".bz2")):
                continue
            with open(os.path.join(root, f), "rb") as fh:
                data = fh.read(4 << 20)
            out.extend(x for x in data.split(b"\n") if x)
    return out


RAW_ALL = _raw_fixture_lines()
LINES = [sources.normalise(sources.decode_line(x)) for x in RAW_ALL]


def _parse_ts_every_form(text, year):
    """_parse_ts with every form tried on every line (the skip taken out)."""
    saved = sources._TS
    try:
        sources._TS = [(rx, kind, False) for rx, kind, _ in saved]
        return sources._parse_ts(text, year)
    finally:
        sources._TS = saved


def test_fixture_lines_are_many_and_varied():
    assert len(LINES) > 15_000
    assert sum("-" in x[:200] for x in LINES) > 1000 and sum("-" not in x[:200] for x in LINES) > 1000


@pytest.mark.parametrize("year", [None, 2024])
def test_timestamps_skipping_dashed_forms_are_every_forms_on_real_lines(year):
    tried = 0
    for text in LINES:
        assert sources._parse_ts(text, year) == _parse_ts_every_form(text, year), text
        tried += 1
    # and on each form's own wordings, with and without a dash elsewhere on the line
    for text in ["E1203 06:40:25.080183771 ProcessGroupNCCL.cpp:689] x", "[2026-12-03 06:41:56.123456] x",
                 "ERROR 12-04 07:00:05 [core.py:1759] x", "I1203 06:40:25.080183 x - y", "W0229 01:02:03.4 x"]:
        assert sources._parse_ts(text, year) == _parse_ts_every_form(text, year), text
    assert tried == len(LINES)


def test_a_form_marked_dashless_is_one_whose_matches_may_hold_no_dash():
    """The table's flag is the truth: each form flagged as holding a `-` has a `-` in every match of its
    wordings, and the one not flagged matches a line of none."""
    samples = {"iso": "[2026-12-03 06:41:56.123456] x", "glog": "E1203 06:40:25.080183771 x"}
    for rx, kind, dashed in sources._TS:
        if dashed:
            assert "-" in rx.pattern
        else:
            assert rx.search(samples[kind]) is not None and "-" not in samples[kind]


def _observe_every_search(text):
    saved = collectives._found
    try:
        collectives._found = lambda rx, t: collectives.search(rx, t)
        return collectives._observe(text, 3, "log", 1)
    finally:
        collectives._found = saved


def test_collective_observations_with_literal_prefilters_are_the_searches_on_real_lines():
    probed = [x for x in LINES if any(p in x for p in collectives._PROBES)]
    assert len(probed) > 50
    seen = 0
    for text in probed + LINES[:5000]:
        got = collectives._observe(text, 3, "log", 1)
        assert got == _observe_every_search(text), text
        seen += got is not None
    assert seen > 20


def test_each_collectives_regex_has_a_literal_prefilter():
    """derive_literals finds plain text in every wording of the table (else the prefilter is void)."""
    for rx in [collectives._WORK, *[r for _, r in collectives._WORK_LINES], *collectives._STATUS, *collectives._PG]:
        collectives._found(rx, "")
        assert collectives._LITS[id(rx)][0], rx.pattern


def test_parse_hits_texts_give_rule_searches_the_same_searches():
    """A worker's parse_hits decodes each hit line once and hands rule_searches the text: the searches are
    the ones rule_searches makes decoding the lines itself (every fixture log's hit lines)."""
    from triage.scan import prepare
    aset, rules = _catalog_scan()
    rnd = random.Random(0)
    n = 0
    for f, buf in _fixture_blocks():
        h, _, _ = prepare.prepare_block(buf, 0, aset, [])
        starts = sorted(h)
        texts = {}
        prepare.parse_hits(buf, starts, rnd.choice([None, 3]), texts)
        a = prepare.rule_searches(buf, h, rules, None, True, {}, texts)
        b = prepare.rule_searches(buf, h, rules, None, True, {})
        assert {k: v[:2] for k, v in a.items()} == {k: v[:2] for k, v in b.items()}, f
        n += len(a)
    assert n > 500


@pytest.mark.parametrize("pattern,paths", [
    # (the ways through it times the longest way's steps, repeats unrolled)
    (r"(?:Watchdog c|\bC)aught collective operation timeout:? ?WorkNCCL\(", 456),
    (r"x{2,5}y", 28), (r"(?:ab|cd){1,3}", 98), (r"\{literal\}", 9), (r"(?<![\w'\"])CUDA graphs", 12),
    (r"(a+)+b", 0), (r".*foo", 0), (r"foo\s+bar", 0),              # unbounded
    (r"(\d{1,12})-\1", 0),                                          # a back-reference
    (r"a{e<=1}", 0), (r"[{]x", 0),                                  # a `{` no counted repeat (regex: fuzzy)
    (r"[[:alpha:]]", 0), (r"[[a-z]--[aeiou]]", 0),                  # a set in a set: regex reads it otherwise
    (r"(?:a?){1000}", 0),                                           # past MAX_PATHS
    (r"\p{L}+", 0),                                                 # regex-only: the stdlib cannot read it
])
def test_bounded_paths(pattern, paths):
    from triage.match import rx
    assert rx.bounded_paths(pattern) == paths


def test_searches_without_the_timeout_find_what_searches_with_it_find_on_real_lines():
    """Every catalog rule's regex on every fixture line that holds one of its literals: search() (the timeout
    left out where the work is bounded) finds the same match as the pattern's own search with the timeout."""
    from triage.match import rx
    from triage.patterns import load_all
    from triage.scan.engine import Engine
    rules = [r for _, r in Engine(load_all()).rules]
    fast = compared = 0
    for rule in rules:
        rule.rx.paths = max(rule.rx.paths, -1)     # (its bound read at its next search: whatever ran before in this
        #                                             process, e.g. a worker's searches learnt by layout, made fewer)
        lits = [x.lower() for x in rule.literals] if rule.ignore_case else list(rule.literals)
        for text in LINES:
            hay = text.lower() if rule.ignore_case else text
            if lits and not any(x in hay for x in lits):
                continue
            got = rx.search(rule.rx, text)
            want = rule.rx.compiled().search(text, timeout=rx.TIMEOUT)
            assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups())), (rule.rx.pattern,
                                                                                                      text)
            compared += 1
            fast += rx._bounded(rule.rx, text)
    assert compared > 1000 and fast > 500, (compared, fast)


@pytest.mark.parametrize("pattern", [
    r"(?:\w\w){1000}\W", r"(?:a|b){1000}[cd]", r"(?:[ab]{2}){1000}[cd]", r"(?:(a)(b)){1000}[cd]",
    r"(?:(.)(\w)){1000}\W", r"(?:(.)(\w)(?<=\w)(?=\w)(?<=\w)(?=\w)(?<=\w)(?=\w)(?<=\w)(?=\w)){1000}\W|zqzq!"])
def test_a_repeat_counts_its_rounds_steps(pattern):
    """The review: a counted repeat of a body of one way was counted one step, so these ran 20-800 ms on a
    4,000-character line untimed; a repeat's rounds are its steps now: searched with the timeout there."""
    from triage.match import rx
    r = rx.lazy(pattern)
    assert rx.bounded_paths(pattern) >= 1000
    for _ in range(rx.READ_AFTER + 1):        # (its bound read once it was searched READ_AFTER times)
        rx._bounded(r, "a")
    assert r.paths == rx.bounded_paths(pattern)
    for text in ("a" * 4000, "ab" * 2000, "zqzq" + "a" * 3990):
        assert not rx._bounded(r, text)
    assert rx._bounded(r, "a" * 40)


def test_an_unbounded_pathological_search_is_still_cut_off():
    """(a|aa)+$ on 60 a's and a b backtracks ~2^40 ways (`regex` cuts (a+)+$ short itself): not bounded, so searched
    with the timeout -- no match, counted as cut off."""
    from triage.match import rx
    r = rx.lazy(r"(a|aa)+$")
    t = rx.Timeouts()
    r.paths = -1                              # (its bound read at its next search)
    assert not rx._bounded(r, "a" * 60 + "b") and r.paths == 0
    assert rx.search(r, "a" * 60 + "b", t) is None and t.count == 1


def test_source_echo_first_character_test_is_the_regex_on_every_first_character():
    """rules.source_echo tests the first character before SOURCE_ECHO: the same answer for every first character
    up to U+30FF (and a few spaces beyond) followed by what the regex looks for, and on every fixture line."""
    from triage.scan.rules import SOURCE_ECHO, source_echo
    texts = [chr(cp) + tail for cp in [*range(0x3100), 0xFEFF, 0x205F, 0x202F, 0x180E, 0x200B]
             for tail in ("assert x", "^", "", " raise y", "f'x'", " ~~")]
    for t in texts + LINES:
        assert source_echo(t) == bool(SOURCE_ECHO.match(t)), repr(t)
    assert sum(map(source_echo, texts)) > 50


def test_quick_searches_are_not_timed_and_find_what_timed_ones_find():
    """rules.search_rule makes a search bounded to rx.QUICK_WORK steps untimed (0.0 s: never slow) and finds what
    the timed search finds; a longer text's search is timed."""
    from triage.match import rx
    from triage.patterns import load_all
    from triage.scan import rules
    from triage.scan.engine import Engine
    rule = next(r for _, r in Engine(load_all()).rules if "Watchdog c" in r.rx.pattern)
    line = ("[E1203 06:40:25.080183771 ProcessGroupNCCL.cpp:689] [Rank 1096] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
            "ran for 600020 milliseconds before timing out.")
    assert [rx.quick(rule.rx, line) for _ in range(rx.READ_AFTER + 1)][-1]       # (read after READ_AFTER)
    assert rules.search_rule(rule, line, rx.Timeouts()) == (True, 0.0, 0)
    long_line = line + " x" * 5000
    assert not rx.quick(rule.rx, long_line)
    hit, seconds, cut = rules.search_rule(rule, long_line, rx.Timeouts())
    assert hit and seconds > 0.0 and cut == 0


def test_a_patterns_bound_is_read_only_once_it_is_searched_often():
    """A tiny log searches ~19 patterns a few times each: their bounds are not read (~0.1 ms each); a pattern
    searched READ_AFTER times is (a storm's rule)."""
    from triage.match import rx
    r = rx.lazy(r"x{2,5}y")
    assert r.paths == -rx.READ_AFTER
    got = [rx._bounded(r, "xxy") for _ in range(rx.READ_AFTER)]
    assert got == [False] * (rx.READ_AFTER - 1) + [True] and r.paths == 28


def _catalog_scan():
    """The catalog's anchor set and rules, as a scan wires them."""
    from triage.patterns import load_all
    from triage.scan.engine import Engine
    eng = Engine(load_all())
    _, obs, _ = eng.wire([])
    return eng.anchor_set_of(obs), [r for _, r in eng.rules]


def _hit_lines_and_other_digits(aset, seed: int) -> bytes:
    """Every fixture log's hit lines, each followed by a copy with other digits (the same layout), as a block."""
    from triage.scan import prepare
    rnd = random.Random(seed)
    lines = []
    for _, buf in _fixture_blocks():
        h, _, _ = prepare.prepare_block(buf, 0, aset, [])
        for s in sorted(h):
            e = buf.find(b"\n", s)
            line = buf[s:e if e >= 0 else len(buf)]
            lines += [line, bytes(rnd.choice(b"0123456789") if 48 <= c <= 57 else c for c in line)]
    return b"\n".join(lines) + b"\n"


def _fixture_blocks():
    """(name, its first MiB) of every plain fixture log."""
    for root, _, files in os.walk(LOGS):
        for f in sorted(files):
            if not f.endswith((".gz", ".zst", ".xz", ".bz2")):
                with open(os.path.join(root, f), "rb") as fh:
                    yield f, fh.read(1 << 20)


def test_a_rule_gives_a_line_what_it_gave_a_line_of_its_layout(monkeypatch):
    """A worker's rule blind to which digit is which gives a line what it gave a line of the same layout, its
    digits zeroed (issue 44: prepare.WorkerBudget's layouts): every fixture hit line and copies of it with other
    digits, searched with the layouts kept, match the rules they match searched each alone; a rule with a digit of
    its own (Xid 79, c10d::, a version) or a size share is never blind."""
    from triage.scan import prepare
    aset, rules = _catalog_scan()
    blind = [prepare._digit_blind_rule(r) for r in rules if r is not None]
    assert sum(blind) > len(blind) // 2 and not all(blind)
    assert not any(prepare._digit_blind_rule(r) for r in rules if r is not None and (
        r.min_share is not None or "Xid" in r.rx.pattern or "c10d::" in r.rx.pattern))
    buf = _hit_lines_and_other_digits(aset, 44)
    h, _, _ = prepare.prepare_block(buf, 0, aset, [])
    guard = prepare.WorkerBudget(rules)
    with_layouts = prepare.rule_searches(buf, h, rules, guard, True, {})
    assert 0 < len(guard.layouts) < len(h)          # (lines of one layout read from it)
    monkeypatch.setattr(prepare, "_digit_blind_rule", lambda rule: False)
    alone = prepare.rule_searches(buf, h, rules, prepare.WorkerBudget(rules), True, {})
    assert len(alone) > 1000 and any(v[1] for v in alone.values())
    assert {k: v[:2] for k, v in with_layouts.items()} == {k: v[:2] for k, v in alone.items()}


def test_plain_hit_lines_read_by_their_layout_are_each_lines_own(monkeypatch):
    """A worker's plain_hits flags of a printable line are its layout's (issue 44: prepare._PLAIN_LAYOUTS, its
    tests digit-blind): every fixture hit line and copies with other digits -- a time out of range among them, which
    no layout tells -- get the flags they get each alone."""
    from triage.scan import prepare
    assert prepare._plain_blind()
    aset, rules = _catalog_scan()
    buf = _hit_lines_and_other_digits(aset, 7)
    h, _, _ = prepare.prepare_block(buf, 0, aset, [])
    starts = sorted(h)
    got = []
    for blind in (True, False):
        monkeypatch.setattr(prepare, "_plain_blind", lambda: blind)
        prepare._PLAIN_LAYOUTS.clear()
        texts: dict = {}
        norms: dict = {}
        parsed = prepare.parse_hits(buf, starts, None, texts)
        searched = prepare.rule_searches(buf, h, rules, None, True, norms, texts)
        got.append(prepare.plain_hits(buf, searched, parsed, norms))
        assert bool(prepare._PLAIN_LAYOUTS) == blind
    assert got[0] == got[1] and len(got[0]) > 200


def test_collective_observations_by_layout_are_each_lines_own(monkeypatch):
    """observe() reads a line's observation by its layout (issue 44: a storm's kept watchdog lines, the same but for
    their ranks): every fixture line the collectives read, and copies with other digits, observed with the layouts
    kept, give what each gives read alone."""
    from types import SimpleNamespace

    from triage.inputs.sources import Line
    rnd = random.Random(43)
    texts = [t for t in LINES if any(p in t for p in collectives._PROBES)]
    texts += [("".join(rnd.choice("0123456789") if c.isdigit() else c for c in t)) for t in texts for _ in range(3)]
    ms = [SimpleNamespace(line=Line(t, "job.log", i + 1, rnd.choice([None, 5]), None)) for i, t in enumerate(texts)]
    assert collectives._blind() and len(ms) > 4 * collectives.LAYOUTS_AFTER     # (most read by their layout)
    by_layout = collectives.observe(ms)
    monkeypatch.setattr(collectives, "_blind", lambda: False)
    alone = collectives.observe(ms)
    assert len(alone) > 20 and by_layout == alone
    assert len({(o.seq, o.rank) for o in alone}) > 10             # (other digits read as other numbers)


def _raw_lines():
    out = []
    for root, _, files in os.walk(LOGS):
        for f in sorted(files):
            if not f.endswith((".gz", ".zst", ".xz", ".bz2")):
                with open(os.path.join(root, f), "rb") as fh:
                    out.extend(x for x in fh.read(4 << 20).split(b"\n") if x)
    return out


def _yearless_facts(aset, raw: bytes) -> bool:
    """Whether prepare.year_changes takes the block of the line RAW for one that may hold a year-less time: the
    facts of its anchor pass, or a digit of another script."""
    from triage.scan import prepare
    facts = prepare.BlockFacts()
    prepare.prepare_block(raw + b"\n", 0, aset, [], facts=facts)
    return prepare._may_read_a_year(raw + b"\n", facts.found)


def _depends_on_year(raw: bytes) -> bool:
    """Whether the line scan's time of the line RAW depends on the year (a year-less header read)."""
    return sources.parse_ts_ahead(sources.normalise(sources.decode_line(raw)))[1]


def test_a_line_whose_time_depends_on_the_year_holds_a_yearless_fact_on_real_lines():
    """Issue 44: the block scan looks for a year that changes and comes back inside a block only in a block whose
    facts (sources.YEARLESS_FORMS, in the anchor pass) say it may hold a year-less time.  Every fixture line whose
    time the line scan reads with a year-less header holds one; most other lines none."""
    aset, _ = _catalog_scan()
    dep = other = quiet = 0
    for raw in _raw_lines():
        facts = _yearless_facts(aset, raw)
        if _depends_on_year(raw):
            assert facts, raw
            dep += 1
        else:
            other += 1
            quiet += not facts
    assert dep > 200 and other > 10_000
    if aset.engine == "hyperscan":
        assert quiet > 0.9 * other, (quiet, other)


def test_lines_made_of_header_pieces_hold_a_yearless_fact_where_their_time_depends_on_the_year():
    """Property: glog and vLLM headers in digits of any script (a str regex's \\d reads them), with ANSI colours,
    control bytes, carriage returns or spaces between their parts, after and before other text -- wherever the
    line scan reads a year-less time, the block's facts say so."""
    from hypothesis import given, settings
    from hypothesis import strategies as hs
    aset, _ = _catalog_scan()
    digits = ["0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669",
              "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19"]

    def num(n):
        return hs.tuples(hs.sampled_from(digits), hs.lists(hs.integers(0, 9), min_size=n, max_size=n)).map(
            lambda d: "".join(d[0][k] for k in d[1]).encode())
    noise = hs.sampled_from([b""] * 12 + [b"\x1b[31m", b"\x1b[0m", b"\x01", b"\x0c", b"\x7f", b"\r", b" "])
    glog = hs.tuples(hs.sampled_from([b"E", b"I", b"W", b"F"]), num(4), hs.just(b" "), num(2), hs.just(b":"),
                     num(2), hs.just(b":"), num(2), hs.just(b"."), num(6))
    vllm = hs.tuples(hs.sampled_from([b"ERROR", b"INFO", b"CRITICAL"]), hs.just(b" "), num(2), hs.just(b"-"), num(2),
                     hs.just(b" "), num(2), hs.just(b":"), num(2), hs.just(b":"), num(2), hs.just(b" "))
    around = hs.sampled_from([b"", b"[rank1]:", b"\x1b[1;32m", b"[2024-02-28 ", b"\r", b"x "])
    seen = []

    @settings(max_examples=300, deadline=None)
    @given(around, hs.one_of(glog, vllm).flatmap(lambda parts: hs.lists(noise, min_size=len(parts),
                                                                        max_size=len(parts)).map(
        lambda ns: b"".join(n + p for n, p in zip(ns, parts)))), around)
    def check(head, header, tail):
        raw = head + header + tail + b"x.py:1] boom"
        if _depends_on_year(raw):
            seen.append(raw)
            assert _yearless_facts(aset, raw), raw
    check()
    assert len(seen) > 20, len(seen)


def test_an_anchor_sets_facts_hit_no_line_and_the_fallback_says_each_may_hold(monkeypatch):
    """AnchorSet's facts: searched in the anchors' pass, each reported once, no line hit by them (the hits are
    those of the set without facts); without Hyperscan every fact may hold."""
    from triage.match import anchors
    a = [anchors.Anchor("RuntimeError", 3), anchors.Anchor(r"E\d{4} ", 4, regex=True)]
    facts = (rb"[IWEF]\d{4} \d\d:", rb"never here")
    block = b"x\nE0229 23:00:03.0 RuntimeError: boom\nI0101 10:00:00.1 ok\nRuntimeError\n"
    got: set = set()
    with_facts = anchors.AnchorSet(a, facts)
    assert with_facts.scan(block, facts=got) == anchors.AnchorSet(a).scan(block) == {2: {3, 4}, 58: {3}}
    if with_facts.engine == "hyperscan":
        assert got == {0}
        assert with_facts.scan(b"plain\n", facts=got) == {} and got == {0}
    monkeypatch.setattr(anchors, "_hs", None)
    fallback, got = anchors.AnchorSet(a, facts), set()
    assert fallback.engine == "re"
    assert fallback.scan(block, facts=got) == {2: {3, 4}, 58: {3}} and got == {0, 1}


def test_a_fact_c_tells_is_no_part_of_the_database_and_is_told_of_the_buffer():
    """anchors.C_FACTS (a byte not ASCII): not compiled into Hyperscan (with the catalog's other facts it made a
    block holding such bytes scan ~3.7x slower: issue 44's twentieth pass), told by C of the block's buffer, with
    the same index; the other facts as before."""
    from triage.match import anchors
    a = [anchors.Anchor("RuntimeError", 3)]
    facts = (rb"[IWEF]\d{4} \d\d:", rb"[\x80-\xff]", rb"\x1b")
    aset = anchors.AnchorSet(a, facts)
    for block, want in ((b"RuntimeError: x\n", set()), ("RuntimeError: \u00e9\n".encode(), {1}),
                        (b"I0101 10:00:00 \x1b[0m\xff\n", {0, 1, 2}), (b"\xc3\xa9\n" * 3, {1})):
        got: set = set()
        hits = aset.scan(block, facts=got)
        assert hits == anchors.AnchorSet(a).scan(block)
        if aset.engine == "hyperscan":
            assert got == want, (block, got)
    if aset.engine == "hyperscan":
        assert aset._c_facts and [k for k, _ in aset._c_facts] == [1] and aset._hs_facts == [0, 2]
        buf = b"\xff tail\nRuntimeError\n"          # (a block past its tail: the buffer's byte counts)
        got = set()
        aset.scan(memoryview(buf)[9:], 9, buf, facts=got)
        assert got == {1}


def test_a_block_with_a_digit_of_another_script_says_so():
    """Property: sources.other_digits_in(B) is true wherever B decoded as a line holds a digit that is not ASCII (a
    str regex's \\d reads it: a year-less header in such digits is a time), among bytes of every kind -- stray
    UTF-8 lead and continuation bytes, ASCII between them -- and false on ASCII bytes."""
    import re
    from hypothesis import given, settings
    from hypothesis import strategies as hs
    digit = re.compile(r"\d")
    piece = hs.sampled_from([b"a", b"7", b" ", b"\n", b"\xd9", b"\xa2", b"\xe0", b"\xa5", b"\xbc", b"\xef",
                             b"\xf0", b"\x9d", b"\x9f", "\u0662".encode(), "\u0966".encode(), "\uff11".encode(),
                             "\U0001d7ce".encode(), "\u2026".encode(), "\u2588".encode(), "\U0001f680".encode(),
                             "\u00e9".encode(), b"\x00"])
    found = []

    @settings(max_examples=500, deadline=None)
    @given(hs.lists(piece, max_size=30).map(b"".join))
    def check(raw):
        text = raw.decode("utf-8", "replace")
        if any(digit.match(c) and not c.isascii() for c in text):
            found.append(raw)
            assert sources.other_digits_in(raw), raw
        if raw.isascii():
            assert not sources.other_digits_in(raw)
    check()
    assert found
    assert not sources.other_digits_in("caf\u00e9 \u2026 \u2588 \U0001f680 12:00".encode())


def test_a_blocks_last_date_is_the_last_of_every_date_in_its_tail(monkeypatch):
    """prepare._last_date (the last window first, then the whole tail) is the last of all the ISO dates the tail
    holds (what year_changes took it for): a date, or two, at every distance from the block's end, windows small
    enough to cut one in two, and the block's start (LO) before, inside and after them."""
    from triage.scan import prepare
    monkeypatch.setattr(prepare, "YEAR_TAIL_FIRST", 48)
    monkeypatch.setattr(prepare, "YEAR_TAIL", 300)
    dates = [b"[2026-12-03 06:41:56] x", b"2025-01-01T00:00:00Z", b"2024-02-29_10:00:00"]
    tried = 0
    for d in dates:
        for before in range(0, 340, 3):
            for after in (0, 1, 7, 23, 150):
                for other in (b"", b"2023-05-05 05:05:05 z\n"):
                    buf = b"a" * before + other + d + b"\n" + b"y" * after
                    for lo in (0, before // 2, len(buf) - 10):
                        every = [m.start() for m in prepare._ISO_DATE_B.finditer(buf, max(lo, len(buf) - 300))]
                        assert prepare._last_date(buf, lo) == (every[-1] if every else -1), (buf, lo)
                        tried += 1
    assert tried > 3000


def test_year_changes_searches_a_block_of_dates_shown_only_normalised_a_few_times(monkeypatch):
    """A block of 2,000 lines whose dates show only once normalised (prepare.BlockFacts.normed) and a year-less
    header (the exact walk): each line is read in its place, and the search for a raw date of another year runs
    again only when the year changed or the scan passed its match -- a search from each such line to the block's
    end made bench_scan.py's log (an ANSI colour on a quarter of its lines) 30 times slower."""
    from triage.scan import prepare
    aset, _ = _catalog_scan()
    lines = [b"[rank0]: [2025-08-0\x011 10:00:%02d] INFO step" % (i % 60) for i in range(2000)]
    lines[1000] = b"[rank0]: [2026-01-0\x012 10:00:00] INFO the year changes"
    buf = b"\n".join(lines + [b"[rank1]:E0301 10:00:03.000000 1 x.py:1] RuntimeError: boom"]) + b"\n"
    facts = prepare.BlockFacts()
    prepare.prepare_block(buf, 0, aset, [], facts=facts)
    assert len(facts.normed) == 2000
    first = prepare.first_dated_in(buf, 0, None, normed=facts.normed)
    assert first is not None and first[0] == 0
    searches = [0]
    real = prepare._other_year

    def counting(year):
        rx = real(year)

        class Counted:
            def search(self, *a):
                searches[0] += 1
                return rx.search(*a)
        return Counted()
    monkeypatch.setattr(prepare, "_other_year", counting)
    got = prepare.year_changes(buf, first[0], first[1], None, facts=facts.found, normed=facts.normed)
    assert [buf[s:s + 40] for s, _, _ in got] == [lines[1000][:40], lines[1001][:40]]
    assert searches[0] <= 4, searches[0]


def test_a_date_that_normalising_joins_sets_a_fact_of_its_block():
    """Property: a date with ANSI escapes or control bytes put between its characters (a short prefix before it):
    wherever the raw search for dates does not read the date the normalised line holds (_date_read_otherwise),
    the anchor pass says normalising may join one (a fact of prepare._JOINS_A_DATE: the lines with control
    characters are then looked at normalised, BlockFacts.normed).  (An escape run pushing a date past a line's
    first 200 raw bytes is not among these: an open case.)"""
    from hypothesis import given, settings
    from hypothesis import strategies as hs

    from triage.scan import prepare
    aset, _ = _catalog_scan()
    date = b"2025-08-01 10:00:32"
    cut = hs.sampled_from([b"\x1b[0m", b"\x1b[1;31m", b"\x1b[0m\x1b[2m", b"\x01", b"\x0c", b"\x7f", b"\x00",
                           b"\x1b]0;t\x07", b"\x1bM"])
    found = []

    @settings(max_examples=300, deadline=None)
    @given(hs.sampled_from([b"", b"[", b"[rank1]: [", b"INFO ", b"\x1b[32mINFO\x1b[0m "]),
           hs.lists(hs.tuples(hs.integers(0, len(date)), cut), max_size=3), hs.sampled_from([b"] x", b" y", b""]))
    def check(head, cuts, tail):
        d = date
        for at, c in sorted(cuts, reverse=True):
            d = d[:at] + c + d[at:]
        raw = head + d + tail
        buf = raw + b"\n"
        facts = prepare.BlockFacts()
        prepare.prepare_block(buf, 0, aset, [], facts=facts)
        text = sources.normalise(sources.decode_line(raw)).encode()
        if b"\n" not in raw and prepare._date_read_otherwise(buf, 0, text):
            found.append(raw)
            assert facts.found & prepare._JOINS_A_DATE, raw
            assert facts.normed == [0], raw
    check()
    assert found


# the fixture logs' ASCII lines without a carriage return: what a worker's scan_lines claims (its bytes-level
# shortcuts read them; a line it claims is one of these)
RAW = [x for x in RAW_ALL if x.isascii() and b"\r" not in x]
# each time form and its neighbours: an invalid ISO date before a glog header (the first form gives no time, the
# next one does), a `-` before the date, seconds 60 and 61, fractions of 1 and 9 digits, a date past 200 bytes,
# ISO with a `T` or `_`, the vLLM form, digits run into the date
_EDGES = [b"[2026-13-03 06:40:05.1] E1203 06:40:25.080183 x", b"a-b [2026-12-03 06:40:05.100050] iteration 1/ 5 |",
          b"2026-12-03 06:40:60 x", b"2026-12-03 06:40:61 x", b"2026-12-03T06:40:05.5 x", b"2026-12-03_06:40:05,123456789 x",
          b"ERROR 12-04 07:00:05 [core.py:1759] x", b"12026-12-03 06:40:05 x", b"x" * 190 + b" 2026-12-03 06:40:05 x",
          b"2026-02-30 06:40:05 x", b"2026-12-03 24:00:00 x", b"- 2026-1-03 06:40:05 2026-12-03 06:40:05 x",
          b"[rank0]:node-0:24310:24310 [0] NCCL INFO cudaDriverVersion 12080", b"2026-12-03 06:40:05.1234567890 x"]


def test_a_plain_lines_time_read_on_its_bytes_is_parse_ts_aheads_on_real_lines():
    """sources.parse_ts_ahead_ascii (a worker's step lines: ISO read on the bytes) gives what parse_ts_ahead gives
    of the line's first 200 characters, on every plain fixture line and on each form's edges."""
    tried = dated = 0
    for raw in RAW + _EDGES:
        e = min(len(raw), 200)
        got = sources.parse_ts_ahead_ascii(raw, 0, e)
        assert got == sources.parse_ts_ahead(raw[:e].decode("ascii")), raw
        # (and inside a block: the line at an offset, its end where the next line begins)
        block = b"2026-12-03 06:40:05 before\n" + raw + b"\n1999-01-01 00:00:00 after\n"
        assert sources.parse_ts_ahead_ascii(block, 27, 27 + e) == got, raw
        tried += 1
        dated += got[0] is not None
    assert tried > 10_000 and dated > 1_000


def test_a_step_logs_capture_and_time_tests_on_bytes_are_their_regexes_on_real_lines():
    """steps._capture_only's literal finds and _timed's colon-first search are the regex searches they stand for."""
    import re

    from triage.verdict import steps
    lits = re.compile(b"|".join(re.escape(x) for x in steps._CAPTURE_LITS))
    caps = 0
    for raw in RAW + _EDGES + [b"x create cuda graphs 12:34:5", b"Capturing CUDA graph at 12:34:56", b"1:23:45:6"]:
        le = len(raw)
        assert steps._timed(raw, 0, le) == (steps._HMS_B.search(raw, 0, min(le, 200)) is not None), raw
        want = (lits.search(raw, 0, le) is not None and steps._NOT_ONLY_CAPTURE_B.search(raw, 0, le) is None
                and steps._HMS_B.search(raw, 0, min(le, 200)) is None)
        assert steps._capture_only(raw, 0, le) == want, raw
        caps += want
    assert caps > 0
