"""One set of caps (triage/caps.py): the report shows as many evidence lines as the analysis keeps,
and the modules that still name a cap themselves agree with it."""
from triage import caps
from triage.verdict import types as findings
from triage.report import EVIDENCE_MAX, contract, load_view, render_html, render_markdown, render_text
from triage.report import view as view_module

from test_report import finding


def test_the_report_shows_the_evidence_lines_the_analysis_keeps():
    """The JSON keeps findings.EVIDENCE_MAX evidence lines per finding; the view's cap is the same
    number (a view that promised more could never show it; one that showed fewer would hide some)."""
    assert findings.EVIDENCE_MAX == caps.EVIDENCE_MAX == EVIDENCE_MAX == view_module.EVIDENCE_MAX
    assert contract.LEVELS[0].evidence is None        # the JSON's first level writes all the analysis kept
    assert not hasattr(view_module, "MAX_EVIDENCE")


def test_a_finding_with_the_kept_evidence_shows_all_of_it():
    n = caps.EVIDENCE_MAX
    f = finding("cuda-oom", "root-cause", "x")
    f["evidence"] = [dict(f["evidence"][0], line=10 + i, text=f"evidence line {i}") for i in range(n + 2)]
    v = load_view({"primary": "cuda-oom", "findings": [f]})
    assert v.primary is not None
    assert len(v.primary.evidence) == n and v.primary.more_evidence == 2
    text, md, html = render_text(load_view({"primary": "cuda-oom", "findings": [f]})), render_markdown(
        load_view({"primary": "cuda-oom", "findings": [f]})), render_html(load_view({"primary": "cuda-oom", "findings": [f]}))
    for out in (text, md, html):
        assert f"evidence line {n - 1}" in out and f"evidence line {n}" not in out
    assert "2 more evidence line(s)" in md and "2 more evidence line(s)" in html


def test_caps_named_elsewhere_agree_with_caps_py():
    """findings.py and report/contract.py still name their caps (until they import them from
    triage/caps.py); the values must be the same."""
    assert (findings.TIMELINE_MAX, findings.UNMATCHED_MAX) == (caps.TIMELINE_MAX, caps.UNMATCHED_MAX)
    assert (contract.MAX_JSON_BYTES, contract.FINDINGS_MAX, contract.SERIES_MAX, contract.SUMMARY_MAX,
            contract.MAX_DEPTH) == (caps.MAX_JSON_BYTES, caps.FINDINGS_MAX, caps.SERIES_MAX, caps.SUMMARY_MAX,
                                    caps.MAX_DEPTH)
    assert [tuple(vars(c).values()) for c in contract.LEVELS] == [tuple(vars(c).values()) for c in caps.LEVELS]
    assert list(vars(contract.Caps)["__dataclass_fields__"]) == list(vars(caps.Caps)["__dataclass_fields__"])
    from triage.report import util
    from triage.inputs import text
    assert text.MAX_LINE is caps.MAX_LINE and text.CLIP_MARK is caps.CLIP_MARK and util.CLIP is caps.CLIP


def test_caps_module_imports_nothing_of_triage_but_record():
    """Any module may import caps: it imports only `record` (dataclasses made cheaply), which imports
    nothing of triage when it is imported."""
    import re
    src = open(caps.__file__, encoding="utf-8").read()
    assert re.findall(r"^(?:from|import) .*$", src, re.M) == [
        "from __future__ import annotations", "from typing import Optional", "from .record import record"]
    from triage import record
    rsrc = open(record.__file__, encoding="utf-8").read()
    assert not re.findall(r"^(?:from \.|import triage)", rsrc, re.M)


def test_spread_keeps_the_first_then_spreads_the_rest_evenly():
    """report.contract._spread: at most LIMIT indexes of N, FIRST's (up to half of LIMIT) then the rest evenly spread
    -- made without a list of N where FIRST is empty (a 1 GiB log's 85,226 steps), the same indexes either way."""
    import random

    from triage.report.contract import _spread

    def by_list(n, limit, first=()):
        if n <= limit:
            return list(range(n))
        chosen = set(list(first)[:limit // 2])
        rest = [i for i in range(n) if i not in chosen]
        room = limit - len(chosen)
        chosen.update(rest[(k * len(rest)) // room] for k in range(room))
        return sorted(chosen)

    rng = random.Random(44)
    for _ in range(2000):
        n, limit = rng.randrange(0, 5000), rng.randrange(1, 300)
        first = [rng.randrange(max(n, 1)) for _ in range(rng.choice([0, 0, 3, 50]))]
        got = _spread(n, limit, first)
        assert got == by_list(n, limit, first)
        assert len(got) <= limit and got == sorted(set(got)) and all(0 <= i < max(n, 1) for i in got)
    assert _spread(85_226, 1000) == by_list(85_226, 1000) and _spread(85_226, 1000)[:2] == [0, 85]
