import gzip
import json
import os
import subprocess
import sys

from click.testing import CliRunner

from triage.cli import cli

HERE = os.path.dirname(os.path.abspath(__file__))
SYN = os.path.join(HERE, "fixtures", "logs", "synthetic")
TE_RNG = ("[rank0]: AssertionError: Transformer engine's RNG tracker is required for cudagraphs, "
          "it can be enabled with use_te_rng_tracker=True'.\n")


def invoke(args, input=None):
    return CliRunner().invoke(cli, args, input=input)


def test_stdin_json_contract_and_exit_1():
    r = invoke(["analyze", "--format", "json"], input="hello\n" + TE_RNG)
    assert r.exit_code == 1, r.output
    d = json.loads(r.output)
    assert d["primary"] == "te-rng-tracker-missing"
    [f] = d["findings"]
    assert {k: f[k] for k in ("pitfall", "title", "severity", "role", "rank", "ranks", "source", "line", "count",
                              "evidence", "fingerprint", "rank_counts", "matched_lines")} == {
        "pitfall": "te-rng-tracker-missing", "title": "Transformer Engine RNG tracker not enabled with CUDA graphs",
        "severity": "error", "role": "root-cause", "rank": 0, "ranks": "0", "source": "<stdin>", "line": 2,
        "count": 1, "evidence": [TE_RNG[len("[rank0]: "):].rstrip("\n")], "fingerprint": "89707d6cd6e4",
        "rank_counts": {"0": 1}, "matched_lines": 1}
    assert d["suspects"] == [] and d["unmatched"] == []


def test_exit_zero_flag():
    assert invoke(["analyze", "--exit-zero"], input=TE_RNG).exit_code == 0


