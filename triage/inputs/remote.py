"""Logs where they live: an input named by an fsspec URL (s3://bucket/prefix/..., gs://, http(s)://,
memory://, file://, ...) read through fsspec, streaming.

sources.py asks this module three things of a URL: `expand` (an object is one input; a prefix that
lists as a directory is its log-like objects, found with the same rules, order and bounds as a local
directory's files), `open_url` (a seekable byte stream read in blocks of READ_BLOCK bytes on demand:
never the whole object; sources.py then decompresses by magic bytes exactly as for a local file) and,
for the store and the fleet, `exists`, `children`, `mtime` and `relname`.

fsspec (and, for s3://, s3fs) come with the optional extra: pip install 'triage[s3]'.  Credentials and
the endpoint come from the standard environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE,
AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL); every failure is one InputError line, after a bounded wait
(CONNECT_TIMEOUT, READ_TIMEOUT, ATTEMPTS), with no secret in it.
"""
from __future__ import annotations

import io
import os
import re
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from ..errors import TriageError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")

READ_CHUNK = 4 << 20      # bytes asked of the server at a time (the engine's 8 MiB block is two requests)
READ_BLOCK = 1 << 20      # bytes fetched beyond a read (fsspec's read-ahead cache)
CONNECT_TIMEOUT = 3       # seconds to connect to the endpoint
READ_TIMEOUT = 15         # seconds without a byte from it
ATTEMPTS = 2              # tries of one request: s3fs's own loop; botocore's own retries are off (its
#                           `max_attempts` counts retries: 3 tries inside each of s3fs's, 93 s against a
#                           silent endpoint)
EXTRA = "s3"              # pip install 'triage[s3]'

T = TypeVar("T")


def is_url(path: str) -> bool:
    """A path with a protocol (scheme://...): read through fsspec."""
    return bool(_URL.match(path))


def _scheme(url: str) -> str:
    m = _URL.match(url)
    return m.group(1).lower() if m else "file"


def _error(msg: str) -> TriageError:
    from .names import InputError
    return InputError(_scrub(msg))


def _scrub(text: str) -> str:
    """TEXT without the credentials the environment holds, nor a URL's user:password@."""
    for k in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        v = os.environ.get(k, "")
        if len(v) >= 4:
            text = text.replace(v, "<redacted>")
    return re.sub(r"://[^/@\s]+@", "://<redacted>@", text)


def _show(url: str) -> str:
    return repr(_scrub(url))


# --- the filesystem of a URL ----------------------------------------------------------------------
_FS: Dict[Tuple[Any, ...], Any] = {}


def _endpoint() -> Optional[str]:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _options(scheme: str) -> Dict[str, Any]:
    """Storage options: for S3 the endpoint from the environment (older botocore ignores
    AWS_ENDPOINT_URL) and small timeouts and retries, so a wrong endpoint fails in seconds."""
    if scheme not in ("s3", "s3a"):
        return {}
    opts: Dict[str, Any] = {
        "config_kwargs": {"connect_timeout": CONNECT_TIMEOUT, "read_timeout": READ_TIMEOUT,
                          "retries": {"total_max_attempts": 1, "mode": "standard"}},
    }
    if _endpoint():
        opts["client_kwargs"] = {"endpoint_url": _endpoint()}
    return opts


def _needs(url: str, e: BaseException) -> TriageError:
    scheme = _scheme(url)
    if scheme in ("s3", "s3a"):
        return _error(f"reading {scheme}://... needs the [{EXTRA}] extra: pip install 'triage[{EXTRA}]'")
    return _error(f"reading {scheme}://... needs fsspec and its {scheme}:// backend "
                  f"(pip install 'triage[{EXTRA}]' for fsspec; {str(e) or 'a package is missing'})")


