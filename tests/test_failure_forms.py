"""The declared failure forms (triage/scan/failure_forms.yaml, issue 40): each form's `fires` log is a
failed job (never healthy), its `healthy` counter-example is a healthy job, and a regex form's hit is
its own (the scan keeps it with the form's id)."""
import os

import pytest

from triage.scan.engine import Engine
from triage.patterns import builtin_dir, load_dir
from triage.scan.forms import failure_forms
from triage.selftest import lines_of

from inproc import run

FORMS = failure_forms()
ENV = {**os.environ, "TRIAGE_DB": ""}


def _outcome(text):
    r = run(["analyze", "-", "-q"], input=text + "\n", env=ENV)
    return {0: "healthy", 1: "pitfall", 3: "unexplained-failure"}.get(r.returncode, r.returncode), r


@pytest.fixture(scope="module")
def engine():
    return Engine(load_dir(builtin_dir()))


def test_forms_are_declared_once_with_examples():
    ids = [f.id for f in FORMS]
    assert len(ids) == len(set(ids)) and len(ids) >= 10
    for f in FORMS:
        assert f.fires.strip() and f.healthy.strip() and f.source and f.what
        assert (f.regex is None) == bool(f.builtin), f.id


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_form_fires_on_its_example(form, engine):
    outcome, r = _outcome(form.fires)
    assert outcome in ("unexplained-failure", "pitfall"), (form.id, r.stdout, r.stderr)
    if form.regex is not None:
        got = {x.form for x in engine.scan(lines_of(form.fires)).exits}
        assert form.id in got, (form.id, got)


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_form_leaves_its_healthy_counter_example_healthy(form, engine):
    outcome, r = _outcome(form.healthy)
    assert outcome == "healthy", (form.id, r.stdout, r.stderr)
    if form.regex is not None and not form.tail:      # (a tail form's hit is weighed by where its input ends)
        assert not {x.form for x in engine.scan(lines_of(form.healthy)).exits if x.form}, form.id


# Issue 46's shapes of a failed job that ended on an error (each was exit 0): never healthy.
ENDED_ON_AN_ERROR = [
    "[rank0]: ERROR: data loader failed\n[rank0]: RuntimeError: boom",
    "Error: x",
    "ERROR:root:something",
    "error: x\nKeyError: boom",
    "[rank0]: ERROR: data loader failed\n  File \"train.py\", line 1, in <module>\n[rank0]: RuntimeError: boom",
]


@pytest.mark.parametrize("text", ENDED_ON_AN_ERROR)
def test_a_log_ending_on_an_error_is_a_failed_job(text):
    outcome, r = _outcome(text)
    assert outcome == "unexplained-failure", (text, r.stdout)


def test_a_tail_form_far_from_the_end_is_not_evidence():
    nan = ("ERROR:megatron.core.rerun_state_machine:Unexpected result tensor(nan, device='cuda:3') on rank 3 at "
           "iteration #120 invokation #1 (message='found NaN in local grad norm for bucket #0 in backward pass "
           "before data-parallel communication collective')")
    steps = "\n".join(f" [2026-12-03 08:00:{i % 60:02d}] iteration {121 + i}/1000 | consumed samples: {i} | "
                      f"elapsed time per iteration (ms): 812.{i % 10} | lm loss: 2.1E+00" for i in range(60))
    assert _outcome(nan)[0] == "unexplained-failure"
    assert _outcome(nan + "\n" + steps)[0] == "healthy"



# ... and the same with a healthy rank's file beside it (a directory of per-rank logs, or two files): the
# failing rank's input ended on its error although the input after it shows no match nor error block of
# its own (issue 46: exit 0 there, the ERROR line's form saw no end to its input; without the ERROR line
# the exception alone was taken as ending the process)
_HEALTHY_RANK = "".join(f"[rank1]: iteration {i}/100 | loss 2.{i}\n" for i in range(1, 6))


