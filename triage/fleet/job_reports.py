"""Per-job reports of a fleet run (`triage fleet run --reports DIR`, issue 24): each job's HTML
report, the one `triage analyze` writes, is written into DIR by the worker that analysed the job;
the fleet view links each job to it (relative links).

A report's name is made from the job, never from what its log says: its id (or, for a job known
by its path, the file name), its attempt, and a short hash of its path (two jobs never share a
name).  A file in DIR that is not a triage report (its first bytes lack the generator line every
triage HTML report has) is never overwritten without --force: `plan` refuses it, before any job
runs.  A triage report there (an earlier run's) is replaced.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import urllib.parse
from typing import Any, Dict, Iterable, List, Optional, Sequence

from ..errors import TriageError

GENERATOR = '<meta name="generator" content="triage '      # in the head of every triage HTML report
STEM_MAX = 60


class ReportsError(TriageError):
    """--reports DIR cannot be used (not a directory, a foreign file in the way): one line."""


def report_name(job_id: str, attempt: int, path: str) -> str:
    """The file name of a job's report: a safe stem (the id, else the log's file name), the attempt
    (when not 0) and 8 hex digits of its path's hash."""
    base = os.path.basename(path.rstrip("/")) if os.path.isabs(job_id) or not job_id else job_id
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._-")[:STEM_MAX] or "job"
    digest = hashlib.sha1(os.path.abspath(path).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{stem}{f'-a{attempt}' if attempt else ''}-{digest}.html"


def is_triage_report(path: str) -> bool:
    """PATH is a regular file (not a link) whose head is a triage HTML report's."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return False
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return GENERATOR.encode() in head


def plan(jobs: Sequence[Any], directory: str, force: bool) -> List[Any]:
    """JOBS (fleet.Job), each with the path of its report in DIRECTORY (made if missing).  Without
    FORCE, a name taken by anything but a triage report is an error (nothing is written)."""
    d = os.path.abspath(directory)
    if os.path.exists(d) and not os.path.isdir(d):
        raise ReportsError(f"--reports {directory!r} is not a directory")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise ReportsError(f"--reports {directory!r}: cannot make the directory: {e.strerror or e}") from None
    out = []
    for j in jobs:
        p = os.path.join(d, report_name(j.job_id, j.attempt, j.path))
        if os.path.isdir(p) and not os.path.islink(p):
            raise ReportsError(f"--reports: {p!r} is a directory; not writing the job's report there")
        if (os.path.lexists(p) and not force and not is_triage_report(p)):
            what = "is a symbolic link" if os.path.islink(p) else "exists and is not a triage report"
            raise ReportsError(f"--reports: {p!r} {what}; pass --force to overwrite it")
        out.append(dataclasses.replace(j, report=p))
    return out


def write_report(path: str, text: str) -> None:
    """Write a report atomically (a temp file beside it, then a rename: a link is replaced, never
    followed)."""
    from ..files import replace_atomically
    replace_atomically(path, text)


def href(path: str, base: str) -> str:
    """A relative link from directory BASE to PATH (URL-quoted, / separators)."""
    try:
        rel = os.path.relpath(path, base)
    except ValueError:          # another drive (Windows)
        rel = os.path.abspath(path)
    return urllib.parse.quote(rel.replace(os.sep, "/"), safe="/")


def links(pairs: Iterable[Any], base: str) -> Dict[str, str]:
    """{job label: relative link from BASE} of (label, report path) PAIRS."""
    return {label: href(p, base) for label, p in pairs if p}


def stored_links(records: Sequence[Any], directory: str, base: str) -> Dict[str, str]:
    """`fleet report --reports DIR`: the links of the stored jobs (store.Record) whose reports are in
    DIRECTORY (a triage report under the name `fleet run --reports` gives it)."""
    d = os.path.abspath(directory)
    out: Dict[str, str] = {}
    for r in records:
        try:
            paths = json.loads(r.paths) if r.paths else []
        except ValueError:
            continue
        if len(paths) != 1 or not isinstance(paths[0], str):
            continue
        p = os.path.join(d, report_name(r.job_id, r.attempt, paths[0]))
        if is_triage_report(p):
            out[r.label] = href(p, base)
    return out


def base_of(output: Optional[str]) -> str:
    """The directory the fleet view's links are relative to: its -o file's, else the current one."""
    return os.path.dirname(os.path.abspath(output)) if output else os.getcwd()
