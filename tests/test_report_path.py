"""One typed report path (issue 41): the view of an analysis is built from the Analysis itself (its
report dict made once, what the verdict decided taken from the verdict), every rendering and chart
takes only the view, `load_view` reads stored and old report dicts, and a new report field is one
Part (parts.py) that reaches the JSON and every format with no renderer edited."""
import copy
import dataclasses
import importlib
import inspect
import json
import os

import pytest
from jsonschema import Draft202012Validator

from corpus import LOGS, cases
from triage import schemas
from triage.patterns import load_all
from triage.pipeline import Options, triage
from triage.report import build_view, load_view, parts, render, render_view, svg
from triage.report.comment import render_comment
from triage.report.names import REGISTRY
from triage.report.util import clip

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = os.path.join(LOGS, "synthetic", "steptime")
CONFIGS = os.path.join(HERE, "fixtures", "configs")
RENDERED = ("text", "markdown", "jira", "junit", "html")


@pytest.fixture(scope="module")
def pats():
    return tuple(load_all())


def _analyse(pats, logs, cwd=None, **config):
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        return triage(logs, Options(pats=pats, **config))
    finally:
        os.chdir(old)


def _bare(v):
    """The view without the dict it was made from (what the renderers read)."""
    return dataclasses.replace(v, data={}, json="")


def test_every_renderer_and_chart_takes_only_the_view():
    """No rendering takes a report dict: each format's function (names.REGISTRY), the comment both
    markdown and Jira are, and the HTML report's two charts take a ReportView and nothing like a dict."""
    fns = [getattr(importlib.import_module(f"triage.report.{f.module}"), f.function)
           for f in REGISTRY if f.name != "json"]
    fns += [svg.timeline_svg, svg.step_chart_svg]
    assert len(fns) == len(REGISTRY) + 1
    for fn in fns + [render_comment]:
        params = list(inspect.signature(fn).parameters.values())
        view = params[1] if fn is render_comment else params[0]
        assert view.annotation == "ReportView", fn.__qualname__
        assert not [p for p in params if "Dict" in str(p.annotation) or "Mapping" in str(p.annotation)], fn.__qualname__


def _cases(pats):
    for c in cases():
        yield os.path.relpath(c, LOGS), _analyse(pats, [os.path.relpath(c, LOGS)], cwd=LOGS)
    yield "config", _analyse(pats, ["examples/sample_job.log"], config_files=(f"{CONFIGS}/bad_flat.yaml",),
                             baseline_files=(f"{CONFIGS}/good_flat.json",))
    yield "steps", _analyse(pats, [f"{STEPS}/regressed_dispatcher.log"], baseline_logs=(f"{STEPS}/dense_eager.log",))


def test_the_view_of_an_analysis_is_the_view_of_its_json(pats):
    """Every corpus case (and a config diff, a step-time verdict): the view built from the Analysis
    shows what the verdict decided, its JSON is the JSON report, and a stored copy of that JSON read
    back (load_view) gives the same view -- the fallbacks of load_view never change a current report."""
    n = 0
    for name, a in _cases(pats):
        v = build_view(a)
        verdict = a.verdict
        assert (v.outcome, v.failed, v.hang, v.action) == (verdict.outcome, verdict.failed, verdict.hang,
                                                           verdict.action), name
        assert v.primary_id == (verdict.primary.pitfall if verdict.primary else None), name
        assert v.first_rank == (str(verdict.first_rank) if verdict.first_rank is not None else None), name
        assert v.json == render(a, "json") == render_view(v, "json"), name
        assert json.loads(v.json) == v.data
        assert _bare(load_view(copy.deepcopy(v.data))) == _bare(v), name
        n += 1
    assert n == len(cases()) + 2


