"""The report view is typed: build_view returns a ReportView whose every field (and every field of
its parts) holds a value of its declared type, on a real log and on odd, partial or hostile dicts;
the HTML template reads only attributes the view and the page have."""
import copy
import dataclasses
import random
import typing

import pytest
from jinja2 import Undefined
from test_report import rich

from triage.patterns import load_all
from triage.pipeline import Options, triage
from triage.report import ReportView, load_view, report_dict
from triage.report import html as html_report
from triage.report import view as view_module

SAMPLE = "examples/sample_job.log"
ODD = [None, 1, -3, 2.5, True, "x", "", [], {}, [1, "a", None], {"a": 1}, "<b>&|`*", float("nan")]


def check_type(value, tp, where):
    """Assert VALUE is of type TP (a field's resolved annotation); dataclasses are checked field by field."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        assert len(inner) == 1, f"{where}: {tp}"
        return check_type(value, inner[0], where)
    if origin is dict:   # the report dict the view was made from (the JSON contract, any dict)
        assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
        return
    if origin is tuple:
        assert isinstance(value, tuple), f"{where}: {type(value).__name__}, not a tuple"
        if len(args) == 2 and args[1] is Ellipsis:
            for i, x in enumerate(value):
                check_type(x, args[0], f"{where}[{i}]")
        else:
            assert len(value) == len(args), where
            for i, (x, a) in enumerate(zip(value, args)):
                check_type(x, a, f"{where}[{i}]")
        return
    if tp is float:      # PEP 484: an int is a float (the JSON's numbers as they are)
        assert isinstance(value, (int, float)), f"{where}: {value!r}"
    elif tp is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: {value!r}"
    else:
        assert isinstance(value, tp), f"{where}: {type(value).__name__}, not {tp}"
    if dataclasses.is_dataclass(tp):
        check_view(value, where)


def check_view(obj, where="view"):
    hints = typing.get_type_hints(type(obj), vars(view_module))
    for f in dataclasses.fields(obj):
        check_type(getattr(obj, f.name), hints[f.name], f"{where}.{f.name}")


def sample_dict(**config):
    pats = load_all()
    a = triage([SAMPLE], Options(pats=tuple(pats), **config))
    return report_dict(a)


def mutations(d, n, seed=7):
    rng = random.Random(seed)

    def mutate(x):
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                r = rng.random()
                if r >= 0.1:
                    out[k] = rng.choice(ODD) if r < 0.25 else mutate(v)
            return out
        if isinstance(x, list):
            return [mutate(e) if rng.random() > 0.1 else rng.choice(ODD) for e in x]
        return x
    return [mutate(copy.deepcopy(d)) for _ in range(n)]


def test_view_of_a_real_log_is_typed_and_frozen():
    d = sample_dict(config_files=["tests/fixtures/configs/bad_flat.yaml"],
                    baseline_files=["tests/fixtures/configs/good_flat.json"])
    v = load_view(d)
    assert isinstance(v, ReportView)
    check_view(v)
    assert v.primary is not None and v.primary.evidence and v.primary.evidence[0].rows
    assert v.diff and v.findings and v.stats.sources == (SAMPLE,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.summary = "changed"      # type: ignore[misc]


def test_view_of_every_part_filled_is_typed():
    v = load_view(rich())
    check_view(v)
    assert v.steps is not None and v.steps.runs and v.steps.comparisons and v.unmatched and v.blamed


@pytest.mark.parametrize("d", [{}, None, [], "x", {"findings": "nope", "stats": None, "known": {"url": 5}}]
                         + [{k: o} for k in ("findings", "first_failure", "step_times", "known", "flight_recorder",
                                             "hang_suspects", "suspects", "diff", "versions", "omitted")
                            for o in ODD])
def test_view_of_odd_dicts_is_typed(d):
    check_view(load_view(d))


def test_view_of_hostile_dicts_is_typed():
    base = sample_dict(config_files=["tests/fixtures/configs/bad_flat.yaml"],
                       baseline_files=["tests/fixtures/configs/good_flat.json"])
    for d in mutations(base, 60) + mutations(rich(), 60, seed=8):
        check_view(load_view(d))


class Recording(Undefined):
    """An undefined value that records the attribute asked for (an inline if without else has none)."""
    missing: typing.List[str] = []

    def __init__(self, hint=None, obj=None, name=None, exc=None):
        super().__init__(hint, obj, name)
        if name is not None:
            Recording.missing.append(f"{type(obj).__name__}.{name}")


def test_html_template_reads_only_what_the_view_has(monkeypatch):
    env = html_report.template_env()
    monkeypatch.setattr(env, "undefined", Recording)
    env.cache.clear() if env.cache is not None else None
    Recording.missing = []
    try:
        for d in [rich(), sample_dict(), {}, {"first_failure": {"lines": ["a"]}, "hang_suspects": []}]:
            html_report.render_html(load_view(d))
    finally:
        if env.cache is not None:
            env.cache.clear()
    assert Recording.missing == []


@pytest.mark.parametrize("o", ODD)
def test_html_of_an_odd_timeline_renders(o):
    """A timeline that is no list (a number, true) is no timeline, as a missing one."""
    assert "<html" in html_report.render_html(load_view({"timeline": o, "findings": [{"pitfall": "x"}]}))
