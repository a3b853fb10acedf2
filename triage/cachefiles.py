"""triage's cache directory: what one run keeps for the next (the compiled anchor database, the parsed
catalog, the regex sources known to compile, the compiled HTML templates, the records' compiled
`__init__` code, what pure readings of the patterns found: Memo).

Every file is written whole or not at all (a temporary file of this user's only, then renamed), and
read back only when it is a regular file of this user that nobody else can write, with no other name,
of a bounded size, in a directory of this user's that nobody else can write (issue 46: not a
group-writable one, nor a link to a sticky /tmp-like directory whose owner may still rename files in
it), and when it holds the digest of its own name and content (a file of this user's renamed over
another, e.g. two anchor databases swapped, is not what its name says): anything else is ignored, and
the run makes what it holds again.  Writing is best effort: a read-only home just means no cache."""
from __future__ import annotations

import os
import stat
import sys
from typing import Any, Dict, Optional, Set, Tuple

# Bounds of what a cache file may hold when read back (the largest, the anchor database: ~300 KB).
MAX_BYTES = 16 << 20
# a cache file: MAGIC, then BLAKE2b-256(its name NUL its content), then its content (MAGIC's version bumped:
# the files of earlier versions, without it, are never read)
MAGIC = b"triage-cache/2\n"
_DIGEST = 32
_WARNED: Set[str] = set()          # cache directories refused, said once a process


