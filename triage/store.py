"""Verdict store: one record per analysed job and the known-issue table.

SQLite by default (a file under the user's data dir; `--db PATH` or `TRIAGE_DB`), PostgreSQL for a
team's shared store (`--db postgresql://...`), both through SQLAlchemy Core (psycopg 3 for
PostgreSQL).  The schema is versioned (`triage_meta.schema_version`) and migrated forward on open,
under a lock (PostgreSQL: a transaction-level advisory lock; SQLite: BEGIN IMMEDIATE), so that
many processes opening a new store at once create it once.  Writers are safe together: SQLite in
WAL mode with a busy timeout and immediate transactions, PostgreSQL in transactions with an upsert
on the input's content hash -- the same input ingested twice is one record.

Times are stored as UTC epoch seconds (REAL / double precision): the same on both engines.
"""
from __future__ import annotations

import hashlib
import io
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from .errors import TriageError

SCHEMA_VERSION = 2
BUSY_TIMEOUT_S = 60            # SQLite: how long a writer waits for another one's lock
CONNECT_TIMEOUT_S = 10         # PostgreSQL: how long a connection attempt may take
_ADVISORY_LOCK = 0x7472_6961   # "tria": serialises schema migrations on PostgreSQL
HASH_CHUNK = 1 << 20
CONNECT_RETRIES = (0.5, 1.0, 2.0)   # seconds to wait before each new attempt to connect


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
    SQLite file; postgresql:// and postgres:// use psycopg 3."""
    db = db or os.environ.get("TRIAGE_DB") or default_db()
    if db.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + db.split("://", 1)[1]
    if db.startswith("postgresql+"):
        return db
    if db.startswith("sqlite://"):
        return db
    if "://" in db:
        raise StoreError(f"unsupported store URL {_safe(db)!r}: use a file path, sqlite:///PATH or postgresql://...")
    return "sqlite:///" + os.path.abspath(os.path.expanduser(db))


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 -- a URL too broken to parse: show only its scheme
        return url.split("://", 1)[0] + "://..."


def store_given(db: Optional[str], record: bool = False) -> bool:
    """Whether the user asked for a store (--db, --record, or TRIAGE_DB in the environment)."""
    return bool(db or record or os.environ.get("TRIAGE_DB"))


# --- what is stored ------------------------------------------------------------------------------
@dataclass
class Record:
    """One analysed job's verdict."""
    job_id: str
    job_time: float                   # when the job ended: its newest input's mtime (now for stdin)
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


def content_hash(paths: Sequence[str], stdin_digest: Optional[str] = None) -> str:
    """SHA-256 over the job's input bytes (each file's name relative to the job, then its bytes),
    so the same log analysed twice, from anywhere, is one record."""
    from .sources import expand_paths
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
            with open(p, "rb") as f:
                while True:
                    chunk = f.read(HASH_CHUNK)
                    if not chunk:
                        break
                    h.update(chunk)
        except OSError:
            h.update(b"<unreadable>")
        if not single:
            h.update(b"\0")
    return h.hexdigest()


def _relname(p: str, roots: Sequence[str]) -> str:
    for r in roots:
        if r != "-" and os.path.isdir(r):
            rel = os.path.relpath(p, r)
            if not rel.startswith(".."):
                return rel
    return os.path.basename(p)


class _StdinDigest(io.RawIOBase):
    """SHA-256 of what is read from stdin, for the content hash of a piped log."""

    def __init__(self, raw):
        super().__init__()
        self.raw = raw
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
    from .sources import expand_paths
    best = 0.0
    for p in expand_paths(paths):
        if p == "-":
            return time.time()
        try:
            best = max(best, os.stat(p).st_mtime)
        except OSError:
            pass
    return best or time.time()


