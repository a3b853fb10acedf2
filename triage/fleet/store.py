"""Verdict store: one record per analysed job and the known-issue table.

SQLite by default (a file under the user's data dir; `--db PATH` or `TRIAGE_DB`), PostgreSQL for a
team's shared store (`--db postgresql://...`), both through SQLAlchemy Core (psycopg 3 for
PostgreSQL).  The schema is versioned (`triage_meta.schema_version`) and migrated forward on open,
under a lock (PostgreSQL: a transaction-level advisory lock; SQLite: BEGIN IMMEDIATE), so that
many processes opening a new store at once create it once.  Writers are safe together: SQLite in
WAL mode with a busy timeout and immediate transactions, PostgreSQL in transactions with an upsert
on the input's content hash -- the same input ingested twice is one record.

Before anything is written, the store is checked in a read-only transaction: a database holding
other tables and none of triage's (someone else's file or database) is refused, and so is a triage
store of a newer schema than this triage knows; neither is changed (not even SQLite's journal mode).

Waiting is bounded: every transaction may wait at most TRIAGE_DB_TIMEOUT seconds (default 5) in
all, for a lock (SQLite's busy timeout, PostgreSQL's lock_timeout) or for a server to answer (2 s a
connection attempt, retried with a back-off while the budget lasts; an authentication error, a
missing database or role, a malformed URL are never retried).

Times are stored as UTC epoch seconds (REAL / double precision): the same on both engines.
"""
from __future__ import annotations

import io
import math
import os
import re
import sys
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..errors import TriageError
from ..kinds import HEALTHY, UNEXPLAINED
from ..lazyre import lazy_re
from ..record import record
from .given import store_given  # noqa: F401 - (here before given.py: its callers import it from here too)

SCHEMA_VERSION = 3
DEFAULT_TIMEOUT_S = 5.0        # TRIAGE_DB_TIMEOUT: all the waiting one transaction may do, in seconds
MAX_TIMEOUT_S = 3600.0
CONNECT_TIMEOUT_S = 2          # PostgreSQL: one connection attempt (libpq's minimum: 2 s)
_ADVISORY_LOCK = 0x7472_6961   # "tria": serialises schema migrations on PostgreSQL
HASH_CHUNK = 1 << 20
RETRY_WAITS = (0.25, 0.5, 1.0, 2.0)   # seconds before each new attempt (the last repeats), while the budget lasts
# PostgreSQL errors worth another attempt: a server that is there but busy or restarting.  A server that
# is down -- the connection refused, no answer within one connect timeout (2 s, libpq's least), no route --
# is given up at once, so a store that is down costs an epilog about a second, not the whole budget (issue
# 24); anything else (a wrong password, a missing database or role, no pg_hba entry, a bad option) fails
# the same again.
_TRANSIENT_PG = lazy_re(r"(?i)too many clients|too many connections|starting up|shutting down|in recovery"
                           r"|server closed the connection|connection reset|terminating connection")
_TRANSIENT_SQLITE = lazy_re(r"(?i)database is locked|database table is locked")


class StoreError(TriageError):
    """A store that cannot be opened, read or written: one line for the user."""


# --- where the store is --------------------------------------------------------------------------
def data_dir() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "triage")


def default_db() -> str:
    return os.path.join(data_dir(), "triage.db")


def resolve_url(db: Optional[str]) -> str:
    """--db value (or TRIAGE_DB, or the default file) -> an SQLAlchemy URL.  A plain path is an
    SQLite file; postgresql:// and postgres:// use psycopg 3.  An '@' in the password (which
    SQLAlchemy would take for the end of it) is percent-encoded."""
    db = db or os.environ.get("TRIAGE_DB") or default_db()
    if db.startswith(("postgres://", "postgresql://")):
        return _at_in_password("postgresql+psycopg://" + db.split("://", 1)[1])
    if db.startswith("postgresql+"):
        return _at_in_password(db)
    if db.startswith("sqlite://"):
        return db
    if "://" in db:
        raise StoreError(f"unsupported store URL {shown(db)!r}: use a file path, sqlite:///PATH or postgresql://...")
    # a plain path is a file name as written: percent-encoded into the URL, as SQLAlchemy decodes it
    # (`my%41.db` is that file, never `myA.db`; a `?` or `#` in a name is no query)
    from urllib.parse import quote
    return "sqlite:///" + quote(os.path.abspath(os.path.expanduser(db)), safe="/~")


def _parts(rest: str) -> Tuple[int, int, int]:
    """In the part of a URL after '://': (where the password starts, where it ends at the '@' that
    ends the user's part) -- (-1, -1) without a password -- and where the query starts (its '?', or
    -1).  A password may hold '/', ':', '@' or '?': the user's part runs to the last '@' before the
    query; a query may hold '@' too."""
    q = rest.find("?")
    at = rest.rfind("@")
    if 0 <= q < at and "=" in rest[q:at]:       # that '@' is in the query; else the password holds a '?'
        at = rest.rfind("@", 0, q)
    if at >= 0 and ":" in rest[:at]:
        a, b = rest.index(":") + 1, at
    else:
        a = b = -1
    return a, b, rest.find("?", max(b, 0))


