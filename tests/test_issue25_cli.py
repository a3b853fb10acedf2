"""Issue 25: a CLI with no surprises (the conventions ruff, ripgrep and git users rely on)."""
import json
import os
import re
import subprocess
import sys

import pytest
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")
CFG = os.path.join(ROOT, "tests", "fixtures", "configs")


def triage(*args, input=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    return inproc.run(args, env=env, input=input, cwd=cwd)       # in-process: tests/inproc.py


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit", "jira"])
def test_dash_output_is_stdout_not_a_file_named_dash(tmp_path, fmt):
    r = triage("analyze", SAMPLE, "--format", fmt, "-o", "-", cwd=tmp_path)
    assert r.returncode == 1 and not (tmp_path / "-").exists()
    again = triage("analyze", SAMPLE, "--format", fmt, cwd=tmp_path).stdout
    when = re.compile(r"analysed[^\n]*?\d\d:\d\d(:\d\d)?( UTC)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|"
                      r'timestamp="[^"]*"|analysed_at[^\n]*')          # the analysis time: the second may tick
    assert when.sub("T", r.stdout) == when.sub("T", again)
    if fmt == "json":
        assert json.loads(r.stdout)["outcome"] == "pitfall"


def test_dash_output_of_fleet_and_recheck(tmp_path):
    r = triage("fleet", "run", SAMPLE, "--no-store", "--format", "json", "-o", "-", "-q", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"] == 1 and not (tmp_path / "-").exists()


def test_diff_exits_1_when_the_configs_differ_0_when_equal(tmp_path):
    good, bad = os.path.join(CFG, "good_run_config.yaml"), os.path.join(CFG, "bad_run_config.yaml")
    same = triage("diff", good, good)
    assert (same.returncode, same.stdout) == (0, "no differences\n")
    differ = triage("diff", good, bad)
    assert differ.returncode == 1 and "cuda_graph_scope" in differ.stdout
    j = triage("diff", good, bad, "--format", "json")
    assert j.returncode == 1 and json.loads(j.stdout)
    assert triage("diff", good, str(tmp_path / "missing.yaml")).returncode == 2


def test_contradictory_options_are_a_usage_error():
    r = triage("analyze", SAMPLE, "--exit-zero", "--fail-on", "warning")
    assert r.returncode == 2 and "--exit-zero and --fail-on warning contradict each other" in r.stderr
    assert r.stdout == ""
    assert triage("analyze", SAMPLE, "--exit-zero", "--fail-on", "never").returncode == 0
    r = triage("fleet", "run", SAMPLE, "--no-store", "--require-store")
    assert r.returncode == 2 and "--no-store and --require-store contradict" in r.stderr
    r = triage("fleet", "run", SAMPLE, "--no-store", "--db", "x.db")
    assert r.returncode == 2 and "--no-store and --db contradict" in r.stderr


@pytest.mark.parametrize("args,message", [
    (["analyze", SAMPLE, "--attempt", "-1"], "Invalid value for '--attempt': -1 is not in the range 0<=x<=999999."
                                            " (see 'triage analyze --help')"),
    (["analyze", SAMPLE, "-o", ROOT], f"Invalid value for '-o' / '--output': File '{ROOT}' is a directory."
                                      " (see 'triage analyze --help')"),
    (["analyze", "--bogus"], "No such option '--bogus'. Did you mean '--jobs'? (see 'triage analyze --help')"),
    (["bogus"], "No such command 'bogus'. (see 'triage --help')"),
])
def test_a_usage_error_is_one_line(args, message):
    """README: a usage error is one line on stderr and exit 2 (click printed its usage block: four
    lines; found by fuzzing)."""
    r = inproc.run(args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"triage: error: {message}\n")


def test_quiet_keeps_the_known_issue_line(tmp_path):
    db = str(tmp_path / "k.db")
    assert triage("known", "add", "moe-scope-conflict", "https://t.example/TRAIN-1", "--db", db).returncode == 0
    r = triage("analyze", SAMPLE, "--db", db, "-q")
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and len(lines) == 2, r.stdout
    assert lines[0].startswith("triage: rank 1 failed first with moe-scope-conflict")
    assert lines[1].startswith("known issue: https://t.example/TRAIN-1 (seen 1 time since ")
    piped = triage("analyze", "-q", "--db", db, input=open(SAMPLE).read())      # kubectl logs | triage analyze -q
    assert piped.stdout.splitlines()[1].startswith("known issue: https://t.example/TRAIN-1")
    assert len(triage("analyze", SAMPLE, "-q").stdout.splitlines()) == 1       # no store: the verdict line only


def test_every_json_output_has_a_schema_known_list_included(tmp_path):
    """`triage schema NAME` covers every --format json output: known list's too, validated strictly."""
    from test_schemas import STRICT
    db = str(tmp_path / "k.db")
    assert triage("known", "add", "moe-scope-conflict", "https://t.example/1", "--db", db, "--title", "t").returncode == 0
    assert triage("known", "add", "re:boom", "https://t.example/2", "--db", db).returncode == 0
    assert triage("analyze", SAMPLE, "--db", db, "-q").returncode == 1
    out = json.loads(triage("known", "list", "--db", db, "--format", "json").stdout)
    STRICT["known"].validate(out)
    assert [(k["key"], k["seen"]) for k in out] == [("moe-scope-conflict", 1), ("re:boom", 0)]
    printed = triage("schema", "known")
    assert printed.returncode == 0 and json.loads(printed.stdout)["$id"] == "urn:triage:schema:known:1"
    helptext = triage("schema", "--help").stdout
    from triage import schemas
    assert all(n in helptext for n in schemas.NAMES)


def test_check_config_and_diff_warn_on_a_key_that_is_no_setting_with_did_you_mean(tmp_path):
    """A typo never passes a pre-launch gate silently: a warning with "did you mean" (stderr), and with
    --strict an error (exit 2); real configs of every fixture release raise no warning."""
    r = triage("check-config", "model.cuda_graph_scpoe=[attn,moe]")
    assert r.returncode == 0 and "but 1 key(s) are no known setting" in r.stdout
    assert r.stderr == ("triage: warning: 'model.cuda_graph_scpoe' is not a setting of Megatron-LM, megatron-core or "
                        "Megatron Bridge; did you mean 'cuda_graph_scope'?\n")
    strict = triage("check-config", "model.cuda_graph_scpoe=[attn,moe]", "--strict")
    assert strict.returncode == 2 and strict.stdout == "" and strict.stderr.count("\n") == 1
    assert "did you mean 'cuda_graph_scope'?" in strict.stderr and "(--strict)" in strict.stderr
    j = json.loads(triage("check-config", "model.cuda_graph_scpoe=[attn,moe]", "--format", "json").stdout)
    assert j["unknown_keys"] == [{"key": "model.cuda_graph_scpoe", "suggestion": "cuda_graph_scope"}]
    # a setting triage does not check is no typo; an explicit key of no release is warned, without a guess
    assert triage("check-config", "optimizer.lr=3e-4", "model.cuda_graph_impl=local").stderr == ""
    assert "'model.frobnicate' is not a setting" in triage("check-config", "model.frobnicate=1").stderr
    # the environment: a near miss of a variable triage reads
    r = triage("check-config", "model.cuda_graph_impl=local", "--env", "NCCL_GRAPH_REGISTR=0")
    assert "did you mean 'env.NCCL_GRAPH_REGISTER'?" in r.stderr
    # in a config file only near misses are warned about (a real config holds other tools' keys)
    good = tmp_path / "run_config.yaml"
    good.write_text("model:\n  cuda_graph_impl: local\n  cuda_graph_scpoe: [attn]\nmy_launcher:\n  nodes: 4\n")
    r = triage("check-config", str(good))
    assert r.stderr.count("warning") == 1 and "'cuda_graph_scpoe'" in r.stderr
    d = triage("diff", str(good), str(good), "--strict")
    assert d.returncode == 2 and "cuda_graph_scpoe" in d.stderr


def test_the_near_miss_search_gives_difflibs_answer():
    """_near looks only at the names whose length could reach the cutoff (difflib's first test):
    the same answer as difflib over the whole sorted table, for every known name misspelt three
    ways and for random names."""
    import difflib
    import random
    from triage.config.settings import CUTOFF, _near, known_settings
    table = known_settings()
    rng = random.Random(7)
    names = []
    for n in sorted(table)[::90]:
        i = rng.randrange(len(n) + 1)
        names += [n[:i] + "x" + n[i:], n[:i] + n[i + 1:], n[::-1][:8], n.upper()]
    names += ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(1, 40))) for _ in range(60)]
    for name in names:
        want = difflib.get_close_matches(name, sorted(table), n=1, cutoff=CUTOFF)
        assert _near(name, table) == (want[0] if want else None), name


