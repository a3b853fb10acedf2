"""Issue 45: what a new user still trips on, each bullet run as a user would (`python -m triage ...`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def triage(*args: str, cwd: str | None = None, timeout: float = 120, stdin: str | None = None
           ) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env, input=stdin)


# -- check-config: an absent boolean setting is its release's default, on both sides ---------------

BRIDGE = """\
model:
  cuda_graph_impl: local
  cuda_graph_scope: [full_iteration]
  transformer_impl: transformer_engine
rerun_state_machine:
  rerun_mode: disabled
checkpoint:
  save_interval: 100
"""


def test_check_config_absent_truthy_key_is_its_release_default(tmp_path):
    cfg = tmp_path / "run_config.yaml"
    cfg.write_text(BRIDGE)            # hand-written (synthetic): no check_for_nan_in_loss, no use_te_rng_tracker
    r = triage("check-config", str(cfg))
    assert r.returncode == 1, r.stdout + r.stderr
    # truthy side: Bridge's RerunStateMachineConfig.check_for_nan_in_loss defaults to True (defaults.yaml)
    assert "full-iteration-nan-check" in r.stdout
    assert "check_for_nan_in_loss unset: defaults to True in Megatron Bridge 0.3-0.6" in r.stdout
    # falsy side: the same table, said the same way
    assert "use_te_rng_tracker unset: defaults to False in megatron-core 0.14-0.19" in r.stdout
    d = json.loads(triage("check-config", str(cfg), "--format", "json").stdout)
    notes = {v["pitfall"]: v["defaults"] for v in d["violations"]}
    assert notes["full-iteration-nan-check"] == ["check_for_nan_in_loss unset: defaults to True in Megatron "
                                                 "Bridge 0.3-0.6"]
    md = triage("check-config", str(cfg), "--format", "markdown").stdout
    assert "`check_for_nan_in_loss` = `(unset: defaults to True in Megatron Bridge 0.3-0.6)`" in md


def test_check_config_given_key_is_no_default_and_given_release_is_named(tmp_path):
    cfg = tmp_path / "run_config.yaml"
    cfg.write_text(BRIDGE.replace("  rerun_mode: disabled", "  check_for_nan_in_loss: false"))
    d = json.loads(triage("check-config", str(cfg), "model.use_te_rng_tracker=true", "--format", "json").stdout)
    assert d["violations"] == []
    r = triage("check-config", str(cfg), "model.mcore_version=0.16.1")
    assert "use_te_rng_tracker unset: defaults to False in megatron-core 0.16.1" in r.stdout


def test_check_config_absent_key_of_an_unknown_release_is_undecided(tmp_path):
    cfg = tmp_path / "run_config.yaml"
    cfg.write_text(BRIDGE.replace("  rerun_mode: disabled", "  check_for_nan_in_loss: false"))
    r = triage("check-config", str(cfg), "model.mcore_version=0.9.0")   # no defaults known for 0.9
    assert "te-rng-tracker-missing" not in r.stdout.split("undecided:")[0]
    assert "undecided:" in r.stdout and "use_te_rng_tracker" in r.stdout.split("undecided:")[1]
    d = json.loads(triage("check-config", str(cfg), "model.mcore_version=0.9.0", "--format", "json").stdout)
    assert any(u["pitfall"] == "te-rng-tracker-missing" for u in d["undecided"])
    assert not any(v["pitfall"] == "te-rng-tracker-missing" for v in d["violations"])


# -- blame: one change, one row, named as the user wrote it -----------------------------------------

GRAPHED = "model:\n  cuda_graph_impl: local\n  use_te_rng_tracker: true\n  cuda_graph_scope: [attn]\n"
# PyTorch's message (c10/cuda/CUDAException.cpp, torch 2.x), as a rank prints it
IMA = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def test_blame_lists_the_allocator_setting_once_as_written(tmp_path):
    (tmp_path / "good.yaml").write_text(GRAPHED)
    (tmp_path / "bad.yaml").write_text(GRAPHED)
    (tmp_path / "job.log").write_text(IMA)
    args = ("analyze", "job.log", "--baseline-config", "good.yaml", "--config", "bad.yaml",
            "--env", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    text = triage(*args, cwd=str(tmp_path)).stdout
    block = text.split("CONFIG CHANGES", 1)[1].split("\n\n", 1)[0]
    rows = [ln for ln in block.splitlines()[1:] if ln.strip()]
    assert len(rows) == 1, block
    assert rows[0].lstrip().startswith(">>") and "env.PYTORCH_CUDA_ALLOC_CONF: (unset) -> expandable_segments:True" \
        in rows[0] and "nccl-graph-register-expandable" in rows[0]
    assert "expandable_segments: (unset)" not in text and "(unrelated)" not in block
    d = json.loads(triage(*args, "--format", "json", cwd=str(tmp_path)).stdout)
    assert [s["key"] for s in d["suspects"]] == ["env.PYTORCH_CUDA_ALLOC_CONF"]
    assert d["suspects"][0]["score"] == 2.0 and not d["suspects"][0]["unrelated"]


# -- config errors: file:line:col; TOML read; one naming rule for fleet jobs -------------------------

def test_broken_yaml_names_line_and_column(tmp_path):
    (tmp_path / "run_config.yaml").write_text("model:\n  cuda_graph_scope: [attn, mlp\n  cuda_graph_impl: local\n")
    r = triage("check-config", "run_config.yaml", cwd=str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("triage: error: run_config.yaml:3:18: not valid YAML: did not find expected ',' or "
                               "']'"), r.stderr
    assert "(while parsing a flow sequence started at line 2, column 21)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    (tmp_path / "c.json").write_text('{"model": {"cuda_graph_impl": "local",,}}')
    r = triage("check-config", "c.json", cwd=str(tmp_path))
    assert r.returncode == 2 and "c.json:1:39: not valid JSON: " in r.stderr


def test_toml_config_is_read(tmp_path):
    (tmp_path / "run.toml").write_text('[model]\ncuda_graph_impl = "local"\ncuda_graph_scope = ["attn"]\n'
                                       'use_te_rng_tracker = true\n')
    d = json.loads(triage("check-config", "run.toml", "--format", "json", cwd=str(tmp_path)).stdout)
    assert d["config"]["cuda_graph_impl"] == "local" and d["config"]["cuda_graph_scope"] == ["attn"]
    (tmp_path / "bad.toml").write_text('[model\ncuda_graph_impl = "local"\n')
    r = triage("check-config", "bad.toml", cwd=str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("triage: error: bad.toml:1:7: not valid TOML: ")
    assert "found no configuration" not in r.stderr


def test_fleet_names_file_and_directory_jobs_by_one_rule(tmp_path):
    logs = tmp_path / "logs"
    (logs / "job8").mkdir(parents=True)
    (logs / "job9").mkdir()
    (logs / "slurm-123.out").write_text(IMA)
    (logs / "job8" / "slurm-77-0.out").write_text(IMA)     # a per-task directory: Slurm's slurm-%j-%t.out
    (logs / "job8" / "slurm-77-1.out").write_text(IMA)
    (logs / "job9" / "rank0.log").write_text(IMA)          # no scheduler id in any name: the path
    (logs / "other.log").write_text(IMA)
    d = json.loads(triage("fleet", "run", "--jobs-in", str(logs), "--format", "json", cwd=str(tmp_path)).stdout)
    ids = sorted(j for g in d["groups"] for j in g["jobs"])
    assert ids == sorted(["123", "77", str(logs / "job9"), str(logs / "other.log")]), ids


# -- signals: one convention for every command (issue 45, issue 46's SIGTERM) ---------------------

def _start(*args: str, cwd: str, stdin: bool = False) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), NO_COLOR="1")
    return subprocess.Popen([sys.executable, "-m", "triage", *args], cwd=cwd, env=env, text=True,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("sig,code,line", [(signal.SIGINT, 130, "triage: interrupted\n"),
                                           (signal.SIGTERM, 143, "triage: interrupted (SIGTERM)\n")])
def test_analyze_interrupted_exits_by_the_signal_with_a_line(tmp_path, sig, code, line):
    p = _start("analyze", "-", cwd=str(tmp_path), stdin=True)
    assert p.stdin is not None
    p.stdin.write(IMA)
    p.stdin.flush()                    # stdin stays open: analyze is reading it when the signal comes
    time.sleep(1.5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert (p.returncode, out, err) == (code, "", line)


@pytest.mark.parametrize("sig,code,reason,line", [
    (signal.SIGINT, 130, "interrupted", "triage: interrupted\n"),
    (signal.SIGTERM, 143, "interrupted", "triage: interrupted (SIGTERM)\n"),
    (signal.SIGUSR1, 1, "stopped", ""),          # watch's own stop: the verdict's exit code
])
def test_watch_stops_by_one_convention(tmp_path, sig, code, reason, line):
    log = tmp_path / "train.log"
    log.write_text(IMA)
    p = _start("watch", str(log), "--format", "jsonl", "--idle", "120", "--poll", "0.1", cwd=str(tmp_path))
    assert p.stdout is not None
    first = p.stdout.readline()        # the root-cause event: watch is running
    assert json.loads(first)["event"] == "root-cause"
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    ended = json.loads(out.strip().splitlines()[-1])
    assert ended["event"] == "ended" and ended["reason"] == reason and ended["outcome"] == "pitfall"
    assert (p.returncode, err) == (code, line)


# -- watch before any line: waiting, never healthy --------------------------------------------------

@pytest.mark.parametrize("make,missing", [("empty", False), ("missing", True)])
def test_watch_says_waiting_never_healthy_before_a_line(tmp_path, make, missing):
    log = tmp_path / "train.log"
    if make == "empty":
        log.write_text("")
    given = str(tmp_path / ("train.lgo" if missing else "train.log"))   # a misspelled name, train.log beside it
    if missing:
        log.write_text(IMA)
    p = _start("watch", given, "--format", "jsonl", "--heartbeat", "0.5", "--idle", "3", "--poll", "0.1",
               cwd=str(tmp_path))
    out, err = p.communicate(timeout=60)
    events = [json.loads(x) for x in out.splitlines()]
    kinds = [e["event"] for e in events]
    assert "healthy-progress" not in kinds and kinds.count("waiting") >= 2 and kinds[-1] == "ended", kinds
    assert events[-1]["reason"] == "idle" and events[-1]["summary"] == "nothing was logged"
    w = next(e for e in events if e["event"] == "waiting")
    assert w["missing"] == ([given] if missing else []) and w["lines"] == 0
    if missing:
        assert err == (f"triage: watch: waiting for {given!r} to appear (no such file yet); did you mean "
                       f"{str(log)!r}?\n")
    else:
        assert err == ""
    text = _start("watch", given, "--heartbeat", "0.5", "--idle", "2", "--poll", "0.1", cwd=str(tmp_path))
    tout, _ = text.communicate(timeout=60)
    first = tout.splitlines()[0]
    assert first == (f"triage watch: waiting for {given!r} to appear" if missing else
                     "triage watch: nothing logged yet"), tout
    assert "healthy" not in tout


def test_watch_is_healthy_once_lines_were_read(tmp_path):
    log = tmp_path / "train.log"
    # Megatron-LM's training_log line (megatron/training/training.py), one step
    log.write_text(" [2026-12-03 10:00:00] iteration        1/     100 | consumed samples:          8 | "
                   "elapsed time per iteration (ms): 1200.5 | learning rate: 1.000000E-04 | global batch size:     8 |"
                   " lm loss: 1.050000E+01 |\n")
    p = _start("watch", str(log), "--format", "jsonl", "--heartbeat", "0.5", "--idle", "2", "--poll", "0.1",
               cwd=str(tmp_path))
    out, _ = p.communicate(timeout=60)
    kinds = [json.loads(x)["event"] for x in out.splitlines()]
    assert "healthy-progress" in kinds and "waiting" not in kinds, kinds


# -- help texts: one meaning per word, walked over every command -----------------------------------

def _commands():
    import click

    from triage.cli import cli
    out = []

    def walk(cmd, path):
        out.append((path, cmd))
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, path + [name])
    walk(cli, [])
    return out


def _option_words(text: str) -> set:
    import re
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+|-[a-zA-Z])(?![\w-])", text))


def test_every_help_holds_together():
    import click
    seen_fail_on, seen_j = [], []
    for path, cmd in _commands():
        r = triage(*path, "--help")
        assert r.returncode == 0 and r.stderr == "", (path, r.stderr)
        text = r.stdout
        body, _, options = text.partition("\nOptions:")
        shown = _option_words(options)
        # every option an example of the command's help uses is an option its help lists
        examples = body.split("Examples:", 1)[1] if "Examples:" in body else \
            body.split("Example:", 1)[1] if "Example:" in body else ""
        for line in examples.splitlines():
            line = line.split("#", 1)[0]
            if "triage " not in line:
                continue
            used = {w for w in _option_words(line.split("triage ", 1)[1]) if w not in ("-h",)}
            names = line.split("triage ", 1)[1].split()
            sub = [n for n in names if not n.startswith("-")][:len(path) + 1]
            if sub[:len(path)] != path or (isinstance(cmd, click.Group) and len(sub) > len(path)
                                           and sub[len(path)] in cmd.commands):
                continue           # an example of another command (a subcommand's): its own help says
            assert used <= shown, (path, line, used - shown)
        for p in cmd.params:
            if not isinstance(p, click.Option) or p.hidden:
                continue
            if "--fail-on" in p.opts:
                seen_fail_on.append((path, tuple(p.type.choices)))
            if "-j" in p.opts:
                seen_j.append((path, tuple(p.opts)))
                assert "Worker processes" in (p.help or ""), path
        assert "the analysis's own" not in text or path == ["analyze"], path
    assert seen_fail_on and all(c == ("error", "warning", "never") for _, c in seen_fail_on), seen_fail_on
    assert len(seen_j) >= 3 and all(o == ("-j", "--workers") for _, o in seen_j), seen_j


def test_top_level_help_names_every_stack_the_catalog_ships():
    text = triage("--help").stdout
    import glob

    import yaml
    engines = set()
    for f in glob.glob(os.path.join(ROOT, "patterns", "*.yaml")):
        engines |= set((yaml.safe_load(open(f)) or {}).get("advice", {}) or {})
    names = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "jax": "JAX", "megatron": "Megatron-LM",
             "pytorch": "PyTorch"}
    assert engines, "no per-engine advice found"
    for e in engines:
        assert names[e] in " ".join(text.split()), e


def test_fleet_help_shows_the_options_its_examples_use():
    text = triage("fleet", "--help").stdout
    assert "--jobs-in" in text and "-j, --workers N" in text and "--fail-when" in text


def test_old_spellings_still_work_with_one_deprecation_line(tmp_path):
    (tmp_path / "job.log").write_text(IMA)
    r = triage("analyze", "job.log", "--jobs", "1", "-q", cwd=str(tmp_path))
    assert r.returncode == 1 and r.stderr == ("triage: warning: --jobs is deprecated: use -j/--workers (same "
                                              "meaning); --jobs will be removed\n")
    r = triage("fleet", "run", "job.log", "--no-store", "--fail-on", "unexplained", "--jobs", "1", "-q",
               cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("is deprecated") == 2 and "use --fail-when" in r.stderr
    req = triage("fleet", "run", "--help").stdout
    assert "the view's own" in " ".join(req.split()) and "the analysis's own" not in " ".join(req.split())


def test_patterns_check_of_one_file_counts_one_file(tmp_path):
    (tmp_path / "u.log").write_text('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
                                    "FooError: the frobnicator failed on device 3\n")
    assert triage("patterns", "suggest", "u.log", "-o", "draft.yaml", cwd=str(tmp_path)).returncode == 0
    r = triage("patterns", "check", "draft.yaml", cwd=str(tmp_path))
    assert r.returncode == 1 and r.stdout.startswith("1 pattern file(s), 2 problem(s)"), r.stdout


# -- reports quote the upstream source, never our notes ---------------------------------------------

NOTES = ("tests/fixtures", "fixtures/", "gen/gpu", "H200 run", "(read in the installed wheel)", "nm -DC",
         "kept in tests", "real log:", "shared/domain", ".tsv")


def _pattern_files():
    import glob

    import yaml
    for f in sorted(glob.glob(os.path.join(ROOT, "patterns", "*.yaml"))):
        d = yaml.safe_load(open(f, encoding="utf-8"))
        yield os.path.basename(f), d


def test_no_pattern_reference_shows_our_notes():
    provenance = 0
    for name, d in _pattern_files():
        for r in d.get("references") or []:
            for k in ("source", "version", "url"):
                assert not any(n in str(r.get(k, "")) for n in NOTES), (name, k, r.get(k))
            provenance += "provenance" in r
    assert provenance >= 40          # the notes moved there (kept in the pattern file), not dropped


@pytest.mark.parametrize("fmt", ["text", "html", "markdown", "jira", "json", "junit"])
def test_every_patterns_report_quotes_upstream_not_our_notes(tmp_path, fmt):
    from triage.patterns import load_file
    from inproc import run as run_inproc
    shown = links = 0
    for name, d in _pattern_files():
        ex = ((d.get("examples") or {}).get("match") or [])
        if not ex:
            continue
        log = tmp_path / f"{name}.log"
        log.write_text(ex[0] + "\n")
        r = run_inproc(["analyze", str(log), "--format", fmt])
        assert r.returncode in (0, 1, 3), (name, r.stderr)
        notes = [str(x.get("provenance")) for x in d.get("references") or [] if x.get("provenance")]
        for n in NOTES + tuple(notes):
            assert n not in r.stdout, (name, fmt, n)
        links += fmt == "html" and 'href="https://github.com/NVIDIA' in r.stdout
        p = load_file(os.path.join(ROOT, "patterns", name))
        if p.references and fmt in ("html", "json"):
            first = p.references[0]["source"][:40]
            shown += first in r.stdout or first.replace("'", "&#39;").replace('"', "&#34;") in r.stdout
    if fmt in ("html", "json"):
        assert shown >= 20, shown     # the upstream source is what the reports show
    if fmt == "html":
        assert links >= 15, links     # with a link to the upstream file at its release, where there is one


# -- several jobs given as one; triage's own reports are never logs -------------------------------

# Megatron-LM's training_log line (megatron/training/training.py) with its timestamp, and PyTorch's
# CUDA errors, as two unrelated jobs 470 days apart print them (synthetic: the lines are real wordings)
OLD_JOB = (" [2025-08-20 10:00:00] iteration        1/     100 | consumed samples:          8 | elapsed time per "
           "iteration (ms): 1200.5 | lm loss: 1.050000E+01 |\n"
           "[2025-08-20 10:00:05] [rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
NEW_JOB = (" [2026-12-03 10:00:00] iteration        1/     100 | consumed samples:          8 | elapsed time per "
           "iteration (ms): 1200.5 | lm loss: 1.050000E+01 |\n"
           "[2026-12-03 10:01:00] [rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
           "GPU 0 has a total capacity of 79.11 GiB of which 1.00 GiB is free.\n")


def _folder(tmp_path, name, **files):
    """tmp_path/NAME holding FILES ({file name: text})."""
    d = tmp_path / name
    d.mkdir()
    for f, text in files.items():
        (d / f).write_text(text)
    return d


def test_inputs_of_several_jobs_are_warned_with_the_fleet_command(tmp_path):
    d = _folder(tmp_path, "logs", **{"old.log": OLD_JOB, "new.log": NEW_JOB})
    r = triage("analyze", "logs", cwd=str(tmp_path))
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("triage: warning: ")]
    assert len(warn) == 1 and "several jobs" in warn[0] and "470 days apart" in warn[0]
    assert "`triage fleet run --jobs-in logs`" in warn[0]
    assert "note: the inputs look like several jobs" in r.stdout
    d_json = json.loads(triage("analyze", "logs", "--format", "json", cwd=str(tmp_path)).stdout)
    sj = d_json["job"]["several_jobs"]
    assert sj["time_ranges"] == 2 and sj["largest_gap_days"] == 470.0 and sj["fleet"] == "triage fleet run --jobs-in logs"
    # one job's logs (ranks at the same time, a restart an hour later) are no warning
    (d / "old.log").write_text(NEW_JOB.replace("10:00:00", "11:00:00").replace("10:01:00", "11:30:00"))
    r = triage("analyze", "logs", cwd=str(tmp_path))
    assert "several jobs" not in r.stderr + r.stdout


def test_triage_reports_are_never_read_as_logs(tmp_path):
    d = _folder(tmp_path, "out", **{"job.log": NEW_JOB})
    (tmp_path / "ima.log").write_text(IMA)
    for fmt, name in [("text", "noext"), ("json", "r.json.log"), ("markdown", "r.md.txt"), ("junit", "r.xml.log"),
                      ("jira", "r.jira.txt"), ("html", "r.html.log")]:
        r = triage("analyze", "ima.log", "--format", fmt, cwd=str(tmp_path))
        (d / name).write_text(r.stdout)        # an earlier report, saved beside the logs
    r = triage("analyze", "out", "--format", "json", cwd=str(tmp_path))
    a = json.loads(r.stdout)
    assert a["primary"] == "cuda-oom" and a["stats"]["sources"] == ["out/job.log"], a["stats"]
    skipped = [n for n in a["notes"] if n.startswith("skipped ") and "a triage " in n]
    assert len(skipped) == 6, a["notes"]
    assert "illegal" not in json.dumps(a["findings"]) and "illegal-memory-access" not in r.stdout.split('"notes"')[0]
    piped = triage("analyze", stdin=(d / "r.json.log").read_text(), cwd=str(tmp_path))
    assert piped.returncode == 2 and piped.stderr.startswith("triage: error: <stdin> is a triage json report, not a log")
    one = triage("analyze", "out/noext", cwd=str(tmp_path))
    assert one.returncode == 2 and one.stderr == ("triage: error: 'out/noext' is a triage text report, not a log "
                                                  "(triage never reads its own output): no log left to triage; "
                                                  "give the job's log\n")


def test_fleet_skips_triage_reports_in_jobs_in(tmp_path):
    d = _folder(tmp_path, "jobs", **{"slurm-1.out": IMA})
    (tmp_path / "ima.log").write_text(IMA)
    (d / "report").write_text(triage("analyze", "ima.log", cwd=str(tmp_path)).stdout)
    (d / "report.json.log").write_text(triage("analyze", "ima.log", "--format", "json", cwd=str(tmp_path)).stdout)
    r = triage("fleet", "run", "--jobs-in", "jobs", "--no-store", "--format", "json", cwd=str(tmp_path))
    v = json.loads(r.stdout)
    assert v["jobs"] == 1 and not v.get("errors"), v
    assert r.stderr == ("triage: note: skipped 2 triage report(s) in --jobs-in, not logs: 'jobs/report', "
                        "'jobs/report.json.log'\n")


# -- README: set-up and a one-screen quick start on top, the reference in docs/ --------------------

def test_readme_is_setup_quick_start_and_links():
    import glob
    import re
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    lines = text.splitlines()
    assert "    pip install . && triage analyze examples/sample_job.log" in lines
    assert "    pip install '.[test]' && python -m pytest -q -n auto" in lines
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert len(quick.strip().splitlines()) <= 25                 # one screen
    assert text.index("## Set up on a fresh machine") < text.index("## Quick start") < text.index("## Documentation")
    assert len(lines) <= 120 and "85 s" not in text and "248 s" in text
    # the reference moved, not lost: each page holds its part
    for page, holds in [("configs.md", "## Config sources"), ("outcomes.md", "Exit codes (the JSON's `outcome`"),
                        ("fleet.md", "triage fleet run"), ("watch.md", "SIGUSR1"), ("usage.md", "triage check-config"),
                        ("contributing.md", "## Tests and fixtures"), ("how-it-works.md", "frozen value")]:
        assert holds in open(os.path.join(ROOT, "docs", page), encoding="utf-8").read(), page
        assert f"(docs/{page})" in text, page
    for f in [os.path.join(ROOT, "README.md")] + glob.glob(os.path.join(ROOT, "docs", "*.md")):
        for m in re.finditer(r"\]\(([^)#]+)(?:#[^)]*)?\)", open(f, encoding="utf-8").read()):
            if not m.group(1).startswith(("http://", "https://", "mailto:")):
                assert os.path.exists(os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))), (f, m.group(1))


def test_inputs_naming_two_slurm_jobs_are_warned(tmp_path):
    # an environment dump's SLURM_JOB_ID and slurmstepd's cancel line (Slurm's wording), two different jobs
    d = _folder(tmp_path, "logs", **{"a.log": "SLURM_JOB_ID=4242\n" + IMA,
                                     "b.log": "slurmstepd: error: *** JOB 5151 ON node-3 CANCELLED AT "
                                              "2026-12-03T10:00:00 DUE TO TIME LIMIT ***\n"})
    r = triage("analyze", "logs", "--format", "json", cwd=str(tmp_path))
    sj = json.loads(r.stdout)["job"]["several_jobs"]
    assert sj["job_ids"] == ["4242", "5151"] and "2 Slurm job ids (4242, 5151)" in r.stderr
    (d / "b.log").write_text("slurmstepd: error: *** STEP 4242.0 ON node-3 CANCELLED AT 2026-12-03T10:00:00 ***\n")
    r = triage("analyze", "logs", "--format", "json", cwd=str(tmp_path))
    assert "several_jobs" not in json.loads(r.stdout)["job"] and "several jobs" not in r.stderr


def test_inputs_starting_different_scripts_are_warned(tmp_path):
    """Restarts of different commands: each input's first echoed launch line (bash -x's `+ torchrun ...`,
    the shape Megatron-LM's and Bridge's launch scripts print) starts another script: two jobs.  Ranks
    of one job that each echo the same command are one job."""
    d = _folder(tmp_path, "logs", **{
        "a.log": "+ torchrun --nproc-per-node 8 pretrain_gpt.py --cuda-graph-impl local\n" + IMA,
        "b.log": "+ torchrun --nproc-per-node 8 /workspace/Megatron-Bridge/scripts/run_recipe.py "
                 "--recipe llama3_8b model.cuda_graph_impl=transformer_engine\n[rank0]: hello\n"})
    r = triage("analyze", "logs", "--format", "json", cwd=str(tmp_path))
    sj = json.loads(r.stdout)["job"]["several_jobs"]
    assert sj["scripts"] == ["pretrain_gpt.py", "run_recipe.py"]
    assert "2 different scripts (pretrain_gpt.py, run_recipe.py)" in r.stderr
    (d / "b.log").write_text("+ torchrun --nproc-per-node 8 pretrain_gpt.py --cuda-graph-impl local\n[rank1]: hi\n")
    r = triage("analyze", "logs", "--format", "json", cwd=str(tmp_path))
    assert "several_jobs" not in json.loads(r.stdout)["job"] and "several jobs" not in r.stderr
    # an error message that quotes a command is no launch line
    (d / "b.log").write_text("[rank1]: RuntimeError: try `python other.py --flag` instead\n")
    r = triage("analyze", "logs", "--format", "json", cwd=str(tmp_path))
    assert "several_jobs" not in json.loads(r.stdout)["job"]


def test_a_toml_integer_too_long_for_python_is_a_one_line_error(tmp_path):
    (tmp_path / "b.toml").write_text("x = " + "9" * 5000 + "\n")
    r = triage("check-config", "b.toml", cwd=str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "not valid TOML" in r.stderr, r.stderr


def test_engine_config_lines_that_are_hostile_never_crash(tmp_path):
    """Review, 2026-12-06: a vLLM config line whose compilation_config is no JSON ([1,,2], 60,000
    brackets), a `non-default args` dict with an unhashable key, nan / inf values (no JSON numbers)."""
    cases = {
        "a.log": "Initializing a V1 LLM engine (v0.10.2) with config: model='m', compilation_config="
                 '{"cudagraph_capture_sizes":[1,,2], "x": \n',
        "b.log": "Initializing a V1 LLM engine (v0.10.2) with config: model='m', compilation_config=" + "[" * 60000 + "\n",
        "c.log": "INFO non-default args: {'model': 'a=b', [1]: 2}\n",
        "n.log": "server_args=ServerArgs(model_path='m', cuda_graph_max_bs=nan, mem_fraction_static=inf, "
                 "disable_cuda_graph=False)\nRuntimeError: CUDA error: an illegal memory access was encountered\n",
        "d.log": "INFO non-default args: {'model': 'm', 'enforce_eager': True}\n"
                 "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        r = triage("analyze", name, "--format", "json", cwd=str(tmp_path))
        assert r.returncode in (0, 1, 3), (name, r.stderr[-300:])
        d = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{name}: {c} in the JSON"))
        if name == "d.log":             # the dict holds no `=`: it is read all the same
            assert d["config"]["framework"] == "vllm" and d["config"]["enforce_eager"] is True