def _at_in_password(url: str) -> str:
    """The URL with each '@' of its password and query percent-encoded: SQLAlchemy would take the
    first for the end of the user's part (and show the rest as the host)."""
    scheme, rest = url.split("://", 1)
    a, b, q = _parts(rest)
    if q >= 0:
        rest = rest[:q] + rest[q:].replace("@", "%40")
    if a >= 0:
        rest = rest[:a] + rest[a:b].replace("@", "%40") + rest[b:]
    return f"{scheme}://{rest}"


_QUERY_PASSWORD = lazy_re(r"(?i)([?&](?:password|sslpassword)=)([^&]*)")


def _ambiguous(db: str) -> bool:
    """An '@' after a '?': a query holding '@', or a password holding '?' (and '='): which one
    cannot be told, so such a URL is never quoted in a message."""
    rest = db.split("://", 1)[1] if "://" in db else ""
    return 0 <= rest.find("?") < rest.rfind("@")


def shown(db: str) -> str:
    """The store as given, without its password, for messages: USER:PASSWORD@ and ?password=...
    are masked, also in a URL too broken to parse; a URL with an '@' after a '?' is shown as its
    scheme only."""
    if "://" not in db:
        return db
    scheme, rest = db.split("://", 1)
    if _ambiguous(db):
        return f"{scheme}://... (the URL of TRIAGE_DB or --db)"
    a, b, q = _parts(rest)
    if q >= 0:
        rest = rest[:q] + _QUERY_PASSWORD.sub(lambda m: m.group(1) + "***", rest[q:])
    if a >= 0:
        rest = rest[:a] + "***" + rest[b:]
    return f"{scheme}://{rest}"


def _secrets(db: str) -> List[str]:
    """The passwords a store URL holds (as written and percent-decoded), to scrub from messages."""
    from urllib.parse import unquote
    out: List[str] = []
    if "://" in db:
        rest = db.split("://", 1)[1]
        a, b, q = _parts(rest)
        if a >= 0:
            out.append(rest[a:b])
        if q >= 0:
            out += [m.group(2) for m in _QUERY_PASSWORD.finditer(rest[q:])]
    out += [unquote(p) for p in out]
    return sorted({p for p in out if len(p) >= 3}, key=len, reverse=True)


