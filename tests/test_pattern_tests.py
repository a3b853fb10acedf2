"""`triage patterns test` (issue 41, semgrep's rule tests): annotated test logs beside the pattern files."""
import os

from inproc import run

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = {**os.environ, "TRIAGE_DB": ""}

PAT = """id: widget-melted
title: The widget melted
severity: error
kind: runtime
match:
  - regex: 'WidgetError: the widget melted'
    literal: "WidgetError: the widget melted"
explanation: e
fix: f
references:
  - source: "tests/test_pattern_tests.py (synthetic)"
examples:
  match: ["WidgetError: the widget melted"]
  no_match: ["the widget is fine"]
"""


def test_the_shipped_catalogs_test_logs_pass():
    r = run(["patterns", "test"], env=ENV)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    n = int(last.split()[0])
    from triage.taxonomy import IDS
    assert n >= 1000 and " 0 fail" in last and f"in {len(IDS)} test log(s)" in last


def test_every_pattern_has_its_test_log_with_positives_and_negatives():
    from triage.patterns import builtin_dir, load_dir
    from triage.patterntests import annotated
    for p in load_dir(builtin_dir()):
        kinds = {k for _, k, pid, _ in annotated(os.path.join(builtin_dir(), "tests", f"{p.id}.log")) if pid == p.id}
        assert {"ruleid", "ok"} <= kinds, p.id


def test_a_failing_annotation_a_known_miss_and_a_fix_are_reported(tmp_path):
    (tmp_path / "widget-melted.yaml").write_text(PAT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "widget-melted.log").write_text(
        "# ruleid: widget-melted\nWidgetError: the widget melted\n"
        "# ok: widget-melted\nthe widget is fine\n"
        "# ruleid: widget-melted\nWidgetError: the widget cracked\n"          # a miss: FAIL
        "# todoruleid: widget-melted\nWidgetError: the gadget melted\n"      # a known miss: TODO
        "# todook: widget-melted\nWidgetError: the widget melted, said the log\n")   # fires: TODO still
    r = run(["patterns", "test", str(tmp_path)], env=ENV)
    assert r.returncode == 1
    assert "FAIL  widget-melted.log:6: widget-melted (should fire; fired: nothing)" in r.stdout
    assert "TODO  widget-melted.log:8" in r.stdout and "TODO  widget-melted.log:10" in r.stdout
    assert r.stdout.strip().endswith("5 annotation(s) in 1 test log(s): 2 pass, 1 fail, 2 known (todo), 0 fixed "
                                     "(promote them)")


def test_no_test_log_is_an_error(tmp_path):
    (tmp_path / "widget-melted.yaml").write_text(PAT)
    r = run(["patterns", "test", str(tmp_path)], env=ENV)
    assert r.returncode == 2 and "no annotated test log" in r.stderr
