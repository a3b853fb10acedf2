"""Every pattern file loads, carries the required fields, and passes its own examples."""
import os

import pytest

from triage.scan.engine import Engine
from triage.patterns import PatternError, builtin_dir, load_dir, load_file, parse_pattern
from triage.selftest import check_examples, fired
from triage.taxonomy import IDS

PATTERN_DIR = builtin_dir()
FILES = sorted(f for f in os.listdir(PATTERN_DIR) if f.endswith(".yaml"))
# (the taxonomy is the catalog's file names since issue 41: no id is pending a Python edit)
PENDING_IDS: set = set()
KNOWN_IDS = tuple(IDS) + tuple(sorted(PENDING_IDS - set(IDS)))


@pytest.mark.parametrize("name", FILES)
def test_pattern_file_valid_and_examples_pass(name):
    p = load_file(os.path.join(PATTERN_DIR, name), KNOWN_IDS)
    assert name == f"{p.id}.yaml"
    assert check_examples([p]) == []


def test_every_taxonomy_id_has_a_pattern():
    ids = {p.id for p in load_dir(PATTERN_DIR, KNOWN_IDS)}
    missing = sorted(set(KNOWN_IDS) - ids)
    assert not missing, f"taxonomy ids without a pattern file: {missing}"


def test_pending_ids_explain_themselves():
    """An id added through a pattern file says in its `note` that it is new and why."""
    for pid in sorted(PENDING_IDS - set(IDS)):
        with open(os.path.join(PATTERN_DIR, f"{pid}.yaml"), encoding="utf-8") as f:
            text = f.read()
        assert "new taxonomy id" in text.lower() and "why not" in text.lower(), pid


def test_examples_do_not_fire_other_patterns_as_primary_when_unrelated():
    """A no_match example of one pattern that is a healthy line must not be read as any pitfall."""
    pats = load_dir(PATTERN_DIR, KNOWN_IDS)
    eng = Engine(pats)
    healthy = [
        "  cuda_graph_scope ................................ ['attn']",
        "  cuda_graph_impl ................................. transformer_engine",
        "INFO:megatron.core.transformer.cuda_graphs:> built 24 cuda graph(s) in 3.21 sec, with total memory usage: allocated 1.2 GB, reserved 2.0 GB.",
        "Start CUDA Graphs capture...",
        "host-1:1234:1234 [0] NCCL INFO NCCL_GRAPH_REGISTER set by environment to 0.",
    ]
    for line in healthy:
        assert fired(eng, line) == set(), line


def test_bad_pattern_is_a_clear_error(tmp_path):
    with pytest.raises(PatternError, match="missing required field 'title'"):
        parse_pattern({"id": "x", "severity": "error", "kind": "config"}, "x.yaml")
    with pytest.raises(PatternError, match="bad regex"):
        parse_pattern({"id": "x", "title": "t", "severity": "error", "kind": "runtime", "explanation": "e",
                       "fix": "f", "references": [{"source": "s"}],
                       "match": [{"regex": "(", "literal": "x"}],
                       "examples": {"match": ["x"], "no_match": ["y"]}}, "x.yaml")
    with pytest.raises(PatternError, match="literal"):
        parse_pattern({"id": "x", "title": "t", "severity": "error", "kind": "runtime", "explanation": "e",
                       "fix": "f", "references": [{"source": "s"}], "match": [{"regex": "x"}],
                       "examples": {"match": ["x"], "no_match": ["y"]}}, "x.yaml")
    (tmp_path / "bad.yaml").write_text("id: [unclosed\n")
    with pytest.raises(PatternError, match="invalid YAML"):
        load_dir(str(tmp_path))
    with pytest.raises(PatternError, match="not in the taxonomy"):
        parse_pattern({"id": "made-up"}, "m.yaml", IDS)