def db_timeout(env: Optional[Mapping[str, str]] = None) -> float:
    """TRIAGE_DB_TIMEOUT in seconds (default 5): all the waiting one store transaction may do."""
    raw = (os.environ if env is None else env).get("TRIAGE_DB_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not 0 < v <= MAX_TIMEOUT_S:
        raise StoreError(f"TRIAGE_DB_TIMEOUT={raw[:40]!r} is not a number of seconds (more than 0, at most "
                         f"{MAX_TIMEOUT_S:g})")
    return v


# --- what is stored ------------------------------------------------------------------------------
@record
class Record:
    """One analysed job's verdict.  A job is (job_id, attempt): analysing it again replaces its
    verdict (the old one kept in the history when it differs); the content hash only tells whether
    its log changed."""
    job_id: str
    job_time: float                   # when the job ended: its log's last timestamp, else its newest input's mtime
    outcome: str                      # healthy | pitfall | unexplained-failure
    primary: Optional[str]            # pitfall id of the root cause
    signature: Optional[str]          # job-level signature (verdict.Verdict.signature)
    title: str                        # the primary's title, or the unexplained error, or the summary
    first_failing_rank: Optional[int]
    blamed: Optional[str]             # the top suspect config key, when a baseline was given
    summary: str
    content_hash: str
    triage_version: str
    recorded_at: float = 0.0
    attempt: int = 0                  # requeue / restart count (jobid.identify)
    hosts: str = ""                   # the hosts the log names, space-separated
    log_start: Optional[float] = None  # the log's first and last timestamps (epoch seconds)
    log_end: Optional[float] = None
    paths: str = ""                   # the job's inputs (a JSON list of absolute paths or URLs): what recheck reads
    message_signature: Optional[str] = None   # the unexplained error's masked message signature (the old grouping)

    @property
    def group_signature(self) -> str:
        """What a fleet groups the job by (analyze's signature; for a record stored without one, its outcome
        and title): fleet's groups, its daily series and recheck read this one function."""
        return self.signature or (self.outcome if self.outcome == HEALTHY else f"{self.outcome}: {self.title}")

    @property
    def label(self) -> str:
        """The job as reports name it: its id, and its attempt when it is a requeue."""
        return self.job_id if not self.attempt else f"{self.job_id}#{self.attempt}"


def content_hash(paths: Sequence[str], stdin_digest: Optional[str] = None) -> str:
    """SHA-256 over the job's input bytes (each file's name relative to the job, then its bytes),
    so the same log analysed twice, from anywhere, is one record."""
    import hashlib  # (OpenSSL's: many bytes; imported only when a job is recorded)

    from ..inputs.remote import is_url, open_url
    from ..inputs.sources import InputError, expand_paths
    h = hashlib.sha256()
    files = expand_paths(paths)
    single = len(files) == 1
    if files == ["-"] and stdin_digest:
        return stdin_digest             # the same bytes piped or read from a file: one hash
    for p in files:
        if p == "-":
            h.update(b"<stdin>\0" + (stdin_digest or "").encode())
            continue
        if not single:
            h.update(_relname(p, paths).encode("utf-8", "surrogateescape") + b"\0")
        try:
            with (open_url(p) if is_url(p) else open(p, "rb")) as f:
                while True:
                    chunk = f.read(HASH_CHUNK)
                    if not chunk:
                        break
                    h.update(chunk)
        except (OSError, InputError):
            h.update(b"<unreadable>")
        if not single:
            h.update(b"\0")
    return h.hexdigest()


def _relname(p: str, roots: Sequence[str]) -> str:
    from ..inputs.digest import relname  # one definition: the scan folds the same hash (scan/digest.py)
    return relname(p, roots)


class _StdinDigest(io.RawIOBase):
    """SHA-256 of what is read from stdin, for the content hash of a piped log."""

    def __init__(self, raw):
        super().__init__()
        self.raw = raw
        import hashlib
        self.h = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self.raw.readinto(b)
        if n:
            self.h.update(memoryview(b)[:n])
        return n or 0

    def hexdigest(self) -> str:
        return self.h.hexdigest()


class hashing_stdin:
    """While active (and `on`), sys.stdin reads through a digest of its bytes; `as` gives a
    one-element list holding the hex digest once the block ends."""

    def __init__(self, on: bool):
        self.on = on
        self.out: List[Optional[str]] = [None]

    def __enter__(self) -> List[Optional[str]]:
        if self.on and sys.stdin is not None and hasattr(sys.stdin, "buffer"):
            self.saved = sys.stdin
            self.dig = _StdinDigest(sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer)
            sys.stdin = io.TextIOWrapper(io.BufferedReader(self.dig), encoding="utf-8", errors="replace")  # type: ignore[arg-type]
        else:
            self.on = False
        return self.out

    def __exit__(self, *exc) -> None:
        if self.on:
            self.out[0] = self.dig.hexdigest()
            sys.stdin = self.saved


def job_time(paths: Sequence[str]) -> float:
    from ..inputs.remote import is_url, mtime
    from ..inputs.sources import expand_paths
    best = 0.0
    for p in expand_paths(paths):
        if p == "-":
            return time.time()
        try:
            best = max(best, mtime(p) if is_url(p) else os.stat(p).st_mtime)
        except OSError:
            pass
    return best or time.time()


# --- the schema ----------------------------------------------------------------------------------
def _verdict_columns():
    from sqlalchemy import Column, Float, Integer, String, Text
    return [
        Column("content_hash", String(64), nullable=False),
        Column("job_id", Text, nullable=False),
        Column("attempt", Integer, nullable=False, server_default="0"),
        Column("job_time", Float, nullable=False),
        Column("recorded_at", Float, nullable=False),
        Column("outcome", String(32), nullable=False),
        Column("primary_pitfall", String(128)),
        Column("signature", Text),
        Column("title", Text),
        Column("first_failing_rank", Integer),
        Column("blamed_key", Text),
        Column("summary", Text),
        Column("triage_version", String(40)),
        Column("hosts", Text),
        Column("log_start", Float),
        Column("log_end", Float),
        Column("paths", Text),
        Column("message_signature", Text),
    ]


def _tables():
    from sqlalchemy import Column, Float, Index, Integer, MetaData, String, Table, Text, UniqueConstraint
    md = MetaData()
    meta = Table("triage_meta", md, Column("key", String(64), primary_key=True), Column("value", Text))
    # schema 3: a record is a job (job_id, attempt); the content hash is no longer unique
    verdicts = Table(
        "verdicts", md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        *_verdict_columns(),
        UniqueConstraint("job_id", "attempt", name="verdicts_job"),
        Index("verdicts_signature", "signature"),
        Index("verdicts_job_time", "job_time"),
        Index("verdicts_content_hash", "content_hash"),
    )
    known = Table(
        "known_issues", md,
        Column("key", String(512), primary_key=True),   # a signature, a pitfall id, or re:REGEX
        Column("url", Text, nullable=False),
        Column("title", Text),
        Column("added_at", Float, nullable=False),
    )
    history = Table(            # a job's earlier verdicts: re-analysed after its log grew, or rechecked
        "verdict_history", md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        *_verdict_columns(),
        Column("replaced_at", Float, nullable=False),
        Column("reason", String(32), nullable=False),     # reanalysed | recheck | migrated
        Index("verdict_history_job", "job_id", "attempt"),
    )
    return md, meta, verdicts, known, history


def _migrations():
    """Schema version -> the tables that version creates; applied in order, each once (version 3
    also moves the records of version 2, keyed by content hash, into the new verdicts table)."""
    return {
        1: ("triage_meta", "verdicts"),       # verdict records
        2: ("known_issues",),                 # known-issue links
        3: ("verdicts", "verdict_history"),   # one record per job (job id, attempt); earlier verdicts kept
    }


_V2_COLUMNS = ("content_hash", "job_id", "job_time", "recorded_at", "outcome", "primary_pitfall", "signature",
               "title", "first_failing_rank", "blamed_key", "summary", "triage_version")
_VERDICT_FIELDS = ("outcome", "primary_pitfall", "signature")      # a change of these is kept in the history


# --- the store -----------------------------------------------------------------------------------
class Store:
    """Open (creating or migrating) the store at DB (a path or URL; default: TRIAGE_DB, else the
    default file).  Use as a context manager or call close().  Every failure is a StoreError whose
    message is one line, "store <where>: <why>", without a password."""

    def __init__(self, db: Optional[str] = None, upto: int = SCHEMA_VERSION, timeout: Optional[float] = None,
                 existing: bool = False):
        given = db or os.environ.get("TRIAGE_DB") or default_db()
        self.shown = shown(given)
        self.ambiguous = _ambiguous(given)
        self.secrets = _secrets(given)
        self.engine: Any = None
        try:
            import sqlalchemy as sa
        except ImportError:   # pragma: no cover -- a declared dependency
            raise self._err("the verdict store needs SQLAlchemy: pip install 'SQLAlchemy>=2'") from None
        self.sa = sa
        try:
            self.timeout = db_timeout() if timeout is None else timeout
            self.url = resolve_url(given)
        except StoreError as e:
            raise self._err(str(e)) from None
        self.md, self.meta, self.verdicts, self.known, self.history = _tables()
        self.sqlite = self.url.startswith("sqlite")
        if existing and self.sqlite:          # a read-only command: a mistyped path is no new empty store
            from urllib.parse import unquote
            path = unquote(self.url[len("sqlite:///"):].split("?", 1)[0])
            if path and path != ":memory:" and not os.path.exists(path):
                raise self._err("no store there (nothing was ever recorded at this path): check the path, or "
                                "record verdicts first (triage analyze --record / triage fleet run)")
        self._deadline = time.monotonic() + self.timeout
        self._write = False           # the transaction being begun writes (SQLite: BEGIN IMMEDIATE)
        self._checked = False         # the store is triage's (or new): SQLite may be put in WAL mode
        self.engine = self._engine()
        have = self.check()
        if have < upto:
            self.migrate(upto)

    def _err(self, why: str) -> StoreError:
        for p in getattr(self, "secrets", ()):
            why = why.replace(p, "***")
        return StoreError(f"store {self.shown}: {why}")

    def _remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    # connection set-up
    def _engine(self):
        sa = self.sa
        try:
            url = sa.engine.make_url(self.url)
        except Exception as e:  # noqa: BLE001 -- its text may quote the whole URL, password and all
            port = re.match(r"invalid literal for int\(\) with base 10: ('.*')$", str(e))
            why = "cannot parse it" if not port else "the port is not a number" if self.ambiguous else \
                f"the port {port.group(1)} is not a number"
            raise self._err(f"not a valid store URL ({why}): use a file path, sqlite:///PATH or "
                            "postgresql://USER[:PASSWORD]@HOST[:PORT]/DB") from None
        return self._sqlite_engine(url) if self.sqlite else self._pg_engine(url)

    def _sqlite_engine(self, url):
        sa = self.sa
        from sqlalchemy.pool import NullPool
        self._sqlite_path(url)
        import warnings
        with warnings.catch_warnings():     # SQLAlchemy's warning (query arguments it ignores): one line
            warnings.simplefilter("error", sa.exc.SAWarning)
            try:
                eng = sa.create_engine(url, poolclass=NullPool, connect_args={"isolation_level": None})
            except sa.exc.SAWarning as w:
                why = " ".join(str(w).split("(Background on this")[0].split()).rstrip(".")
                raise self._err(f"not used as given: {why}") from None

        @sa.event.listens_for(eng, "do_connect")
        def _budget(dialect, rec, cargs, cparams):  # noqa: ANN001
            cparams["timeout"] = max(0.05, self._remaining())     # the busy timeout: what is left

        @sa.event.listens_for(eng, "connect")
        def _on_connect(dbapi_conn, _rec):  # noqa: ANN001
            if not self._checked:
                return                     # not known to be triage's yet: change nothing in it
            cur = dbapi_conn.cursor()
            try:                           # never wait for it: another open connection makes it fail,
                cur.execute("PRAGMA busy_timeout = 0")     # and the next open tries again
                cur.execute("PRAGMA journal_mode = WAL")
            except Exception:  # noqa: BLE001,S110
                pass
            cur.execute(f"PRAGMA busy_timeout = {int(max(0.05, self._remaining()) * 1000)}")
            cur.execute("PRAGMA synchronous = NORMAL")
            cur.close()

        @sa.event.listens_for(eng, "begin")
        def _on_begin(conn):  # noqa: ANN001
            # a writer takes the write lock now: no upgrade deadlock; a reader takes none
            conn.exec_driver_sql("BEGIN IMMEDIATE" if self._write else "BEGIN")

        return eng

    def _sqlite_path(self, url) -> None:
        """The SQLite file's directory made; a path no file can have refused (StoreError)."""
        path = url.database or ""
        if "\0" in path:
            raise self._err("its path holds a NUL byte (%00): give a file path")
        if path and path != ":memory:" and not url.query.get("uri"):
            d = os.path.dirname(os.path.abspath(path))
            try:
                os.makedirs(d, exist_ok=True)
            except OSError as e:
                raise self._err(f"cannot create the store's directory {d!r}: {e.strerror or e}") from None
            if os.path.isdir(path):
                raise self._err("it is a directory; give a file path")

    def _pg_engine(self, url):
        sa = self.sa
        from sqlalchemy.pool import NullPool
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise self._err("a PostgreSQL store needs psycopg 3: pip install 'triage[postgres]' "
                            "(or pip install 'psycopg[binary]')") from None
        opts = url.query.get("options") or ""
        opts = " ".join(opts) if isinstance(opts, tuple) else opts
        lock_ms = int(self.timeout * 1000)           # a lock (a migration's advisory lock, a row) waits no longer
        try:
            return sa.create_engine(url, poolclass=NullPool,
                                    connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "triage",
                                                  "options": f"{opts} -c lock_timeout={lock_ms}".strip()})
        except Exception as e:  # noqa: BLE001
            raise self._err(f"not a valid store URL ({type(e).__name__})") from None

    def _begin(self, write: bool = False):
        return _Tx(self, write)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # schema
    def version(self) -> int:
        with self._begin() as c:
            return self._version(c)

    def _version(self, c) -> int:
        """The store's schema version: 0 for an empty database; a database holding other tables and
        none of triage's, or a newer schema, is refused (StoreError)."""
        sa = self.sa
        ins = sa.inspect(c)
        names = set(ins.get_table_names()) | set(ins.get_view_names())
        if "triage_meta" not in names:
            if names:
                other = sorted(names)
                more = f", and {len(other) - 5} more" if len(other) > 5 else ""
                raise self._err(f"not a triage store: it holds other tables ({', '.join(other[:5])}{more}) and "
                                "none of triage's; nothing was written to it: give a new file, or an empty "
                                "database (or schema) for triage")
            return 0
        v = c.execute(sa.select(self.meta.c.value).where(self.meta.c.key == "schema_version")).scalar()
        try:
            have = int(v or 0)
        except ValueError:
            raise self._err(f"a garbled schema version {str(v)[:40]!r}") from None
        if have > SCHEMA_VERSION:
            from .. import __version__
            raise self._err(f"its schema version is {have}, newer than this triage ({__version__}) knows "
                            f"({SCHEMA_VERSION}); nothing was written to it: upgrade triage")
        return have

    def check(self) -> int:
        """Read the schema version, writing nothing (refusing a foreign or newer store); from then on
        the store may be written to."""
        v = self.version()
        self._checked = True
        return v

    def migrate(self, upto: int = SCHEMA_VERSION) -> int:
        """Bring the schema to version `upto` (each step once, under a lock); returns the version."""
        sa = self.sa
        with self._begin(write=True) as c:
            if not self.sqlite:
                c.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _ADVISORY_LOCK})
            have = self._version(c)             # again, under the lock: another process may have made it
            steps = _migrations()
            for v in range(have + 1, upto + 1):
                old_rows = self._take_v2(c) if v == 3 and have >= 1 else []
                for name in steps[v]:
                    self.md.tables[name].create(c, checkfirst=True)
                if old_rows:
                    self._put_v2(c, old_rows)
                self._set_version(c, v)
            return max(have, upto)

    def _take_v2(self, c) -> List[Dict[str, Any]]:
        """Schema 2 -> 3: read the records keyed by content hash and drop their table (its indexes
        too: the new table reuses their names)."""
        sa = self.sa
        cols = ", ".join(_V2_COLUMNS)
        rows = [dict(r) for r in c.execute(sa.text(f"SELECT {cols} FROM verdicts ORDER BY recorded_at, id")).mappings()]
        for ix in ("verdicts_signature", "verdicts_job_time"):
            c.execute(sa.text(f"DROP INDEX IF EXISTS {ix}"))
        c.execute(sa.text("DROP TABLE verdicts"))
        return rows

    def _put_v2(self, c, rows: Sequence[Dict[str, Any]]) -> None:
        """The schema-2 records as jobs: one per job id (attempt 0), the newest verdict kept and
        the earlier ones in the history; records of stdin ("<stdin>") are one job per content."""
        sa = self.sa
        latest: Dict[str, Dict[str, Any]] = {}
        older: List[Dict[str, Any]] = []
        for r in rows:                      # oldest first
            r = dict(r, attempt=0)
            if r["job_id"] == "<stdin>":
                r["job_id"] = f"stdin:{r['content_hash'][:16]}"
            if r["job_id"] in latest:
                older.append(latest[r["job_id"]])
            latest[r["job_id"]] = r
        now = time.time()
        if latest:
            c.execute(sa.insert(self.verdicts), list(latest.values()))
        if older:
            c.execute(sa.insert(self.history), [dict(r, replaced_at=now, reason="migrated") for r in older])

    def _set_version(self, c, v: int) -> None:
        sa = self.sa
        n = c.execute(sa.update(self.meta).where(self.meta.c.key == "schema_version").values(value=str(v))).rowcount
        if not n:
            c.execute(sa.insert(self.meta).values(key="schema_version", value=str(v)))

    # verdicts
    def record(self, rec: Record) -> bool:
        """Store one verdict; True when it is new, False when the same input was stored before
        (its verdict is then refreshed, its job id and time kept)."""
        return self.record_many([rec])[0]

    def record_many(self, recs: Sequence[Record], reason: str = "reanalysed") -> List[bool]:
        """Store verdicts, one per job (job id, attempt): True for a job never stored before.  A
        job stored before gets the new verdict; its old one goes to the history when the outcome,
        pitfall or signature changed (REASON says why: reanalysed, recheck)."""
        sa = self.sa
        v = self.verdicts
        out: List[bool] = []
        now = time.time()
        with self._begin(write=True) as c:
            for rec in recs:
                row = _row(rec, now)
                ins = (self._insert(v).values(**row).on_conflict_do_nothing(index_elements=["job_id", "attempt"])
                       .returning(v.c.id))
                if c.execute(ins).first() is not None:     # a new job (two writers of one job: one inserts)
                    out.append(True)
                    continue
                q = sa.select(v).where(v.c.job_id == row["job_id"], v.c.attempt == row["attempt"])
                old = c.execute(q if self.sqlite else q.with_for_update()).mappings().one()
                if any(old[k] != row[k] for k in _VERDICT_FIELDS):
                    hist = {k: old[k] for k in old.keys() if k != "id"}
                    c.execute(sa.insert(self.history).values(**hist, replaced_at=now, reason=reason[:32]))
                upd = {k: val for k, val in row.items() if k not in ("job_id", "attempt")}
                if not rec.paths:
                    upd.pop("paths")            # a job re-read from stdin keeps where its log was
                c.execute(sa.update(v).where(v.c.id == old["id"]).values(**upd))
                out.append(False)
        return out

    def verdict_of(self, job_id: str, attempt: int = 0) -> Optional[Record]:
        """The stored verdict of job (JOB_ID, ATTEMPT), or None."""
        sa = self.sa
        v = self.verdicts
        with self._begin() as c:
            row = c.execute(sa.select(v).where(v.c.job_id == job_id, v.c.attempt == attempt)).mappings().first()
        return _record(row) if row is not None else None

    def history_of(self, job_id: str, attempt: int = 0) -> List[Record]:
        """A job's earlier verdicts, oldest first."""
        sa = self.sa
        h = self.history
        with self._begin() as c:
            rows = c.execute(sa.select(h).where(h.c.job_id == job_id, h.c.attempt == attempt)
                             .order_by(h.c.replaced_at, h.c.id)).mappings().all()
        return [_record(r) for r in rows]

    def _insert(self, table):
        if self.sqlite:
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        return insert(table)

    def count(self) -> int:
        sa = self.sa
        with self._begin() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(self.verdicts)).scalar() or 0)

    def records(self, since: Optional[float] = None, until: Optional[float] = None) -> Iterator[Record]:
        sa = self.sa
        v = self.verdicts
        q = sa.select(v).order_by(v.c.job_time, v.c.id)
        if since is not None:
            q = q.where(v.c.job_time >= since)
        if until is not None:
            q = q.where(v.c.job_time < until)
        with self._begin() as c:
            rows = c.execute(q).mappings().all()
        for r in rows:
            yield _record(r)

    def seen(self, signatures: Iterable[str] = (), pitfalls: Iterable[str] = ()) -> Dict[str, Tuple[int, float, float]]:
        """Store-wide (count, first_seen, last_seen) per signature and per pitfall id."""
        sa = self.sa
        v = self.verdicts
        out: Dict[str, Tuple[int, float, float]] = {}
        sigs, pits = sorted(set(s for s in signatures if s)), sorted(set(p for p in pitfalls if p))
        with self._begin() as c:
            for col, keys in ((v.c.signature, sigs), (v.c.primary_pitfall, pits)):
                for i in range(0, len(keys), 500):
                    q = (sa.select(col, sa.func.count(), sa.func.min(v.c.job_time), sa.func.max(v.c.job_time))
                         .where(col.in_(keys[i:i + 500])).group_by(col))
                    for k, n, lo, hi in c.execute(q):
                        out[k] = (int(n), float(lo), float(hi))
        return out

    def signature_of(self, sid: str) -> Optional[str]:
        """The stored job signature whose short id (verdict.fingerprint.signature_id) is SID, or None."""
        from ..verdict.fingerprint import signature_id
        sa = self.sa
        v = self.verdicts
        with self._begin() as c:
            for (sig,) in c.execute(sa.select(v.c.signature).where(v.c.signature.is_not(None)).distinct()):
                if signature_id(sig) == sid:
                    return str(sig)
        return None

    # known issues
    def known_add(self, key: str, url: str, title: Optional[str] = None) -> bool:
        """Add or replace a known issue; True when it is new."""
        sa = self.sa
        k = self.known
        with self._begin(write=True) as c:
            existed = c.execute(sa.select(k.c.key).where(k.c.key == key)).first() is not None
            c.execute(self._insert(k).values(key=key, url=url, title=title, added_at=time.time())
                      .on_conflict_do_update(index_elements=["key"], set_={"url": url, "title": title}))
        return not existed

    def known_remove(self, key: str) -> int:
        sa = self.sa
        with self._begin(write=True) as c:
            return int(c.execute(sa.delete(self.known).where(self.known.c.key == key)).rowcount or 0)

    def known_list(self) -> List[Dict[str, Any]]:
        sa = self.sa
        with self._begin() as c:
            return [dict(r) for r in c.execute(sa.select(self.known).order_by(self.known.c.key)).mappings()]

    def known_for(self, signature: Optional[str], pitfall: Optional[str],
                  text: str = "", also: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
        """The known issue of a verdict: its signature's, else its pitfall's, else the first `re:` key
        whose regex finds the signature or TEXT (the error block); ALSO: see known_match."""
        return known_match(self.known_list() if (signature or pitfall) else [], signature, pitfall, text, also)

    def known_info(self, signature: Optional[str], pitfall: Optional[str],
                   text: str = "", also: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
        """{"key", "url", "title", "seen", "since"} for a verdict whose signature or pitfall is known
        (or that a `re:` key or a key of ALSO finds; "seen" then counts its signature)."""
        k = self.known_for(signature, pitfall, text, also)
        if k is None:
            return None
        if (k["key"].startswith(KNOWN_RE) or k["key"] in also) and signature:
            n, first, _last = self.seen(signatures=[signature]).get(signature, (0, 0.0, 0.0))
            return {"key": k["key"], "url": k["url"], "title": k["title"], "seen": n,
                    "since": day(first) if n else None}
        by_sig = k["key"] == signature
        stats = self.seen(signatures=[k["key"]] if by_sig else [], pitfalls=[] if by_sig else [k["key"]])
        n, first, _last = stats.get(k["key"], (0, 0.0, 0.0))
        return {"key": k["key"], "url": k["url"], "title": k["title"], "seen": n,
                "since": day(first) if n else None}


class _Tx:
    """A transaction with store errors turned into StoreError (one line, no password), begun within
    the store's time budget: a connection that fails for a reason that may pass (a server not
    answering, restarting, full; a lock held) is tried again after a back-off while the budget lasts."""

    def __init__(self, store: Store, write: bool):
        self.store = store
        self.write = write
        self.cm: Any = None

    def __enter__(self):
        st = self.store
        st._deadline = time.monotonic() + st.timeout
        attempt_s = 0.05 if st.sqlite else float(CONNECT_TIMEOUT_S)    # the least one more attempt may take
        waits = iter(RETRY_WAITS)
        wait = 0.0
        while True:
            st._write = self.write
            try:
                self.cm = st.engine.begin()
                return self.cm.__enter__()
            except Exception as e:  # noqa: BLE001
                wait = next(waits, wait)
                if not _transient(st, e) or st._remaining() < wait + attempt_s:
                    raise _store_error(st, e) from None
                time.sleep(wait)

    def __exit__(self, et, ev, tb):
        try:
            self.cm.__exit__(et, ev, tb)      # commits, or rolls back and re-raises what the body raised
        except Exception as e:  # noqa: BLE001
            raise _store_error(self.store, e) from None
        if ev is not None:                    # (contextlib hands back the body's own exception as "not handled")
            err = _store_error(self.store, ev)
            if err is not ev:
                raise err from None
        return False


def _transient(store: Store, e: BaseException) -> bool:
    if not isinstance(e, store.sa.exc.OperationalError):
        return False
    orig = getattr(e, "orig", None) or e
    return bool((_TRANSIENT_SQLITE if store.sqlite else _TRANSIENT_PG).search(str(orig)))


def _store_error(store: Store, e: BaseException) -> BaseException:
    if isinstance(e, StoreError):
        return e
    sa = store.sa
    if isinstance(e, (sa.exc.SQLAlchemyError, OSError)) or type(e).__module__.startswith(("sqlite3", "psycopg")):
        orig = getattr(e, "orig", None) or e
        text = " ".join(str(orig).split())       # libpq's messages span lines: one line
        msg = text or type(orig).__name__
        if "timeout expired" in msg:
            msg += f" (gave up within TRIAGE_DB_TIMEOUT={store.timeout:g} s)"
        elif "readonly database" in msg:
            msg += " (the store's file, or its directory, is read-only)"
        elif _TRANSIENT_SQLITE.search(msg):
            msg += f" (another process holds its lock; gave up within TRIAGE_DB_TIMEOUT={store.timeout:g} s)"
        from ..redact import redact
        return store._err(redact(msg)[:300])
    return e


def _row(rec: Record, now: float) -> Dict[str, Any]:
    return {"content_hash": rec.content_hash, "job_id": rec.job_id[:1000], "attempt": int(rec.attempt),
            "job_time": float(rec.job_time), "recorded_at": rec.recorded_at or now, "outcome": rec.outcome,
            "primary_pitfall": rec.primary, "signature": rec.signature, "title": (rec.title or "")[:2000],
            "first_failing_rank": rec.first_failing_rank, "blamed_key": rec.blamed,
            "summary": (rec.summary or "")[:2000], "triage_version": rec.triage_version,
            "hosts": (rec.hosts or "")[:2000], "log_start": rec.log_start, "log_end": rec.log_end,
            "paths": (rec.paths or "")[:8000], "message_signature": rec.message_signature}


def _record(r: Any) -> Record:
    return Record(job_id=r["job_id"], job_time=float(r["job_time"]), outcome=r["outcome"], primary=r["primary_pitfall"],
                  signature=r["signature"], title=r["title"] or "", first_failing_rank=r["first_failing_rank"],
                  blamed=r["blamed_key"], summary=r["summary"] or "", content_hash=r["content_hash"],
                  triage_version=r["triage_version"] or "", recorded_at=float(r["recorded_at"]),
                  attempt=int(r["attempt"] or 0), hosts=r["hosts"] or "", log_start=r["log_start"],
                  log_end=r["log_end"], paths=r["paths"] or "", message_signature=r["message_signature"])


def day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))