def test_a_config_of_many_unknown_keys_is_checked_in_bounded_time(tmp_path):
    """Found by fuzzing: each key that is no known setting was compared with the ~2,700 known ones
    (2.5 ms), so a config of 10,000 such keys took 25 s and one of 300,000 never ended.  The first
    NEAR_MAX distinct names are looked up, the rest are counted in one warning."""
    from triage.config.settings import NEAR_MAX
    p = tmp_path / "many.yaml"
    p.write_text("model:\n  cuda_graph_impl: local\n  cuda_graph_scpoe: [attn]\n"
                 + "".join(f"k{i}: {i}\n" for i in range(NEAR_MAX + 3000)))
    r = triage("check-config", str(p))
    assert r.returncode == 1 and "te-rng-tracker-missing" in r.stdout
    warnings = r.stderr.splitlines()
    assert "did you mean 'cuda_graph_scope'?" in warnings[-1]
    assert warnings[0] == (f"triage: warning: 3,001 keys not checked for typos (past the first {NEAR_MAX:,} names "
                           f"that are no known setting), from 'k{NEAR_MAX - 1}'")


def test_no_real_config_of_the_fixtures_raises_a_typo_warning():
    from triage.config import ConfigError, build_config
    from triage.config.settings import unknown_keys

    def keys(f):
        try:
            return list(build_config([f]))
        except ConfigError:          # a log holding no config
            return []
    files = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(CFG, "real")) for f in fs
             if f.endswith((".yaml", ".json", ".log"))]
    assert len(files) > 30
    noisy = {f: unknown_keys(keys(f)) for f in files}
    assert {f: u for f, u in noisy.items() if u} == {}


