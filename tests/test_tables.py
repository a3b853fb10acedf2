"""Each knowledge table's JSON (what a run reads) is its YAML (as written): `python -m triage.tables`
after editing a YAML (triage/tables.py)."""
import pytest

from triage import tables


@pytest.mark.parametrize("name", tables.TABLES)
def test_the_json_a_run_reads_holds_the_yaml_as_written(name):
    assert tables.load(name) == tables.from_yaml(name), f"run `python -m triage.tables {name}`"
