"""Code health (issue 16): the config package, its operator table, per-scan regex timeouts."""
import pytest

import triage.config as config
from triage.config import OPERATORS, cond_holds, rule_holds
from triage.config.operators import OPERATORS as RULES_OPERATORS
from triage.scan.engine import Engine
from triage.patterns import RULE_OPS, ConfigRule
from triage.match.rx import Timeouts, search


def test_one_operator_table_used_by_the_loader():
    assert OPERATORS is RULES_OPERATORS
    assert RULE_OPS == tuple(OPERATORS)


@pytest.mark.parametrize("cfg,cond,want", [
    ({"a": "Local"}, {"eq": "local"}, True), ({}, {"eq": None}, False),
    ({}, {"ne": "x"}, True), ({"a": "x"}, {"ne": "X"}, False),
    ({"a": 3}, {"in": [1, 3]}, True), ({}, {"in": [None]}, False), ({}, {"not_in": [1]}, True),
    ({"a": ["attn", "mlp"]}, {"contains": "mlp"}, True), ({"a": "x-mlp"}, {"contains": "mlp"}, True),
    ({}, {"not_contains": "mlp"}, True), ({"a": ["attn"]}, {"contains_any": ["moe", "attn"]}, True),
    ({"a": ["attn", "moe"]}, {"has_other_than": ["attn"]}, True), ({"a": ["attn"]}, {"has_other_than": "attn"}, False),
    ({"a": None}, {"set": True}, False), ({"a": None}, {"unset": True}, True), ({"a": 0}, {"set": True}, True),
    ({"a": 0}, {"falsy": True}, True), ({}, {"falsy": True}, False),  # absent: its release default; none known for "a" ({"a": 1}, {"truthy": True}, True),
    ({"a": "2"}, {"gt": 1}, True), ({"a": "x"}, {"gt": 1}, False), ({"a": [1]}, {"lt": 2}, False), ({}, {"lt": 2}, False),
    ({"a": "2.1.0"}, {"version_lt": "2.10"}, True), ({"a": "2.10"}, {"version_ge": "2.9.1"}, True),
    ({}, {"version_lt": "9"}, False), ({"a": 1}, {"no_such_op": 1}, False),
])
def test_operators(cfg, cond, want):
    assert cond_holds(cfg, {"key": "a", **cond}) is want
    assert rule_holds(cfg, ConfigRule(when=[{"key": "a", **cond}], keys=["a"], message="", fix="")) is want


def test_public_names_kept():
    for name in ("ConfigError", "build_config", "canonical", "config_from_lines", "diff", "load_config", "norm_scope",
                 "parse_cmdline", "CONFIG_MAX_BYTES", "parse_config_text", "GRAPH_KEYS", "Config", "check",
                 "LogConfigCollector", "rule_holds", "KNOWN", "ALIASES", "Change", "Violation"):
        assert hasattr(config, name), name
    assert callable(config.diff)


class _Slow:
    def search(self, text, timeout=None):
        raise TimeoutError


def test_timeouts_are_counted_per_owner_not_globally():
    t = Timeouts()
    assert search(_Slow(), "x", t) is None and search(_Slow(), "x") is None
    assert t.count == 1
    assert Engine([]).scan([]).regex_timeouts == 0
