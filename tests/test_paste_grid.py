"""A metamorphic grid (issue 40, the shapes pastes come in): every real log of the corpus, reshaped as
users and log collectors reshape a log on its way into a bug report (tests/pastegrid.py: one row per
shape), must get the verdict of the log it was made from -- the same outcome, primary pitfall, and
first failing rank where the original names one -- and a failed job is never called healthy.

A directory of per-rank logs is one case, each of its files reshaped alike. The grid runs in process
(click's CliRunner).  By default each shape sees every failure class (every
(outcome, primary) pair of the corpus) at least once, and each log is seen by some shapes, rotating;
TRIAGE_PASTE_GRID=full runs every log through every shape."""
from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.inputs.ranks import RankReader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import cases  # noqa: E402
from pastegrid import SHAPES, Facts, Shape  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "fixtures", "logs", "real")
# every real case: a log, or a directory of per-rank logs (each of its files reshaped alike)
LOGS = [c for c in cases() if c.startswith(REAL + os.sep) and not c.endswith(".gz")]
FULL = os.environ.get("TRIAGE_PASTE_GRID") == "full"
STRIDE = 5                  # by default a log is seen by every STRIDE-th shape (and by each class's turn)

Verdict = Tuple[str, Optional[str], Optional[int]]


def _read(f: str) -> str:
    with open(f, encoding="utf-8", errors="replace", newline="") as fh:
        return fh.read()


def _report(path: str) -> dict:
    r = CliRunner().invoke(cli, ["analyze", str(path), "--format", "json"], env={"TRIAGE_DB": None})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    assert r.stdout.startswith("{"), (path, r.exit_code, r.output[-2000:])
    return json.loads(r.stdout)


def _verdict(d: dict) -> Verdict:
    p = d.get("primary")
    return d["outcome"], p.get("pitfall") if isinstance(p, dict) else p, d.get("first_failing_rank")


def _members(case: str) -> List[str]:
    """The files of a case, relative to it ("" for a case that is one file)."""
    if os.path.isfile(case):
        return [""]
    return sorted(os.path.relpath(os.path.join(r, x), case) for r, _, fs in os.walk(case) for x in fs)


@lru_cache(maxsize=None)
def _original(case: str) -> Tuple[Verdict, Dict[str, Facts]]:
    """The case's verdict, and per file of it the facts its report gives (the evidence lines in it)."""
    d = _report(case)
    v = _verdict(d)
    ff = d.get("first_failure")
    facts = {}
    for m in _members(case):
        f = os.path.join(case, m) if m else case

        def here(x: dict) -> bool:
            return bool(x.get("line")) and (not m or str(x.get("source", "")).endswith(os.sep + m))
        lines = {int(x["line"]) for x in d["findings"] if x["pitfall"] == v[1] and here(x)}
        prefix = rank = None
        if ff and here(ff):
            lines.add(int(ff["line"]))
            if v[2] is not None:
                raw = _read(f).split("\n")[int(ff["line"]) - 1].rstrip("\r")
                text, rank = RankReader().split_prefix(raw)
                if rank is not None and raw.endswith(text):
                    prefix = raw[:len(raw) - len(text)]
        facts[m] = Facts(v[0], v[1], v[2], tuple(sorted(lines)), prefix, rank if prefix else None,
                         d.get("launcher_root_rank"), bool(m))
    return v, facts


def _class(f: str) -> Tuple[str, Optional[str]]:
    v = _original(f)[0]
    return v[0], v[1]


def _logs_for(t: int) -> List[str]:
    """The logs shape number T runs on: all (full grid), else each class's turn and every STRIDE-th."""
    if FULL:
        return LOGS
    by_class: Dict[Tuple[str, Optional[str]], List[str]] = {}
    for f in LOGS:
        by_class.setdefault(_class(f), []).append(f)
    pick = {fs[t % len(fs)] for fs in by_class.values()}
    pick.update(f for i, f in enumerate(LOGS) if (i + t) % STRIDE == 0)
    return sorted(pick)


def differ(shape: Shape, logs: List[str], tmp) -> Tuple[List[tuple], int]:
    """The (log, original verdict, reshaped verdict) that differ, and how many logs the shape kept (a
    directory's file the shape cannot keep the evidence of is left as it is; none kept: not run)."""
    out = []
    ran = 0
    for n, case in enumerate(logs):
        want, facts = _original(case)
        dest = tmp / f"case{n}{os.path.splitext(case)[1]}"
        kept, rank = 0, want[2] is not None
        for m in _members(case):
            text = _read(os.path.join(case, m) if m else case)
            p = dest / m if m else dest
            p.parent.mkdir(parents=True, exist_ok=True)
            if shape.why_not(text, facts[m]):
                p.write_bytes(text.encode("utf-8"))
                continue
            kept += 1
            rank = rank and not shape.why_no_rank(text, facts[m])
            p.write_bytes(shape.fn(text, facts[m]).encode("utf-8"))
        if not kept:
            continue
        ran += 1
        got = _verdict(_report(str(dest)))
        same = got[:2] == want[:2] and (not rank or got[2] == want[2])
        if not same or (want[0] != "healthy" and got[0] == "healthy"):
            out.append((os.path.relpath(case, REAL), want, got))
    return out, ran


