"""Turn an unexplained error block into a draft pattern file for a human to finish."""
from __future__ import annotations

from typing import List, Optional

import regex
import yaml

from .engine import EXC_LINE
from .rx import TIMEOUT, lazy

_VARIABLE = lazy(r"0x[0-9a-fA-F]+|(?:/[\w.\-+@]+)+/?|\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"")
_WORDS = lazy(r"[A-Za-z][A-Za-z _,:;()\-]{6,}[A-Za-z)]")


def _message_line(lines: List[str]) -> str:
    for ln in reversed(lines):
        if EXC_LINE.match(ln):
            return ln
    return next((ln for ln in lines if ln.strip()), "")


def draft_regex(line: str) -> str:
    """Escape the fixed text, make numbers, hex, paths and quoted values wildcards."""
    out, pos = [], 0
    for m in _VARIABLE.finditer(line, timeout=TIMEOUT):
        out.append(regex.escape(line[pos:m.start()], literal_spaces=True))
        tok = m.group(0)
        if tok.startswith(("'", '"')):
            out.append(tok[0] + r"[^" + tok[0] + r"]*" + tok[0])
        elif tok.startswith("0x"):
            out.append(r"0x[0-9a-fA-F]+")
        elif tok.startswith("/"):
            out.append(r"\S+")
        else:
            out.append(r"\d+(?:\.\d+)?")
        pos = m.end()
    out.append(regex.escape(line[pos:], literal_spaces=True))
    # drop the exception-type prefix so both RuntimeError and newer typed errors match
    rx = "".join(out)
    return regex.sub(r"^(?:[\w\\.]+\\\.)?[A-Z]\w*(?:Error|Exception):\\? ", "", rx) or rx


def draft_literal(line: str) -> str:
    fixed = _VARIABLE.sub("\x00", line, timeout=TIMEOUT)
    body = fixed.split(": ", 1)[1] if EXC_LINE.match(line) and ": " in fixed else fixed
    runs = sorted(_WORDS.findall(body.replace("\x00", "|")), key=len, reverse=True)
    return runs[0].strip() if runs else line.strip()[:40]


def _fixed_chars(rx: str) -> int:
    return len(regex.sub(r"\\[dSs]\+?|\[\^?[^\]]*\]\*?|\(\?:[^)]*\)\??|\\.", "", rx))


def _draft_match(msg: str) -> dict:
    rx = draft_regex(msg)
    if _fixed_chars(rx) < 12:
        # too little fixed text once values are wildcards (e.g. KeyError: 'input_ids'):
        # keep the whole message literal, exception type included
        return {"regex": regex.escape(msg, literal_spaces=True), "literal": msg.strip()[:60]}
    return {"regex": rx, "literal": draft_literal(msg)}


def draft(lines: List[str], source: Optional[str] = None) -> str:
    msg = _message_line(lines)
    body = regex.sub(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):\s*", "", msg)
    title = (body if len(body) >= 20 else msg)[:80] or "TODO title"
    doc = {
        "id": "TODO-pitfall-id",
        "title": title,
        "severity": "error",
        "kind": "runtime",
        "match": [_draft_match(msg)],
        "implicates": [],
        "explanation": "TODO: why this happens.",
        "fix": "TODO: the concrete settings to change.",
        "references": [{"source": "TODO: the file that prints this message", "version": "TODO: versions"}],
        "examples": {"match": [msg], "no_match": ["TODO: a near-miss line that must not match"]},
        "note": f"Draft made by `triage patterns suggest` from {source or 'a log'}; finish every TODO, "
                "then run `triage patterns check DIR`.",
    }
    return "# DRAFT pattern: edit the TODO fields; the id must be a taxonomy id\n" + yaml.safe_dump(
        doc, sort_keys=False, allow_unicode=True, width=120)