def record_of(a: Any, paths: Sequence[str], identity: Any, digest: str) -> Record:
    """The verdict record of an analysis (verdict.Analysis) of the job at PATHS, whose identity is
    IDENTITY (jobid.JobIdentity; a plain string is a job id, attempt 0)."""
    import json

    from .. import __version__
    from ..redact import redact
    v = a.verdict                      # the record is the verdict's fields, nothing re-derived
    top = a.config.blamed if a.config is not None else None
    blamed = top.key if top is not None else None
    job_id, attempt = (identity, 0) if isinstance(identity, str) else (identity.job_id, identity.attempt)
    job = getattr(a, "job", None)      # the report's job header (hosts, the log's time span), when made
    start, end = getattr(job, "log_start", None), getattr(job, "log_end", None)
    where = [p if p == "-" or "://" in p else os.path.abspath(p) for p in paths]
    msg_sig = getattr(v, "message_signature", None)
    from ..unicode import utf8_safe as ok  # (a job id or host of bytes that are no UTF-8: U+FFFD)
    return Record(job_id=ok(redact(job_id)), job_time=end or job_time(paths), outcome=v.outcome,
                  primary=v.primary.pitfall if v.primary is not None else None,
                  signature=ok(redact(v.signature)) if v.signature else None, title=ok(redact(v.title)),
                  first_failing_rank=v.first_rank, blamed=blamed, summary=ok(redact(v.summary)),
                  content_hash=digest, triage_version=__version__, attempt=attempt,
                  hosts=ok(" ".join(getattr(job, "hosts", ()) or ())), log_start=start, log_end=end,
                  paths=json.dumps(where) if "-" not in where else "",
                  message_signature=ok(redact(msg_sig)) if msg_sig else None)


