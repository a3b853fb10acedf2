"""The shipped JSON Schemas (triage/schemas/) describe the machine formats (issue 15).

Every golden corpus case (tests/corpus.py) is analysed the way `triage analyze --format json` does
it (pipeline.triage, then report.render(a, "json")) and its JSON validated
against analyze.schema.json; so are analyses with a config, a baseline config or log, a restarted
job, an empty input and tighter size limits (the logs for those are the config and log fixtures,
or SYNTHETIC ones written by the test), and the `check-config` / `diff` JSON of the config fixtures.

Each document is checked against the schema as shipped (objects open: "extend, never break") and
against a strict variant with every described object closed, so a key the code starts to emit
fails here until the schema describes it."""
import copy
import itertools
import json
import os

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from corpus import LOGS, cases
from triage import schemas
from triage.cli import cli
from triage.patterns import load_all
from triage.pipeline import Options, triage
from triage.report import LEVELS, render, render_json

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "fixtures", "configs")
SYN = os.path.join(LOGS, "synthetic")
MULTIRANK = os.path.join(SYN, "multirank", "per_rank_oom_after_capture")
STEPS = os.path.join(SYN, "steptime")
BRIDGE_GOOD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "configs", "real", "bridge-0.6.2",
                           "good", "moe-te-attn.yaml")


def _bisect_bad(d):
    """The real Bridge config with warmup 3 -> 1 and moe_router added (tests/test_bisect.py's)."""
    from test_bisect import ROUTER
    with open(BRIDGE_GOOD, encoding="utf-8") as f:
        src = f.read()
    anchor = "    _target_: megatron.core.transformer.enums.CudaGraphModule\n  cuda_graph_retain_backward_graph: false"
    text = src.replace(anchor, anchor.replace("\n  cuda_graph_retain", "\n" + ROUTER + "  cuda_graph_retain"), 1)
    p = d / "bisect_bad.yaml"
    p.write_text(text.replace("  cuda_graph_warmup_steps: 3\n", "  cuda_graph_warmup_steps: 1\n", 1))
    return str(p)


REAL_OUTCOME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "logs", "real", "cpu-outcome")
CONFIG_FILES = sorted(os.path.join(CONFIGS, f) for f in os.listdir(CONFIGS) if f.endswith((".yaml", ".json")))
CASES = cases()


def _strict(schema):
    """SCHEMA with every object that lists `properties` closed (additionalProperties false), except
    those whose additionalProperties is itself a schema (e.g. a reference's extra string fields)."""
    s = copy.deepcopy(schema)

    def walk(x):
        if isinstance(x, dict):
            if "properties" in x and x.get("additionalProperties", True) is True:
                x["additionalProperties"] = False
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(s)
    return s


VALIDATORS = {n: Draft202012Validator(schemas.load(n)) for n in schemas.NAMES}
STRICT = {n: Draft202012Validator(_strict(schemas.load(n))) for n in schemas.NAMES}


def assert_valid(name, doc):
    for v in (VALIDATORS[name], STRICT[name]):
        errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(
            f"{'strict ' if v is STRICT[name] else ''}{name}: /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
            for e in errors[:10])


def errors_of(name, doc):
    return list(VALIDATORS[name].iter_errors(doc))


# ---- the JSON, made the way the CLI makes it, once per module


@pytest.fixture(scope="module")
def pats():
    return load_all()


def analyze_json(pats, logs, limit=None, **config):
    a = triage(logs, Options(pats=tuple(pats), **config))
    return json.loads(render(a, "json") if limit is None else render_json(a, limit=limit))


@pytest.fixture(scope="module")
def corpus_docs(pats):
    return {c: analyze_json(pats, [c]) for c in CASES}


def _steps(i, ms):
    return (f" [2026-05-18 10:00:{i:02d}.000000] iteration {i:8d}/      30 | consumed samples: {512 * i:12d} | "
            f"elapsed time per iteration (ms): {ms:.1f} | learning rate: 3.000000E-04 | global batch size:   512 |")


SYNTHETIC = {
    # a restarted job: two attempts, each with its own verdict
    "restart.log": "\n".join([
        "------------------------ arguments ------------------------",
        "  cuda_graph_scope ......... ['moe', 'moe_router']",
        "AssertionError: cuda_graph_scope must not contain both moe and moe_router.",
        "------------------------ arguments ------------------------",
        "  cuda_graph_scope ......... ['attn']",
        "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered"]) + "\n",
    # eager steps, a capture, then slower replay: before_vs_after_capture and an analyser finding
    "capture_slower.log": "\n".join(
        [_steps(i, 1000.0 + i % 3) for i in range(1, 7)]
        + ["INFO:megatron.core.transformer.cuda_graphs:Start CUDA Graphs capture..."]
        + [_steps(i, 9000.0 if i == 7 else 1100.0 + i % 3) for i in range(7, 31)]) + "\n",
}


