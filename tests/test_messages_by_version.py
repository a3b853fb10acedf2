"""Every wording of every graph-related assert / raise / warning, in every released version, maps to its pitfall.

The table is data: tests/fixtures/messages_by_version.tsv (version, source, printed line, pitfall), read
from megatron-core core_v0.15.0 .. core_v0.19.0 and HEAD, Megatron Bridge v0.3.0 .. v0.6.0, the 0.6.2
wheel and HEAD, and Transformer Engine 2.8.0 / 2.20.2. A pitfall of `none` means the line must fire
no pattern (a warning that healthy runs print).
"""
import json
import os

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.scan.engine import Engine
from triage.patterns import builtin_dir, load_dir
from triage.selftest import fired
from triage.taxonomy import IDS

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "fixtures", "messages_by_version.tsv")
COLUMNS = ["version", "source", "printed line", "pitfall"]


def read_table(path=TABLE):
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    assert lines[0].split("\t") == COLUMNS, lines[0]
    for ln in lines[1:]:
        cells = ln.split("\t")
        assert len(cells) == 4, ln
        rows.append(tuple(cells))
    return rows


ROWS = read_table()


@pytest.fixture(scope="module")
def engine():
    return Engine(load_dir(builtin_dir()))


def _id(row):
    version, _source, line, _pitfall = row
    return f"{version.split(' ')[0]}:{line[:60]}"


def _expected(pitfall):
    return set() if pitfall == "none" else {pitfall}


def test_table_is_well_formed():
    assert len(ROWS) > 100
    seen = set()
    for version, source, line, pitfall in ROWS:
        assert version.split(" ")[0] in {"megatron-core", "megatron-bridge", "transformer-engine"}, version
        assert source and line
        assert pitfall == "none" or pitfall in IDS, pitfall
        assert (version, line) not in seen, line
        seen.add((version, line))


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_printed_line_fires_exactly_its_pitfall(engine, row):
    version, source, line, pitfall = row
    want = _expected(pitfall)
    assert fired(engine, line) == want, (version, source)
    # the same line from a torchrun rank / launcher
    assert fired(engine, "[rank0]: " + line) == want, (version, source)
    assert fired(engine, "[default3]:" + line) == want, (version, source)


# The full-iteration NaN-check assertion, in each of its wordings.
NAN_CHECK = {
    "megatron-core 0.15.0..0.16.1":
        "AssertionError: --no-check-for-nan-in-loss-and-grad should be set with full_iteration CUDA graph",
    "megatron-core 0.17.0..0.17.1":
        "AssertionError: --no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-scope=full_iteration "
        "for training. Note: If you are trying to use full_iteration CUDA graphs for inference, please use "
        "--cuda-graph-scope full_iteration_inference instead",
    "megatron-core 0.18.0..HEAD d98e8a64":
        "AssertionError: --no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration "
        "for training.",
    "megatron-bridge 0.3.0..HEAD 067f987d":
        "AssertionError: check_for_nan_in_loss must be disabled when using full_iteration CUDA graph. "
        "Set rerun_state_machine.check_for_nan_in_loss=False.",
}


@pytest.mark.parametrize("version", sorted(NAN_CHECK))
def test_every_nan_check_wording_is_in_the_table(version):
    assert (version, NAN_CHECK[version], "full-iteration-nan-check") in {(v, ln, p) for v, _s, ln, p in ROWS}


@pytest.mark.parametrize("version", sorted(NAN_CHECK))
def test_nan_check_source_line_does_not_fire(engine, version):
    """The message quoted in a traceback's source line (or any string literal) is not the message."""
    message = NAN_CHECK[version].split(": ", 1)[1]
    assert fired(engine, f'            "{message}"') == set()
    frame = ('  File "/usr/local/lib/python3.12/site-packages/megatron/training/arguments.py", line 751, '
             'in validate_args\n'
             f'    assert not args.check_for_nan_in_loss_and_grad, "{message}"')
    assert fired(engine, frame) == set()


def _log(message):
    return (
        "using world size: 8, data-parallel size: 8, context-parallel size: 1\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/workspace/Megatron-LM/pretrain_gpt.py", line 300, in <module>\n'
        "[rank0]:     pretrain(\n"
        '[rank0]:   File "/usr/local/lib/python3.12/site-packages/megatron/training/arguments.py", line 752, '
        "in validate_args\n"
        "[rank0]:     assert not args.check_for_nan_in_loss_and_grad, \\\n"
        "[rank0]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f"[rank0]: {message}\n"
    )


ANALYZE = [
    ("megatron-core 0.15.0..0.16.1", "full-iteration-nan-check"),
    ("megatron-core 0.17.0..0.17.1", "full-iteration-nan-check"),
    ("megatron-core 0.18.0..HEAD d98e8a64", "full-iteration-nan-check"),
    ("megatron-bridge 0.3.0..HEAD 067f987d", "full-iteration-nan-check"),
]


@pytest.mark.parametrize("version,pitfall", ANALYZE)
def test_analyze_primary_of_small_log(version, pitfall):
    r = CliRunner().invoke(cli, ["analyze", "--format", "json"], input=_log(NAN_CHECK[version]))
    assert r.exit_code == 1, r.output
    assert json.loads(r.output)["primary"] == pitfall


@pytest.mark.parametrize("needle,pitfall", [
    ("expandable_segments:True may not be safe when using CUDA Graphs with some specific", "nccl-graph-register-expandable"),
    ("recompute_granularity must not be full when CUDA Graphs are enabled", "full-recompute-needs-full-iteration"),
    ("1F1B overlap with FSDP does not support per-layer CUDA graphs", "ep-overlap-graph-scope"),
])
def test_analyze_primary_for_older_and_newer_wordings(needle, pitfall):
    [line] = [ln for _v, _s, ln, p in ROWS if needle in ln]
    r = CliRunner().invoke(cli, ["analyze", "--format", "json"], input=_log(line))
    assert r.exit_code == 1, r.output
    assert json.loads(r.output)["primary"] == pitfall
