"""The launcher table (issue 21): rank prefixes are declared once (triage/scan/launchers.py) and every
matcher is generated from it (triage/scan/ranks.py), so the str path that tags one line
(split_prefix, then the file's rank, then inner_rank: what make_line does) and the bytes path that
finds a block's ranks in C (ranks_in) read every line alike.  Adding a launcher is one row plus a
fixture: the test with a made-up row below shows both sides pick it up."""
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.inputs import ranks
from triage.inputs.launchers import INNER_RANKS, LAUNCHERS, InnerRank, Launcher
from triage.inputs.ranks import RANKS, RankReader
from triage.inputs.text import normalise

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures")
# each launcher row's fixture: a log printed with that prefix (a row without one fails test_every_row_has_a_fixture)
FIXTURES = {
    "kubectl": "launchers/kubectl_prefix.log",          # SYNTHETIC (a real torchrun log, kubectl's prefix)
    "cri": "logs/synthetic/launchers/cri_prefix.log",                  # SYNTHETIC (a real torchrun log, CRI's log file format)
    "docker-timestamps": "logs/synthetic/launchers/docker_timestamps.log",   # SYNTHETIC (a real torchrun log, docker logs -t)
    "ray": "logs/synthetic/launchers/ray_prefix.log",                  # SYNTHETIC (a real torchrun log, Ray's worker prefix)
    "journald": "logs/synthetic/launchers/journald_prefix.log",        # SYNTHETIC (a real torchrun log, journalctl's header)
    "torchrun": "logs/real/gpu-multirank/nccl_rank_error_vs_timeouts.log",
    "openmpi": "logs/synthetic/multirank/openmpi_healthy.log",
    "nemo": "launchers/nemo_prefix.log",                # SYNTHETIC
    "srun": "logs/synthetic/multirank/srun_nccl_failure.log",
    "vllm-worker": "logs/synthetic/launchers/vllm_worker_rank.log",                       # SYNTHETIC (real strings)
    "vllm-worker-tp": "logs/synthetic/launchers/vllm_worker_tp.log",                      # SYNTHETIC (real strings)
    "vllm-enginecore-dp": "logs/synthetic/launchers/vllm_enginecore_dp.log",              # SYNTHETIC (real strings)
    "sglang-tp": "logs/synthetic/launchers/sglang_tp.log",                                 # SYNTHETIC (real strings)
    "trtllm": "logs/synthetic/launchers/trtllm_rank.log",                                 # SYNTHETIC (real strings)
    "vllm-process": "logs/synthetic/vllm/enginecore_failed_to_start.log",      # SYNTHETIC (real strings)
    "vllm-logger": "logs/synthetic/vllm/worker_exception_caught_0.6.log",      # SYNTHETIC (real strings)
    "sglang": "logs/synthetic/other-stacks/sglang_capture_failed_oom.log",     # SYNTHETIC (real strings)
}


def str_rank(reader, line, file_rank=None):
    """The rank make_line tags LINE with (no continuation: one line alone)."""
    text, rank = reader.split_prefix(normalise(line))
    if rank is None:
        rank = file_rank
    if rank is None:
        rank = reader.inner_rank(text)
    return rank


def bytes_ranks(reader, line, file_rank=None):
    buf = line.encode("utf-8") + b"\n"
    return reader.ranks_in(buf, 0, len(buf), file_rank)


def agree(reader, line, file_rank=None):
    r = str_rank(reader, line, file_rank)
    assert bytes_ranks(reader, line, file_rank) == ({r} if r is not None else set()), repr(line)
    return r


@pytest.mark.parametrize("row", LAUNCHERS, ids=lambda r: r.name)
def test_each_rows_example_gets_its_rank_on_both_sides(row):
    text, rank = RANKS.split_prefix(row.example)
    assert rank == row.rank
    assert not re.match(row.prefix, text, re.ASCII)          # the prefix is stripped
    if row.has_rank:
        assert agree(RANKS, row.example) == row.rank
        assert agree(RANKS, row.example, file_rank=7) == row.rank      # a prefix beats the file name
    else:
        assert agree(RANKS, row.example, file_rank=7) == 7


@pytest.mark.parametrize("row", INNER_RANKS, ids=lambda r: r.name)
def test_each_inner_forms_example_gets_its_rank_on_both_sides(row):
    assert RANKS.inner_rank(row.example) == 3
    assert agree(RANKS, row.example) == 3


def test_every_row_has_a_fixture():
    assert set(FIXTURES) == {r.name for r in LAUNCHERS}
    for row in LAUNCHERS:
        with open(os.path.join(FIX, FIXTURES[row.name]), encoding="utf-8") as f:
            lines = f.read().splitlines()
        start = re.compile("^" + row.prefix, re.ASCII)
        assert any(start.match(ln) for ln in lines), row.name
        for ln in lines:                                     # and both sides read each of its lines alike
            agree(RANKS, ln)