def cache_dir() -> str:
    """TRIAGE_CACHE_DIR, else $XDG_CACHE_HOME/triage, else ~/.cache/triage."""
    d = os.environ.get("TRIAGE_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "triage")


def path_of(name: str) -> str:
    return os.path.join(cache_dir(), name)


def _dir_ok(d: str) -> bool:
    """D (a link followed: where the files are) is this user's directory and nobody else may write into
    it: no group- or other-writable one (sticky or not: a sticky directory's owner may still rename
    files in it), no other user's (POSIX permissions only: elsewhere the bits mean nothing).  A refused
    one is said once, on stderr; the run then works without a cache."""
    if os.name != "posix":
        return True
    try:
        st = os.stat(d)
    except OSError:
        return False
    why = ""
    if st.st_uid != os.getuid():
        why = f"is owned by another user (uid {st.st_uid})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "others" if st.st_mode & stat.S_IWOTH else "its group"
        why = f"is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    if why and d not in _WARNED:
        _WARNED.add(d)
        shown = d.encode("unicode_escape").decode("ascii")
        sys.stderr.write(f"triage: warning: cache directory {shown} {why}: not used (no cache); make it private "
                         f"(chmod 700) or set TRIAGE_CACHE_DIR\n")
    return not why


def _digest(name: str, data: bytes) -> bytes:
    try:            # CPython's builtin module, what hashlib.blake2b is (hashlib loads OpenSSL: 2 ms a start)
        from _blake2 import blake2b  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - another Python
        from hashlib import blake2b
    return bytes(blake2b(name.encode("utf-8", "surrogateescape") + b"\0" + data, digest_size=_DIGEST).digest())


def _unwrap(name: str, raw: bytes) -> Optional[bytes]:
    """The content of cache file NAME as read (RAW), or None when it does not hold its own name's digest."""
    head = len(MAGIC) + _DIGEST
    if len(raw) < head or not raw.startswith(MAGIC):
        return None
    data = raw[head:]
    return data if raw[len(MAGIC):head] == _digest(name, data) else None


def read_own(name: str, max_bytes: int = MAX_BYTES) -> Optional[bytes]:
    """The bytes of cache file NAME, or None: in a directory anyone may write into (without the
    sticky bit, which keeps others from renaming this user's files), missing, not a regular file
    (a link is not followed), another user's, writable by group or others, with another name too (a
    hard link: someone else could have linked one of this user's files there, e.g. a report holding
    a log's text), or over MAX_BYTES.  (What is read may be code: the record classes' compiled
    __init__, the catalog's pickle.)"""
    path = path_of(name)
    if not _dir_ok(os.path.dirname(path)):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        getuid = getattr(os, "getuid", None)
        if (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1
                or st.st_size > max_bytes + len(MAGIC) + _DIGEST
                or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                or (getuid is not None and st.st_uid != getuid())):
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(max_bytes + len(MAGIC) + _DIGEST + 1)
        return _unwrap(name, data) if len(data) <= max_bytes + len(MAGIC) + _DIGEST else None
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def write(name: str, data: bytes, keep: Optional[Tuple[str, str, int]] = None) -> bool:
    """Write cache file NAME whole (mode 0600); KEEP = (prefix, suffix, n): then only the n most
    recently written files of that prefix and suffix are kept.  False when it could not be written."""
    path = path_of(name)
    d = os.path.dirname(path)
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)       # (a new cache directory: this user's only)
        if not _dir_ok(d):
            return False                                # (never read back there: no use writing)
        import tempfile  # (writing the cache only)
        fd, tmp = tempfile.mkstemp(prefix="." + name.split("-", 1)[0] + "-", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + _digest(name, data) + data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    if keep is not None:
        prune(d, *keep)
    return True


def prune(d: str, prefix: str, suffix: str, n: int) -> None:
    """Keep the N most recently written files of D named PREFIX...SUFFIX (best effort)."""
    try:
        files = [os.path.join(d, f) for f in os.listdir(d) if f.startswith(prefix) and f.endswith(suffix)]
        for old in sorted(files, key=os.path.getmtime)[:max(0, len(files) - n)]:
            os.remove(old)
    except OSError:
        pass


def read_marshal_dict(name: str, max_bytes: int = MAX_BYTES) -> Optional[Dict[Any, Any]]:
    """The dict cache file NAME holds as marshal data (read_own's checks), or None: missing, refused, not
    marshal data of this Python, or not a dict (the caller checks its entries)."""
    import marshal
    data = read_own(name, max_bytes)
    if data is None:
        return None
    try:
        got = marshal.loads(data)
    except Exception:  # noqa: BLE001 - not marshal data of this Python: made again
        return None
    return got if isinstance(got, dict) else None


def write_marshal(name: str, obj: Any, prefix: str, keep: int = 4) -> bool:
    """OBJ written as marshal data to cache file NAME, the KEEP newest of PREFIX...".marshal" kept (best effort,
    silent: a cache that cannot be written is no cache, never a traceback)."""
    import marshal
    try:
        return write(name, marshal.dumps(obj), keep=(prefix, ".marshal", keep))
    except Exception:  # noqa: BLE001
        return False


class Memo:
    """A pure function's answers kept between runs, by their arguments (issue 44: what triage reads of its own
    regexes with the stdlib's parser -- which are digit-blind, their literals, the characters a launcher's prefix
    starts with -- ~10 ms of every run, and of every pool worker again).  In cache file PREFIX + a digest of SOURCE
    (the file of the module that computes them: its code, triage's version and the Python build, whose parser it
    reads with, name the answers) + ".marshal", read on the first look-up, written back at exit when this process
    added to it (a pool worker's additions go with it: the scanner asks before the fork what its workers ask).
    VALID(key, value) keeps what is read back (a file of other data is ignored).  `reset()` forgets what was read
    (tests simulate a new process)."""
    MAX_ENTRIES = 4096

    def __init__(self, prefix: str, source: str, valid: Any):
        self.prefix, self.source, self.valid = prefix, source, valid
        self.known: Optional[Dict[Any, Any]] = None
        self.changed = False

    def reset(self) -> None:
        self.known, self.changed = None, False

    def name(self) -> str:
        from . import __version__
        from .hashing import sha256
        try:
            with open(self.source, "rb") as f:
                own = f.read()
        except OSError:                 # (a module not read from a file: its version names it)
            own = b""
        build = f"{sys.version}\0{sys.implementation.cache_tag}\0{__version__}\0".encode() + own
        return f"{self.prefix}{sha256(build).hexdigest()[:16]}.marshal"

    def get(self, key: Any) -> Any:
        """The answer kept for KEY, or None."""
        if self.known is None:
            got = read_marshal_dict(self.name()) or {}
            self.known = {k: v for k, v in got.items() if self.valid(k, v)}
        return self.known.get(key)

    def put(self, key: Any, value: Any) -> None:
        if self.known is None:
            self.get(key)
        assert self.known is not None
        if len(self.known) >= self.MAX_ENTRIES:
            return
        self.known[key] = value
        if not self.changed:
            self.changed = True
            import atexit
            atexit.register(self.save)

    def save(self) -> bool:
        """Write what this process added (at exit: best effort, silent); False when not written."""
        if not self.changed or not self.known:
            return False
        ok = write_marshal(self.name(), self.known, self.prefix, keep=4)
        self.changed = self.changed and not ok
        return ok
