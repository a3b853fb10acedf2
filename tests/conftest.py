import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def engine():
    """The shipped catalog's engine, built once per test module."""
    from triage.engine import Engine
    from triage.patterns import load_all
    return Engine(load_all())
