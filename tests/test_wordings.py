"""Every wording of every stack's failure messages, in every release read, maps to what it means (issue 40).

The tables are data: tests/fixtures/wordings/*.tsv (version, source, printed line, expect), each made
by the generator script beside it from the software's own sources or binaries. `expect` is a pitfall
id (the line fires exactly that pattern), `none` (the line fires nothing and a log of it alone is
healthy) or `failure` (no pattern fires, but a log of it alone is a failed job: `unexplained-failure`).
"""
import glob
import os

import pytest

from triage.scan.engine import Engine
from triage.patterns import builtin_dir, load_dir
from triage.selftest import fired
from triage.taxonomy import IDS

from inproc import run

HERE = os.path.dirname(os.path.abspath(__file__))
TABLES = sorted(glob.glob(os.path.join(HERE, "fixtures", "wordings", "*.tsv")))
COLUMNS = ["version", "source", "printed line", "expect"]


def read_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    assert lines and lines[0].split("\t") == COLUMNS, (path, lines[:1])
    for ln in lines[1:]:
        cells = ln.split("\t")
        assert len(cells) == 4, (path, ln)
        rows.append((os.path.basename(path),) + tuple(cells))
    return rows


ROWS = [r for t in TABLES for r in read_table(t)]


@pytest.fixture(scope="module")
def engine():
    return Engine(load_dir(builtin_dir()))


def _id(row):
    table, version, _source, line, _expect = row
    return f"{table[:-4]}:{version.split(' ')[0]}:{line[:50]}"


def test_tables_are_well_formed():
    assert TABLES, "no wording tables"
    seen = set()
    for table, version, source, line, expect in ROWS:
        assert version and source and line, (table, line)
        assert expect in ("none", "failure") or expect in IDS, (table, expect)
        assert (table, version, line) not in seen, (table, line)
        seen.add((table, version, line))


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_printed_line_means_what_it_says(engine, row):
    table, version, source, line, expect = row
    want = {expect} if expect in IDS else set()
    assert fired(engine, line) == want, (table, version, source)
    assert fired(engine, "[rank0]: " + line) == want, (table, version, source)
    if expect in ("none", "failure"):
        r = run(["analyze", "-", "--format", "json", "-q"], input=line + "\n", env={**os.environ, "TRIAGE_DB": ""})
        outcome = "healthy" if r.returncode == 0 else "unexplained-failure" if r.returncode == 3 else r.returncode
        assert outcome == ("healthy" if expect == "none" else "unexplained-failure"), (table, version, r.stdout[-500:])
