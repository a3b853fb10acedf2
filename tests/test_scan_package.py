"""triage.scan is one module per job (issue 21); the old module paths are compatibility faces."""
import importlib

import pytest

from triage.scan.observer import derived, lit, rxa


def test_old_import_paths_are_the_scan_modules_names():
    import triage.anchors
    import triage.engine
    import triage.rx
    import triage.sources
    from triage.scan import anchors, engine, pool, results, rx, sources
    assert triage.engine.Engine is engine.Engine
    assert triage.engine.ScanResult is results.ScanResult
    assert triage.engine._Pool is pool._Pool and triage.engine._worker is pool._worker
    assert triage.sources.Line is sources.Line and triage.sources.InputError is sources.InputError
    assert triage.anchors.AnchorSet is anchors.AnchorSet
    assert triage.rx.lazy is rx.lazy and triage.rx.VALIDATED is rx.VALIDATED
    for shim in (triage.engine, triage.sources, triage.anchors, triage.rx):
        assert "Compatibility face" in shim.__doc__
        for name in shim.__all__:
            assert getattr(shim, name) is not None


def test_the_package_face_loads_each_name_from_its_module():
    import triage.scan as scan
    for name in scan.__all__:
        obj = getattr(scan, name)
        assert obj is getattr(importlib.import_module(f"triage.scan.{scan._HOME[name]}"), name)
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