def job_id_for(paths: Sequence[str], given: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> str:
    """--job-id, else the scheduler's id (SLURM_JOB_ID, TORCHELASTIC_RUN_ID), else the path."""
    if given:
        return given
    env = os.environ if env is None else env
    for k in ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"):
        if env.get(k):
            return env[k]
    return " ".join(os.path.abspath(p) if p != "-" else "<stdin>" for p in paths) or "<stdin>"


# --- the schema ----------------------------------------------------------------------------------
def _tables():
    from sqlalchemy import Column, Float, Index, Integer, MetaData, String, Table, Text
    md = MetaData()
    meta = Table("triage_meta", md, Column("key", String(64), primary_key=True), Column("value", Text))
    verdicts = Table(
        "verdicts", md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("content_hash", String(64), nullable=False, unique=True),
        Column("job_id", Text, nullable=False),
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
        Index("verdicts_signature", "signature"),
        Index("verdicts_job_time", "job_time"),
    )
    known = Table(
        "known_issues", md,
        Column("key", String(512), primary_key=True),   # a signature or a pitfall id
        Column("url", Text, nullable=False),
        Column("title", Text),
        Column("added_at", Float, nullable=False),
    )
    return md, meta, verdicts, known


def _migrations():
    """Schema version -> the tables that version adds; applied in order, each once."""
    return {
        1: ("triage_meta", "verdicts"),       # verdict records
        2: ("known_issues",),                 # known-issue links
    }


# --- the store -----------------------------------------------------------------------------------
class Store:
    """Open (creating or migrating) the store at URL.  Use as a context manager or call close()."""

    def __init__(self, db: Optional[str] = None, upto: int = SCHEMA_VERSION):
        try:
            import sqlalchemy as sa
        except ImportError:   # pragma: no cover -- a declared dependency
            raise StoreError("the verdict store needs SQLAlchemy: pip install 'SQLAlchemy>=2'") from None
        self.sa = sa
        self.url = resolve_url(db)
        self.shown = _safe(self.url)
        self.md, self.meta, self.verdicts, self.known = _tables()
        self.sqlite = self.url.startswith("sqlite")
        self.engine = self._engine()
        self.migrate(upto)

    # connection set-up
    def _engine(self):
        sa = self.sa
        from sqlalchemy.pool import NullPool
        if self.sqlite:
            path = self.url[len("sqlite:///"):]
            if path and path != ":memory:":
                d = os.path.dirname(path)
                try:
                    os.makedirs(d, exist_ok=True)
                except OSError as e:
                    raise StoreError(f"cannot create the store's directory {d!r}: {e.strerror or e}") from None
                if os.path.isdir(path):
                    raise StoreError(f"the store {path!r} is a directory; give a file path")
            eng = sa.create_engine(self.url, poolclass=NullPool,
                                   connect_args={"timeout": BUSY_TIMEOUT_S, "isolation_level": None})

            @sa.event.listens_for(eng, "connect")
            def _on_connect(dbapi_conn, _rec):  # noqa: ANN001
                cur = dbapi_conn.cursor()
                cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
                cur.execute("PRAGMA journal_mode = WAL")
                cur.execute("PRAGMA synchronous = NORMAL")
                cur.close()

            @sa.event.listens_for(eng, "begin")
            def _on_begin(conn):  # noqa: ANN001
                conn.exec_driver_sql("BEGIN IMMEDIATE")   # take the write lock now: no upgrade deadlock

            return eng
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise StoreError("a PostgreSQL store needs psycopg 3: pip install 'triage[postgres]' "
                             "(or pip install 'psycopg[binary]')") from None
        return sa.create_engine(self.url, poolclass=NullPool,
                                connect_args={"connect_timeout": CONNECT_TIMEOUT_S,
                                              "application_name": "triage"})

    def _begin(self):
        return _Tx(self)

    def close(self) -> None:
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
        sa = self.sa
        if not sa.inspect(c).has_table("triage_meta"):
            return 0
        v = c.execute(sa.select(self.meta.c.value).where(self.meta.c.key == "schema_version")).scalar()
        try:
            return int(v or 0)
        except ValueError:
            raise StoreError(f"the store {self.shown} has a garbled schema version {v!r}") from None

    def migrate(self, upto: int = SCHEMA_VERSION) -> int:
        """Bring the schema to version `upto` (each step once, under a lock); returns the version."""
        sa = self.sa
        with self._begin() as c:
            if not self.sqlite:
                c.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _ADVISORY_LOCK})
            have = self._version(c)
            if have > SCHEMA_VERSION:
                raise StoreError(f"the store {self.shown} has schema version {have}, newer than this triage "
                                 f"knows ({SCHEMA_VERSION}): upgrade triage")
            steps = _migrations()
            for v in range(have + 1, upto + 1):
                for name in steps[v]:
                    self.md.tables[name].create(c, checkfirst=True)
                self._set_version(c, v)
            return max(have, upto)

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

    def record_many(self, recs: Sequence[Record]) -> List[bool]:
        sa = self.sa
        out: List[bool] = []
        now = time.time()
        with self._begin() as c:
            for rec in recs:
                row = _row(rec, now)
                ins = self._insert(self.verdicts).values(**row)
                upd = {k: row[k] for k in ("outcome", "primary_pitfall", "signature", "title", "first_failing_rank",
                                           "blamed_key", "summary", "triage_version")}
                existed = c.execute(sa.select(self.verdicts.c.id).where(
                    self.verdicts.c.content_hash == rec.content_hash)).first() is not None
                c.execute(ins.on_conflict_do_update(index_elements=["content_hash"], set_=upd))
                out.append(not existed)
        return out

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

    # known issues
    def known_add(self, key: str, url: str, title: Optional[str] = None) -> bool:
        """Add or replace a known issue; True when it is new."""
        sa = self.sa
        k = self.known
        with self._begin() as c:
            existed = c.execute(sa.select(k.c.key).where(k.c.key == key)).first() is not None
            c.execute(self._insert(k).values(key=key, url=url, title=title, added_at=time.time())
                      .on_conflict_do_update(index_elements=["key"], set_={"url": url, "title": title}))
        return not existed

    def known_remove(self, key: str) -> int:
        sa = self.sa
        with self._begin() as c:
            return int(c.execute(sa.delete(self.known).where(self.known.c.key == key)).rowcount or 0)

    def known_list(self) -> List[Dict[str, Any]]:
        sa = self.sa
        with self._begin() as c:
            return [dict(r) for r in c.execute(sa.select(self.known).order_by(self.known.c.key)).mappings()]

    def known_for(self, signature: Optional[str], pitfall: Optional[str]) -> Optional[Dict[str, Any]]:
        """The known issue of a verdict: its signature's, else its pitfall's."""
        table = {r["key"]: r for r in self.known_list()} if (signature or pitfall) else {}
        for key in (signature, pitfall):
            if key and key in table:
                return table[key]
        return None

    def known_info(self, signature: Optional[str], pitfall: Optional[str]) -> Optional[Dict[str, Any]]:
        """{"key", "url", "title", "seen", "since"} for a verdict whose signature or pitfall is known."""
        k = self.known_for(signature, pitfall)
        if k is None:
            return None
        by_sig = k["key"] == signature
        stats = self.seen(signatures=[k["key"]] if by_sig else [], pitfalls=[] if by_sig else [k["key"]])
        n, first, _last = stats.get(k["key"], (0, 0.0, 0.0))
        return {"key": k["key"], "url": k["url"], "title": k["title"], "seen": n,
                "since": day(first) if n else None}


