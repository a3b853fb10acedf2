"""triage.scan is one module per job (issue 21); since issue 41 the matching (triage.match) and the inputs
(triage.inputs) are floors of their own, and no compatibility face of an old path is left."""
import importlib

import pytest

from triage.scan.observer import derived, lit, rxa


def test_no_compatibility_face_is_left():
    for face in ("rx", "anchors", "engine", "sources", "steps", "blame", "findings", "fleet_report", "fleet_reports",
                 "fleet_html", "store", "recheck", "svg"):
        with pytest.raises(ImportError):
            importlib.import_module(f"triage.{face}")


def test_the_package_face_loads_each_name_from_its_module():
    import triage.scan as scan
    for name in scan.__all__:
        obj = getattr(scan, name)
        home = scan._HOME[name]
        assert obj is getattr(importlib.import_module(home if home.startswith(".") else f".{home}", "triage.scan"), name)
    with pytest.raises(AttributeError):
        scan.nothing_here


def test_the_worker_entry_point_is_a_top_level_function_of_its_module():
    from triage.scan import pool
    assert pool._worker.__module__ == "triage.scan.pool" and pool._worker.__qualname__ == "_worker"


@pytest.mark.parametrize("rx, anchor", [
    (r"^-{10,} arguments -{10,}$", rxa(r"-{10} arguments -{10}")),
    (r"^Configuration Summary \(Non-Default Values vs Megatron Core\)",
     lit("Configuration Summary (Non-Default Values vs Megatron Core)")),
    (r"Restarting workers", lit("Restarting workers")),
])
def test_an_observers_anchor_is_derived_from_its_line_regex(rx, anchor):
    assert derived(rx) == anchor


def test_a_class_escape_keeps_the_anchor_a_regex():
    assert derived(r"foo\d+bar") == rxa(r"foo\d+bar")


def test_every_package_of_the_tree_is_installed():
    """pyproject.toml lists each package (a folder with __init__.py) so `pip install .` ships it."""
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
        listed = set(re.findall(r'"(triage(?:\.\w+)*)"', re.search(r"^packages = \[(.*)\]$", f.read(), re.M).group(1)))
    tree = {os.path.relpath(d, root).replace(os.sep, ".") for d, _, fs in os.walk(os.path.join(root, "triage"))
            if "__init__.py" in fs}
    assert tree - {"triage.patterns"} <= listed, sorted(tree - listed)


def test_every_core_observer_is_registered_in_its_order():
    from triage.patterns import load_all
    from triage.scan.engine import Engine
    names = [type(o).__name__ for o in Engine(load_all([])).wire([])[1]]
    assert names == ["Attempts", "LauncherRoot", "LauncherExits", "FailureForms", "Followups", "Blocks", "Rules"]