def test_patterns_check_reports_every_problem_of_every_file_and_fails_a_draft(tmp_path):
    d = tmp_path / "pats"
    d.mkdir()
    r = triage("patterns", "suggest", os.path.join(ROOT, "tests", "fixtures", "logs", "synthetic", "vllm",
                                                   "worker_died.log"), "-o", str(d / "draft.yaml"))
    assert r.returncode == 0, r.stderr
    (d / "bad.yaml").write_text("id: [broken\n")
    (d / "empty.yaml").write_text("")
    shipped = sorted(os.listdir(os.path.join(ROOT, "patterns")))[0]
    (d / shipped).write_bytes(open(os.path.join(ROOT, "patterns", shipped), "rb").read())
    r = triage("patterns", "check", str(d))
    assert r.returncode == 1 and r.stdout.strip().endswith("problem(s)")
    lines = r.stderr.splitlines()
    assert [ln.split(":", 1)[0] for ln in lines].count("bad.yaml") == 1
    assert any(ln.startswith("empty.yaml: ") for ln in lines)
    assert any(ln.startswith("draft.yaml: a draft: TODO placeholders left in id, explanation, fix") for ln in lines)
    assert not any(ln.startswith(shipped) for ln in lines)            # the good file has no problem
    assert "Traceback" not in r.stderr
    # the draft once finished passes
    one = triage("patterns", "check", os.path.join(ROOT, "patterns", shipped))
    assert one.returncode == 0 and "1 pattern file(s), 0 problem(s)" in one.stdout


def test_check_config_writes_output_files_and_html_like_analyze(tmp_path):
    bad = os.path.join(CFG, "bad_run_config.yaml")
    stdout_json = json.loads(triage("check-config", bad, "--format", "json").stdout)
    r = triage("check-config", bad, "-o", str(tmp_path / "c.json"))
    assert r.returncode == 1 and r.stdout == "" and "json written to" in r.stderr
    assert json.loads((tmp_path / "c.json").read_text()) == stdout_json
    again = triage("check-config", bad, "-o", str(tmp_path / "c.json"))
    assert again.returncode == 2 and "--force" in again.stderr
    assert triage("check-config", bad, "-o", str(tmp_path / "c.json"), "--force").returncode == 1
    r = triage("check-config", bad, "model.evil=<script>alert(1)</script>", "-o", str(tmp_path / "c.html"))
    html = (tmp_path / "c.html").read_text()
    assert r.returncode == 1 and html.startswith("<!doctype html>") and "<script>" not in html
    assert "&lt;script&gt;" in html and stdout_json["violations"][0]["pitfall"] in html
    assert "Content-Security-Policy" in html
    md = triage("check-config", bad, "-o", str(tmp_path / "c.md"))
    assert md.returncode == 1 and (tmp_path / "c.md").read_text().startswith("### triage check-config:")
    assert triage("check-config", bad, "-o", "-", "--format", "html").stdout.startswith("<!doctype html>")