@pytest.fixture(scope="module")
def extra_docs(pats, tmp_path_factory):
    d = tmp_path_factory.mktemp("schemas")
    for name, text in SYNTHETIC.items():
        (d / name).write_text(text)
    cfg = {"config_files": [os.path.join(CONFIGS, "bad_run_config.yaml")],
           "baseline_files": [os.path.join(CONFIGS, "good_run_config.yaml")],
           "env": ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]}
    flat = {"config_files": [os.path.join(CONFIGS, "bad_flat.yaml")],
            "baseline_files": [os.path.join(CONFIGS, "good_flat.json")]}
    base_log = {"baseline_logs": [os.path.join(STEPS, "qwen3_30b_eager.log")]}
    graphs = os.path.join(STEPS, "qwen3_30b_te_graphs.log")
    out = {
        "config+baseline": analyze_json(pats, [MULTIRANK], **cfg),
        "flat configs": analyze_json(pats, [MULTIRANK], **flat),
        "config only": analyze_json(pats, [MULTIRANK], config_files=cfg["config_files"]),
        "baseline log": analyze_json(pats, [graphs], **base_log),
        "restart": analyze_json(pats, [str(d / "restart.log")]),
        "capture slower": analyze_json(pats, [str(d / "capture_slower.log")]),
        # an unexplained failure with two graph settings changed: the bisect plan (issue 42)
        "bisect": analyze_json(pats, [os.path.join(REAL_OUTCOME, "uncaught_torch_error.log")],
                               config_files=[_bisect_bad(d)], baseline_files=[BRIDGE_GOOD]),
        # an unexplained failure against its last good log: novel_lines (issue 42)
        "novelty": analyze_json(pats, [os.path.join(REAL_OUTCOME, "uncaught_torch_error.log")],
                                baseline_logs=[os.path.join(REAL_OUTCOME, "caught_exception_continues.log")]),
    }
    # tighter size limits: the JSON of the tighter levels of report.LEVELS, down to the last one
    for limit in (20000, 8000, 3000, 500):
        out[f"config+baseline limit {limit}"] = analyze_json(pats, [MULTIRANK], limit=limit, **cfg)
        out[f"baseline log limit {limit}"] = analyze_json(pats, [graphs], limit=limit, **base_log)
    # the CLI itself, end to end
    out["cli"] = _run(["analyze", MULTIRANK, "--format", "json", "--config", cfg["config_files"][0],
                       "--baseline-config", cfg["baseline_files"][0]], codes=(1,))
    # with a verdict store that knows the pitfall (`known`), in a temporary SQLite file
    db = str(d / "verdicts.db")
    _run(["known", "add", "capture-memory-overhead", "https://tickets.example/TRAIN-1", "--db", db], json_out=False)
    out["known"] = _run(["analyze", MULTIRANK, "--format", "json", "--db", db], codes=(1,))
    assert out["known"]["known"]["seen"] == 1
    return out


# ---- the schema files themselves


@pytest.mark.parametrize("name", schemas.NAMES)
def test_schema_is_a_valid_draft_2020_12_schema(name):
    s = schemas.load(name)
    Draft202012Validator.check_schema(s)
    Draft202012Validator.check_schema(_strict(s))
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["$id"] == f"urn:triage:schema:{name}:1"
    assert s["title"] and "never" in s["description"] and "added" in s["description"]


def test_names_match_the_shipped_files():
    from importlib import resources
    shipped = sorted(p.name[:-len(".schema.json")] for p in resources.files("triage.schemas").iterdir()
                     if p.name.endswith(".schema.json"))
    assert shipped == sorted(schemas.NAMES)


def test_text_and_load_agree_and_unknown_name_is_a_clear_error():
    assert json.loads(schemas.text("analyze")) == schemas.load("analyze")
    a = schemas.load("analyze")
    a["title"] = "changed"
    assert schemas.load("analyze")["title"] != "changed"          # a fresh copy each time
    with pytest.raises(KeyError) as e:
        schemas.load("nope")
    assert "unknown schema 'nope'" in str(e.value) and "analyze" in str(e.value)
    with pytest.raises(ValueError):
        schemas.text("../analyze")


def test_shared_definitions_are_the_same_in_every_schema():
    a, c, d = (schemas.load(n)["$defs"] for n in ("analyze", "check-config", "diff"))
    assert c["violation"] == a["violation"] and c["pitfallId"] == a["pitfallId"]
    assert d["change"] == a["change"]


