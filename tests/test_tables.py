"""Each knowledge table's JSON (what a run reads) is its YAML (as written): `python -m triage.tables`
after editing a YAML (triage/tables.py)."""
import pytest

from triage import tables


@pytest.mark.parametrize("name", tables.TABLES)
def test_the_json_a_run_reads_holds_the_yaml_as_written(name):
    assert tables.load(name) == tables.from_yaml(name), f"run `python -m triage.tables {name}`"


def test_every_table_is_shipped():
    """pyproject.toml's package data holds each table's JSON (what an installed triage reads)."""
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    for name in tables.TABLES:
        pkg = "triage." + name.rsplit("/", 1)[0].replace("/", ".")
        assert re.search(r'^"%s" = \[[^\]]*"\*\.json"' % re.escape(pkg), text, re.M), pkg