def test_healthy_log_exit_0_and_null_primary():
    r = invoke(["analyze", os.path.join(SYN, "healthy_megatron_te_graphs.log"), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["primary"] is None


def test_text_output_names_pitfall_fix_and_rule():
    r = invoke(["analyze", "-"], input=TE_RNG)
    assert "PRIMARY  te-rng-tracker-missing" in r.output
    assert "fix: " in r.output and "pattern: te-rng-tracker-missing.yaml" in r.output


def test_multiple_files_and_gz(tmp_path):
    p = tmp_path / "rank_4.log.gz"
    with gzip.open(p, "wt") as f:
        f.write(TE_RNG.replace("[rank0]: ", ""))
    r = invoke(["analyze", str(p), os.path.join(SYN, "healthy_megatron_te_graphs.log"), "--format", "json"])
    d = json.loads(r.output)
    assert d["primary"] == "te-rng-tracker-missing" and d["findings"][0]["rank"] == 4


def test_missing_file_is_one_line_exit_2():
    r = invoke(["analyze", "/nonexistent/job.log"])
    assert r.exit_code == 2
    assert r.output.strip().count("\n") == 0 and "no such file" in r.output
    assert "Traceback" not in r.output


def test_bad_user_pattern_dir_is_clear_error(tmp_path):
    (tmp_path / "mine.yaml").write_text("id: my-thing\ntitle: t\nseverity: bogus\nkind: runtime\n")
    r = invoke(["analyze", "--patterns", str(tmp_path)], input="x\n")
    assert r.exit_code == 2 and "severity must be one of" in r.output


def test_user_pattern_dir_adds_a_pattern(tmp_path):
    (tmp_path / "my-thing.yaml").write_text(
        "id: my-thing\ntitle: My thing\nseverity: error\nkind: runtime\n"
        "match:\n  - regex: 'widget exploded'\n    literal: widget\n"
        "explanation: e\nfix: f\nreferences: [{source: ours}]\n"
        "examples: {match: ['widget exploded'], no_match: ['widget ok']}\n")
    r = invoke(["analyze", "--patterns", str(tmp_path), "--format", "json"], input="the widget exploded\n")
    assert json.loads(r.output)["primary"] == "my-thing"
    assert invoke(["patterns", "check", str(tmp_path)]).exit_code == 0


def test_installed_entry_point_runs_as_module():
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", "--format", "json"], input=TE_RNG,
                       capture_output=True, text=True)
    assert r.returncode == 1 and json.loads(r.stdout)["primary"] == "te-rng-tracker-missing"


def test_patterns_suggest_drafts_a_loadable_pattern_that_matches(tmp_path):
    log = os.path.join(SYN, "unrelated_dataset_error.log")
    out = tmp_path / "draft.yaml"
    r = invoke(["patterns", "suggest", log, "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "TODO-pitfall-id" in text and "No such file or directory" in text
    # a draft with its TODO placeholders fails the check, every placeholder named
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "dataset-missing.yaml").write_text(text)
    r = invoke(["patterns", "check", str(tmp_path / "d")])
    assert r.exit_code == 1 and "TODO placeholders left in id, explanation, fix" in r.output
    # a human finishes it: an id, a real near-miss, the why and the fix, the source; then it passes
    import yaml
    d = yaml.safe_load(text)
    d.update(id="dataset-missing", explanation="the dataset index is not where the config says",
             fix="point data_path at the prefix of the .bin/.idx pair",
             references=[{"source": "megatron/core/datasets/indexed_dataset.py", "version": "core_v0.19.0"}])
    d["examples"]["no_match"] = ["opened /data/x.idx"]
    d.pop("note", None)
    (tmp_path / "d" / "dataset-missing.yaml").write_text(yaml.safe_dump(d))
    r = invoke(["patterns", "check", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    r2 = invoke(["analyze", log, "--patterns", str(tmp_path / "d"), "--format", "json"])
    assert json.loads(r2.output)["primary"] == "dataset-missing"
    # never overwrites
    r3 = invoke(["patterns", "suggest", log, "-o", str(out)])
    assert r3.exit_code == 2 and "not overwriting" in r3.output


def test_gzip_on_stdin():
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", "--format", "json"],
                       input=gzip.compress(TE_RNG.encode()), capture_output=True)
    assert r.returncode == 1 and json.loads(r.stdout)["primary"] == "te-rng-tracker-missing"


def test_restart_in_rank0_file_splits_other_ranks_by_time(tmp_path):
    banner = "------------------------ arguments ------------------------"
    (tmp_path / "rank_0.log").write_text(
        f"[2026-12-03 10:00:00] x\n{banner}\n[2026-12-03 11:00:00] restarted\n{banner}\n[2026-12-03 11:20:00] ok\n")
    (tmp_path / "rank_1.log").write_text(
        "[2026-12-03 10:30:00] RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[2026-12-03 11:10:00] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    d = json.loads(invoke(["analyze", str(tmp_path), "--format", "json"]).output)
    assert d["stats"]["attempts"] == 2
    assert d["primary"] == "cuda-oom" and d["first_failing_rank"] == 1
    assert d["attempts"][0]["primary"] == "illegal-memory-access"


def test_unexplained_crash_before_timeouts_is_named_first(tmp_path):
    log = os.path.join(SYN, "multirank", "unexplained_crash_then_timeouts.log")
    r = invoke(["analyze", log, "--format", "json"])
    d = json.loads(r.output)
    # the timeouts are known patterns, the crash that caused them is not: an unexplained failure
    assert r.exit_code == 3 and d["outcome"] == "unexplained-failure"
    assert d["primary"] is None and d["first_failing_rank"] == 5
    assert d["summary"].startswith("rank 5 failed first with an error no pattern explains (KeyError")
    assert all(f["role"] == "cascade" for f in d["findings"])
    assert d["first_failure"]["message"] == "KeyError: 'input_ids'" and d["first_failure"]["kind"] == "uncaught-exception"
    assert d["first_failure"]["lines"][0] == "Traceback (most recent call last):"


REAL = os.path.join(HERE, "fixtures", "logs", "real")


def _summary_of(text):
    return json.loads(invoke(["analyze", "--format", "json"], input=text).output)


def test_quoted_paste_keeps_ranks_and_tracebacks():
    with open(os.path.join(REAL, "torchrun-cpu", "two_ranks_mcore_assert.log")) as f:
        log = f.read()
    d = _summary_of("".join("> " + ln for ln in log.splitlines(True)))
    assert d["primary"] == "moe-scope-conflict" and d["first_failing_rank"] == 1


def test_truncated_torchrun_paste_names_the_launcher_rank():
    with open(os.path.join(REAL, "torchrun-cpu", "two_ranks_mcore_assert.log")) as f:
        tail = "".join(f.readlines()[-30:])
    d = _summary_of(tail)
    assert d["primary"] is None and d["first_failing_rank"] == 1 and "reports rank 1" in d["summary"]
    assert d["outcome"] == "unexplained-failure"


def test_hang_names_the_silent_rank():
    d = json.loads(invoke(["analyze", os.path.join(REAL, "gpu", "nccl_rank_hang_timeout.log"), "--format", "json"]).output)
    assert d["primary"] == "nccl-watchdog-timeout"
    assert "rank 1 logged no error and never joined it" in d["summary"]


def test_flags_quoted_in_an_error_message_are_not_config():
    log = os.path.join(REAL, "mcore-0.19.2", "args_full_iteration_nan_check.log")
    r = invoke(["check-config", log])
    assert r.exit_code == 2 and "found no configuration" in r.output


def test_plain_oom_with_graphs_on_gets_a_note():
    cfg = os.path.join(HERE, "fixtures", "configs", "good_run_config.yaml")
    d = json.loads(invoke(["analyze", os.path.join(REAL, "gpu", "oom_plain.log"), "--config", cfg,
                           "--format", "json"]).output)
    assert d["primary"] == "cuda-oom"
    assert any("graph memory pools may be what filled the GPU" in n for n in d["notes"])
    d = json.loads(invoke(["analyze", os.path.join(REAL, "gpu", "oom_plain.log"), "--format", "json"]).output)
    assert not d.get("notes")


def test_json_added_fields_and_nothing_omitted_for_a_small_log():
    d = json.loads(invoke(["analyze", os.path.join(SYN, "multirank_ima_cascade.log"), "--format", "json"]).output)
    assert "omitted" not in d
    ima, wd = d["findings"]
    # rank 5's crash prints two matching lines (one occurrence; its `Search for 'cudaErrorIllegalAddress'`
    # hint is no evidence since issue 40); seven ranks then time out once each
    assert (ima["count"], ima["matched_lines"], ima["rank_counts"]) == (1, 2, {"5": 2})
    assert (wd["count"], wd["matched_lines"]) == (7, 7)
    assert wd["rank_counts"] == {str(r): 1 for r in range(8) if r != 5}
