"""Triage's own outputs are never logs (issue 45): a report written earlier (`-o out/noext`, any format:
text, json, markdown, html, junit, jira; a fleet view; watch's events) and then swept up with the logs
of a directory was read as a log and quoted as evidence.  Each is told by its first bytes, the
signature every one of them starts with (a report of a log quotes that log only further down)."""
from __future__ import annotations

import os
import re
import stat
from typing import Dict, Optional, Tuple

from ..lazyre import lazy_re

HEAD_BYTES = 4096
# the job line of the text, markdown and jira reports: "... analysed 2026-12-06 05:34 UTC · triage 0.4.0"
_JOB_LINE = r"analysed \d{4}-\d\d-\d\d \d\d:\d\d UTC · triage \d+\.\d+"
SIGNATURES = (
    ("text", lazy_re(r"\Atriage: [^\n]*\n(?:[^\n]*\n){0,6}?job [^\n]* · " + _JOB_LINE)),
    ("json", lazy_re(r'\A\{\s*"schema": \d+,\s*"outcome": "')),
    ("markdown", lazy_re(r"\A### triage[: ][^\n]*\n(?:[^\n]*\n){0,10}?[^\n]*" + _JOB_LINE)),
    ("html", lazy_re(r'\A<!doctype html>.{0,2000}?<meta name="generator" content="triage', re.S | re.I)),
    ("junit", lazy_re(r'\A<\?xml [^\n]*\?>\s*<testsuites name="triage"')),
    ("jira", lazy_re(r"\Ah3\. triage[: ][^\n]*\n(?:[^\n]*\n){0,10}?[^\n]*" + _JOB_LINE.replace("-", r"\\?-"))),
    ("fleet", lazy_re(r"\Atriage fleet: \d+ job\(s\): ")),
    ("watch events", lazy_re(r'\A\{"event": "(?:root-cause|cascade|hang-suspected|healthy-progress|waiting|ended)", '
                             r'"time": ')),
    ("watch", lazy_re(r"\Atriage watch: (?:ROOT CAUSE|cascade|HANG SUSPECTED|healthy|waiting|nothing logged|ended)")),
)


def report_format(head: bytes) -> Optional[str]:
    """The format of the triage report whose first bytes are HEAD; None for anything else (a log)."""
    text = head[:HEAD_BYTES].decode("utf-8", "replace").lstrip("\ufeff")
    for name, rx in SIGNATURES:
        if rx.match(text):
            return name
    return None


_SEEN: Dict[Tuple[str, int, int, int], Optional[str]] = {}    # (path, inode, size, mtime) -> report_file
_SEEN_MAX = 4096


def report_file(path: str) -> Optional[str]:
    """The format of the triage report at PATH (report_format of its first HEAD_BYTES), None for a log
    or a file that cannot be read (opening it later says why).  One peek a file per process: a file
    expanded again (the store's job time after the scan) is not opened again while it is unchanged."""
    if path.lower().endswith((".gz", ".bz2", ".xz", ".zst", ".zip")):
        return None
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None                  # a FIFO or a device: reading its head would take it from the scan
        key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in _SEEN:
            with open(path, "rb") as f:
                if len(_SEEN) >= _SEEN_MAX:
                    _SEEN.clear()
                _SEEN[key] = report_format(f.read(HEAD_BYTES))
        return _SEEN[key]
    except OSError:
        return None