def _outcome_dir(tmp_path, failing, healthy=_HEALTHY_RANK, as_files=False):
    d = tmp_path / "logs"
    d.mkdir(exist_ok=True)
    (d / "rank0.log").write_text(failing + "\n")
    (d / "rank1.log").write_text(healthy)
    args = [str(d / "rank0.log"), str(d / "rank1.log")] if as_files else [str(d)]
    r = run(["analyze", *args, "-q"], env=ENV)
    return {0: "healthy", 1: "pitfall", 3: "unexplained-failure"}.get(r.returncode, r.returncode), r


@pytest.mark.parametrize("as_files", [False, True], ids=["directory", "two-files"])
@pytest.mark.parametrize("text", ENDED_ON_AN_ERROR + [
    "Error: x\n[rank0]: RuntimeError: boom", "ERROR:root:something\n[rank0]: RuntimeError: boom",
    "[rank0]: ERROR: data loader failed"])
def test_a_rank_ending_on_an_error_beside_a_healthy_rank_is_a_failed_job(tmp_path, text, as_files):
    outcome, r = _outcome_dir(tmp_path, text, as_files=as_files)
    assert outcome == "unexplained-failure", (text, r.stdout, r.stderr)


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_each_form_beside_a_healthy_rank(tmp_path, form):
    """Every form's `fires` example on rank 0 with a healthy rank 1 is a failed job; its `healthy`
    counter-example there is a healthy one."""
    outcome, r = _outcome_dir(tmp_path, form.fires)
    assert outcome in ("unexplained-failure", "pitfall"), (form.id, r.stdout, r.stderr)
    outcome, r = _outcome_dir(tmp_path, form.healthy)
    assert outcome == "healthy", (form.id, r.stdout, r.stderr)


def test_an_error_a_rank_went_on_from_beside_a_healthy_rank_is_healthy(tmp_path):
    went_on = "[rank0]: ERROR: data loader failed, retrying\n" + _HEALTHY_RANK.replace("rank1", "rank0")
    assert _outcome_dir(tmp_path, went_on)[0] == "healthy"


def test_a_forms_prefilter_holds_every_line_its_regex_matches():
    """`prefilter` (failure_forms.yaml) is tried before the regex and never searched again: a line the
    regex matches that the prefilter misses would be a failure not seen.  Every line of every fixture log
    and every example, with and without a launcher prefix."""
    import glob
    from triage.scan.forms import failure_forms
    forms = [f for f in failure_forms() if f.prefilter is not None and f.regex is not None]
    assert forms                         # (error-last-line has one)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "logs")
    lines = [x for f in failure_forms() for x in (f.fires + "\n" + f.healthy).split("\n")]
    for p in sorted(glob.glob(os.path.join(root, "**", "*.log"), recursive=True)):
        with open(p, encoding="utf-8", errors="replace") as fh:
            lines += fh.read().split("\n")[:5000]
    lines += ["Error: x", "error: x", "ERROR:root:something", "[E1203 14:03:49.385461578 foo.cpp:1] x",
              "E1203 14:03:49.385461 123 foo.cc:1] x", "error\tx", "Error x"]
    checked = 0
    for f in forms:
        for ln in lines:
            for text in (ln, "[rank0]: " + ln, "0: " + ln):
                if f.regex.search(text[:2000]):
                    checked += 1
                    assert f.prefilter.search(text[:2000]), (f.id, text[:200])
    assert checked > 100
    # and every form's anchor (what wakes it in the one multi-pattern pass) holds those lines too: the
    # error-last-line anchor leaves out C++'s `Error::` (issue 44) but not a line that starts with it
    import re
    for f in failure_forms():
        if f.regex is None:
            continue
        anchor = re.compile(f.anchor, re.M) if f.anchor_is_rx else None
        for ln in lines + ["Error::x failed", "error:", "Error\tx", "x ERROR"]:
            for text in (ln, "[rank0]: " + ln):
                t = text[:2000]
                if f.regex.search(t):
                    assert (anchor.search(t) if anchor else f.anchor in t), (f.id, t[:200])