def test_kubectl_prefix_is_stripped_before_the_ranks_it_wraps():
    """`kubectl logs --prefix` puts "[pod/<pod>/<container>] " before each line (kubectl
    pkg/cmd/logs/logs.go): stripped, it names no rank, and torchrun's "[rank3]:" after it still
    does; on a real log the verdict is the unprefixed log's (the signature, the first failing rank)."""
    assert RANKS.split_prefix("[pod/train-x7k2p/trainer] [rank3]: RuntimeError: x") == ("RuntimeError: x", 3)
    assert agree(RANKS, "[pod/train-x7k2p/trainer] [rank3]: RuntimeError: x") == 3
    assert agree(RANKS, "[pod/train-x7k2p/trainer] [default5]:[rank3]: x") == 5
    assert agree(RANKS, "[pod/job-0.web/c] RuntimeError: x", file_rank=7) == 7
    assert agree(RANKS, "[pod/train-x7k2p/] RuntimeError: x") is None     # no container name read
    for line in ("[pod/Train/c] x", "[pod/train] x", "[pods/train/c] x"):  # not kubectl's: kept
        assert RANKS.split_prefix(line)[0] == line
    from triage.patterns import load_all
    from triage.pipeline import Options, triage
    real = os.path.join(FIX, "logs/real/cpu-outcome/torchrun_rank_segfault.log")
    eng = load_all()
    plain = triage([real], Options(pats=tuple(eng))).verdict
    prefixed = triage([os.path.join(FIX, "launchers/kubectl_prefix.log")], Options(pats=tuple(eng))).verdict
    assert (prefixed.signature, prefixed.first_rank) == (plain.signature, plain.first_rank)
    assert plain.first_rank == 1


def test_srun_pads_with_spaces_never_tabs():
    """srun -l right-aligns the task id with spaces ("%*d: "): up to four of them are a prefix on
    both sides; a tab is not (the str side once took any whitespace, the bytes side only spaces)."""
    for pad in ("", " ", "  ", "    "):
        assert agree(RANKS, f"{pad}12: x") == 12
    for line in ("\t12: x", " \t12: x", "\u00a012: x", "     12: x"):
        assert agree(RANKS, line) is None


# random variations of every row's example: another rank, a quote, a nested prefix, colour codes,
# a file rank, other text after it
_RANKED = [r for r in LAUNCHERS if r.has_rank]
_TAIL = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40)


def _with_rank(row, rank):
    return row.example.replace(str(row.rank), str(rank), 1) if row.has_rank else row.example


def _prefix_of(row, rank):
    """The prefix text of ROW's example, with RANK."""
    ex = _with_rank(row, rank)
    return ex[:len(ex) - len(RANKS.split_prefix(ex)[0])]


@settings(max_examples=300, deadline=None)
@given(row=st.sampled_from(LAUNCHERS + INNER_RANKS), rank=st.integers(0, 99_999),
       quote=st.sampled_from(["", "> ", ">", "> > "]), outer=st.sampled_from([None] + _RANKED),
       colour=st.booleans(), file_rank=st.sampled_from([None, 5]), tail=_TAIL)
def test_both_sides_agree_on_variations_of_every_row(row, rank, quote, outer, colour, file_rank, tail):
    if "ank" in tail:                       # one inner rank per line (the bytes side collects them all)
        return
    line = (_with_rank(row, rank) if isinstance(row, Launcher) else row.example.replace("3", str(rank))) + tail
    if outer is not None:                   # "[default4]:[rank3]: ..." nests: the outer prefix's rank is read
        line = _prefix_of(outer, (rank + 1) % 100_000) + line
    line = quote + line
    if colour:
        line = "\x1b[32m" + line
    agree(RANKS, line, file_rank)


_WRAPPERS = [r for r in LAUNCHERS if not r.has_rank and not r.keeps_time]


@settings(max_examples=300, deadline=None)
@given(wrap=st.sampled_from(_WRAPPERS), row=st.sampled_from(LAUNCHERS), rank=st.integers(0, 99_999),
       quote=st.sampled_from(["", "> "]), file_rank=st.sampled_from([None, 5]), tail=_TAIL)
