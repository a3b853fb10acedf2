"""Issue 41: knowledge is tables.  A new pitfall is a YAML file (and a fixture log) in a patterns directory,
a new launcher a row of a launcher table (TRIAGE_LAUNCHERS=FILE): both work end to end, in every format,
with no Python edit.  SYNTHETIC: a made-up pitfall and a made-up launcher prefix."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PITFALL = """id: widget-melted
title: The widget melted under a captured graph
severity: error
kind: runtime
match:
  - regex: 'WidgetError: the widget melted at step \\d+'
    literal: "WidgetError: the widget melted"
explanation: >
  A made-up pitfall of a made-up library, to show that a pitfall is a YAML file.
fix: >
  Cool the widget.
references:
  - source: "tests/test_knowledge_tables.py (synthetic)"
examples:
  match:
    - "WidgetError: the widget melted at step 12"
  no_match:
    - "the widget is fine at step 12"
"""

LAUNCHER = """launchers:
  - name: pod-runner
    why: a made-up launcher that prints "<<node7/rank3>> " before each line of a rank
    example: '<<node7/rank3>> WidgetError: the widget melted at step 12'
    prefix: '<<[\\w.-]+/rank(?P<rank>\\d+)>>'
    probe: '<<'
    rank: 3
"""

LOG = """<<node7/rank0>> iteration 10/100 | loss 2.0
<<node7/rank3>> iteration 10/100 | loss 2.0
<<node7/rank3>> Traceback (most recent call last):
<<node7/rank3>>   File "train.py", line 7, in <module>
<<node7/rank3>> WidgetError: the widget melted at step 12
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    (d / "pats").mkdir()
    (d / "pats" / "widget-melted.yaml").write_text(PITFALL)
    (d / "launchers.yaml").write_text(LAUNCHER)
    (d / "job.log").write_text(LOG)
    return d


def _run(d, *args):
    env = dict(os.environ, TRIAGE_LAUNCHERS=str(d / "launchers.yaml"), TRIAGE_DB="", PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, env=env,
                          cwd=str(d), timeout=120)


def test_the_pattern_file_checks(setup):
    r = _run(setup, "patterns", "check", str(setup / "pats"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_new_pitfall_and_a_new_launcher_row_work_end_to_end(setup):
    r = _run(setup, "analyze", "job.log", "--patterns", "pats", "--format", "json")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert d["primary"] == "widget-melted" and d["first_failing_rank"] == 3
    assert d["findings"][0]["fix"] == "Cool the widget."


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "junit", "jira"])
def test_every_format_shows_them(setup, fmt):
    r = _run(setup, "analyze", "job.log", "--patterns", "pats", "--format", fmt)
    assert r.returncode == 1, r.stderr
    out = r.stdout.replace("\\-", "-")          # (jira escapes a dash)
    assert "widget-melted" in out and "Cool the widget" in out


def test_without_the_row_the_prefix_names_no_rank(setup):
    env = dict(os.environ, TRIAGE_DB="", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", "job.log", "--patterns", "pats", "--format",
                        "json"], capture_output=True, text=True, env=env, cwd=str(setup), timeout=120)
    assert json.loads(r.stdout)["first_failing_rank"] is None


def test_a_bad_launcher_table_is_one_line(tmp_path):
    bad = tmp_path / "l.yaml"
    bad.write_text("launchers:\n  - name: x\n    example: y\n    prefix: '(unclosed'\n")
    env = dict(os.environ, TRIAGE_LAUNCHERS=str(bad), TRIAGE_DB="", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", "-"], input="x\n", capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "TRIAGE_LAUNCHERS" in r.stderr, r.stderr
