"""What the inputs stage calls an input and its failure: the names a directory's log files have, the
bounds of a directory walk and InputError (a leaf: sources.py and remote.py both read it)."""
from __future__ import annotations

from ..errors import TriageError


class InputError(TriageError):
    """A user-facing input problem (missing file, unreadable archive, ...)."""


LOG_SUFFIXES = (".log", ".out", ".err", ".txt", ".gz", ".bz2", ".xz", ".zst", ".stdout", ".stderr")
COMPRESSED = (".gz", ".bz2", ".xz", ".zst")


MAX_DIR_DEPTH = 4          # directory levels below a given directory searched for logs
MAX_DIR_FILES = 4096       # log-like files one job's directory may hold
MAX_DIR_ENTRIES = 100_000  # entries looked at in a directory tree before giving up


def log_name(f: str) -> bool:
    """A file found in a directory (or an object under a URL prefix) that is read as a log: not
    hidden, and a log suffix (.log .out .err .txt, compressed too) or none."""
    return not f.startswith(".") and (f.lower().endswith(LOG_SUFFIXES) or "." not in f)
