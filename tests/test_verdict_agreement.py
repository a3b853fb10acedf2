"""Issue 21: every count a user sees agrees with the one verdict, on every corpus case.

- one finding per (pitfall, event): at most one failing and one waiting finding of a pitfall (its
  lines that fail, its lines that wait for others), and one info finding;
- the timeline's roles are its findings' roles;
- JUnit fails exactly the root cause (failures + errors is 1 for a failed job, 0 for a healthy one);
- the exit code follows the outcome, and `first_failing_rank_by` is there exactly when a first
  failing rank is."""
import os
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from click.testing import CliRunner
from corpus import LOGS, analyze_json, cases

from triage.cli import cli

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[os.path.relpath(c, LOGS) for c in CASES])
def test_findings_timeline_and_exit_agree_with_the_verdict(case):
    code, d = analyze_json(case)
    per = Counter((f["pitfall"], f["role"] == "info") for f in d["findings"])
    assert all(n <= (1 if info else 2) for (_, info), n in per.items()), per
    roles = {(f["pitfall"], f["role"]) for f in d["findings"]}
    for e in d.get("timeline", []):
        assert (e["pitfall"], e["role"]) in roles, e
    assert code == {"healthy": 0, "pitfall": 1, "unexplained-failure": 3}[d["outcome"]] or (
        d["outcome"] == "pitfall" and code == 0)          # a pitfall of severity warning only
    assert ("first_failing_rank_by" in d) == (d["first_failing_rank"] is not None)
    roots = [f for f in d["findings"] if f["role"] == "root-cause"]
    if d["primary"] is not None:
        assert roots and roots[0]["pitfall"] == d["primary"] and d["findings"][0] is roots[0]


JUNIT_CASES = [c for c in CASES if os.path.isfile(c)][::4]


@pytest.mark.parametrize("case", JUNIT_CASES, ids=[os.path.relpath(c, LOGS) for c in JUNIT_CASES])
def test_junit_counts_agree_with_the_verdict(case, tmp_path):
    _, d = analyze_json(case)
    out = tmp_path / "r.xml"
    r = CliRunner().invoke(cli, ["analyze", case, "-o", str(out), "--exit-zero"], env={"TRIAGE_DB": None})
    assert r.exit_code == 0, r.output
    suite = ET.parse(out).getroot().find("testsuite")
    failures, errors = int(suite.get("failures")), int(suite.get("errors"))
    assert failures + errors == (0 if d["outcome"] == "healthy" else 1)
    assert errors == (1 if d["outcome"] == "unexplained-failure" else 0)
