"""`triage patterns check` catches mistakes (issue 16): untested rules, unknown config keys, config rules
without config examples, and example lines another pattern wins without the file saying so."""
import os
import re
import subprocess
import sys

import pytest

from triage.patterns import PatternError, builtin_dir, load_dir, parse_pattern
from triage.selftest import canonical_keys, check_examples, example_winners, format_winners, is_canonical_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = load_dir(builtin_dir())


def pat(**over):
    d = {"id": "my-thing", "title": "t", "severity": "error", "kind": "runtime", "explanation": "e", "fix": "f",
         "references": [{"source": "s"}],
         "match": [{"regex": "widget exploded", "literal": "widget exploded"}],
         "examples": {"match": ["RuntimeError: widget exploded"], "no_match": ["widget is fine"]}}
    d.update(over)
    return parse_pattern(d, "/tmp/x/my-thing.yaml")


def problems(p, catalog=None):
    return check_examples([p], catalog if catalog is not None else [p])


# --- the shipped catalog --------------------------------------------------------------------------

def test_shipped_catalog_has_no_problem():
    assert check_examples(SHIPPED) == []


def test_every_shipped_rule_fires_on_one_of_its_examples():
    """30 of the 157 rules fired on none of their examples before issue 16; each now has its message
    (158 rules since gloo-collective-timeout, 159 since argparse's unrecognized graph flag of another release, 163 with gpu-hardware-fault, 164 with vllm-custom-allreduce-expandable, 165 with the replay shape mismatch, 167 with compiled-graph-output-overwritten, 175 with the other capture-illegal wordings, SGLang's capture-failed OOM and compiled-graph-static-input-moved, 176 with DeepSpeed inference's graph refusals, 198 with issue 40's wordings by version of PyTorch c10d, NCCL, the
    CUDA runtime and the inference engines, 199 with graph-stale-input, 202 with issue 43's DCGM results and 2.4.1's dump-signal line, 211 with issue 40's cuda-device-assert (3) and host-oom (6))."""
    untested = [p for p in check_examples(SHIPPED) if "fires on none" in p]
    assert untested == []
    assert sum(len(p.match) for p in SHIPPED) == 211


def test_shipped_overlaps_are_declared_and_shown():
    rows = example_winners(SHIPPED, SHIPPED)
    assert len(rows) == sum(len(p.examples_match) for p in SHIPPED)     # every example fires its pattern
    won = {(w.pattern, w.index): w.winners for w in rows if w.others}
    # cuda-oom[0]: an OOM whose private pools hold a material share is capture-memory-overhead's (issue 22)
    # (NCCL's WARN line quoting a CUDA error is no nccl-error example since issue 40: nccl-error leaves the
    # CUDA errors other patterns name to them, tests/fixtures/wordings/nccl.tsv)
    assert won == {("cuda-oom", 0): ["capture-memory-overhead"]}
    nccl = next(p for p in SHIPPED if p.id == "nccl-error")
    assert nccl.overlaps == []
    lines = format_winners(rows)
    assert any(s.startswith("cuda-oom[0] -> capture-memory-overhead  (won by another)") for s in lines)
    assert any(s.startswith("cuda-oom[1] -> cuda-oom:") for s in lines)


# --- rules that fire on none of the examples ---------------------------------------------------

def test_a_rule_no_example_exercises_is_a_problem():
    p = pat(match=[{"regex": "widget exploded", "literal": "widget exploded"},
                   {"regex": "gadget melted", "literal": "gadget melted"}])
    out = problems(p)
    assert len(out) == 1 and "match[1] fires on none of the examples" in out[0] and "gadget melted" in out[0]
    p = pat(match=[{"regex": "widget exploded", "literal": "widget exploded"},
                   {"regex": "gadget melted", "literal": "gadget melted"}],
            examples={"match": ["RuntimeError: widget exploded", "RuntimeError: gadget melted"], "no_match": ["x"]})
    assert problems(p) == []