def test_cli_schema_command_prints_each_schema():
    if "schema" not in cli.commands:
        pytest.skip("`triage schema NAME` is not in triage/cli.py yet")
    for name in schemas.NAMES:
        r = CliRunner().invoke(cli, ["schema", name])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout) == schemas.load(name)
    r = CliRunner().invoke(cli, ["schema", "nope"])
    assert r.exit_code == 2 and "analyze" in r.output


def test_check_schema_rejects_a_broken_schema():
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "objekt"})


# ---- every output validates


@pytest.mark.parametrize("case", CASES, ids=[os.path.relpath(c, LOGS) for c in CASES])
def test_corpus_case_json_matches_analyze_schema(case, corpus_docs):
    assert_valid("analyze", corpus_docs[case])


def test_corpus_is_all_there(corpus_docs):
    assert len(corpus_docs) == len(CASES) >= 150
    outcomes = {d["outcome"] for d in corpus_docs.values()}
    assert outcomes == {"healthy", "pitfall", "unexplained-failure"}


def test_extra_analyze_outputs_match_schema(extra_docs):
    for name, doc in extra_docs.items():
        try:
            assert_valid("analyze", doc)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None


def test_validated_outputs_exercise_every_described_key(corpus_docs, extra_docs):
    """Each top-level key and step-time part the schema describes occurs in some validated output,
    so the schema is tested against what the code emits, not only against itself."""
    docs = list(corpus_docs.values()) + list(extra_docs.values())
    seen = {k for d in docs for k in d}
    assert set(schemas.load("analyze")["properties"]) <= seen
    steps = {k for d in docs for k in d.get("step_times", {})}
    assert {"current", "baseline", "run_vs_run", "before_vs_after_capture"} <= steps
    assert any(d.get("omitted") for d in docs)
    assert any(s["because"] for d in docs for s in d["suspects"])
    kinds = {d["first_failure"]["kind"] for d in docs if "first_failure" in d}
    assert len(kinds) >= 2
    assert any(f["matched_lines"] == 0 for d in docs for f in d["findings"])   # a finding of triage's own analysis
    assert any("known" in d for d in docs)


def test_tighter_limits_reach_the_last_level(pats):
    # limit 500 cannot be met: the last level (every list and string cut) is what is written
    doc = analyze_json(pats, [MULTIRANK], limit=500,
                       config_files=[os.path.join(CONFIGS, "bad_run_config.yaml")],
                       baseline_files=[os.path.join(CONFIGS, "good_run_config.yaml")])
    assert len(doc["findings"]) <= LEVELS[-1].findings and doc["omitted"]
    assert_valid("analyze", doc)


def _run(args, codes=(0, 1), json_out=True):
    """`triage ARGS` through click's runner (never the user's verdict store: TRIAGE_DB unset)."""
    r = CliRunner(env={"TRIAGE_DB": None}).invoke(cli, args)
    assert r.exit_code in codes, r.output[-2000:]
    return json.loads(r.stdout) if json_out else r.stdout


@pytest.mark.parametrize("config", CONFIG_FILES, ids=os.path.basename)
def test_check_config_json_matches_schema(config):
    assert_valid("check-config", _run(["check-config", config, "--format", "json"]))


