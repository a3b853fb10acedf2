"""Writing a report file: atomically (a temp file beside it, then a rename), so a reader never sees
half a report and concurrent writers each rename a whole file; a symbolic link at the path is
replaced, never followed."""
from __future__ import annotations

import os
import tempfile
from typing import Optional


def replace_atomically(path: str, text: str, mode: Optional[int] = None) -> None:
    """Write TEXT to PATH through a temp file beside it and a rename; the file gets MODE (None: the
    umask's, as a new file would: mkstemp makes 0600, a report is meant to be shared)."""
    fd, tmp = tempfile.mkstemp(prefix=".triage-", suffix=".tmp", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
