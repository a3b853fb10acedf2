"""The compiled HTML templates, kept in triage's cache directory between runs.

jinja2 compiles a template's source to Python on its first use in a process: ~60 ms for the report's
templates, a quarter of an `analyze -o report.html` of a small log (a job epilog writes one per job).
This is jinja2's own bytecode cache (jinja2.BytecodeCache: a bucket per template, the code marshalled
with jinja2's and Python's version in its header and the template source's checksum, so an edited
template or another jinja2 or Python is compiled again), with the files in `anchors.cache_dir()`
(TRIAGE_CACHE_DIR) and read as Python reads its own __pycache__: only a file this user wrote.  A file
that is not a regular file, belongs to another user, is writable by others or is too big is ignored
(compiled again and replaced); writing is best effort (a read-only home: no cache)."""
from __future__ import annotations

import os
import stat
from typing import Any, Optional

from jinja2 import BytecodeCache
from jinja2.bccache import Bucket

PREFIX = "template-"
MAX_BYTES = 4 << 20           # the report's compiled templates are ~100 KB
KEEP = 32                     # template files kept (the most recently written): a few triage versions


def _path(key: str) -> str:
    from ..scan.anchors import cache_dir
    return os.path.join(cache_dir(), f"{PREFIX}{key[:40]}.bin")


class TemplateCache(BytecodeCache):
    """jinja2's bytecode cache in triage's cache directory, read only from files this user wrote."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            fd = os.open(_path(bucket.key), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return
        try:
            st = os.fstat(fd)
            getuid = getattr(os, "getuid", None)
            if (not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES
                    or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                    or (getuid is not None and st.st_uid != getuid())):
                return
            with os.fdopen(fd, "rb") as f:
                fd = -1
                bucket.load_bytecode(f)       # jinja2 checks the header and the source's checksum
        except Exception:  # noqa: BLE001 - a file jinja2 cannot read back: compiled again
            bucket.reset()
        finally:
            if fd >= 0:
                os.close(fd)

    def dump_bytecode(self, bucket: Bucket) -> None:
        path = _path(bucket.key)
        d = os.path.dirname(path)
        try:
            os.makedirs(d, exist_ok=True)
            import tempfile
            fd, tmp = tempfile.mkstemp(prefix=".template-", dir=d)      # 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    bucket.write_bytecode(f)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            _prune(d)
        except Exception:  # noqa: BLE001 - a read-only home just means no cache
            pass


def _prune(d: str) -> None:
    try:
        files = [os.path.join(d, n) for n in os.listdir(d) if n.startswith(PREFIX) and n.endswith(".bin")]
        for old in sorted(files, key=os.path.getmtime)[:-KEEP]:
            os.remove(old)
    except OSError:
        pass


def template_cache() -> Optional[Any]:
    """The cache for a jinja2 Environment (TRIAGE_TEMPLATE_CACHE=0: none)."""
    return None if os.environ.get("TRIAGE_TEMPLATE_CACHE", "1") == "0" else TemplateCache()
