"""The verdict store (triage/store.py) on SQLite and on a real PostgreSQL server started by the test
run (tests/pgserver.py): schema and migrations, idempotent records, known issues, concurrent writers
(32 `triage analyze --record` processes at once), and the CLI around it (--record, --db, known)."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.fleet.store import SCHEMA_VERSION, Record, Store, StoreError, content_hash, resolve_url
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")
IMA = os.path.join(ROOT, "tests", "fixtures", "logs", "real", "gpu", "illegal_memory_access.log")
ENV = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_DB", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")}


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """A fresh store URL on each engine."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "triage.db")
    return request.getfixturevalue("pg_url")


def rec(h="h1", sig="cuda-oom: CUDA out of memory", outcome="pitfall", primary="cuda-oom", t=1_700_000_000.0, job=None,
        attempt=0):
    return Record(job_id=job or f"job-{h}", attempt=attempt, job_time=t, outcome=outcome, primary=primary, signature=sig, title="t",
                  first_failing_rank=3, blamed=None, summary="s", content_hash=h, triage_version="0")


def test_schema_created_at_current_version(db):
    with Store(db) as st:
        assert st.version() == SCHEMA_VERSION
        assert st.count() == 0


def test_migration_from_v1_keeps_records(db):
    with Store(db, upto=1) as st:
        assert st.version() == 1
        st.record(rec())
        assert not st.sa.inspect(st.engine).has_table("known_issues")
    with Store(db) as st:                      # opening with this triage migrates to the current version
        assert st.version() == SCHEMA_VERSION
        assert st.count() == 1
        assert st.known_add("cuda-oom", "https://t/1")


def test_newer_schema_is_refused(db):
    with Store(db) as st:
        with st.engine.begin() as c:
            c.execute(st.sa.update(st.meta).values(value=str(SCHEMA_VERSION + 1)))
    with pytest.raises(StoreError, match="newer than this triage"):
        Store(db)


def test_a_record_is_a_job_not_a_log(db):
    """Issue 24: two jobs with identical logs are two records; one job analysed again (its log grew,
    a newer triage) is one record, refreshed, its earlier verdict kept in the history; a requeue
    (attempt 1) is a record of its own."""
    with Store(db) as st:
        assert st.record(rec(job="first")) is True
        assert st.record(rec(job="second")) is True             # the same bytes, another job
        assert st.count() == 2
        assert st.record(rec("h2", job="first", outcome="healthy", primary=None, sig=None)) is False
        assert st.record(rec("h2", job="first", outcome="healthy", primary=None, sig=None)) is False
        rows = {r.job_id: r for r in st.records()}
        assert len(rows) == 2 and rows["first"].outcome == "healthy" and rows["first"].content_hash == "h2"
        hist = st.history_of("first")
        assert [(h.outcome, h.primary, h.content_hash) for h in hist] == [("pitfall", "cuda-oom", "h1")]
        assert st.record(rec("h3", job="first", attempt=1)) is True
        assert sorted(r.label for r in st.records()) == ["first", "first#1", "second"]
        assert st.history_of("first", 1) == []


def test_seen_and_known_info(db):
    with Store(db) as st:
        st.record_many([rec("a", t=1_700_000_000), rec("b", t=1_700_090_000), rec("c", sig="x: y", primary="x")])
        seen = st.seen(signatures=["cuda-oom: CUDA out of memory"], pitfalls=["x"])
        assert seen["cuda-oom: CUDA out of memory"] == (2, 1_700_000_000.0, 1_700_090_000.0)
        assert seen["x"][0] == 1
        assert st.known_info("cuda-oom: CUDA out of memory", "cuda-oom") is None
        st.known_add("cuda-oom", "https://tickets/1", "OOM ticket")
        k = st.known_info("cuda-oom: CUDA out of memory", "cuda-oom")
        assert k["url"] == "https://tickets/1" and k["seen"] == 2 and k["since"] == "2023-11-14"
        # a signature entry wins over the pitfall's
        st.known_add("cuda-oom: CUDA out of memory", "https://tickets/2")
        assert st.known_info("cuda-oom: CUDA out of memory", "cuda-oom")["url"] == "https://tickets/2"
        assert st.known_add("cuda-oom", "https://tickets/3") is False      # replaced, not duplicated
        assert [k["url"] for k in st.known_list()] == ["https://tickets/3", "https://tickets/2"]
        assert st.known_remove("cuda-oom") == 1 and st.known_remove("cuda-oom") == 0


def test_records_since(db):
    with Store(db) as st:
        st.record_many([rec(str(i), t=1_700_000_000 + i * 86400) for i in range(5)])
        assert [r.content_hash for r in st.records(since=1_700_000_000 + 3 * 86400)] == ["3", "4"]


def test_resolve_url():
    assert resolve_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert resolve_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert resolve_url("/x/y.db") == "sqlite:////x/y.db"
    with pytest.raises(StoreError, match="unsupported store URL"):
        resolve_url("mysql://root:hunter2@h/db")
    try:
        resolve_url("mysql://root:hunter2@h/db")
    except StoreError as e:
        assert "hunter2" not in str(e)


