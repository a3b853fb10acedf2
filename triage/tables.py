"""Knowledge kept as tables (issue 41): each is a YAML file as written (with its comments) beside the JSON a
run reads (the stdlib parses it in a millisecond; PyYAML's import alone costs more than a small log's
analysis).  `python -m triage.tables` writes every JSON from its YAML; tests/test_tables.py checks each
pair holds the same data.

    triage/scan/failure_forms.yaml     evidence that a job failed, whatever the cause
    triage/verdict/masks.yaml          what a fingerprint masks (hosts, paths, numbers, times)
    triage/inputs/launchers.yaml       each launcher's and collector's line prefix (and the rank it names)
    triage/verdict/collectives.yaml    what timeout and watchdog lines say of the stuck collective (issue 43)
    triage/config/defaults.yaml        each release's defaults of the settings a partial config leaves out
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, List

HERE = os.path.dirname(os.path.abspath(__file__))
TABLES = ("scan/failure_forms", "verdict/masks", "inputs/launchers", "verdict/collectives", "config/defaults")


def json_path(name: str) -> str:
    return os.path.join(HERE, *name.split("/")) + ".json"


def yaml_path(name: str) -> str:
    return os.path.join(HERE, *name.split("/")) + ".yaml"


def load(name: str) -> Any:
    """Table NAME as a run reads it (its JSON)."""
    with open(json_path(name), encoding="utf-8") as f:
        return json.load(f)


def from_yaml(name: str) -> Any:
    """Table NAME as its YAML writes it (PyYAML: for the generator and the tests only)."""
    import yaml
    with open(yaml_path(name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def write(names: List[str]) -> None:
    for name in names:
        with open(json_path(name), "w", encoding="utf-8") as f:
            json.dump(from_yaml(name), f, indent=1, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    write(sys.argv[1:] or list(TABLES))
