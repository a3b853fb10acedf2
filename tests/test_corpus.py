"""Real and labelled-synthetic logs give exactly their recorded expected result."""
import json
import os

import pytest

from corpus import LOGS, cases, expected_path, summarise

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[os.path.relpath(c, LOGS) for c in CASES])
def test_case_matches_expectation(case):
    ep = expected_path(case)
    assert os.path.exists(ep), f"no expectation beside {case}; run python tests/corpus.py --update and review"
    with open(ep) as f:
        want = json.load(f)
    assert summarise(case) == want


def test_corpus_is_not_empty():
    assert len(CASES) >= 5