def test_unreachable_postgres_is_one_line_without_password(tmp_path):
    with pytest.raises(StoreError) as ei:
        Store("postgresql://triage:s3cret@127.0.0.1:9/none")
    assert "s3cret" not in str(ei.value) and "\n" not in str(ei.value)


def test_store_path_is_a_directory(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        Store(str(tmp_path))


def test_job_id_and_content_hash(tmp_path):
    from triage.jobid import identify
    assert identify(["x.log"], "J1", env={}).job_id == "J1"
    assert identify(["x.log"], None, env={"SLURM_JOB_ID": "777", "TORCHELASTIC_RUN_ID": "r"}).job_id == "777"
    assert identify(["x.log"], None, env={"TORCHELASTIC_RUN_ID": "r"}).job_id == "r"
    assert identify(["x.log"], None, env={}).job_id == os.path.abspath("x.log")
    a = tmp_path / "a"
    a.mkdir()
    shutil.copy(SAMPLE, a / "rank0.log")
    b = tmp_path / "elsewhere" / "a"
    shutil.copytree(a, b)
    assert content_hash([str(a)]) == content_hash([str(b)])            # moved: the same job
    (b / "rank0.log").write_text(open(SAMPLE).read() + "one more line\n")
    assert content_hash([str(a)]) != content_hash([str(b)])


# --- the CLI ---------------------------------------------------------------------------------------
def run(args, input=None, env_extra=None):
    env = dict(ENV, **(env_extra or {}))
    return inproc.run(args, input=input, env=env, cwd=ROOT)       # in-process: tests/inproc.py


def test_cli_record_twice_and_stdin_is_one_record(db):
    """A job recorded twice is one record; the same log piped twice is one job (its id is its content's
    hash); piped with --job-id it is that job."""
    r1 = run(["analyze", SAMPLE, "--db", db, "-q"])
    r2 = run(["analyze", SAMPLE, "--record", "--db", db, "-q"])
    r3 = run(["analyze", "--db", db, "-q"], input=open(SAMPLE).read())
    r4 = run(["analyze", "--db", db, "-q"], input=open(SAMPLE).read())
    r5 = run(["analyze", "--db", db, "-q", "--job-id", "piped"], input=open(SAMPLE).read())
    assert {r.returncode for r in (r1, r2, r3, r4, r5)} == {1}, r1.stderr + r2.stderr + r3.stderr
    with Store(db) as st:
        rows = {r.job_id: r for r in st.records()}
    assert len(rows) == 3
    mine = rows[os.path.abspath(SAMPLE)]
    assert mine.primary == "moe-scope-conflict" and mine.first_failing_rank == 1
    assert json.loads(mine.paths) == [os.path.abspath(SAMPLE)]      # what `fleet recheck` reads again
    piped = [k for k in rows if k.startswith("stdin:")]
    assert len(piped) == 1 and rows[piped[0]].content_hash.startswith(piped[0][6:]) and "piped" in rows
    assert rows["piped"].paths == ""


def test_cli_job_id_from_slurm(tmp_path):
    """In a Slurm epilog: the job id and its requeue count from the environment; --job-id/--attempt win."""
    db = str(tmp_path / "t.db")
    run(["analyze", IMA, "--record", "--db", db], env_extra={"SLURM_JOB_ID": "424242"})
    run(["analyze", IMA, "--record", "--db", db], env_extra={"SLURM_JOB_ID": "424242", "SLURM_RESTART_COUNT": "1"})
    run(["analyze", IMA, "--record", "--db", db, "--job-id", "mine", "--attempt", "2"],
        env_extra={"SLURM_JOB_ID": "424242", "SLURM_RESTART_COUNT": "1"})
    with Store(db) as st:
        assert sorted(r.label for r in st.records()) == ["424242", "424242#1", "mine#2"]
    r = run(["analyze", IMA, "--record", "--db", db], env_extra={"SLURM_RESTART_COUNT": "x1"})
    assert r.returncode == 2 and r.stderr.strip() == \
        "triage: error: SLURM_RESTART_COUNT='x1' is not an attempt number (0, 1, 2, ...)"


def test_cli_known_issue_in_every_format(tmp_path):
    db = str(tmp_path / "t.db")
    assert run(["known", "add", "moe-scope-conflict", "https://jira.example.com/browse/TRAIN-9",
                "--title", "moe+router", "--db", db]).returncode == 0
    run(["analyze", SAMPLE, "--db", db, "-q"])
    text = run(["analyze", SAMPLE, "--db", db]).stdout
    assert "known issue: https://jira.example.com/browse/TRAIN-9 moe+router (seen 1 time since" in text
    d = json.loads(run(["analyze", SAMPLE, "--db", db, "--format", "json"]).stdout)
    assert d["known"]["url"] == "https://jira.example.com/browse/TRAIN-9" and d["known"]["seen"] == 1
    md = run(["analyze", SAMPLE, "--db", db, "--format", "markdown"]).stdout
    assert "| Known issue | [moe+router](<https://jira.example.com/browse/TRAIN-9>) (seen 1 time since" in md
    html = run(["analyze", SAMPLE, "--db", db, "--format", "html"]).stdout
    assert 'href="https://jira.example.com/browse/TRAIN-9"' in html
    # without a store nothing is looked up
    assert "known" not in json.loads(run(["analyze", SAMPLE, "--format", "json"]).stdout)
    # TRIAGE_DB alone looks up, without recording
    d = json.loads(run(["analyze", IMA, "--format", "json"], env_extra={"TRIAGE_DB": db}).stdout)
    assert "known" not in d
    with Store(db) as st:
        assert st.count() == 1


def test_cli_known_commands(tmp_path):
    db = str(tmp_path / "t.db")
    bad = run(["known", "add", "no-such-pitfall", "https://x/1", "--db", db])
    assert bad.returncode == 2 and "neither a pitfall id nor a job signature" in bad.stderr
    js = run(["known", "add", "cuda-oom", "javascript:alert(1)", "--db", db])
    assert js.returncode == 2 and "not an http(s) URL" in js.stderr
    sig = "unexplained-failure: RuntimeError: expected scalar type BFloat<n> but found Float"
    assert run(["known", "add", sig, "https://x/2", "--db", db]).returncode == 0
    lst = json.loads(run(["known", "list", "--format", "json", "--db", db]).stdout)
    assert [k["key"] for k in lst] == [sig] and lst[0]["seen"] == 0
    assert run(["known", "remove", sig, "--db", db]).returncode == 0
    gone = run(["known", "remove", sig, "--db", db])
    assert gone.returncode == 1 and "not a known issue" in gone.stderr


def test_cli_store_error_is_a_warning_after_the_report_and_exit_zero_keeps_epilog_green():
    url = "postgresql://triage:pw@127.0.0.1:9/x"
    r = run(["analyze", SAMPLE, "--db", url])
    assert r.returncode == 1 and "moe-scope-conflict" in r.stdout       # the analysis's own code, its report
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("triage: warning: store postgresql://triage:***@")
    assert r.stderr.rstrip().endswith("; the verdict was not recorded") and "pw@" not in r.stderr
    r = run(["analyze", SAMPLE, "--db", url, "--exit-zero"])
    assert r.returncode == 0 and "triage: warning: store" in r.stderr and "moe-scope-conflict" in r.stdout
    r = run(["analyze", SAMPLE, "--db", url, "--require-store"])
    assert r.returncode == 2 and "triage: warning: store" in r.stderr and "moe-scope-conflict" in r.stdout


# --- many writers at once --------------------------------------------------------------------------
def _job_logs(tmp_path, n):
    """N distinct job logs: the sample log plus a line naming the job (so each hashes apart)."""
    base = open(SAMPLE).read()
    paths = []
    for i in range(n):
        p = tmp_path / f"job-{i:02d}.log"
        p.write_text(base + f"job {i} done\n")
        paths.append(str(p))
    return paths


FORKRUN = os.path.join(ROOT, "tests", "forkrun.py")


def at_once(arg_lists):
    """`python -m triage ARGS` for every ARGS, all running at the same time, each its own process
    (tests/forkrun.py: forked from one interpreter that imported triage once): [(exit code, stderr)]."""
    p = subprocess.run([sys.executable, FORKRUN], input=json.dumps(arg_lists), cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = [tuple(x) for x in json.loads(p.stdout)]
    assert len(out) == len(arg_lists)
    return out


def test_32_concurrent_record_processes(db, tmp_path):
    """32 job epilogs at once (`triage analyze --record --exit-zero`): every verdict lands once;
    then the same 32 again: still 32 records."""
    Store(db).close()          # also proven below from nothing: see test_concurrent_first_open
    logs = _job_logs(tmp_path, 32)
    for _ in range(2):
        errs = at_once([["analyze", p, "--record", "--db", db, "--exit-zero", "-q", "--job-id", f"job-{i}"]
                        for i, p in enumerate(logs)])
        assert all(rc == 0 and not err for rc, err in errs), [e for e in errs if e != (0, "")]
        with Store(db) as st:
            rows = list(st.records())
        assert sorted(r.job_id for r in rows) == sorted(f"job-{i}" for i in range(32))
        assert len({r.content_hash for r in rows}) == 32


def test_concurrent_first_open(db, tmp_path):
    """16 processes opening a store that does not exist yet: it is created once, all record."""
    logs = _job_logs(tmp_path, 16)
    errs = at_once([["analyze", p, "--db", db, "-q", "--exit-zero"] for p in logs])
    assert all(rc == 0 and not err for rc, err in errs), [e for e in errs if e != (0, "")]
    with Store(db) as st:
        assert st.count() == 16 and st.version() == SCHEMA_VERSION