KNOWN_RE = "re:"      # a known-issue key "re:REGEX": found in a job's signature or error block (elastic-recheck)


def known_match(known: Sequence[Dict[str, Any]], signature: Optional[str], pitfall: Optional[str],
                text: str = "", also: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
    """The known issue (a row of the known table) of a verdict: the row keyed by its signature, else
    by a signature of ALSO (an unexplained failure's message signature: a known issue keyed by the
    signature it had before issue 24's grouping, verdict/groupkey.py), else by its pitfall, else the
    first `re:` row (in key order) whose regex finds the signature, one of ALSO or TEXT."""
    import regex as _regex
    table = {r["key"]: r for r in known}
    for key in (signature, *also, pitfall):
        if key and key in table:
            return table[key]
    if not signature:
        return None
    for r in sorted(known, key=lambda r: r["key"]):
        if r["key"].startswith(KNOWN_RE):
            try:
                rx = _regex.compile(r["key"][len(KNOWN_RE):])
                if (any(rx.search(x, timeout=0.05) for x in (signature, *also))
                        or (text and rx.search(text[:20000], timeout=0.05))):
                    return r
            except (_regex.error, ValueError, TimeoutError):
                continue
    return None


def known_key_error(key: str, extra_ids: Sequence[str] = ()) -> Optional[str]:
    """Why KEY cannot be a known-issue key (a pitfall id -- shipped, or of EXTRA_IDS, the user's
    --patterns -- or a job signature), or None; a near miss of an id says which one was meant."""
    import difflib

    from ..taxonomy import IDS
    ids = set(IDS) | set(extra_ids)
    if not key.strip():
        return "the key is empty: give a pitfall id or a signature"
    from ..unicode import utf8_safe
    safe = utf8_safe(key)
    if safe != key:
        return f"{safe!r}: holds bytes that are no UTF-8 text"
    if key.startswith(KNOWN_RE):
        import regex as _regex

        from ..match.rx import risky
        body = key[len(KNOWN_RE):]
        if not body:
            return "the regex after 're:' is empty"
        try:
            _regex.compile(body)
        except (_regex.error, ValueError) as e:   # (ValueError: flags that contradict, e.g. (?a)(?u))
            return f"{key!r}: not a valid regex ({e})"
        why = risky(body)
        return f"{key!r}: {why}" if why else None
    if key in ids:
        return None
    head = key.split(": ", 1)[0]
    if ": " in key and (head in ids or head == UNEXPLAINED):
        return None
    near = difflib.get_close_matches(head if ": " in key else key, sorted(ids), n=1, cutoff=0.75)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return (f"{key!r} is neither a pitfall id nor a job signature ('<pitfall>: <title>' or "
            f"'unexplained-failure: <error>', as the JSON's `signature` or `triage fleet` shows it){hint}")


def url_error(url: str) -> Optional[str]:
    if not url.startswith(("https://", "http://")) or any(ch.isspace() for ch in url) or len(url) > 2000:
        return f"{url[:80]!r} is not an http(s) URL"
    return None