class _Tx:
    """A transaction with store errors turned into StoreError (one line, no password)."""

    def __init__(self, store: Store):
        self.store = store
        self.cm = None

    def __enter__(self):
        sa = self.store.sa
        for wait in CONNECT_RETRIES + (None,):
            try:
                self.cm = self.store.engine.begin()
                return self.cm.__enter__()
            except sa.exc.OperationalError as e:   # a server busy with many epilogs at once: try again
                if wait is None:
                    raise _store_error(self.store, e) from None
                time.sleep(wait)
            except Exception as e:  # noqa: BLE001
                raise _store_error(self.store, e) from None

    def __exit__(self, et, ev, tb):
        try:
            return self.cm.__exit__(et, ev, tb)
        except Exception as e:  # noqa: BLE001
            if isinstance(e, StoreError):
                raise
            raise _store_error(self.store, e) from None


def _store_error(store: Store, e: BaseException) -> BaseException:
    if isinstance(e, StoreError):
        return e
    sa = store.sa
    if isinstance(e, sa.exc.SQLAlchemyError) or type(e).__module__.startswith(("sqlite3", "psycopg")):
        orig = getattr(e, "orig", None) or e
        msg = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        return StoreError(f"store {store.shown}: {msg[:300]}")
    return e


def _row(rec: Record, now: float) -> Dict[str, Any]:
    return {"content_hash": rec.content_hash, "job_id": rec.job_id[:4000], "job_time": float(rec.job_time),
            "recorded_at": rec.recorded_at or now, "outcome": rec.outcome, "primary_pitfall": rec.primary,
            "signature": rec.signature, "title": (rec.title or "")[:2000], "first_failing_rank": rec.first_failing_rank,
            "blamed_key": rec.blamed, "summary": (rec.summary or "")[:2000], "triage_version": rec.triage_version}


def _record(r: Any) -> Record:
    return Record(job_id=r["job_id"], job_time=float(r["job_time"]), outcome=r["outcome"], primary=r["primary_pitfall"],
                  signature=r["signature"], title=r["title"] or "", first_failing_rank=r["first_failing_rank"],
                  blamed=r["blamed_key"], summary=r["summary"] or "", content_hash=r["content_hash"],
                  triage_version=r["triage_version"] or "", recorded_at=float(r["recorded_at"]))


def day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))



def record_of(a: Any, paths: Sequence[str], job_id: str, digest: str) -> Record:
    """The verdict record of an analysis (verdict.Analysis) of the job at PATHS."""
    from . import __version__
    from .redact import redact
    v = a.verdict                      # the record is the verdict's fields, nothing re-derived
    blamed = None
    if a.config is not None and a.config.suspects:
        top = [s for s in a.config.suspects if not s.unrelated]
        blamed = top[0].key if top else None
    return Record(job_id=redact(job_id), job_time=job_time(paths), outcome=v.outcome,
                  primary=v.primary.pitfall if v.primary is not None else None,
                  signature=redact(v.signature) if v.signature else None, title=redact(v.title),
                  first_failing_rank=v.first_rank, blamed=blamed, summary=redact(v.summary),
                  content_hash=digest, triage_version=__version__)


def known_key_error(key: str) -> Optional[str]:
    """Why KEY cannot be a known-issue key (a pitfall id or a job signature), or None."""
    from .taxonomy import IDS
    if not key.strip():
        return "the key is empty: give a pitfall id or a signature"
    if key in IDS:
        return None
    head = key.split(": ", 1)[0]
    if ": " in key and (head in IDS or head == "unexplained-failure"):
        return None
    return (f"{key!r} is neither a pitfall id nor a job signature ('<pitfall>: <title>' or "
            "'unexplained-failure: <error>', as the JSON's `signature` or `triage fleet` shows it)")


def url_error(url: str) -> Optional[str]:
    if not url.startswith(("https://", "http://")) or any(ch.isspace() for ch in url) or len(url) > 2000:
        return f"{url[:80]!r} is not an http(s) URL"
    return None