def test_a_primary_below_error_is_no_crash_as_the_verdict_says(pats):
    """A warning primary (graph-no-speedup, a step-time verdict of real-shaped logs) is one the verdict
    raises no failure for (Verdict.alert_key): the HTML says no rank failed, as the view says; the
    template no longer reads the severity itself."""
    a = _analyse(pats, [f"{STEPS}/regressed_dispatcher.log"], baseline_logs=(f"{STEPS}/dense_eager.log",))
    assert a.verdict.primary is not None and a.verdict.primary.severity == "warning"
    assert a.verdict.alert_key() is None and a.verdict.first_rank is None
    v = build_view(a)
    assert v.not_a_crash
    assert "no rank failed: a finding of the run, not a crash" in render_view(v, "html")
    crash = build_view(_analyse(pats, ["examples/sample_job.log"]))
    assert crash.primary is not None and not crash.not_a_crash
    with open(os.path.join(HERE, "..", "triage", "templates", "report.html.j2"), encoding="utf-8") as f:
        assert "severity ==" not in f.read()


def _older(d):
    """D as an older triage wrote it: no outcome, action, job, signature id, message signature or
    engine, and a first failure without a rank of its own."""
    d = copy.deepcopy(d)
    for k in ("outcome", "action", "job", "signature_id", "message_signature", "engine"):
        d.pop(k, None)
    if isinstance(d.get("first_failure"), dict):
        d["first_failure"]["rank"] = None
    return d


@pytest.mark.parametrize("case", ["real/gpu-issue21/torchrun_log_dir", "examples"])
def test_a_stored_report_of_an_older_triage_still_renders(pats, case):
    """load_view reads an old stored report (fields it lacks made up there and only there): the same
    outcome, primary and first failing rank as the verdict that made it, in every format."""
    if case == "examples":
        a = _analyse(pats, ["examples/sample_job.log"])
    else:
        a = _analyse(pats, [case], cwd=LOGS)
    v = build_view(a)
    old = load_view(_older(v.data))
    assert (old.outcome, old.primary_id, old.first_rank) == (v.outcome, v.primary_id, v.first_rank)
    if v.first_failure is not None:
        assert old.first_failure is not None and old.first_failure.rank == v.first_failure.rank
        assert old.first_failure.own_rank == "?"
    for fmt in RENDERED:
        assert render_view(old, fmt, ["x"])


def test_a_new_report_field_reaches_the_json_and_every_format(pats, monkeypatch):
    """A throwaway field added the way a new one is (issue 41's measure: the files a new report field
    touches): its value (here a lambda of the Analysis), one Part in parts.PARTS, and its line in the
    JSON schema -- the JSON carries it and text, markdown, Jira, JUnit and HTML show it, and so does a
    stored copy read back, with no renderer edited.  The schema's strict variant flags the key until
    the schema describes it (the third file)."""
    part = parts.Part(
        key="throwaway",
        value=lambda a, cut: cut.text(f"read {a.lines} lines of {len(a.sources)} source(s) <b>"),
        section=lambda x: parts.SectionView("throwaway", "Throwaway field", (clip(x, 200),)) if x else None)
    monkeypatch.setattr(parts, "PARTS", parts.PARTS + (part,))
    a = _analyse(pats, ["examples/sample_job.log"])
    line = f"read {a.lines} lines of 1 source(s) <b>"
    doc = json.loads(render(a, "json"))
    assert doc["throwaway"] == line and list(doc)[-1] == "throwaway"
    v = build_view(a)
    assert [s.lines for s in v.sections] == [(line,)]
    assert load_view(v.data).sections == v.sections
    out = {fmt: render(a, fmt, pitfall_ids=["x"]) for fmt in RENDERED}
    assert "THROWAWAY FIELD\n  " + line in out["text"]
    assert "**Throwaway field:**" in out["markdown"] and "read " in out["markdown"]
    assert "*Throwaway field:*" in out["jira"]
    assert "Throwaway field: read" in out["junit"]
    assert '<section id="throwaway">' in out["html"] and "source(s) &lt;b&gt;</p>" in out["html"]
    strict = copy.deepcopy(schemas.load("analyze"))
    strict["additionalProperties"] = False
    assert [e.message for e in Draft202012Validator(strict).iter_errors(doc) if "throwaway" in e.message]
