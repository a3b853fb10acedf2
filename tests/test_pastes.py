"""The shapes pastes come in (issue 40), on the real logs of the corpus: hard-wrapped at a fixed
width, behind a NUL hole, an error far past the line cap. Each must get the verdict of the log it
was made from."""
import glob
import json
import os
import sys

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.inputs.paste import unwrap

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "fixtures", "logs", "real")
LOGS = sorted(f for f in glob.glob(os.path.join(REAL, "**", "*.log"), recursive=True)
              if os.sep + "pastes" + os.sep not in f)


def _verdict(path):
    r = CliRunner().invoke(cli, ["analyze", str(path), "--format", "json"], env={"TRIAGE_DB": None})
    d = json.loads(r.stdout)
    p = d.get("primary")
    return r.exit_code, d["outcome"], p.get("pitfall") if isinstance(p, dict) else p


def _fold(text, width):
    out = []
    for ln in text.split("\n"):
        while len(ln) > width:
            out.append(ln[:width])
            ln = ln[width:]
        out.append(ln)
    return "\n".join(out)


def _read(f):
    with open(f, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _wide(width):
    """The logs a paste of that width wraps: at least 3 lines longer (one wrapped line cannot be told
    from a log's own line of that length)."""
    return [f for f in LOGS if sum(len(x) > width for x in _read(f).split("\n")) >= 3]


@pytest.mark.parametrize("width", [116, 100, 80])
def test_a_hard_wrapped_paste_gets_the_verdict_of_its_log(width, tmp_path):
    wide = _wide(width)
    assert len(wide) >= 20
    differ = []
    for f in wide:
        p = tmp_path / "paste.log"
        p.write_text(_fold(_read(f), width), encoding="utf-8")
        want, got = _verdict(f), _verdict(p)
        if got != want:
            differ.append((os.path.relpath(f, REAL), want, got))
    assert not differ, differ


def test_the_wrapped_fixture_is_unwrapped_and_noted():
    f = os.path.join(REAL, "pastes", "torchrun_rank2_timeout_wrapped116.log")
    with open(f, "rb") as fh:
        u = unwrap(fh.read())
    assert u is not None and u[1] == 116 and u[2] >= 3
    r = CliRunner().invoke(cli, ["analyze", f, "--format", "json"], env={"TRIAGE_DB": None})
    d = json.loads(r.stdout)
    assert d["outcome"] == "pitfall" and d["primary"] == "nccl-watchdog-timeout"
    assert any("hard-wrapped at 116 columns" in n for n in d["notes"]), d["notes"]


def test_logs_of_their_own_short_width_are_not_unwrapped():
    for f in LOGS:
        with open(f, "rb") as fh:
            assert unwrap(fh.read()) is None, f


@pytest.mark.parametrize("hole", [1, 4096, 65536, 9 << 20])
def test_a_log_behind_a_nul_hole_is_triaged(hole, tmp_path):
    for name in ("gpu/illegal_memory_access.log", "gpu/nccl_rank_hang_timeout.log", "mcore-0.19.2/args_healthy_te_rng_tracker.log"):
        f = os.path.join(REAL, name)
        p = tmp_path / "hole.log"
        with open(f, "rb") as fh:
            p.write_bytes(b"\x00" * hole + b"\n" * (hole > 4096) + fh.read())
        want, got = _verdict(f), _verdict(p)
        assert got == want, (name, hole)


def test_nul_runs_inside_a_log_are_gaps(tmp_path):
    f = os.path.join(REAL, "gpu", "illegal_memory_access.log")
    lines = _read(f).encode().split(b"\n")
    p = tmp_path / "holes.log"
    p.write_bytes(b"\n".join(x + b"\x00" * 300 if i % 3 == 0 else x for i, x in enumerate(lines)))
    assert _verdict(p) == _verdict(f)


def test_a_real_executable_is_still_refused():
    r = CliRunner().invoke(cli, ["analyze", os.path.realpath(sys.executable)], env={"TRIAGE_DB": None})
    assert r.exit_code == 2 and "not a text log" in r.output


@pytest.mark.parametrize("at", [5_000, 200_000, 900_000])
def test_an_error_past_the_line_cap_is_matched(at, tmp_path):
    f = os.path.join(REAL, "gpu", "illegal_memory_access.log")
    err = next(x for x in _read(f).split("\n") if "illegal memory access" in x)
    p = tmp_path / "long.log"
    p.write_text("[rank0]: starting\n" + "[rank0]: " + "x=1; " * (at // 5) + err + "\n[rank0]: exiting\n")
    code, outcome, primary = _verdict(p)
    assert (outcome, primary) == ("pitfall", "illegal-memory-access")


# the prefixes a collector puts before every line and that name no rank (the launcher table's outer rows)
OUTER = {
    "kubectl": "[pod/train-x7k2p/trainer] ",
    "cri": "2026-12-03T08:33:52.123456789Z stderr F ",
    "docker-timestamps": "2026-12-03T08:33:52.123456789Z ",
    "ray": "(RayWorkerWrapper pid=51, ip=10.1.2.3) ",
}


@pytest.mark.parametrize("name", sorted(OUTER))
def test_a_log_behind_a_collectors_prefix_gets_the_verdict_of_its_log(name, tmp_path):
    from triage.inputs.launchers import LAUNCHERS
    assert name in {r.name for r in LAUNCHERS if not r.has_rank}
    differ = []
    for f in LOGS[::2]:
        p = tmp_path / "prefixed.log"
        p.write_text("".join(OUTER[name] + ln + "\n" for ln in _read(f).split("\n") if ln), encoding="utf-8")
        want, got = _verdict(f), _verdict(p)
        if got != want:
            differ.append((os.path.relpath(f, REAL), want, got))
    assert not differ, differ