def test_both_sides_agree_behind_a_rankless_prefix(wrap, row, rank, quote, file_rank, tail):
    """A prefix naming no rank (kubectl's "[pod/p/c] ") before any row's: both sides read the
    inner prefix's rank (or the file's), as in a block of mixed lines."""
    if "ank" in tail:
        return
    line = quote + wrap.example[:len(wrap.example) - len(RANKS.split_prefix(wrap.example)[0])] \
        + _with_rank(row, rank) + tail
    r = agree(RANKS, line, file_rank)
    if row.has_rank:
        assert r == rank
    block = (line + "\nplain line\n").encode()
    assert RANKS.ranks_in(block, 0, len(block), file_rank) == ({r} if r is not None else set()) | (
        {file_rank} if file_rank is not None else set())


def test_a_new_row_is_all_it_takes():
    """SYNTHETIC launcher (no such tool): "(task 7) message".  One extra row, and both the str and the
    bytes matchers (plain, quoted, nested, lines without the prefix taking the file rank) read it."""
    row = Launcher("synthetic-task", "(task 3) RuntimeError: CUDA error: out of memory",
                   r"\(task (?P<rank>\d+)\) ", "(task ", sep="")
    reader = RankReader(LAUNCHERS + (row,), INNER_RANKS)
    assert "(" in reader.starts
    line = "(task 7) RuntimeError: CUDA error: out of memory"
    assert reader.split_prefix(line) == ("RuntimeError: CUDA error: out of memory", 7)
    assert agree(reader, line) == 7
    assert agree(reader, "> " + line) == 7
    assert agree(reader, "(task 7) [rank2]: x") == 7
    assert agree(reader, line, file_rank=9) == 7
    two = b"(task 7) x\nno prefix\n"
    assert reader.ranks_in(two, 0, len(two), 9) == {7, 9}
    # the shipped matchers are not touched
    assert RANKS.split_prefix(line) == (line, None)
    assert bytes_ranks(RANKS, line) == set()


def test_a_new_inner_form_is_all_it_takes():
    """SYNTHETIC in-message form "(worker rank 6)": one InnerRank row."""
    inner = INNER_RANKS + (InnerRank("synthetic", "boom (worker rank 3)", r"\(worker rank (\d+)\)", "worker rank"),)
    reader = RankReader(LAUNCHERS, inner)
    assert agree(reader, "boom (worker rank 6)") == 6
    assert RANKS.inner_rank("boom (worker rank 6)") is None


def test_the_module_names_are_the_shipped_reader():
    from triage.inputs import sources
    assert sources.split_prefix == ranks.split_prefix == RANKS.split_prefix
    assert sources.inner_rank == RANKS.inner_rank


# --- issue 44: the rows as one alternation, their first characters read off the stdlib's parse ---------------

def _engine_first_chars(rx):
    """What ranks._first_chars read before issue 44: a partial match of each ASCII character (the `regex` engine)."""
    from triage.match.rx import ASCII, V0, regex
    compiled = regex.compile(rx, ASCII | V0)
    return frozenset(c for c in map(chr, range(128)) if compiled.match(c, partial=True))


@pytest.mark.parametrize("rx", [x.prefix for x in LAUNCHERS] + [
    r"(?i)node-\d+ ", r"[^\[\]a-z]+:", r"\w+\|", r"\s*\[x\]", r"(?:ab|cd)?ef", r"(?=\d)\d{2}:", r"x*", r"(?:\[)?",
    r"[\d.]{0,3}@", r"(?>ab)c", r"(?P<rank>\d+)\S", r"[A-Fa-f0-9_-]{2}", r"(?i:[a-c])x", r"\W\D", r".x"])
def test_first_characters_are_the_engines(rx):
    """The characters a prefix can start with, read off Python's own regex parser, hold every one a partial
    match of each character finds (every shipped row, and constructs a user's row may hold; a row that can
    match nothing at all, x*, may start with anything), and are exactly those for every shipped row (a class
    is read as match.rx reads it: its \\s holds the ASCII separators \\x1c-\\x1f too, an over-estimate a
    pre-filter may make)."""
    mine, engine = ranks._first_chars(rx), _engine_first_chars(rx)
    assert mine >= engine
    if rx in [x.prefix for x in LAUNCHERS] or "\\s" not in rx:
        assert mine == engine


def test_first_characters_of_a_construct_the_reader_does_not_know_ask_the_engine():
    """A back reference (no first character of its own to read) is left to the engine's partial matches."""
    assert ranks._first_chars(r"(a)\1") == _engine_first_chars(r"(a)\1") == frozenset("a")


def _lines_under_test():
    out = []
    for root, _, files in os.walk(os.path.join(FIX, "logs")):
        for f in sorted(files)[:60]:
            with open(os.path.join(root, f), "rb") as fh:
                out += [normalise(x.decode("utf-8", "replace")) for x in fh.read(200_000).split(b"\n")[:400]]
    return out