def _logs_with_a_config():
    """Corpus logs that hold a config (Megatron-LM's arguments block, Bridge's Task Configuration)."""
    out = []
    for c in CASES:
        if os.path.isfile(c) and not c.endswith((".gz", ".bz2", ".xz", ".zst")):
            with open(c, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if "-- arguments --" in text or "Task Configuration" in text:
                out.append(c)
    return out


LOGS_WITH_CONFIG = _logs_with_a_config()


def test_check_config_json_of_overrides_env_and_logs_matches_schema():
    assert LOGS_WITH_CONFIG
    over = _run(["check-config", "cuda_graph_impl=local", "cuda_graph_scope=[attn,moe]", "--env", "NCCL_DEBUG=INFO",
                 "--format", "json"])
    assert over["violations"]            # a broken rule is described too
    docs = [over, _run(["check-config", os.path.join(CONFIGS, "good_run_config.yaml"),
                        "--set", "model.cuda_graph_impl=local", "--format", "json"])]
    docs += [_run(["check-config", log, "--format", "json"]) for log in LOGS_WITH_CONFIG]
    for d in docs:
        assert_valid("check-config", d)


@pytest.mark.parametrize("old,new", list(itertools.product(CONFIG_FILES, CONFIG_FILES)),
                         ids=[f"{os.path.basename(a)}->{os.path.basename(b)}"
                              for a, b in itertools.product(CONFIG_FILES, CONFIG_FILES)])
def test_diff_json_matches_schema(old, new):
    d = _run(["diff", old, new, "--format", "json"], codes=(0,) if old == new else (0, 1))
    assert_valid("diff", d)
    assert (d == []) == (old == new)


# ---- the schemas reject broken documents (so the tests above can fail)


def _good(corpus_docs):
    """A copy of a corpus document whose primary is a pitfall (so it has findings)."""
    return copy.deepcopy(next(d for d in corpus_docs.values() if d["findings"] and d["primary"]))


@pytest.mark.parametrize("breakage", [
    "role boss", "finding without pitfall", "outcome", "primary number", "rank string", "no summary",
    "severity", "fingerprint", "count zero", "findings not a list", "schema 2", "rank_counts key",
    "first_failure kind", "timeline role", "evidence_detail line", "omitted zero", "pitfall id case",
    "known since",
])
def test_analyze_schema_rejects_broken_documents(breakage, corpus_docs):
    d = _good(corpus_docs)
    f = d["findings"][0]
    if breakage == "role boss":
        f["role"] = "boss"
    elif breakage == "finding without pitfall":
        del f["pitfall"]
    elif breakage == "outcome":
        d["outcome"] = "broken"
    elif breakage == "primary number":
        d["primary"] = 3
    elif breakage == "rank string":
        f["rank"] = "3"
    elif breakage == "no summary":
        del d["summary"]
    elif breakage == "severity":
        f["severity"] = "fatal"
    elif breakage == "fingerprint":
        f["fingerprint"] = "xyz"
    elif breakage == "count zero":
        f["count"] = 0
    elif breakage == "findings not a list":
        d["findings"] = {"0": f}
    elif breakage == "schema 2":
        d["schema"] = 2
    elif breakage == "rank_counts key":
        f["rank_counts"] = {"rank0": 1}
    elif breakage == "first_failure kind":
        d["first_failure"] = {"rank": 0, "source": "x", "line": 1, "message": "m", "explained": False,
                              "kind": "exploded", "lines": []}
    elif breakage == "timeline role":
        d["timeline"] = [{"rank": 0, "t": None, "seq": 0, "pitfall": "cuda-oom", "role": "boss", "source": "x",
                          "line": 1}]
    elif breakage == "evidence_detail line":
        f["evidence_detail"][0]["line"] = "12"
    elif breakage == "omitted zero":
        d["omitted"] = {"findings": 0}
    elif breakage == "pitfall id case":
        f["pitfall"] = "CUDA_OOM"
    elif breakage == "known since":
        d["known"] = {"key": "cuda-oom", "url": "https://x", "title": None, "seen": 2, "since": "yesterday"}
    assert errors_of("analyze", d), breakage


def test_analyze_schema_rejects_a_broken_suspect(extra_docs):
    d = copy.deepcopy(extra_docs["config+baseline"])
    assert d["suspects"]
    del d["suspects"][0]["because"]
    assert errors_of("analyze", d)
    d = copy.deepcopy(extra_docs["config+baseline"])
    d["suspects"][0]["score"] = "high"
    assert errors_of("analyze", d)
    d = copy.deepcopy(extra_docs["config+baseline"])
    d["step_times"] = {"current": {"iterations": 3}}
    assert errors_of("analyze", d)


def test_extension_is_allowed_and_the_strict_variant_catches_undescribed_keys(corpus_docs):
    d = _good(corpus_docs)
    d["new_top_level_field"] = {"anything": [1, 2]}
    d["findings"][0]["new_finding_field"] = True
    assert not errors_of("analyze", d)                  # extend, never break
    assert list(STRICT["analyze"].iter_errors(d))      # ...but the tests insist it is described


def test_check_config_and_diff_schemas_reject_broken_documents():
    good = {"violations": [{"pitfall": "moe-scope-conflict", "keys": ["cuda_graph_scope"], "message": "m",
                            "fix": "f"}], "config": {"cuda_graph_scope": ["moe"]}}
    assert not errors_of("check-config", good)
    for broken in ({"violations": []},                                   # no config
                   {"config": {}},                                        # no violations
                   {"violations": [{"keys": [], "message": "m", "fix": "f"}], "config": {}},
                   {"violations": [{"pitfall": "x", "keys": "cuda_graph_scope", "message": "m", "fix": "f"}],
                    "config": {}},
                   {"violations": [], "config": []}):
        assert errors_of("check-config", broken), broken
    assert not errors_of("diff", [{"key": "lr", "old": 0.1, "new": None}])
    for broken in ({"key": "lr", "old": 1, "new": 2}, [{"key": "lr", "old": 1}], [{"old": 1, "new": 2}],
                   [{"key": 3, "old": 1, "new": 2}]):
        assert errors_of("diff", broken), broken
