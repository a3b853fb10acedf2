"""Issue 24 (part): the fleet and known-issue commands a platform team relies on."""
import os
import subprocess
import sys
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def triage(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    return inproc.run(args, env=env)       # in-process: tests/inproc.py


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


def test_fleet_fail_on_new_fails_only_on_a_signature_the_store_never_held(tmp_path, store_url):
    db = store_url                     # SQLite, then the real PostgreSQL server
    first = triage("fleet", "run", PITFALL, HEALTHY, "--db", db, "--fail-when", "new", "-q", "--format", "json")
    assert first.returncode == 1 and "--fail-when new: 1 signature(s) never seen before" in first.stderr
    assert first.stdout.startswith("{")                     # the view comes first
    again = triage("fleet", "run", PITFALL, HEALTHY, "--db", db, "--fail-when", "new", "-q")
    assert again.returncode == 0 and "--fail-when" not in again.stderr
    other = triage("fleet", "run", PITFALL, UNEXPLAINED, "--db", db, "--fail-when", "new", "-q")
    assert other.returncode == 1 and "1 signature(s)" in other.stderr and "Worker proc" in other.stderr


def test_fleet_fail_on_unexplained(tmp_path):
    ok = triage("fleet", "run", PITFALL, HEALTHY, "--no-store", "--fail-when", "unexplained", "-q")
    assert ok.returncode == 0
    bad = triage("fleet", "run", PITFALL, UNEXPLAINED, "--no-store", "--fail-when", "unexplained", "-q")
    assert bad.returncode == 1 and "--fail-when unexplained: 1 job(s)" in bad.stderr


def test_fleet_fail_on_new_needs_the_store(tmp_path):
    r = triage("fleet", "run", PITFALL, "--no-store", "--fail-when", "new", "-q")
    assert r.returncode == 2 and "needs the store" in r.stderr
    foreign = tmp_path / "other.db"
    import sqlite3
    con = sqlite3.connect(foreign)
    con.execute("create table t (x)")
    con.commit()
    con.close()
    r = triage("fleet", "run", PITFALL, "--db", str(foreign), "--fail-when", "new", "-q")
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


def test_known_add_says_which_id_was_meant_and_takes_ids_of_user_patterns(tmp_path, store_url):
    db = store_url                     # SQLite, then the real PostgreSQL server
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

    from triage.fleet import store
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # a port nothing listens on
    env = dict(os.environ, PYTHONPATH=ROOT, TRIAGE_DB=f"postgresql://svc:pw@127.0.0.1:{port}/triage")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", UNEXPLAINED, "-q"], capture_output=True, text=True,
                       env=env, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 3 and "with an error no pattern explains" in r.stdout.splitlines()[0]
    assert r.stderr.count("\n") == 1 and "warning: store" in r.stderr and "pw" not in r.stderr.replace("postgresql", "")
    assert took < 4.0, took                     # one attempt (retries took the 5 s budget)
    assert store._TRANSIENT_PG.search("connection to server failed: Connection refused") is None
    assert store._TRANSIENT_PG.search("FATAL: the database system is starting up") is not None


def test_every_report_shows_the_signature_id_and_known_add_takes_it(tmp_path, store_url):
    import hashlib
    import json
    db = store_url                     # SQLite, then the real PostgreSQL server
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


def test_a_regex_known_issue_labels_the_jobs_whose_signature_or_error_block_it_finds(tmp_path, store_url):
    """elastic-recheck's queries: `re:REGEX` over the signature or the error block; analyze and fleet agree."""
    import json
    db = store_url                     # SQLite, then the real PostgreSQL server
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


# --- fleet recheck ---------------------------------------------------------------------------------
WORKER_PATTERN = """id: vllm-worker-died
title: A vLLM worker process died
severity: error
kind: runtime
match:
  - regex: 'Worker proc \\S+ died unexpectedly'
    literal: 'died unexpectedly'
explanation: the engine's worker died; its own log says why
fix: read the worker's log
references: [{source: vllm 0.34.0 multiproc_executor.py}]
examples: {match: ['Worker proc VllmWorker-1 died unexpectedly (exit code: 1)'], no_match: ['nothing']}
"""


def _jobs_dir(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name, src in (("a.log", UNEXPLAINED), ("b.log", PITFALL), ("c.log", HEALTHY)):
        (jobs / name).write_bytes(open(src, "rb").read())
    (jobs / "d.log").write_text("Traceback (most recent call last):\n  File \"/workspace/train.py\", line 3, in <module>\n"
                                "    load()\nOSError: tokenizer vocab unreadable: /data/vocab.json\n")
    return jobs


def test_fleet_recheck_explains_links_keeps_history_and_skips_what_is_gone(tmp_path, store_url):
    """elastic-recheck: after a pattern is added (--patterns) the unexplained job is explained, after
    a known issue is linked its group is covered; the store holds the new verdict, the history the
    old; a job whose log is gone is skipped and says why; --dry-run changes nothing."""
    import json

    from triage.fleet.store import Store
    db = store_url
    jobs = _jobs_dir(tmp_path)
    pats = tmp_path / "pats"
    pats.mkdir()
    (pats / "worker.yaml").write_text(WORKER_PATTERN)
    r = triage("fleet", "run", "--jobs-in", str(jobs), "--db", db, "-q", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outcomes"] == {"pitfall": 1, "unexplained-failure": 2, "healthy": 1}
    a_id = os.path.abspath(jobs / "a.log")
    with Store(db) as st:
        old_a = [x for x in st.records() if x.job_id == a_id][0]
    assert old_a.outcome == "unexplained-failure"

    same = triage("fleet", "recheck", "--db", db, "--format", "json", "-q")
    res = json.loads(same.stdout)
    assert same.returncode == 0 and res["checked"] == 4 and res["unchanged"] == 4, same.stdout + same.stderr
    assert res["explained"] == res["changed"] == res["linked"] == []

    dry = json.loads(triage("fleet", "recheck", "--db", db, "--patterns", str(pats), "--dry-run",
                            "--format", "json", "-q").stdout)
    assert dry["updated"] is False and len(dry["explained"]) == 1
    with Store(db) as st:
        assert [x.outcome for x in st.records() if x.job_id == a_id] == ["unexplained-failure"]

    r = triage("fleet", "recheck", "--db", db, "--patterns", str(pats), "-q")
    assert r.returncode == 0, r.stderr
    assert "NOW EXPLAINED" in r.stdout and "-> vllm-worker-died: A vLLM worker process died" in r.stdout
    assert "unchanged: 3" in r.stdout
    with Store(db) as st:
        new_a = [x for x in st.records() if x.job_id == a_id][0]
        hist = st.history_of(a_id)
        assert st.count() == 4                                     # replaced, not added
    assert new_a.outcome == "pitfall" and new_a.primary == "vllm-worker-died"
    assert [(h.outcome, h.signature) for h in hist] == [("unexplained-failure", old_a.signature)]

    k = triage("known", "add", "re:tokenizer vocab", "https://tickets.example.com/T-9", "--db", db)
    assert k.returncode == 0, k.stderr
    (jobs / "b.log").unlink()
    r = json.loads(triage("fleet", "recheck", "--db", db, "--patterns", str(pats), "--format", "json", "-q").stdout)
    assert r["checked"] == 3 and r["skipped"] == {"its log is gone or unreadable": 1}
    from test_schemas import STRICT
    for doc in (res, dry, r):
        STRICT["recheck"].validate(doc)
    assert [(g["count"], g["known"]["url"], g["by_regex"]) for g in r["linked"]] == \
        [(1, "https://tickets.example.com/T-9", True)]
    assert r["linked"][0]["signature"] == "unexplained-failure: OSError @ train.py:<module>"   # found by its message


def test_fleet_recheck_of_a_missing_store_and_of_piped_jobs(tmp_path):
    r = triage("fleet", "recheck", "--db", str(tmp_path / "none.db"))
    assert r.returncode == 2 and "no store there" in r.stderr
    db = str(tmp_path / "t.db")
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    p = subprocess.run([sys.executable, "-m", "triage", "analyze", "--record", "--db", db, "-q"], input=open(PITFALL).read(),
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1, p.stderr
    r = triage("fleet", "recheck", "--db", db)
    assert r.returncode == 0 and "skipped: 1 job(s) read from stdin (nothing to read again)" in r.stdout


V2_STORE = """
    CREATE TABLE triage_meta ("key" VARCHAR(64) NOT NULL, value TEXT, PRIMARY KEY ("key"));
    CREATE TABLE verdicts (id INTEGER NOT NULL, content_hash VARCHAR(64) NOT NULL, job_id TEXT NOT NULL,
        job_time FLOAT NOT NULL, recorded_at FLOAT NOT NULL, outcome VARCHAR(32) NOT NULL,
        primary_pitfall VARCHAR(128), signature TEXT, title TEXT, first_failing_rank INTEGER, blamed_key TEXT,
        summary TEXT, triage_version VARCHAR(40), PRIMARY KEY (id), UNIQUE (content_hash));
    CREATE INDEX verdicts_signature ON verdicts (signature);
    CREATE INDEX verdicts_job_time ON verdicts (job_time);
    CREATE TABLE known_issues ("key" VARCHAR(512) NOT NULL, url TEXT NOT NULL, title TEXT, added_at FLOAT NOT NULL,
        PRIMARY KEY ("key"));
    INSERT INTO triage_meta VALUES ('schema_version', '2');
    INSERT INTO verdicts (content_hash, job_id, job_time, recorded_at, outcome, primary_pitfall, signature)
        VALUES ('h1', '/logs/a.log', 10, 10, 'unexplained-failure', NULL, 'unexplained-failure: boom'),
               ('h2', '/logs/a.log', 20, 20, 'pitfall', 'cuda-oom', 'cuda-oom: CUDA out of memory'),
               ('h3', '<stdin>', 30, 30, 'healthy', NULL, NULL),
               ('h4', '<stdin>', 40, 40, 'healthy', NULL, NULL),
               ('h5', '777', 50, 50, 'pitfall', 'nccl-error', 'nccl-error: NCCL');
    INSERT INTO known_issues VALUES ('cuda-oom', 'https://t/1', NULL, 1);
"""


def test_a_schema_2_store_becomes_one_record_per_job(store_url):
    """The store of triage 0.4.0's first sessions (records keyed by content hash) migrates to schema 3:
    a job recorded twice (its log grew) is one record with its newest verdict, the older one in the
    history; stdin records stay apart (one job per content); the known issues are kept."""
    import sqlalchemy as sa

    from triage.fleet.store import SCHEMA_VERSION, Store, resolve_url
    db = store_url
    os.makedirs(os.path.dirname(db), exist_ok=True) if "://" not in db else None
    eng = sa.create_engine(resolve_url(db))
    with eng.begin() as c:
        sql = V2_STORE if "://" not in db else V2_STORE.replace("id INTEGER NOT NULL", "id SERIAL NOT NULL")
        for stmt in sql.split(";"):
            if stmt.strip():
                c.exec_driver_sql(stmt)
    eng.dispose()
    with Store(db) as st:
        assert st.version() == SCHEMA_VERSION == 3
        recs = {r.label: r for r in st.records()}
        assert sorted(recs) == ["/logs/a.log", "777", "stdin:h3", "stdin:h4"]
        assert recs["/logs/a.log"].primary == "cuda-oom" and recs["/logs/a.log"].content_hash == "h2"
        assert [(h.outcome, h.content_hash) for h in st.history_of("/logs/a.log")] == [("unexplained-failure", "h1")]
        assert [k["key"] for k in st.known_list()] == ["cuda-oom"]
    r = triage("fleet", "report", "--since", "all", "--db", db, "--format", "json")
    import json
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"] == 4


REAL_TORCHRUN = os.path.join(FIX, "real", "torchrun-cpu", "two_ranks_mcore_assert.log")


def test_analyze_of_a_directory_holding_several_jobs_launcher_summaries_points_at_fleet(tmp_path):
    """Two real torchrun logs of two jobs (each torchrun's summary names global rank N as the first
    failure: one job's node agents never name the same rank) in one directory: not one mixed verdict."""
    jobs = tmp_path / "mixed"
    jobs.mkdir()
    for name in ("train-a.log", "train-b.log"):
        (jobs / name).write_bytes(open(REAL_TORCHRUN, "rb").read())
    r = triage("analyze", str(jobs))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "holds the launcher summaries of 2 jobs (train-a.log, train-b.log each name rank" in r.stderr
    assert f"triage fleet --jobs-in {jobs}" in r.stderr
    # one job: a single file, or one job's per-attempt directories (TorchElastic's attempt_N), is fine
    one = tmp_path / "one"
    (one / "attempt_0").mkdir(parents=True)
    (one / "attempt_1").mkdir()
    for a in ("attempt_0", "attempt_1"):
        (one / a / "train.log").write_bytes(open(REAL_TORCHRUN, "rb").read())
    assert triage("analyze", str(one)).returncode in (1, 3)
    assert triage("analyze", REAL_TORCHRUN).returncode in (1, 3)


def test_job_identity_rule():
    """triage/jobid.py's rule, in order: the option, the job's environment (analyze only), Slurm's
    output name, the path; stdin by content; a bad id or attempt is a one-line error."""
    import pytest

    from triage.jobid import JobIdError, from_name, identify
    slurm = {"SLURM_JOB_ID": "900", "SLURM_RESTART_COUNT": "2"}
    assert identify(["x.log"], "given", 5, env=slurm) == identify(["x.log"], "given", 5, env={})
    assert (identify(["x.log"], env=slurm).job_id, identify(["x.log"], env=slurm).attempt) == ("900", 2)
    assert identify(["x.log"], env={"TRIAGE_JOB_ID": "k8s-job", "SLURM_JOB_ID": "1"}).job_id == "k8s-job"
    assert identify(["x.log"], env={"SLURM_JOB_ID": "9", "SLURM_JOB_RESTART_COUNT": "3"}).attempt == 3   # an Epilog
    assert identify(["/l/slurm-123.out"], env=slurm, use_env=False).job_id == "123"
    assert identify(["/l/slurm-123.out"], env=slurm, use_env=False).attempt == 0
    assert [from_name(n) for n in ("slurm-5_3.out", "slurm-5-3.err", "slurm-5.out.gz", "train.log")] == \
        ["5_3", "5", "5", None]
    assert identify(["-"], env={}, stdin_digest="ab" * 32).job_id == "stdin:" + "ab" * 8
    assert identify(["a.log", "b.log"], env={}).job_id == f"{os.path.abspath('a.log')} {os.path.abspath('b.log')}"
    for bad in ({"SLURM_RESTART_COUNT": "-1"}, {"TRIAGE_JOB_ID": "a\x1bb"}, {"TRIAGE_JOB_ID": "x" * 401}):
        with pytest.raises(JobIdError):
            identify(["x.log"], env=bad)
