"""The compiled HTML templates, kept in triage's cache directory between runs.

jinja2 compiles a template's source to Python on its first use in a process: ~60 ms for the report's
templates, a quarter of an `analyze -o report.html` of a small log (a job epilog writes one per job).
This is jinja2's own bytecode cache (jinja2.BytecodeCache: a bucket per template, the code marshalled
with jinja2's and Python's version in its header and the template source's checksum, so an edited
template or another jinja2 or Python is compiled again), with the files in the cache directory
(triage/cachefiles.py: TRIAGE_CACHE_DIR) and read as Python reads its own __pycache__: only a file
this user wrote.  A file that is not a regular file, belongs to another user, is writable by others or
is too big is ignored (compiled again and replaced); writing is best effort (a read-only home: no cache)."""
from __future__ import annotations

import io
import os
from typing import Any, Optional

from jinja2 import BytecodeCache
from jinja2.bccache import Bucket

from .. import cachefiles

PREFIX = "template-"
MAX_BYTES = 4 << 20           # the report's compiled templates are ~100 KB
KEEP = 32                     # template files kept (the most recently written): a few triage versions


def _name(key: str) -> str:
    return f"{PREFIX}{key[:40]}.bin"


class TemplateCache(BytecodeCache):
    """jinja2's bytecode cache in triage's cache directory, read only from files this user wrote."""

    def load_bytecode(self, bucket: Bucket) -> None:
        data = cachefiles.read_own(_name(bucket.key), MAX_BYTES)
        if data is None:
            return
        try:
            bucket.load_bytecode(io.BytesIO(data))     # jinja2 checks the header and the source's checksum
        except Exception:  # noqa: BLE001 - a file jinja2 cannot read back: compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        out = io.BytesIO()
        bucket.write_bytecode(out)
        cachefiles.write(_name(bucket.key), out.getvalue(), keep=(PREFIX, ".bin", KEEP))


def template_cache() -> Optional[Any]:
    """The cache for a jinja2 Environment (TRIAGE_TEMPLATE_CACHE=0: none)."""
    return None if os.environ.get("TRIAGE_TEMPLATE_CACHE", "1") == "0" else TemplateCache()