def _fs_key(url: str) -> Tuple[Any, ...]:
    """One filesystem (and one endpoint) per protocol and credentials environment in this process."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(("AWS_", "FSSPEC_"))))
    return (_scheme(url), env, os.getpid())


def filesystem(url: str) -> Tuple[Any, str]:
    """(fsspec filesystem, path within it) of URL: one instance per protocol and credentials
    environment in this process (a fresh one after a fork or a change of AWS_* variables)."""
    try:
        import fsspec  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as e:
        raise _needs(url, e) from None
    key = _fs_key(url)
    scheme = key[0]
    fs = _FS.get(key)
    if fs is None:
        try:
            fs = fsspec.filesystem(scheme, skip_instance_cache=True, **_options(scheme))
        except ImportError as e:
            raise _needs(url, e) from None
        except ValueError as e:
            raise _error(f"cannot read {_show(url)}: {e}") from None
        except Exception as e:  # noqa: BLE001 - a backend that cannot start is one line
            raise _error(f"cannot read {_show(url)}: {_why(e)}") from None
        if hasattr(fs, "retries"):        # s3fs's own retry loop (a class attribute, 5 tries)
            fs.retries = ATTEMPTS
        _FS.clear()
        _FS[key] = fs
    return fs, fs._strip_protocol(url)


def _why(e: BaseException) -> str:
    """One line that says why a request failed."""
    name = type(e).__name__
    names = {c.__name__ for c in type(e).__mro__}
    if isinstance(e, FileNotFoundError):
        return "no such object or prefix"
    if isinstance(e, PermissionError):
        return ("access denied (check the credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE, "
                "and the bucket's policy)")
    if "NoCredentialsError" in names or "PartialCredentialsError" in names:
        return "no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
    if names & {"EndpointConnectionError", "ConnectTimeoutError", "ConnectionError", "ClientConnectorError",
                "ServerTimeoutError", "ConnectionRefusedError", "ReadTimeoutError", "TimeoutError",
                "FSTimeoutError"}:
        where = f" {_endpoint()}" if _endpoint() else ""
        return f"cannot reach the endpoint{where} ({name})"
    text = " ".join(str(e).split())[:300]
    return f"{name}: {text}" if text else name


def deadline() -> float:
    """All the waiting one call may do (docs/s3.md): connecting, and each try without a byte, plus a
    second of slack (~34 s)."""
    return CONNECT_TIMEOUT + ATTEMPTS * READ_TIMEOUT + 1


def _bounded(fs: Any) -> Dict[str, Any]:
    """The keyword that bounds one call of an async fsspec filesystem (s3fs) to deadline() seconds, all
    its requests and tries together: fsspec's sync wrapper takes `timeout=`; {} for a sync one."""
    return {"timeout": deadline()} if getattr(fs, "async_impl", False) else {}


# an endpoint that did not answer in time: later requests to it fail at once (one wait per command, not one
# per request: the info of a prefix, its listing, each object)
_DEAD: Dict[Tuple[Any, ...], str] = {}


def _call(url: str, fn: Callable[[], T]) -> T:
    """fn(), its failure one InputError line."""
    from .names import InputError
    dead = _DEAD.get(_fs_key(url))
    if dead:
        raise _error(f"cannot read {_show(url)}: {dead}")
    try:
        return fn()
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - botocore, aiohttp and fsspec errors alike
        why = _why(e)
        if why.startswith("cannot reach the endpoint"):
            _DEAD[_fs_key(url)] = why
        raise _error(f"cannot read {_show(url)}: {why}") from None


# --- what a URL names -----------------------------------------------------------------------------
def _info(url: str) -> Optional[Dict[str, Any]]:
    """The object's (or prefix's) info; None when there is none."""
    fs, path = filesystem(url)
    try:
        return _call(url, lambda: fs.info(path, **_bounded(fs)))
    except TriageError as e:
        if "no such object or prefix" in str(e):
            return None
        raise


def _is_dir(url: str, info: Dict[str, Any]) -> bool:
    return info.get("type") == "directory"


def exists(url: str) -> bool:
    """URL names an object or a prefix (a failure to ask is an InputError)."""
    return _info(url) is not None


def _url_of(fs: Any, url: str, name: str) -> str:
    """The URL of a listed NAME, with URL's scheme as it was typed (s3a://, S3://)."""
    full = fs.unstrip_protocol(name)
    m, typed = _URL.match(full), _URL.match(url)
    if m and typed and m.group(1) != typed.group(1):
        full = typed.group(1) + "://" + full[m.end():]
    return str(full)


def _listing(url: str, path: str) -> List[Dict[str, Any]]:
    fs, _ = filesystem(url)
    entries = _call(url, lambda: fs.ls(path, detail=True, **_bounded(fs)))
    base = path.rstrip("/")
    return [e for e in entries if e.get("name", "").rstrip("/") != base and _base(e["name"])]


def _base(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1]


def expand(url: str, notes: Optional[List[str]] = None) -> List[str]:
    """URL as inputs: an object is itself; a prefix (a "directory") its log-like objects, walked as
    a local directory is (sources._walk_logs: hidden names skipped, MAX_DIR_DEPTH levels, sorted,
    a directory's files before its subdirectories', MAX_DIR_ENTRIES / MAX_DIR_FILES bounds)."""
    info = _info(url)
    if info is None:
        raise _error(f"no such file or directory: {_show(url)} (no such object or prefix)")
    if not _is_dir(url, info):
        return [url]
    walk = _Walk(url, notes)
    walk.walk(filesystem(url)[1], 0)
    return walk.found


