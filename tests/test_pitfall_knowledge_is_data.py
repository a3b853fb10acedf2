"""Issue 21: what is specific to a pitfall lives in its pattern file, never as a pitfall id in Python:
no pitfall id appears as a string literal in triage/ outside the step-time module that synthesises its own
two ids (graph-no-speedup, step-time-regression); the id list itself is read from the catalog's file names
(issue 41: a new pitfall is a YAML file, no Python edit)."""
import os
import re

from triage.patterns import builtin_dir, load_dir

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "triage")
ALLOWED = {"steps.py"}


def test_no_pitfall_id_literal_in_the_code():
    ids = sorted(p.id for p in load_dir(builtin_dir()))
    lit = re.compile(r"""["'](%s)["']""" % "|".join(re.escape(i) for i in ids))
    found = []
    for root, _dirs, files in os.walk(ROOT):
        for f in files:
            if f.endswith((".py", ".j2")) and f not in ALLOWED:
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        if lit.search(line):
                            found.append(f"{os.path.relpath(os.path.join(root, f), ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_the_verdicts_pitfall_knowledge_is_in_the_pattern_files():
    by_id = {p.id: p for p in load_dir(builtin_dir())}
    waits = sorted(i for i, p in by_id.items() if p.waits is True)
    assert waits == ["gloo-collective-timeout", "nccl-watchdog-hang", "nccl-watchdog-timeout"]
    assert by_id["nccl-error"].waits not in (None, True)          # a regex: only its lost-peer lines wait
    for i in waits + ["nccl-error"]:
        assert by_id[i].hang_summary and by_id[i].hang_silent, i
    assert by_id["cuda-oom"].notes and by_id["full-iteration-nan-check"].implies


def test_a_new_hang_type_pattern_is_a_yaml_change(tmp_path):
    """A made-up waiting pattern (SYNTHETIC) gets a hang verdict with its own summary, no code."""
    from triage.scan.engine import Engine
    from triage.verdict.analyse import analyse
    from triage.patterns import parse_pattern
    from triage.selftest import lines_of
    p = parse_pattern({
        "id": "my-barrier-timeout", "title": "barrier timed out", "severity": "error", "kind": "runtime",
        "generic": True, "waits": True, "cascade_verb": "gave up at the barrier",
        "hang": {"summary": "{who} gave up waiting at the barrier ({id})", "silent": "never arrived"},
        "match": [{"regex": "barrier timed out after", "literal": "barrier timed out after"}],
        "explanation": "e", "fix": "f", "references": [{"source": "test"}],
        "examples": {"match": ["barrier timed out after 30 s"], "no_match": ["y"]}}, "my-barrier-timeout.yaml")
    log = "\n".join(f"[rank{r}]: barrier timed out after 30 s" for r in (0, 2)) + "\n[rank1]: step 7 ok"
    a = analyse(Engine([p]).scan(lines_of(log)))
    assert a.verdict.hang and a.first_rank is None
    assert a.summary.startswith("2 ranks (0,2) gave up waiting at the barrier (my-barrier-timeout)")


def test_the_taxonomy_is_the_catalogs_file_names():
    from triage.taxonomy import IDS
    files = sorted(f[:-5] for f in os.listdir(builtin_dir()) if f.endswith(".yaml"))
    assert list(IDS) == files and len(IDS) >= 38
    assert sorted(p.id for p in load_dir(builtin_dir())) == files