def test_a_rule_whose_context_never_holds_counts_as_untested():
    p = pat(match=[{"regex": "widget exploded", "literal": "widget exploded"},
                   {"regex": "boom", "literal": "boom", "context": [{"regex": "capture", "literal": "capture"}]}],
            examples={"match": ["RuntimeError: widget exploded", "boom"], "no_match": ["x"]})
    out = problems(p)
    assert any("match[1] fires on none" in s for s in out)
    p.examples_match[1] = "Start capture\nboom"
    assert problems(p) == []


# --- canonical config keys ------------------------------------------------------------------------

def test_canonical_keys_are_what_config_produces():
    keys = canonical_keys()
    for k in ("cuda_graph_impl", "cuda_graph_scope", "use_te_rng_tracker", "expandable_segments", "te_version",
              "deprecated_flags_both", "framework"):
        assert k in keys
    # folded into other keys by config.canonical(): a rule on them would never see a value
    for k in ("enable_cuda_graph", "external_cuda_graph", "te_rng_tracker", "cuda_graph_modules"):
        assert k not in keys
    assert is_canonical_key("env.NCCL_GRAPH_REGISTER") and is_canonical_key("env.MY_VAR")
    assert not is_canonical_key("env.") and not is_canonical_key("env.A B")


def test_patterns_md_lists_every_canonical_key():
    with open(os.path.join(ROOT, "PATTERNS.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Canonical config keys", 1)[1].split("\n## ", 1)[0]
    listed = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            listed |= set(re.findall(r"`([a-z0-9_]+)`", row.split("|")[1]))
    assert listed == set(canonical_keys())
    assert "`env.NAME`" in section


@pytest.mark.parametrize("cond", [{"key": "use_te_rng_traker", "falsy": True},
                                  {"key": "cuda_graph_scop", "unset": True},
                                  {"key": "cuda_graph_imp", "ne": "none"}])
def test_a_typo_in_a_when_key_is_a_problem(cond):
    """Before issue 16 these held for every config (an absent key is falsy, unset and unequal)."""
    rule = {"when": [{"key": "cuda_graph_impl", "in": ["local"]}, cond], "message": "m",
            "violates": [{"cuda_graph_impl": "local"}], "ok": [{"cuda_graph_impl": "none"}]}
    p = pat(kind="config", config_rules=[rule])
    out = problems(p)
    assert "when[1]" in out[0] and repr(cond["key"]) in out[0] and "did you mean" in out[0]
    # issue 45: an absent boolean setting is its release's default, and a typo has none (undecided):
    # the rule then also fails its own `violates` example; nothing else is a problem
    assert all("when[1]" in o or "does not flag" in o for o in out) and len(out) <= 2


def test_an_unknown_implicates_key_is_a_problem():
    out = problems(pat(implicates=["cuda_graph_impl", "env.NCCL_GRAPH_REGISTER", "rng_tracker_on"]))
    assert len(out) == 1 and "implicates: 'rng_tracker_on' is not a canonical config key" in out[0]


# --- config rule examples -------------------------------------------------------------------------

RULE = {"when": [{"key": "cuda_graph_impl", "in": ["local", "transformer_engine"]},
                 {"key": "use_te_rng_tracker", "falsy": True}], "message": "m"}


def test_a_config_rule_needs_a_violating_and_an_ok_config():
    out = problems(pat(kind="config", config_rules=[dict(RULE)]))
    assert len(out) == 2 and "no 'violates' example" in out[0] and "no 'ok' example" in out[1]
    good = dict(RULE, violates=[{"cuda_graph_impl": "local"}],
                ok=[{"cuda_graph_impl": "local", "use_te_rng_tracker": True}, {"cuda_graph_impl": "none"}])
    assert problems(pat(kind="config", config_rules=[good])) == []


def test_config_examples_that_disagree_with_the_rule_are_problems():
    bad = dict(RULE, violates=[{"cuda_graph_impl": "none"}], ok=[{"cuda_graph_impl": "local"}])
    out = problems(pat(kind="config", config_rules=[bad]))
    assert len(out) == 2
    assert "violates[0]: the rule does not flag {'cuda_graph_impl': 'none'}" in out[0]
    assert "ok[0]: the rule flags {'cuda_graph_impl': 'local'}" in out[1]
    typo = dict(RULE, violates=[{"cuda_graph_impl": "local", "use_te_rng_traker": False}],
                ok=[{"cuda_graph_impl": "none"}])
    assert any("violates[0]: 'use_te_rng_traker' is not a canonical config key" in s
               for s in problems(pat(kind="config", config_rules=[typo])))


@pytest.mark.parametrize("value", ["notalist", [1], [{"a": 1}, "x"]])
def test_malformed_config_examples_are_load_errors(value):
    with pytest.raises(PatternError, match="'violates' must be a list of configs"):
        pat(kind="config", config_rules=[dict(RULE, violates=value)])


def test_an_unknown_config_rule_field_is_a_load_error():
    with pytest.raises(PatternError, match=r"unknown field\(s\) \['violate'\]"):
        pat(kind="config", config_rules=[dict(RULE, violate=[{}])])


# --- which pattern wins ----------------------------------------------------------------------------

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.19 GiB is free."


def oom_user_pattern(**over):
    return pat(match=[{"regex": "CUDA out of memory", "literal": "CUDA out of memory"}],
               examples={"match": [OOM], "no_match": ["fine"]}, **over)


def test_an_example_another_pattern_wins_is_a_problem_unless_declared():
    p = oom_user_pattern(priority=10)
    out = check_examples([p])            # against the shipped catalog too
    assert len(out) == 1 and "example match[0] is won by 'cuda-oom' (priority" in out[0] and "overlaps: [cuda-oom]" in out[0]
    assert check_examples([oom_user_pattern(priority=10, overlaps=["cuda-oom"])]) == []
    # a pattern of higher priority wins its own example: no overlap to declare
    assert check_examples([oom_user_pattern(priority=99)]) == []


def test_an_example_shared_at_the_same_priority_is_a_problem():
    oom = next(q for q in SHIPPED if q.id == "cuda-oom")
    out = check_examples([oom_user_pattern(priority=oom.priority)])
    assert len(out) == 1 and f"shared with 'cuda-oom' (same priority {oom.priority})" in out[0]


def test_declared_overlaps_must_name_a_pattern_and_show_in_an_example():
    out = check_examples([pat(overlaps=["no-such-pattern"])])
    assert len(out) == 1 and "overlaps: 'no-such-pattern' is not a pattern of the catalog" in out[0]
    out = check_examples([pat(overlaps=["cuda-oom"])])
    assert len(out) == 1 and "overlaps: 'cuda-oom' wins or shares none of the examples" in out[0]
    with pytest.raises(PatternError, match="overlaps"):
        pat(overlaps=["my-thing"])
    with pytest.raises(PatternError, match="overlaps"):
        pat(overlaps=["Not An Id"])


def test_patterns_check_prints_the_overlap(tmp_path):
    d = tmp_path / "pats"
    d.mkdir()
    (d / "my-oom.yaml").write_text(
        "id: my-oom\ntitle: t\nseverity: error\nkind: perf\nexplanation: e\nfix: f\nreferences: [{source: s}]\n"
        "match:\n  - regex: 'CUDA out of memory\\. Tried to allocate'\n"
        f"examples:\n  match: ['{OOM}']\n  no_match: ['fine']\n")
    r = subprocess.run([sys.executable, "-m", "triage", "patterns", "check", str(d)], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 1 and "my-oom.yaml: example match[0] is won by 'cuda-oom'" in r.stderr, r.stderr
    assert "1 pattern file(s), 1 problem(s)" in r.stdout
