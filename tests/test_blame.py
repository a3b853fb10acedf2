import os

from helpers import pat

from triage.verdict.blame import blame
from triage.config import load_config
from triage.scan.engine import Engine
from triage.verdict.analyse import analyse
from triage.patterns import parse_pattern
from triage.selftest import lines_of

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")

MOE = parse_pattern({
    "id": "moe-scope-conflict", "title": "moe and moe_router", "severity": "error", "kind": "config",
    "match": [{"regex": "must not contain both moe and moe_router", "literal": "moe and moe_router"}],
    "implicates": ["cuda_graph_scope"], "explanation": "e", "fix": "f", "references": [{"source": "s"}],
    "examples": {"match": ["x"], "no_match": ["y"]},
    "config_rules": [{"when": [{"key": "cuda_graph_scope", "contains": "moe"},
                               {"key": "cuda_graph_scope", "contains": "moe_router"}],
                      "message": "moe and moe_router together"}]}, "moe-scope-conflict.yaml")
NCCL = parse_pattern({
    "id": "nccl-graph-register-expandable", "title": "expandable", "severity": "error", "kind": "config",
    "implicates": ["env.NCCL_GRAPH_REGISTER", "expandable_segments"], "explanation": "e", "fix": "f",
    "references": [{"source": "s"}],
    "config_rules": [{"when": [{"key": "expandable_segments", "truthy": True},
                               {"key": "env.NCCL_GRAPH_REGISTER", "ne": "0"}],
                      "message": "expandable_segments without NCCL_GRAPH_REGISTER=0"}]},
    "nccl-graph-register-expandable.yaml")
IMA = pat("illegal-memory-access", "an illegal memory access was encountered", "illegal memory access")


def test_changed_key_that_violates_a_rule_and_is_implicated_ranks_first():
    old = load_config(os.path.join(CFG, "good_run_config.yaml"))
    new = load_config(os.path.join(CFG, "bad_run_config.yaml"))
    a = analyse(Engine([MOE]).scan(lines_of("AssertionError: cuda_graph_scope must not contain both moe and moe_router.")))
    sus = blame(old, new, [MOE], a.findings, a.primary)
    assert sus[0].key == "cuda_graph_scope" and sus[0].because == ["moe-scope-conflict"]
    assert sus[0].score == 2.0 and not sus[0].unrelated
    rest = {s.key: s for s in sus[1:]}
    assert set(rest) == {"lr", "log_interval"}
    assert all(s.unrelated and s.score == 0 for s in rest.values())


def test_rule_alone_blames_the_env_change_even_for_a_generic_crash():
    old = load_config(os.path.join(CFG, "good_flat.json"))
    new = load_config(os.path.join(CFG, "bad_flat.yaml"))
    a = analyse(Engine([IMA]).scan(lines_of("RuntimeError: CUDA error: an illegal memory access was encountered")))
    sus = blame(old, new, [NCCL, IMA], a.findings, a.primary)
    assert sus[0].key == "env.NCCL_GRAPH_REGISTER" and sus[0].old == "0" and sus[0].new is None
    assert sus[0].because == ["nccl-graph-register-expandable"]


def test_no_diff_no_suspects():
    cfg = load_config(os.path.join(CFG, "bad_run_config.yaml"))
    a = analyse(Engine([MOE]).scan(lines_of("AssertionError: cuda_graph_scope must not contain both moe and moe_router.")))
    assert blame(cfg, dict(cfg), [MOE], a.findings, a.primary) == []