def test_one_alternation_tags_every_line_as_each_row_in_turn():
    """split_prefix with every row in one regex strips and ranks each line of the fixture logs exactly as the
    rows tried one by one (_split_each, what it did before issue 44), nested prefixes and quotes included."""
    lines = _lines_under_test()
    prefixed = [x for x in lines if x[:1] in RANKS.starts]
    assert len(lines) > 10_000 and len(prefixed) > 2_000
    cases = lines + [a[:n] + b for a, b, n in zip(prefixed, reversed(lines), range(3, 10_000))]
    for line in cases + ["> " + x for x in cases[:5000]]:
        text = ranks._QUOTE.sub("", line, count=1) if line[:1] == ">" else line
        each = RANKS._split_each(text) if text[:1] in RANKS.starts else (text, None)
        assert RANKS.split_prefix(line) == each, repr(line)


@given(st.lists(st.sampled_from([x.example for x in LAUNCHERS] + ["x", " ", "[", "3: ", "(a)"]), min_size=1,
                max_size=5))
@settings(max_examples=300, deadline=None)
def test_one_alternation_on_any_pile_of_prefixes(parts):
    """Any run of the rows' own examples (each a real prefix and message), glued: the same as each row in turn."""
    pieces = [p[:len(p) - len(RANKS._split_each(p)[0])] or p for p in parts]
    line = "".join(pieces) + "tail"
    each = RANKS._split_each(line) if line[:1] in RANKS.starts else (line, None)
    assert RANKS.split_prefix(line) == each


def test_rows_that_cannot_be_one_regex_are_tried_in_turn():
    """SYNTHETIC rows (no such tools) that each name a group `tag`: one alternation cannot hold the name twice,
    so the reader tries each row in turn, and reads their lines and the shipped rows' as before."""
    rows = (Launcher("synthetic-a", "<a:3> x", r"<(?P<tag>a):(?P<rank>\d+)> ", "<a:", sep=""),
            Launcher("synthetic-b", "<b:3> x", r"<(?P<tag>b):(?P<rank>\d+)> ", "<b:", sep=""))
    reader = RankReader(rows + LAUNCHERS, INNER_RANKS)
    assert reader.prefix_any is None
    assert reader.split_prefix("<b:7> [rank2]: RuntimeError: x") == ("RuntimeError: x", 7)
    assert reader.split_prefix("> [rank2]: x") == ("x", 2)
    assert RANKS.prefix_any is not None


def test_every_shipped_row_is_a_regex_for_str_and_bytes():
    """The shipped rows are read without compiling their prefixes at start-up (issue 44): each passes the check a
    user's row gets."""
    from triage import tables
    from triage.inputs.launchers import _launcher
    rows = tables.load("inputs/launchers")["launchers"]
    assert [_launcher(d, f"launchers[{i}]").prefix for i, d in enumerate(rows)] == [x.prefix for x in LAUNCHERS]


def test_a_row_that_refers_to_a_group_by_number_is_tried_in_turn():
    """SYNTHETIC rows (issue 44's review; a user's table refuses such a row, _launcher): a row after another whose
    prefix refers to its rank group by number (`\\1`) would refer to another row's group in one alternation and
    never match; such a set of rows is tried row by row on the str side."""
    rows = (Launcher("synthetic-zz", "ZZ| x", r"ZZ\|", None, None, sep=" ?"),
            Launcher("synthetic-twice", "host3-3 x", r"host(?P<rank>\d+)-\1 ", "host"))
    reader = RankReader(rows + LAUNCHERS, INNER_RANKS)
    assert reader.prefix_any is None
    assert reader.split_prefix("host3-3 loss nan") == ("loss nan", 3)
    assert reader.split_prefix("host3-4 oops") == ("host3-4 oops", None)       # (the number must repeat)


@pytest.mark.parametrize("prefix, said", [
    ("([\'\"])host(?P<rank>\\d+)\\1 ", "has a group other than (?P<rank>...)"),
    ("host(?P<rank>\\d+)-\\1 ", "refers to a group by its number")])
def test_a_users_row_the_matchers_cannot_hold_is_refused_in_one_line(tmp_path, prefix, said):
    """SYNTHETIC TRIAGE_LAUNCHERS rows: a capturing group besides the rank's (the bytes side read its text as the
    rank: a ValueError out of ranks_in), a group referred to by number (the rows' alternations renumber groups:
    a re.error building them): refused where the table is read, in one line saying what to write instead."""
    import json as _json
    import subprocess
    import sys
    table = tmp_path / "launchers.json"
    table.write_text(_json.dumps({"launchers": [{"name": "q", "example": "x", "prefix": prefix}]}), encoding="utf-8")
    env = dict(os.environ, TRIAGE_LAUNCHERS=str(table))
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", os.path.join(FIX, "launchers", "nemo_prefix.log")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
