"""Issue 42, wrong not slower: a graph that replays a stale input.  Real runs on one H100
(tests/fixtures/logs/real/gpu-issue42, made by tests/fixtures/gen/gpu/graph_stale_input.py): the input
rebound instead of copied -> the loss jumps at the first replay and stops improving; the same run with the
input copied, and eagerly, is healthy.  And a real healthy run whose loss moves at the capture by chance
(real/gpu/steptime_large_graph.log: the eager run, steptime_large_eager.log, has the very same curve)."""
import json
import math
import os

from click.testing import CliRunner

from triage.cli import cli
from triage.inputs.sources import iter_inputs
from triage.patterns import load_all
from triage.pipeline import Options, scan_logs
from triage.scan.engine import Engine
from triage.pipeline import Seen
from triage.verdict.steps import JUMP, STALL

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


# --- issue 44: the replayed iterations read by their numbers (a dense log's 40k steps were copied thrice) ---------

def _median(xs):
    data = sorted(xs)
    n = len(data)
    return data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2


def _numerics_lists(cur, base):
    """What steps._numerics said before issue 44 (its lists of every loss): wrong, not slower (issue 42): the loss goes NaN at the first replayed iterations, or jumps at the first
    replay and stops improving while the eager steps before capture improved -- a graph that replays a stale
    input (rebound instead of copied into its static buffer).  A jump the training then recovers from is
    no alarm (a loss that moves by chance)."""
    if not cur.capture_iters or not cur.losses:
        return None
    c = min(cur.capture_iters)
    seq = sorted(cur.losses.items())
    pre = [v for i, v in seq if i <= c]
    post = [(i, v) for i, v in seq if i > c]
    if len(pre) < 3 or len(post) < 5 or not all(math.isfinite(v) for v in pre):
        return None
    # (the first non-finite loss, looked for among the first two replayed iterations only: one after them is
    # no alarm, and a run of 40k steps checked each one, issue 44)
    bad = [i for i, v in post[:2] if i <= post[0][0] + 1 and not math.isfinite(v)]
    if bad:
        return (f"triage: the loss went NaN at the first replayed iteration after CUDA graph capture: iteration "
                f"{bad[0]} (the eager steps before the capture at iteration {c} were finite, last {pre[-1]:.4g})")
    vals = [v for _, v in post]
    k = min(5, len(vals) // 2)
    head, tail = _median(vals[:k]), _median(vals[-k:])
    improved_pre = (pre[0] - pre[-1]) / abs(pre[0]) if pre[0] else 0.0
    # the eager steps were still improving right up to the capture (a loss already turning up before it,
    # as an unstable run's does whether graphed or not, is no onset at the capture)
    still_improving = all(b < a for a, b in zip(pre[-3:], pre[-2:]))
    if not (vals[0] > pre[-1] * (1 + JUMP) and improved_pre > STALL and still_improving
            and tail >= head * (1 - STALL)):
        return None
    msg = (f"triage: the loss jumped at the first replayed iteration after CUDA graph capture and stopped improving: "
           f"iteration {post[0][0]} loss {vals[0]:.4g} after {pre[-1]:.4g} at the capture iteration {c} (the eager "
           f"steps before it went {pre[0]:.4g} -> {pre[-1]:.4g}); over {len(vals)} replayed iterations "
           f"{head:.4g} -> {tail:.4g}")
    if base is not None and base.losses:
        both = [(v, base.losses[i]) for i, v in post if i in base.losses and base.losses[i] > 0]
        if len(both) >= k:
            good = _median([b for _, b in both[-k:]])
            msg += (f"; the last good run's loss at the same iterations: {good:.4g}"
                    f" (this run: {_median([a for a, _ in both[-k:]]):.4g})")
    return msg




def test_the_numerics_verdict_is_the_lists_one_on_random_runs():
    """SYNTHETIC loss series (random iterations, NaN / inf, jumps, captures, a base run or none): the verdict's
    text is the one the lists of every loss gave."""
    import random
    from triage.verdict.steps import StepLog, _numerics
    rnd = random.Random(44)
    alarms = 0
    for _ in range(4000):
        cur, base = StepLog(), (StepLog() if rnd.random() < 0.5 else None)
        its = sorted(rnd.sample(range(1, 200), rnd.randint(0, 40)))
        c = rnd.choice(its) if its and rnd.random() < 0.9 else rnd.randint(1, 50)
        cur.capture_iters = [c] + ([rnd.randint(1, 200)] if rnd.random() < 0.3 else [])
        v = 5.0
        for i in its:
            v = v * rnd.choice([0.9, 0.95, 1.0, 1.05, 1.3, 1.6]) if rnd.random() < 0.9 else \
                rnd.choice([float("nan"), float("inf"), v])
            cur.losses[i] = v
            if base is not None and rnd.random() < 0.8:
                base.losses[i] = rnd.choice([-1.0, 0.0, rnd.random() * 5])
        want = _numerics_lists(cur, base)
        assert _numerics(cur, base) == want
        alarms += want is not None
    assert alarms > 50
