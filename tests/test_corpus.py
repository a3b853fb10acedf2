"""Real and labelled-synthetic logs give exactly their recorded expected result, as the CLI prints it.

Each case runs through `triage analyze <case> --format json` (tests/corpus.py: click's CliRunner on
the CLI, in tests/fixtures/logs); a failure names the case and every field that differs."""
import json
import os
import subprocess
import sys

import pytest

from corpus import (CONFIGS, LOGS, PINNED, analyze_json, cases, check_case, check_config_case, check_good_config,
                    config_cases, differences, dumps, expected_path, good_configs, load_expected,
                    orphan_expectations, pinned)

CASES = cases()
CONFIG_CASES = config_cases()
GOOD_CONFIGS = good_configs()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("case", CASES, ids=[os.path.relpath(c, LOGS) for c in CASES])
def test_case_matches_expectation(case):
    diffs = check_case(case)
    assert not diffs, (f"{os.path.relpath(case, LOGS)} differs from its expectation "
                       "(python tests/corpus.py shows all; --update rewrites them on purpose):\n  "
                       + "\n  ".join(diffs))


@pytest.mark.parametrize("case", CONFIG_CASES, ids=[c["name"] for c in CONFIG_CASES])
def test_config_case_names_its_top_suspect(case):
    """A real config pair: blame names the setting the generator changed, check the rules it breaks."""
    diffs = check_config_case(case)
    assert not diffs, f"config case {case['name']}:\n  " + "\n  ".join(diffs)


@pytest.mark.parametrize("path", GOOD_CONFIGS, ids=[os.path.relpath(p, CONFIGS) for p in GOOD_CONFIGS])
def test_check_config_passes_every_good_real_config(path):
    assert check_good_config(path) == []


def test_config_corpus_covers_two_megatron_core_releases_and_bridge():
    runs = " ".join(" ".join(c["run"]) for c in CONFIG_CASES)
    assert "megatron-lm-core-0.16.1/" in runs and "megatron-lm-core-0.19.2/" in runs and "bridge-0.6.2/" in runs
    assert len(GOOD_CONFIGS) >= 10


def test_every_expectation_has_its_case_and_pins_every_field():
    assert orphan_expectations() == []
    for c in CASES:
        with open(expected_path(c), encoding="utf-8") as f:
            text = f.read()
        assert sorted(k for k in json.loads(text) if k != "todo") == sorted(PINNED), c
        assert text == dumps(json.loads(text)), f"{c}: not in the written form (sorted keys, indent 2)"


def test_exit_code_follows_the_outcome_in_every_case():
    got = {}
    for c in CASES:
        e = load_expected(c)
        got.setdefault(e["outcome"], set()).add(e["exit_code"])
    assert got == {"healthy": {0}, "pitfall": {1}, "unexplained-failure": {3}}


def test_expectations_are_the_cli_output_run_as_a_user_runs_it():
    """A real `python -m triage analyze` process gives what the in-process corpus pins."""
    case = os.path.join(LOGS, "real", "gpu", "nccl_rank_early_exit.log")
    env = {k: v for k, v in os.environ.items() if k != "TRIAGE_DB"}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", os.path.relpath(case, LOGS), "--format", "json"],
                       cwd=LOGS, env=env, capture_output=True, text=True, timeout=120)
    assert pinned(r.returncode, json.loads(r.stdout)) == load_expected(case)
    code, inproc = analyze_json(case)
    out = json.loads(r.stdout)
    for d in (inproc, out):
        d.get("job", {}).pop("analysed_at", None)     # when each ran: the second may tick between them
    assert (code, inproc) == (r.returncode, out)


def test_a_difference_names_the_field():
    want = load_expected(os.path.join(LOGS, "real", "gpu", "nccl_rank_early_exit.log"))
    got = json.loads(json.dumps(want))
    got["findings"][1]["role"] = "info"
    got["primary"] = "x"
    got["findings"].append({"pitfall": "p", "role": "info"})
    assert differences(want, got) == [
        f"primary: {want['primary']!r} -> 'x'",
        f"findings: {len(want['findings'])} -> {len(want['findings']) + 1} entries",
        "findings[1].role: 'cascade' -> 'info'",
        f"findings[{len(want['findings'])}]: (new) -> {{pitfall='p', role='info'}}",
    ]


def test_a_known_miss_is_marked_and_its_fix_noticed():
    from corpus import todo_fixed
    want = {"primary": None, "todo": {"why": "not yet read", "want": {"primary": "cuda-oom"}}}
    assert todo_fixed(want, {"primary": None}) == []
    assert todo_fixed(want, {"primary": "cuda-oom"})[0].startswith("TODO FIXED (not yet read)")


def test_corpus_script_exits_0_on_a_clean_corpus_and_lists_the_cases():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "corpus.py")], capture_output=True, text=True,
                       timeout=600, env={k: v for k, v in os.environ.items() if k != "TRIAGE_DB"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout == (f"{len(CASES)} cases, 0 differ\n"
                        f"{len(CONFIG_CASES)} config cases and {len(GOOD_CONFIGS)} good configs, 0 differ\n")
