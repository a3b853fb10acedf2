"""Issue 24 (part): the fleet and known-issue commands a platform team relies on."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def triage(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_fleet_report_on_a_store_path_that_does_not_exist_is_an_error_not_a_new_store(tmp_path):
    missing = tmp_path / "typo" / "triage.db"
    for cmd in (["fleet", "report"], ["known", "list"], ["known", "remove", "x"]):
        r = triage(*cmd, "--db", str(missing))
        assert r.returncode == 2 and "no store there" in r.stderr and r.stderr.count("\n") == 1, (cmd, r.stderr)
        assert not missing.exists() and not missing.parent.exists()


FIX = os.path.join(ROOT, "tests", "fixtures", "logs")
PITFALL = os.path.join(FIX, "synthetic", "other-stacks", "torch113_invalid_capture.log")
UNEXPLAINED = os.path.join(FIX, "synthetic", "vllm", "worker_died.log")
HEALTHY = os.path.join(FIX, "synthetic", "healthy_megatron_te_graphs.log")


def test_fleet_fail_on_new_fails_only_on_a_signature_the_store_never_held(tmp_path):
    db = str(tmp_path / "t.db")
    first = triage("fleet", "run", PITFALL, HEALTHY, "--db", db, "--fail-on", "new", "-q", "--format", "json")
    assert first.returncode == 1 and "--fail-on new: 1 signature(s) never seen before" in first.stderr
    assert first.stdout.startswith("{")                     # the view comes first
    again = triage("fleet", "run", PITFALL, HEALTHY, "--db", db, "--fail-on", "new", "-q")
    assert again.returncode == 0 and "--fail-on" not in again.stderr
    other = triage("fleet", "run", PITFALL, UNEXPLAINED, "--db", db, "--fail-on", "new", "-q")
    assert other.returncode == 1 and "1 signature(s)" in other.stderr and "Worker proc" in other.stderr


def test_fleet_fail_on_unexplained(tmp_path):
    ok = triage("fleet", "run", PITFALL, HEALTHY, "--no-store", "--fail-on", "unexplained", "-q")
    assert ok.returncode == 0
    bad = triage("fleet", "run", PITFALL, UNEXPLAINED, "--no-store", "--fail-on", "unexplained", "-q")
    assert bad.returncode == 1 and "--fail-on unexplained: 1 job(s)" in bad.stderr


def test_fleet_fail_on_new_needs_the_store(tmp_path):
    r = triage("fleet", "run", PITFALL, "--no-store", "--fail-on", "new", "-q")
    assert r.returncode == 2 and "needs the store" in r.stderr
    foreign = tmp_path / "other.db"
    import sqlite3
    con = sqlite3.connect(foreign)
    con.execute("create table t (x)")
    con.commit()
    con.close()
    r = triage("fleet", "run", PITFALL, "--db", str(foreign), "--fail-on", "new", "-q")
    assert r.returncode == 2 and "cannot be decided" in r.stderr


def test_analyze_of_a_directory_holding_several_slurm_jobs_points_at_fleet(tmp_path):
    log = open(PITFALL).read()
    for j in (101, 102, 103):
        (tmp_path / f"slurm-{j}.out").write_text(log)
    r = triage("analyze", str(tmp_path))
    assert r.returncode == 2 and "holds the logs of 3 Slurm jobs (101, 102, 103)" in r.stderr
    assert f"triage fleet --jobs-in {tmp_path}" in r.stderr and r.stdout == ""
    fleet = triage("fleet", "--jobs-in", str(tmp_path), "--no-store", "--format", "json", "-q")
    import json
    assert fleet.returncode == 0 and json.loads(fleet.stdout)["jobs"] == 3
    # one job's per-task files (slurm-%j_%t.out) are one job
    one = tmp_path / "one"
    one.mkdir()
    for t in (0, 1):
        (one / f"slurm-101_{t}.out").write_text(log)
    assert triage("analyze", str(one)).returncode == 1


def test_known_add_says_which_id_was_meant_and_takes_ids_of_user_patterns(tmp_path):
    db = str(tmp_path / "k.db")
    r = triage("known", "add", "capture-memory-overheed", "https://jira.example.com/T-1", "--db", db)
    assert r.returncode == 2 and "did you mean 'capture-memory-overhead'?" in r.stderr
    r = triage("known", "add", "cuda-oomm: CUDA out of memory", "https://jira.example.com/T-1", "--db", db)
    assert r.returncode == 2 and "did you mean 'cuda-oom'?" in r.stderr
    # a pitfall id of the user's own pattern files
    pd = tmp_path / "pats"
    pd.mkdir()
    src = open(os.path.join(ROOT, "patterns", "compiled-graph-output-overwritten.yaml")).read()
    (pd / "my-dataloader-hang.yaml").write_text(src.replace("id: compiled-graph-output-overwritten",
                                                            "id: my-dataloader-hang", 1))
    r = triage("known", "add", "my-dataloader-hang", "https://jira.example.com/T-2", "--db", db)
    assert r.returncode == 2
    r = triage("known", "add", "my-dataloader-hang", "https://jira.example.com/T-2", "--db", db, "--patterns", str(pd))
    assert r.returncode == 0 and "added: my-dataloader-hang" in r.stdout


def test_a_store_that_is_down_costs_one_attempt_and_the_report_comes_first(tmp_path):
    """TRIAGE_DB=postgresql://...@127.0.0.1:1/... (nothing listens): the report, then one warning, the
    analysis's own exit code; a refused connection is not retried (it was, for the whole 5 s budget)."""
    import socket
    import time

    from triage import store
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # a port nothing listens on
    env = dict(os.environ, PYTHONPATH=ROOT, TRIAGE_DB=f"postgresql://svc:pw@127.0.0.1:{port}/triage")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", UNEXPLAINED, "-q"], capture_output=True, text=True,
                       env=env, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 3 and r.stdout.startswith("triage: the job failed")
    assert r.stderr.count("\n") == 1 and "warning: store" in r.stderr and "pw" not in r.stderr.replace("postgresql", "")
    assert took < 4.0, took                     # one attempt (retries took the 5 s budget)
    assert store._TRANSIENT_PG.search("connection to server failed: Connection refused") is None
    assert store._TRANSIENT_PG.search("FATAL: the database system is starting up") is not None


