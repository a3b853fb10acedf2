"""Issue 42, wrong not slower: a graph that replays a stale input.  Real runs on one H100
(tests/fixtures/logs/real/gpu-issue42, made by tests/fixtures/gen/gpu/graph_stale_input.py): the input
rebound instead of copied -> the loss jumps at the first replay and stops improving; the same run with the
input copied, and eagerly, is healthy.  And a real healthy run whose loss moves at the capture by chance
(real/gpu/steptime_large_graph.log: the eager run, steptime_large_eager.log, has the very same curve)."""
import json
import os

from click.testing import CliRunner

from triage.cli import cli
from triage.inputs.sources import iter_inputs
from triage.patterns import load_all
from triage.pipeline import Options, scan_logs
from triage.scan.engine import Engine
from triage.pipeline import Seen

HERE = os.path.dirname(os.path.abspath(__file__))
D = os.path.join(HERE, "fixtures", "logs", "real", "gpu-issue42")
GPU = os.path.join(HERE, "fixtures", "logs", "real", "gpu")


def _json(*args):
    r = CliRunner().invoke(cli, ["analyze", *args, "--format", "json"], env={"TRIAGE_DB": None})
    return r.exit_code, json.loads(r.stdout)


def test_a_stale_input_is_named_with_its_onset():
    code, d = _json(os.path.join(D, "graph_stale_input_stale.log"))
    assert code == 1 and d["primary"] == "graph-stale-input"
    ev = d["findings"][0]["evidence"][0]
    assert "iteration 5 loss 1.055 after 0.8381 at the capture iteration 4" in ev and "stopped improving" in ev


def test_the_last_good_run_is_quoted_beside_it():
    code, d = _json(os.path.join(D, "graph_stale_input_stale.log"), "--baseline-log",
                    os.path.join(D, "graph_stale_input_eager.log"))
    assert d["primary"] == "graph-stale-input"
    assert "the last good run's loss at the same iterations: 0.0704" in d["findings"][0]["evidence"][0]


def test_the_recipe_and_eager_runs_are_healthy():
    for name in ("graph_stale_input_copy.log", "graph_stale_input_eager.log"):
        code, d = _json(os.path.join(D, name))
        assert code == 0 and d["outcome"] == "healthy", name


def test_a_loss_that_moves_at_the_capture_by_chance_is_no_alarm():
    for name in ("steptime_large_graph.log", "steptime_graph.log"):
        code, d = _json(os.path.join(GPU, name))
        assert d["primary"] != "graph-stale-input", name


def test_both_drivers_read_the_same_losses():
    path = os.path.join(D, "graph_stale_input_stale.log")
    pats = load_all([])
    _, seen = scan_logs([path], pats, Options())
    line_seen = Seen()
    for ln in iter_inputs([path]):
        line_seen.steps.feed(ln)
    assert seen.steps.losses == line_seen.steps.losses and len(seen.steps.losses) == 40
    assert Engine is not None