def test_the_grid_is_data_and_covers_the_corpus():
    names = [s.name for s in SHAPES]
    assert len(names) == len(set(names)) and len(names) >= 20
    assert len(LOGS) >= 140
    classes = {_class(f) for f in LOGS}
    assert ("healthy", None) in classes and ("unexplained-failure", None) in classes and len(classes) >= 25
    for t in range(len(SHAPES)):     # each shape sees every failure class
        assert {_class(f) for f in _logs_for(t)} == classes


@pytest.mark.parametrize("t", range(len(SHAPES)), ids=[s.name for s in SHAPES])
def test_a_reshaped_paste_gets_the_verdict_of_its_log(t, tmp_path):
    shape = SHAPES[t]
    bad, ran = differ(shape, _logs_for(t), tmp_path)
    assert ran >= 5, f"{shape.name} kept only {ran} log(s)"
    assert not bad, f"{shape.name}: {len(bad)} differ: {bad}"


def test_a_head_cut_that_drops_the_error_line_is_said_so():
    """The exclusions are computed: a cut that keeps every evidence line is run, one that drops one is not."""
    cut = next(s for s in SHAPES if s.name == "head-cut-60")
    f = os.path.join(REAL, "gpu", "illegal_memory_access.log")
    facts = _original(f)[1][""]
    text = _read(f)
    assert facts.evidence and cut.why_not(text, facts) is None
    early = Facts(facts.outcome, facts.primary, facts.first_failing_rank, (1,), None, None)
    assert "are in the" in (cut.why_not(text, early) or "")


# real logs of the corpus dressed by real tools (tests/fixtures/logs/real/pastes/gen_pastes.sh): the log
# each was made from, the dressing the note must name, and the lines the dressing puts before the log
DRESSED = {
    "two_ranks_mcore_assert_cat_n.log": ("torchrun-cpu/two_ranks_mcore_assert.log", "line-number gutter", 0),
    "nccl_two_procs_one_gpu_quoted_details.log": ("gpu/nccl_two_procs_one_gpu.log", "markdown quote", 3),
    "uncaught_torch_error_list_item.log": ("cpu-outcome/uncaught_torch_error.log", "indentation", 3),
    "scope_unknown_name_html_escaped.log": ("mcore-0.19.2/scope_unknown_name.log", "HTML entities", 0),
}


@pytest.mark.parametrize("name", sorted(DRESSED))
def test_a_dressed_paste_gets_its_logs_verdict_and_says_what_was_taken_off(name):
    src, dressing, shift = DRESSED[name]
    d = _report(os.path.join(REAL, "pastes", name))
    want = _report(os.path.join(REAL, src))
    assert _verdict(d) == _verdict(want)
    assert [(f["pitfall"], f["rank"], f["line"] - shift) for f in d["findings"]] == \
        [(f["pitfall"], f["rank"], f["line"]) for f in want["findings"]]       # line numbers are the paste's
    assert any("is a pasted log" in n and dressing in n for n in d.get("notes", [])), d.get("notes")
    assert not any("is a pasted log" in n for n in want.get("notes", []))


def test_no_log_of_the_corpus_is_undressed():
    """Each dressing is taken off only where the whole paste has it: no log of the corpus (healthy or
    not, pastes of other shapes included) is read undressed but the dressed pastes."""
    from triage.inputs.paste import undress
    undressed = []
    for c in cases():
        for f in ([c] if os.path.isfile(c) else [os.path.join(r, x) for r, _, fs in os.walk(c) for x in fs]):
            if f.endswith(".gz") or os.path.basename(f) in DRESSED:
                continue
            with open(f, "rb") as fh:
                if undress(fh.read()) is not None:
                    undressed.append(os.path.relpath(f, HERE))
    assert not undressed, undressed


def test_what_only_looks_like_a_dressing_is_left_alone():
    """Counter-examples, each a real log's own shape: a traceback's indented frames, srun's task ids
    (`0: `), numbers that do not count lines, a table of ids, a log that prints an entity, one padded
    line."""
    from triage.inputs.paste import undress
    tb = _read(os.path.join(REAL, "cpu-outcome", "uncaught_torch_error.log"))
    frames = "\n".join(x for x in tb.split("\n") if x.startswith("  ")) + "\n"
    assert frames.count("\n") >= 3 and undress(frames.encode()) is not None     # all frames: an indented paste
    assert undress((tb.split("\n")[0] + "\n" + frames).encode()) is None       # a record at column 0: a log
    srun = "".join(f"{r}: [rank{r}] step {i} ok\n" for i in range(5) for r in range(4))
    assert undress(srun.encode()) is None
    stamps = "".join(f"{n} | x\n" for n in (3, 3, 1, 7))
    assert undress(stamps.encode()) is None
    table = "".join(f"{n}\t{0.5 / n:.3f}\n" for n in range(1, 9))             # a TSV whose first column is an id
    assert undress(table.encode()) is None
    assert undress("".join(f"{n:>6}\t{0.5 / n:.3f}\n" for n in range(1, 9)).encode())[1] == ["line-number gutter"]
    entity = 'echo "a &amp;&amp; b"\nKeyError: \'x\'\nline &lt;3\n'
    assert undress(entity.encode()) is None
    padded = "a\nb \nc\nd\n"
    assert undress(padded.encode()) is None