def test_check_config_html_lists_the_undecided_rules_and_their_keys():
    """Found by fuzzing: `{% for k in r.keys %}` in the HTML template is the dict's keys METHOD in
    Jinja, so every config with an undecided rule (the real Bridge 0.6.2 Configuration Summary here)
    was an internal error in --format html."""
    f = os.path.join(CFG, "real", "bridge-0.6.2", "pair-te-rng", "summary-good.log")
    j = json.loads(triage("check-config", f, "--format", "json").stdout)
    assert j["undecided"]
    r = triage("check-config", f, "--format", "html")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    for u in j["undecided"]:
        shown = ", ".join(f"<code>{k}</code>" for k in u["keys"])
        assert f"undecided: <code>{u['pitfall']}</code>: the config does not show {shown}</li>" in r.stdout


def test_second_fuzzing_round_known_issues_watch_options_and_a_full_disk(tmp_path):
    """Found by fuzzing (each was an internal error, a false alert or a raw escape on the terminal):
    contradicting regex flags in a known-issue key or a pattern, a key of bytes that are no UTF-8,
    a title holding terminal escapes and newlines in `known list`, nan for a number of seconds, and
    stdout on a full disk."""
    db = str(tmp_path / "k.db")
    r = inproc.run(["known", "add", "re:(?a)(?u)x", "https://x.example/1", "--db", db])
    assert r.returncode == 2 and r.stderr.startswith("triage: error: 're:(?a)(?u)x': not a valid regex"), r.stderr
    r = inproc.run(["known", "add", os.fsdecode(b"re:\xed\xa0\x80"), "https://x.example/1", "--db", db])
    assert r.returncode == 2 and "holds bytes that are no UTF-8 text" in r.stderr and r.stderr.count("\n") == 1
    title = "t\x1b]0;pwn\x07\nnewline"
    assert inproc.run(["known", "add", "illegal-memory-access", "https://x.example/2", "--title", title,
                       "--db", db]).returncode == 0
    out = inproc.run(["known", "list", "--db", db]).stdout
    assert "\x1b" not in out and "\x07" not in out and "t\\e]0;pwn\\x07\\nnewline" in out
    assert json.loads(inproc.run(["known", "list", "--db", db, "--format", "json"]).stdout)[0]["title"] == title
    for opt in ("--stall", "--idle", "--heartbeat", "--settle"):
        r = inproc.run(["watch", SAMPLE, "--idle", "1", opt, "nan"])
        assert r.returncode == 2 and f"'{opt}': 'nan' is not a number of seconds" in r.stderr, (opt, r.stderr)
    pat = tmp_path / "pats"
    pat.mkdir()
    with open(os.path.join(ROOT, "patterns", "te-required.yaml"), encoding="utf-8") as f:
        text = f.read()
    (pat / "mine.yaml").write_text(text.replace("id: te-required", "id: mine-flags") + "\n")
    import yaml
    d = yaml.safe_load(text)
    d["id"], d["match"] = "mine-flags", [{"regex": "boom(?a)(?u)x", "literal": ["boom"]}]
    (pat / "mine.yaml").write_text(yaml.safe_dump(d))
    r = inproc.run(["patterns", "check", str(pat)])
    assert r.returncode != 0 and "bad regex 'boom(?a)(?u)x'" in r.stdout + r.stderr and "internal" not in r.stderr
    os.mkfifo(pat / "fifo.yaml")            # was read for TODO placeholders first: blocked for ever
    r = subprocess.run([sys.executable, "-m", "triage", "patterns", "check", str(pat)], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 1 and "fifo.yaml: not a regular file" in r.stderr, r.stderr
    job = tmp_path / "job.log"                  # a stored job whose log became a FIFO: recheck waited for ever
    job.write_text(open(SAMPLE, encoding="utf-8").read())
    assert inproc.run(["fleet", "run", str(job), "--db", db]).returncode in (0, 1)
    job.unlink()
    os.mkfifo(job)
    r = subprocess.run([sys.executable, "-m", "triage", "fleet", "recheck", "--db", db], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "its log is no longer a file or a directory" in r.stdout, r.stdout + r.stderr
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            p = subprocess.run([sys.executable, "-m", "triage", "schema", "analyze"], stdout=full, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT)
        assert (p.returncode, p.stderr) == (2, "triage: error: cannot write the output: No space left on device\n")
