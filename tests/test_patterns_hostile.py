"""User patterns (--patterns): malformed files, risky regexes and shipped ids are clear errors (issue 13)."""
import os

import pytest

import inproc  # the CLI in this process: tests/inproc.py
from triage.patterns import PatternError, load_all
from triage.match.rx import risky

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = """id: my-thing
title: My thing
severity: error
kind: runtime
match:
  - regex: '{rx}'
    literal: "{lit}"
explanation: e
fix: f
references: [{{source: me}}]
examples: {{match: ["x {lit} y"], no_match: ["nothing"]}}
"""


def write(tmp_path, text, name="mine.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("rx,why", [
    (r"(a+)+b", "nested unbounded"),
    (r"(\w+\s?)+$", "nested unbounded"),
    (r"(.*x)*", "nested unbounded"),
    (r"a{1,100000}", "repetition count"),
])
def test_risky_user_regexes_are_refused_naming_file_and_field(tmp_path, rx, why):
    p = write(tmp_path, GOOD.format(rx=rx, lit="a"))
    with pytest.raises(PatternError) as e:
        load_all([p])
    assert "mine.yaml match[0] regex" in str(e.value) and why in str(e.value)


def test_safe_shapes_are_not_flagged():
    for rx in (r"(\d+\.)+\d+", r"^(?:\w+\.)*KeyError: '\w+'$", r"(?:[^|\n]*\|)*?x", r"(a|b)+", r"(?>a+)+b", r"a++"):
        assert risky(rx) is None, rx


def test_every_shipped_regex_passes_the_check():
    for p in load_all():
        for r in p.match:
            assert risky(r.source_text) is None, (p.id, r.source_text)


def test_a_user_pattern_cannot_reuse_a_shipped_id(tmp_path):
    p = write(tmp_path, GOOD.format(rx="boom", lit="boom").replace("id: my-thing", "id: cuda-oom"))
    with pytest.raises(PatternError, match="shipped pattern"):
        load_all([p])


@pytest.mark.parametrize("text,needle", [
    ("id: x\n", "missing required field 'title'"),
    ("- just a list\n", "top level must be a mapping"),
    (GOOD.format(rx="(unclosed", lit="a"), "bad regex"),
    (GOOD.format(rx="a", lit="a").replace("literal: \"a\"", "literal: \"\""), "literal"),
    ("id: [unclosed\n", "invalid YAML"),
    (GOOD.format(rx="{{not_qouted}}boom", lit="boom"), "unknown macro {{not_qouted}}"),
    (GOOD.format(rx="\\d+", lit="a").replace("    literal: \"a\"\n", ""), "none can be derived"),
])
def test_malformed_user_patterns_are_one_line_errors(tmp_path, text, needle):
    p = write(tmp_path, text)
    r = inproc.run(["analyze", "--patterns", p, os.path.join(ROOT, "examples", "sample_job.log")], cwd=ROOT)
    assert r.returncode == 2 and r.stdout == "" and needle in r.stderr and r.stderr.count("\n") == 1
    # the argument first, then the file and what is wrong in it
    assert r.stderr.startswith(f"triage: error: --patterns {p}: mine.yaml") and "Traceback" not in r.stderr


def test_patterns_check_reports_risky_regexes(tmp_path):
    d = tmp_path / "pats"
    d.mkdir()
    # shipped check: the file is read as a catalog (not refused at load), and `check` names the risk
    (d / "mine.yaml").write_text(GOOD.format(rx="(x+)+y", lit="x"))
    r = inproc.run(["patterns", "check", str(d)], cwd=ROOT)
    assert r.returncode == 1 and "nested unbounded quantifiers" in r.stderr
