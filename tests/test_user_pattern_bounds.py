"""Issue 46: a user pattern's cost is bounded.  A one-character literal (`literal: "a"`) on 64 MiB of
`aaa...` lines took 33 s and 740 MB (the cost was per occurrence of the literal: a Hyperscan report for
each `a`); such a literal is refused as a backtracking regex is, the regex shapes that backtrack within a
counted repeat are refused too (`(a|a)*b`, `(.*a){20}x`, `(a{1,1000}){1,1000}b`, `(a?){30}a{30}`, each ~5 s
and 700 MB on 22 MB), by `--patterns` and by `known add re:...` alike, and a literal all over a line is
one report for the line.  Synthetic logs (lines of a's), generated here."""
import os
import subprocess
import sys

import pytest

import inproc
from triage.match.rx import risky
from triage.patterns import PatternError, load_all

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAT = """id: my-thing
title: My thing
severity: error
kind: runtime
match:
  - regex: '{rx}'
{lit}explanation: e
fix: f
references: [{{source: synthetic}}]
examples: {{match: ["x {ex} y"], no_match: ["nothing"]}}
"""


def _write(tmp_path, rx, lit=None, ex=None):
    p = tmp_path / "mine.yaml"
    p.write_text(PAT.format(rx=rx, lit=f'    literal: "{lit}"\n' if lit is not None else "", ex=ex or lit or rx))
    return str(p)


@pytest.mark.parametrize("rx,lit", [("a", "a"), ("ab", "ab"), ("ab", None), ("[Ee]rr", "rr"), ("boom", "boo")])
def test_a_literal_that_selects_too_much_is_refused(tmp_path, rx, lit):
    with pytest.raises(PatternError) as e:
        load_all([_write(tmp_path, rx, lit, ex="ab" if rx == "ab" else "a boom Err")])
    assert "mine.yaml match[0]" in str(e.value)
    assert ("too short" in str(e.value)) or ("none can be derived" in str(e.value)), str(e.value)
    r = inproc.run(["analyze", "-", "--patterns", str(tmp_path / "mine.yaml")], input="aaa\n", cwd=ROOT)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr


SHAPES = [r"(a|a)*b", r"(.*a){20}x", r"(a{1,1000}){1,1000}b", r"(a?){30}a{30}", r"(a|a)*!", r"(\w+x?){15}y"]


@pytest.mark.parametrize("rx", SHAPES)
def test_backtracking_shapes_are_refused(tmp_path, rx):
    assert risky(rx), rx
    with pytest.raises(PatternError, match="mine.yaml match\\[0\\] regex"):
        load_all([_write(tmp_path, rx, "aaaa")])


@pytest.mark.parametrize("rx", SHAPES)
def test_known_add_refuses_the_same_shapes(tmp_path, rx):
    db = str(tmp_path / "t.db")
    r = inproc.run(["known", "add", "re:" + rx, "https://tickets.example.com/T-1", "--db", db], cwd=ROOT)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "backtracking" in r.stderr or "above 1000" in r.stderr, r.stderr


@pytest.mark.parametrize("rx", [r"(?:\d{1,3}\.){3}\d{1,3}", r"[a-z]{1,20}", r"(?:ab){1,50}", r"(x|y|x)+z",
                                r"(\w+\.){1,12}py", r"rank(\d+)", r"(?:foo|bar)+x"])
def test_safe_shapes_pass(rx):
    assert risky(rx) is None, rx


_MEASURE = ("import resource, subprocess, sys, time\n"
            "t = time.monotonic()\n"
            "r = subprocess.run([sys.executable, '-m', 'triage', 'analyze', sys.argv[1], '-q', '--patterns', "
            "sys.argv[2]], capture_output=True, text=True)\n"
            "print(r.returncode, time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def _measure(log, pats):
    env = {**os.environ, "TRIAGE_DB": "", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(log), str(pats)], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300).stdout.split()
    return int(out[0]), float(out[1]), int(out[2]) >> 10


@pytest.mark.parametrize("width", [99, 4095], ids=["short-lines", "long-lines"])
def test_a_literal_in_every_line_has_bounded_time_and_memory(tmp_path, width):
    """16 MiB of lines of a's and a user literal found all over each line: one anchor report a line (was
    one an occurrence: 16 M Python calls), time and memory bounded (for a loaded 2-core box)."""
    log = tmp_path / "aaa.log"
    line = b"a" * width + b"\n"
    log.write_bytes(line * ((16 << 20) // len(line)))
    pats = _write(tmp_path, "aaaa", "aaaa")
    code, took, rss_mb = _measure(log, pats)
    assert code == 1                                    # found, on its first line
    assert took <= (30 if width == 99 else 10), took   # 64 MiB of 100-byte lines: 33 s -> 9 s (2 cores)
    assert rss_mb <= 250, rss_mb                       # was 740 MB


def test_a_user_literal_on_most_lines_is_left_out_with_a_note(tmp_path):
    """A literal of 4+ characters that most lines hold (`aaaa`: every line of this synthetic log) made
    every line a candidate: 16 MiB took 2.4 s (0.2 s without the pattern).  It is left out of the run,
    said in a note; a rule with a rare literal in the same file still fires; the shipped catalog is
    never sampled (the illegal memory access is found)."""
    line = b"[rank0]: step INFO aaaa data loader ok " + b"x" * 40 + b"\n"
    log = tmp_path / "aaaa.log"
    log.write_bytes(line * (16 * 1024 * 1024 // len(line)) + b"[rank0]: my rare thing happened\n"
                    + b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    pat = tmp_path / "mine.yaml"
    pat.write_text(PAT.format(rx="aaaab", lit='    literal: "aaaa"\n', ex="aaaab")
                   .replace("match:\n", "match:\n  - regex: 'my rare thing'\n    literal: \"my rare thing\"\n", 1))
    import json
    import time
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", str(log), "--patterns", str(pat), "--format",
                        "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    took = time.monotonic() - t0
    d = json.loads(r.stdout)
    assert any("my-thing (mine.yaml match[1]) left out of this run: its literal 'aaaa' is on 100%" in n
               for n in d["notes"]), d["notes"]
    assert {f["pitfall"] for f in d["findings"]} >= {"illegal-memory-access", "my-thing"}
    assert took < 30, took                     # (2.4 s before on an idle 2-core machine; 0.2 s now)
    # a literal on few lines is kept: no note
    small = tmp_path / "small.log"
    small.write_bytes(b"[rank0]: nothing here\n" * 5000 + b"[rank0]: aaaab\n")
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", str(small), "--patterns", str(pat), "--format",
                        "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    d = json.loads(r.stdout)
    assert not any("left out of this run" in n for n in d.get("notes", []))
    assert "my-thing" in {f["pitfall"] for f in d["findings"]}
