"""Issue 42, novelty against the last good log: an unexplained failure given --baseline-log lists the lines
only the failed run printed (masked templates), the culprit first; in every format.  Real pair: the same
script's runs, one that caught its error and went on, one that died of it (real/cpu-outcome)."""
import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli

R = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "logs", "real", "cpu-outcome")
FAILED, GOOD = os.path.join(R, "uncaught_torch_error.log"), os.path.join(R, "caught_exception_continues.log")
CULPRIT = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x64 and 32x10)"


def _run(*args, input=None):
    return CliRunner().invoke(cli, ["analyze", *args], env={"TRIAGE_DB": None}, input=input)


def test_the_culprit_line_is_in_the_top_five():
    d = json.loads(_run(FAILED, "--baseline-log", GOOD, "--format", "json").stdout)
    assert d["outcome"] == "unexplained-failure"
    texts = [n["text"] for n in d["novel_lines"]]
    assert CULPRIT in texts[:5] and texts[0] == CULPRIT, texts
    assert all(not t.strip().startswith("^") for t in texts)          # no caret line
    good_templates = set()
    for n in d["novel_lines"]:
        assert n["count"] >= 1 and n["line"] >= 1 and n["template"]
        good_templates.add(n["template"])
    assert len(good_templates) == len(d["novel_lines"])


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "junit", "jira"])
def test_every_format_shows_them(fmt):
    out = _run(FAILED, "--baseline-log", GOOD, "--format", fmt).stdout
    assert "mat1 and mat2 shapes cannot be multiplied" in out.replace("\\\\", "")
    assert "last good log" in out.lower() or "new since the last good log" in out.lower()


def test_no_novelty_without_a_baseline_or_for_a_healthy_run():
    assert "novel_lines" not in json.loads(_run(FAILED, "--format", "json").stdout)
    d = json.loads(_run(GOOD, "--baseline-log", FAILED, "--format", "json").stdout)
    assert d["outcome"] == "healthy" and "novel_lines" not in d


def test_a_failed_run_on_stdin_says_why_there_is_none():
    with open(FAILED, encoding="utf-8") as f:
        d = json.loads(_run("-", "--baseline-log", GOOD, "--format", "json", input=f.read()).stdout)
    assert "novel_lines" not in d and any("stdin" in n for n in d["notes"])