class _Walk:
    """The log-like objects under a prefix (expand)."""

    def __init__(self, url: str, notes: Optional[List[str]]):
        self.url, self.notes = url, notes
        self.fs = filesystem(url)[0]
        self.found: List[str] = []
        self.seen = 0

    def walk(self, path: str, depth: int) -> None:
        from .names import MAX_DIR_DEPTH, InputError
        try:
            entries = _listing(self.url, path)
        except InputError as e:
            if depth == 0:
                raise
            if self.notes is not None:
                self.notes.append(f"cannot read directory {_show(_url_of(self.fs, self.url, path))}: {e} "
                                  "(its logs were not triaged)")
            return
        self.add(entries)
        if depth < MAX_DIR_DEPTH:
            for d in sorted(e["name"].rstrip("/") for e in entries if e.get("type") == "directory"):
                if not _base(d).startswith("."):
                    self.walk(d, depth + 1)

    def add(self, entries: List[Dict[str, Any]]) -> None:
        """A directory's entries counted, its log-like files kept (sorted), within the bounds."""
        from .names import MAX_DIR_ENTRIES, MAX_DIR_FILES, log_name
        self.seen += len(entries)
        if self.seen > MAX_DIR_ENTRIES:
            raise _error(f"directory {_show(self.url)} holds more than {MAX_DIR_ENTRIES:,} entries: it does not "
                         "look like one job's logs; pass the job's own prefix or its log objects")
        files = sorted(e["name"] for e in entries if e.get("type") != "directory")
        self.found.extend(_url_of(self.fs, self.url, f) for f in files if log_name(_base(f)))
        if len(self.found) > MAX_DIR_FILES:
            raise _error(f"directory {_show(self.url)} holds more than {MAX_DIR_FILES:,} log-like files: it does "
                         "not look like one job's logs; pass the job's own prefix or its objects (for many jobs: "
                         f"triage fleet --jobs-in {_scrub(self.url)})")


def children(url: str) -> List[Tuple[str, bool]]:
    """The children of a prefix, sorted by name: (URL, is a prefix); hidden names skipped."""
    info = _info(url)
    if info is None or not _is_dir(url, info):
        raise _error(f"--jobs-in {_show(url)} is not a directory (a prefix that holds jobs)")
    fs, path = filesystem(url)
    out = [(_url_of(fs, url, e["name"].rstrip("/")), e.get("type") == "directory") for e in _listing(url, path)]
    return sorted((u, d) for u, d in out if not _base(u).startswith("."))


def mtime(url: str) -> float:
    """The object's last-modified time (one HEAD request), else now."""
    try:
        fs, path = filesystem(url)
        if _DEAD.get(_fs_key(url)):
            return time.time()
        info = fs.info(path, **_bounded(fs))
        t = info.get("LastModified") or info.get("mtime") or info.get("last_modified") or info.get("created")
        if hasattr(t, "timestamp"):
            return float(t.timestamp())
        if isinstance(t, (int, float)) and t > 0:
            return float(t)
    except Exception:  # noqa: BLE001 - only a time: now will do
        pass
    return time.time()


def relname(path: str, roots: Sequence[str]) -> Optional[str]:
    """PATH (a URL) relative to the first URL root that holds it, as a local path is to its directory."""
    for r in roots:
        if is_url(r):
            base = r.rstrip("/") + "/"
            if path.startswith(base):
                return path[len(base):]
    return None


def key(url: str) -> str:
    """One job named twice (with and without a trailing slash) is one."""
    return url.rstrip("/")


# --- reading --------------------------------------------------------------------------------------
class _Raw(io.RawIOBase):
    """An fsspec file as a raw stream: its errors are OSError lines (no secret in them)."""

    def __init__(self, f: Any, url: str):
        super().__init__()
        self._f, self.url = f, url

    @property
    def name(self) -> str:
        return self.url

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            data = self._f.read(min(len(b), READ_CHUNK))
        except Exception as e:  # noqa: BLE001
            raise OSError(_scrub(_why(e))) from None
        n = len(data)
        b[:n] = data
        return n

    def seek(self, pos: int, whence: int = 0) -> int:
        return int(self._f.seek(pos, whence))

    def tell(self) -> int:
        return int(self._f.tell())

    def close(self) -> None:
        try:
            self._f.close()
        except Exception:  # noqa: BLE001 - closing a read-only stream
            pass
        super().close()


def open_with_head(url: str, probe: int) -> Tuple[io.BufferedReader, bytes]:
    """The object at URL opened (open_url), and its first PROBE bytes (read again from the start)."""
    f = open_url(url)
    try:
        head = f.read(probe)
        f.seek(0)
    except OSError as e:
        f.close()
        raise _error(f"cannot read {_show(url)}: {e}") from None
    return f, head


def open_url(url: str) -> io.BufferedReader:
    """The object at URL as a buffered byte stream, fetched in blocks as it is read."""
    fs, path = filesystem(url)
    f = _call(url, lambda: fs.open(path, "rb", block_size=READ_BLOCK, cache_type="readahead"))
    return io.BufferedReader(_Raw(f, url), buffer_size=1 << 16)
