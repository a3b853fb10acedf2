"""The verdict store under faults (issue 23), each case built for real: a read-only SQLite file, a
file of someone else's, a malformed URL, a store locked by another connection, a TCP port that
accepts and never answers, the real PostgreSQL server (tests/pgserver.py) with a wrong password, a
triage store of a newer schema.

The contract: the report always comes first (stdout or -o) and the exit code is the analysis's own;
a store that fails is then one warning line on stderr, exit 2 only with --require-store.  Commands
whose whole job is the store (known, fleet report) fail in one line, exit 2.  Waiting is bounded by
TRIAGE_DB_TIMEOUT; nothing is written into a database that is not triage's, or is a newer triage's;
no message shows a password."""
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from triage.fleet.store import SCHEMA_VERSION, Record, Store, StoreError
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")      # a moe-scope-conflict: exit 1
VERDICT = "rank 1 failed first with moe-scope-conflict"
ENV = {k: v for k, v in os.environ.items()
       if k not in ("TRIAGE_DB", "TRIAGE_DB_TIMEOUT", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "TRIAGE_DEBUG")}
NOT_RECORDED = "; the verdict was not recorded"


def triage(*args, env=None, prefix=()):
    """`python -m triage ARGS`: in this process (tests/inproc.py), or a subprocess under PREFIX (setpriv)."""
    t = time.monotonic()
    if prefix:
        r = subprocess.run([*prefix, sys.executable, "-m", "triage", *args], capture_output=True, text=True, cwd=ROOT,
                           env=dict(ENV, **(env or {})), timeout=300)
    else:
        r = inproc.run(args, env=dict(ENV, **(env or {})), cwd=ROOT)
    r.elapsed = time.monotonic() - t
    return r


def one_warning(r, *needles):
    """The store's one warning line, after the report: no traceback, no internal error."""
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("triage: warning: store "), r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr
    return r.stderr


def one_error(r, *needles):
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("triage: error: store "), r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def schema(path):
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return c.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        c.close()


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def rec(h="h1"):
    return Record(job_id="j", job_time=1_700_000_000.0, outcome="pitfall", primary="cuda-oom",
                  signature="cuda-oom: CUDA out of memory", title="t", first_failing_rank=0, blamed=None,
                  summary="s", content_hash=h, triage_version="0")


# --- 1. a store that fails is a warning after the report ------------------------------------------
def _without_dac_override():
    """As root, file modes bind only without CAP_DAC_OVERRIDE: run triage without it (setpriv)."""
    if os.geteuid() != 0:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: a read-only file cannot be made read-only for root")
    caps = "-dac_override,-dac_read_search,-fowner"
    return ("setpriv", "--bounding-set", caps, "--inh-caps", caps, "--")


def test_read_only_sqlite_store_is_a_warning_after_the_report(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    db = str(d / "triage.db")
    with Store(db) as st:
        st.known_add("moe-scope-conflict", "https://t/1")
    before = digest(db)
    os.chmod(db, 0o444)
    os.chmod(d, 0o555)
    ro = _without_dac_override()
    try:
        r = triage("analyze", SAMPLE, "--record", "--db", db, "-q", prefix=ro)
        assert r.returncode == 1 and r.stdout.startswith("triage: " + VERDICT)     # the analysis's own code
        one_warning(r, db, "read-only", NOT_RECORDED)
        r = triage("analyze", SAMPLE, "--record", "--db", db, "-q", "--exit-zero", prefix=ro)
        assert r.returncode == 0 and VERDICT in r.stdout
        one_warning(r, "read-only")
        r = triage("analyze", SAMPLE, "--record", "--db", db, "-q", "--require-store", prefix=ro)
        assert r.returncode == 2 and VERDICT in r.stdout                         # still the report first
        one_warning(r, "read-only")
        out = tmp_path / "report.json"                                            # -o: written as usual
        r = triage("analyze", SAMPLE, "--db", db, "-o", str(out), prefix=ro)
        assert r.returncode == 1 and json.loads(out.read_text())["outcome"] == "pitfall"
        lines = r.stderr.splitlines()
        assert len(lines) == 2 and "json report written to" in lines[0] and lines[1].startswith("triage: warning")
        one_error(triage("known", "add", "cuda-oom", "https://t/2", "--db", db, prefix=ro), "read-only")
    finally:
        os.chmod(d, 0o755)
        os.chmod(db, 0o644)
    assert digest(db) == before


def test_malformed_postgresql_url_is_a_warning_not_an_internal_error():
    url = "postgresql://u:pw9@host:notaport/db"
    r = triage("analyze", SAMPLE, "--db", url, "-q", "--exit-zero")
    assert r.returncode == 0 and VERDICT in r.stdout
    w = one_warning(r, "postgresql://u:***@host:notaport/db", "the port 'notaport' is not a number", NOT_RECORDED)
    assert "pw9" not in w and "internal error" not in w
    r = triage("analyze", SAMPLE, "--db", url, "-q")
    assert r.returncode == 1 and VERDICT in r.stdout
    one_warning(r, "not a number")
    r = triage("analyze", SAMPLE, "--db", url, "-q", "--exit-zero", "--require-store")     # asked for: it fails
    assert r.returncode == 2 and VERDICT in r.stdout
    one_warning(r, "not a number")
    for cmd in (["known", "list"], ["known", "add", "cuda-oom", "https://t/1"], ["fleet", "report"]):
        one_error(triage(*cmd, "--db", url), "not a valid store URL")


def test_fleet_run_store_failure_is_a_warning_after_the_view(tmp_path):
    foreign = str(tmp_path / "app.db")
    c = sqlite3.connect(foreign)
    c.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT)")
    c.commit()
    c.close()
    r = triage("fleet", SAMPLE, "--db", foreign, "--format", "json", "-j", "1")
    assert r.returncode == 0
    assert json.loads(r.stdout)["groups"][0]["primary"] == "moe-scope-conflict"
    one_warning(r, "not a triage store", "; the verdicts were not recorded")
    r = triage("fleet", SAMPLE, "--db", foreign, "-j", "1", "--require-store")
    assert r.returncode == 2 and "moe-scope-conflict" in r.stdout
    one_warning(r, "not a triage store")
    one_error(triage("fleet", "report", "--db", foreign), "not a triage store")