def test_every_report_shows_the_signature_id_and_known_add_takes_it(tmp_path):
    import hashlib
    import json
    db = str(tmp_path / "t.db")
    r = triage("analyze", UNEXPLAINED, "--format", "json", "--db", db, "--record")
    d = json.loads(r.stdout)
    sid = d["signature_id"]
    assert sid == hashlib.sha1(d["signature"].encode()).hexdigest()[:12]
    text = triage("analyze", UNEXPLAINED).stdout
    assert f"signature {sid}" in text.splitlines()[1]
    for fmt in ("markdown", "jira", "html"):
        assert sid in triage("analyze", UNEXPLAINED, "--format", fmt).stdout, fmt
    assert "signature_id" not in json.loads(triage("analyze", HEALTHY, "--format", "json").stdout)
    # the short id stands for the stored signature (no shell-quoting of "'<path>'")
    missing = triage("known", "add", "0123456789ab", "https://jira.example.com/T-9", "--db", db)
    assert missing.returncode == 2 and "no job in the store has signature id 0123456789ab" in missing.stderr
    ok = triage("known", "add", sid, "https://jira.example.com/T-9", "--db", db)
    assert ok.returncode == 0 and d["signature"] in ok.stdout
    again = json.loads(triage("analyze", UNEXPLAINED, "--format", "json", "--db", db).stdout)
    assert again["known"]["url"] == "https://jira.example.com/T-9"


def test_a_regex_known_issue_labels_the_jobs_whose_signature_or_error_block_it_finds(tmp_path):
    """elastic-recheck's queries: `re:REGEX` over the signature or the error block; analyze and fleet agree."""
    import json
    db = str(tmp_path / "t.db")
    ok = triage("known", "add", "re:Worker proc \\S+ died", "https://jira.example.com/T-5", "--db", db)
    assert ok.returncode == 0, ok.stderr
    d = json.loads(triage("analyze", UNEXPLAINED, "--format", "json", "--db", db, "--record").stdout)
    assert d["known"]["url"] == "https://jira.example.com/T-5" and d["known"]["key"] == "re:Worker proc \\S+ died"
    assert "known" not in json.loads(triage("analyze", PITFALL, "--format", "json", "--db", db).stdout)
    fleet = json.loads(triage("fleet", "run", UNEXPLAINED, PITFALL, "--db", db, "--format", "json", "-q").stdout)
    assert [g["known"] for g in fleet["unexplained"]] == [{"url": "https://jira.example.com/T-5", "title": None}]
    assert all(g["known"] is None for g in fleet["groups"])
    # a regex that could run away, or that is no regex, is refused with one line
    for bad, why in (("re:(a|aa)+$", "re:"), ("re:(unclosed", "not a valid regex"), ("re:", "empty")):
        r = triage("known", "add", bad, "https://jira.example.com/T-6", "--db", db)
        assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, (bad, r.stderr)


def test_a_regex_known_issue_finds_a_frame_of_the_error_block(tmp_path):
    import json
    db = str(tmp_path / "t.db")
    log = os.path.join(FIX, "synthetic", "vllm", "enginecore_fatal_error_tail.log")
    assert triage("known", "add", r"re:plugins/my_sampler\.py", "https://jira.example.com/T-7", "--db", db).returncode == 0
    d = json.loads(triage("analyze", log, "--format", "json", "--db", db).stdout)
    assert "plugins/my_sampler" not in d["signature"] and d["known"]["url"] == "https://jira.example.com/T-7"
