"""Issue 42, slower either way: a run that got slower after CUDA graphs were turned off (or their settings
changed) is a step-time regression blamed on that change, with its cost and interval; graphs turned on
and no faster stay graph-no-speedup; a run that got faster blames no graph setting.  Real step-time logs
of one H200 (tests/fixtures/logs/real/gpu/steptime_*.log: the same model eager and graphed), with the
configs each run had given as files."""
import json
import os

from click.testing import CliRunner

from triage.cli import cli

REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "logs", "real", "gpu")


def _analyze(tmp_path, current, baseline, cur_cfg, base_cfg):
    c, b = tmp_path / "new.yaml", tmp_path / "good.yaml"
    c.write_text(cur_cfg)
    b.write_text(base_cfg)
    r = CliRunner().invoke(cli, ["analyze", os.path.join(REAL, current), "--baseline-log", os.path.join(REAL, baseline),
                                 "--config", str(c), "--baseline-config", str(b), "--format", "json"],
                           env={"TRIAGE_DB": None})
    return r.exit_code, json.loads(r.stdout)


GRAPHS = "cuda_graph_impl: transformer_engine\ncuda_graph_scope: [attn]\nuse_te_rng_tracker: true\nlr: 0.0003\n"
EAGER = "cuda_graph_impl: none\nuse_te_rng_tracker: true\nlr: 0.0001\n"


def test_graphs_turned_off_and_slower_is_a_regression_blamed_on_the_graph_change(tmp_path):
    code, d = _analyze(tmp_path, "steptime_eager.log", "steptime_graph.log", EAGER, GRAPHS)
    assert d["primary"] == "step-time-regression" and code == 0          # a warning: exit 0 by default
    f = d["findings"][0]
    assert "after CUDA graphs were turned off" in f["evidence"][0] and "95% CI" in f["evidence"][0]
    top = d["suspects"][0]
    assert top["key"] == "cuda_graph_impl" and not top["unrelated"] and top["new"] == "none"
    assert [s["key"] for s in d["suspects"] if s["unrelated"]] == ["lr"]     # an unrelated key stays unrelated
    rvr = d["step_times"]["run_vs_run"]
    assert rvr["verdict"] == "slower" and rvr["ci95_pct"][0] > 0


def test_the_graph_change_is_blamed_on_a_small_but_clear_slowdown_too(tmp_path):
    code, d = _analyze(tmp_path, "steptime_large_eager.log", "steptime_large_graph.log", EAGER, GRAPHS)
    assert d["primary"] == "step-time-regression"
    assert d["suspects"][0]["key"] == "cuda_graph_impl"


def test_graphs_turned_on_and_faster_blame_nothing(tmp_path):
    code, d = _analyze(tmp_path, "steptime_graph.log", "steptime_eager.log", GRAPHS, EAGER)
    assert d["primary"] is None and d["outcome"] == "healthy"
    assert all(s["unrelated"] for s in d["suspects"])


def test_with_several_changes_the_graph_change_ranks_first_and_unrelated_keys_stay_unrelated(tmp_path):
    cur = EAGER + "micro_batch_size: 2\n"
    base = GRAPHS + "micro_batch_size: 1\n"
    code, d = _analyze(tmp_path, "steptime_eager.log", "steptime_graph.log", cur, base)
    ranked = [(s["key"], s["score"]) for s in d["suspects"] if not s["unrelated"]]
    assert ranked[0][0] == "cuda_graph_impl" and ranked[0][1] > dict(ranked)["micro_batch_size"], ranked
    assert [s["key"] for s in d["suspects"] if s["unrelated"]] == ["lr"]
