"""Issue 43: DCGM's `dcgmi health -c` / `dcgmi diag` output given among the logs is read by its shape; a
failed GPU (XID, PCIe, NVLink, memory / ECC / row remapping, thermal) is gpu-hardware-fault with the
drain-node action and the GPU / host named; healthy output (all Healthy / Pass) gives no finding.

Fixtures: tests/fixtures/logs/synthetic/dcgm/ (SYNTHETIC, gen_dcgm_outputs.py: the layout of DCGM 4.6.0's
dcgmi/Health.cpp and dcgmi/Diag.cpp, the messages of dcgm_errors.h; no real DCGM output could be made here).
"""
from __future__ import annotations

import os

import pytest

from triage.inputs.dcgm import flatten
from triage.pipeline import triage
from triage.report import render

HERE = os.path.dirname(os.path.abspath(__file__))
DCGM = os.path.join(HERE, "fixtures", "logs", "synthetic", "dcgm")
REAL = os.path.join(HERE, "fixtures", "logs", "real")


def _read(name):
    with open(os.path.join(DCGM, name), "rb") as f:
        return f.read()


def test_health_table_is_said_as_one_line_per_system():
    out, tables = flatten(_read("health_ecc_failure.txt"))
    lines = out.decode().splitlines()
    assert tables == 1
    assert "dcgmi health on node-7: Overall Health Failure" in lines
    assert ("dcgmi health on node-7: GPU 1 Memory system Failure: Detected 2 volatile double-bit ECC error(s) in "
            "GPU 1.") in lines
    # a message wrapped over two rows of the box is one message again
    assert ("dcgmi health on node-7: GPU 3 PCIe system Warning: Detected more than 8 PCIe replays per minute for "
            "GPU 3 : 12") in lines
    assert not any(x.startswith(("|", "+")) for x in lines)


def test_diag_message_cut_every_45_characters_is_whole_again():
    out, _ = flatten(_read("diag_memory_fail.txt"))
    assert ("dcgmi diag on node-4: memory GPU 1 Fail: GPU 1 had uncorrectable memory errors and row remapping "
            "failed.") in out.decode().splitlines()


@pytest.mark.parametrize("name,host,gpu_text", [
    ("health_ecc_failure.txt", "node-7", "GPU 1 Memory system Failure"),
    ("health_xid_nvlink.txt", None, "Detected XID 79 for GPU 2"),
    ("diag_memory_fail.txt", "node-4", "row remapping failed"),
])
def test_failed_gpu_is_drain_node(name, host, gpu_text):
    a = triage([os.path.join(DCGM, name)])
    v = a.verdict
    assert v.primary is not None and v.primary.pitfall == "gpu-hardware-fault"
    assert (v.action, v.action_host) == ("drain-node", host)
    assert any(gpu_text in e.text for e in v.primary.evidence)
    assert "drain-node" in render(a, "text")


@pytest.mark.parametrize("name", ["health_healthy.txt", "diag_all_pass.txt"])
def test_healthy_dcgm_gives_no_finding(name):
    a = triage([os.path.join(DCGM, name)])
    assert a.verdict.outcome == "healthy" and not a.verdict.findings and a.verdict.action == "none"


def test_pdsh_prefixed_rows_name_the_host(tmp_path):
    # `pdsh -w node-[1-8] dcgmi health -c` prefixes every row with the host
    rows = _read("health_xid_nvlink.txt").decode().splitlines()[1:]
    p = tmp_path / "dcgm-health.txt"
    p.write_text("\n".join(f"node-3: {r}" for r in rows) + "\n")
    v = triage([str(p)]).verdict
    assert (v.action, v.action_host) == ("drain-node", "node-3")


def test_dcgm_beside_a_hang_log_names_the_gpu_fault(tmp_path):
    # the real 4-rank hang with the node's DCGM health output beside it: the GPU fault is the root cause
    a = triage([os.path.join(REAL, "gpu-multirank", "nccl_hang_flight_recorder.log"),
                os.path.join(DCGM, "health_ecc_failure.txt")])
    assert a.verdict.primary.pitfall == "gpu-hardware-fault" and a.verdict.action == "drain-node"
    assert a.verdict.hang_detail is not None and a.verdict.hang_detail.behind == [2]


def test_plain_logs_are_untouched():
    with open(os.path.join(REAL, "gpu", "nccl_rank_hang_timeout.log"), "rb") as f:
        assert flatten(f.read()) is None


def test_pdsh_tables_of_two_hosts_name_each_host():
    """`pdsh -w node-1,node-2 dcgmi health -c`: node-1's healthy table then node-2's failed one; the
    failure is node-2's (the table ended where the pdsh prefix changed), so node-2 is drained."""
    import subprocess
    import sys
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "logs", "synthetic", "dcgm")

    def body(name):
        with open(os.path.join(here, name), encoding="utf-8") as f:
            return [x for x in f.read().split("\n") if x and not x.startswith(("#", "host"))]
    text = "\n".join([f"node-1: {x}" for x in body("health_healthy.txt")]
                     + [f"node-2: {x}" for x in body("health_ecc_failure.txt")]) + "\n"
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", "-", "--format", "json"], input=text,
                       capture_output=True, text=True, env={**os.environ, "TRIAGE_DB": ""})
    import json
    d = json.loads(r.stdout)
    assert d["primary"] == "gpu-hardware-fault"
    assert d["action"]["host"] == "node-2", d["action"]
    assert all("node-1" not in e for f in d["findings"] for e in f["evidence"] if "Failure" in e)