def test_bad_triage_db_timeout_is_a_warning(tmp_path):
    r = triage("analyze", SAMPLE, "--db", str(tmp_path / "t.db"), "-q", env={"TRIAGE_DB_TIMEOUT": "soon"})
    assert r.returncode == 1 and VERDICT in r.stdout
    one_warning(r, "TRIAGE_DB_TIMEOUT='soon' is not a number of seconds")


# --- 2. bounded waiting -----------------------------------------------------------------------------
def test_locked_sqlite_store_gives_up_within_the_budget(tmp_path):
    """Another connection holds an exclusive transaction: triage waits TRIAGE_DB_TIMEOUT (2 s), not 4 x 60 s."""
    db = str(tmp_path / "triage.db")
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        r = triage("analyze", SAMPLE, "--record", "--db", db, "-q", env={"TRIAGE_DB_TIMEOUT": "2"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.elapsed < 2 + 3, r.elapsed
    assert r.returncode == 1 and VERDICT in r.stdout
    one_warning(r, "database is locked", "TRIAGE_DB_TIMEOUT=2", NOT_RECORDED)
    with Store(db) as st:
        assert st.count() == 0                  # and it is true: nothing was recorded


def test_lock_released_within_the_budget_is_waited_for(tmp_path):
    db = str(tmp_path / "triage.db")
    st = Store(db, timeout=20)
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    released = threading.Event()

    def release():
        time.sleep(1.0)
        holder.execute("ROLLBACK")
        released.set()

    t = threading.Thread(target=release)
    t.start()
    try:
        assert st.record(rec()) is True         # waited for the lock, then wrote
        assert released.is_set()                # (it could not have written before)
        assert st.count() == 1
    finally:
        t.join()
        holder.close()
        st.close()


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never answers a byte."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    held, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1], held
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()


def test_postgresql_server_that_never_answers_gives_up_within_the_budget(silent_server):
    port, held = silent_server
    r = triage("analyze", SAMPLE, "--db", f"postgresql://triage:s3cret-pw@127.0.0.1:{port}/triage", "-q",
               env={"TRIAGE_DB_TIMEOUT": "3"})
    assert r.elapsed < 3 + 3, r.elapsed
    assert r.returncode == 1 and VERDICT in r.stdout
    w = one_warning(r, "connection timeout expired", "TRIAGE_DB_TIMEOUT=3", NOT_RECORDED)
    assert "s3cret-pw" not in w
    assert len(held) >= 1                       # it did connect, and got no answer
    t = time.monotonic()
    with pytest.raises(StoreError, match="timeout expired"):
        Store(f"postgresql://triage@127.0.0.1:{port}/triage")          # the default budget: 5 s
    assert time.monotonic() - t < 5 + 3


@pytest.fixture(scope="module")
def pg_password(pg_server):
    """A role of the test server that must give its password (scram-sha-256), owning database NAME:
    (url without the password, password)."""
    import psycopg
    role, pw = f"pwuser{os.getpid()}", "right/p@ss:word?"
    with psycopg.connect(pg_server.url, autocommit=True) as c:
        c.execute("SET password_encryption = 'scram-sha-256'")
        c.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{pw}'")
        c.execute(f"CREATE DATABASE {role} OWNER {role}")
        hba = c.execute("SHOW hba_file").fetchone()[0]
        with open(hba) as f:
            rules = f.read()
        with open(hba, "w") as f:
            f.write(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + rules)
        c.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 30
    while True:                                 # the reload is asynchronous: until the rule holds
        try:
            psycopg.connect(f"host=127.0.0.1 port={pg_server.port} user={role} dbname={role}").close()
        except psycopg.OperationalError:
            break
        assert time.monotonic() < deadline, "pg_hba.conf reload did not take"
        time.sleep(0.1)
    return f"127.0.0.1:{pg_server.port}/{role}", role, pw


def _auth_failures(pg_server, role):
    with open(os.path.join(pg_server.root, "server.log"), errors="replace") as f:
        return f.read().count(f'password authentication failed for user "{role}"')


def test_wrong_password_is_one_attempt_and_never_shown(pg_server, pg_password):
    where, role, right = pg_password
    with Store(f"postgresql://{role}:{right}@{where}") as st:     # the right one, '/', '@', ':', '?' and all
        assert st.version() == SCHEMA_VERSION
    wrong = "wr0ng/pa@ss"
    before = _auth_failures(pg_server, role)
    r = triage("analyze", SAMPLE, "--db", f"postgresql://{role}:{wrong}@{where}", "-q")
    assert r.returncode == 1 and VERDICT in r.stdout
    w = one_warning(r, f"postgresql://{role}:***@{where}", "password authentication failed", NOT_RECORDED)
    for part in (wrong, "wr0ng", "pa@ss", "ss@"):
        assert part not in w
    assert _auth_failures(pg_server, role) == before + 1        # one attempt, never retried
    r = triage("known", "list", "--db", f"postgresql://{role}@{where}?password={wrong}")
    one_error(r, "password authentication failed", "store postgresql://... ")      # an '@' after '?': unquoted
    assert "wr0ng" not in r.stderr and "pa@ss" not in r.stderr
    r = triage("known", "list", "--db", f"postgresql://{role}@{where}?password=wr0ng/pass")
    one_error(r, "password authentication failed", "?password=***")
    assert "wr0ng" not in r.stderr
    assert _auth_failures(pg_server, role) == before + 3


@pytest.mark.parametrize("url, secret", [
    ("postgresql://svc:PASSw0rd@127.0.0.1:9/x", "PASSw0rd"),
    ("postgresql://svc@127.0.0.1:9/x?sslmode=disable&password=hunter22", "hunter22"),
    ("postgresql://svc:pa/ss/w0rd@127.0.0.1:9/x", "ss/w0rd"),
    ("postgresql://svc:p@ss@w0rd@127.0.0.1:9/x", "ss@w0rd"),
    ("postgresql://svc@127.0.0.1:9/x?password=a/b@c0de", "c0de"),
    ("postgresql://svc:p@ss@w0rd@127.0.0.1:notaport/x", "w0rd"),
    ("postgresql://svc:longsecret?x=y@127.0.0.1:9/x", "longsecret"),    # '?' and '=' in it: never quoted
])
def test_no_message_shows_a_password(url, secret):
    env = {"TRIAGE_DB_TIMEOUT": "1"}            # port 9 refuses: no second attempt within 1 s
    r = triage("analyze", SAMPLE, "--db", url, "-q", env=env)
    assert r.returncode == 1
    one_warning(r, NOT_RECORDED)
    assert secret not in r.stderr and secret not in r.stdout
    r = triage("known", "list", "--db", url, env=env)
    assert r.returncode == 2 and secret not in r.stderr


# --- 3. a foreign or newer database is refused before anything is written ---------------------------
def test_foreign_sqlite_file_is_refused_and_left_unchanged(tmp_path):
    db = str(tmp_path / "places.sqlite")
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    c.execute("CREATE TABLE moz_bookmarks (id INTEGER PRIMARY KEY, fk INTEGER)")
    c.execute("INSERT INTO moz_places (url) VALUES ('https://example.com')")
    c.commit()
    c.close()
    tables, before = schema(db), digest(db)
    r = triage("analyze", SAMPLE, "--record", "--db", db, "-q", "--exit-zero")
    assert r.returncode == 0 and VERDICT in r.stdout
    one_warning(r, "not a triage store", "moz_bookmarks, moz_places", NOT_RECORDED)
    one_error(triage("known", "add", "cuda-oom", "https://t/1", "--db", db), "not a triage store")
    one_error(triage("known", "list", "--db", db), "not a triage store")
    one_error(triage("fleet", "report", "--db", db), "not a triage store")
    assert schema(db) == tables                 # no table added
    assert digest(db) == before                 # not a byte changed (not even the journal mode)
    assert sorted(os.listdir(tmp_path)) == ["places.sqlite"]


def test_foreign_postgresql_database_is_refused_and_left_unchanged(pg_url):
    import psycopg
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("CREATE TABLE invoices (id serial PRIMARY KEY, total numeric)")
    r = triage("analyze", SAMPLE, "--db", pg_url, "-q")
    assert r.returncode == 1 and VERDICT in r.stdout
    one_warning(r, "not a triage store", "(invoices)", NOT_RECORDED)
    with psycopg.connect(pg_url) as c:
        names = [n for (n,) in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    assert names == ["invoices"]
    # a schema of its own in that database is the way: the user's options are kept beside triage's
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("CREATE SCHEMA triage_store")
    own = pg_url + "?options=-csearch_path%3Dtriage_store"
    r = triage("analyze", SAMPLE, "--db", own, "-q")
    assert r.returncode == 1 and r.stderr == ""
    with Store(own, timeout=4) as st:
        assert st.count() == 1
        with st.engine.connect() as c:
            assert c.execute(st.sa.text("SHOW lock_timeout")).scalar() == "4s"
    with psycopg.connect(pg_url) as c:
        assert [n for (n,) in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")] == ["invoices"]


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_newer_schema_is_refused_naming_both_versions(engine, tmp_path, request):
    from triage import __version__
    db = str(tmp_path / "triage.db") if engine == "sqlite" else request.getfixturevalue("pg_url")
    with Store(db) as st:
        st.record(rec())
        with st.engine.begin() as c:            # as a newer triage would leave it
            c.execute(st.sa.update(st.meta).values(value=str(SCHEMA_VERSION + 1)))
    if engine == "sqlite":
        c = sqlite3.connect(db)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.close()
        before = digest(db)
    r = triage("analyze", SAMPLE, "--record", "--db", db, "-q")
    assert r.returncode == 1 and VERDICT in r.stdout
    one_warning(r, f"its schema version is {SCHEMA_VERSION + 1}, newer than this triage ({__version__}) knows "
                   f"({SCHEMA_VERSION})", NOT_RECORDED)
    one_error(triage("known", "list", "--db", db), f"schema version is {SCHEMA_VERSION + 1}")
    if engine == "sqlite":
        assert digest(db) == before
    import sqlalchemy as sa
    from triage.fleet.store import resolve_url
    eng = sa.create_engine(resolve_url(db))
    with eng.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM verdicts")).scalar() == 1
        assert c.execute(sa.text("SELECT value FROM triage_meta")).scalar() == str(SCHEMA_VERSION + 1)
    eng.dispose()


def test_store_made_by_an_earlier_triage_still_opens(tmp_path):
    """A schema-1 store as triage 0.4.0 made it (rollback journal, no known_issues): opened, migrated, recorded."""
    db = str(tmp_path / "old.db")
    c = sqlite3.connect(db)
    c.executescript("""
        CREATE TABLE triage_meta ("key" VARCHAR(64) NOT NULL, value TEXT, PRIMARY KEY ("key"));
        CREATE TABLE verdicts (id INTEGER NOT NULL, content_hash VARCHAR(64) NOT NULL, job_id TEXT NOT NULL,
            job_time FLOAT NOT NULL, recorded_at FLOAT NOT NULL, outcome VARCHAR(32) NOT NULL,
            primary_pitfall VARCHAR(128), signature TEXT, title TEXT, first_failing_rank INTEGER, blamed_key TEXT,
            summary TEXT, triage_version VARCHAR(40), PRIMARY KEY (id), UNIQUE (content_hash));
        CREATE INDEX verdicts_signature ON verdicts (signature);
        CREATE INDEX verdicts_job_time ON verdicts (job_time);
        INSERT INTO triage_meta VALUES ('schema_version', '1');
        INSERT INTO verdicts (content_hash, job_id, job_time, recorded_at, outcome) VALUES ('h0', 'old', 1, 1, 'healthy');
    """)
    c.commit()
    c.close()
    r = triage("analyze", SAMPLE, "--record", "--db", db, "-q")
    assert r.returncode == 1 and r.stderr == ""
    with Store(db) as st:
        assert st.version() == SCHEMA_VERSION and st.count() == 2
    c = sqlite3.connect(db)
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"     # triage's now: WAL for many writers
    c.close()
