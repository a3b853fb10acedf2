"""Turn an unexplained error block into a draft pattern file for a human to finish.  What the
draft copies from the log (the title, the example, the regex's fixed text, the source) is redacted
first: a draft is meant to be committed and shared; a redacted value is a wildcard in its regex."""
from __future__ import annotations

from typing import List, Optional

import regex
import yaml

from .match.rx import TIMEOUT, finditer, lazy
from .redact import MARK, redact, redact_lines
from .scan.blocks import EXC_LINE

_MARK_RX = "(?:.+?)"      # where a secret was: any text (a quoted or several-word value included)
_VARIABLE = lazy(regex.escape(MARK) + r"|0x[0-9a-fA-F]+|(?:/[\w.\-+@]+)+/?|\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"")
_WORDS = lazy(r"[A-Za-z][A-Za-z _,:;()\-]{6,}[A-Za-z)]")


def _message_line(lines: List[str]) -> str:
    for ln in reversed(lines):
        if EXC_LINE.match(ln):
            return ln
    return next((ln for ln in lines if ln.strip()), "")


def draft_regex(line: str) -> str:
    """Escape the fixed text, make numbers, hex, paths and quoted values wildcards."""
    out, pos = [], 0
    for m in finditer(_VARIABLE, line):
        out.append(regex.escape(line[pos:m.start()], literal_spaces=True))
        tok = m.group(0)
        if tok == MARK:
            out.append(_MARK_RX)
        elif tok.startswith(("'", '"')):
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
    try:
        fixed = _VARIABLE.sub("\x00", line, timeout=TIMEOUT)
    except TimeoutError:             # (wall time: a loaded host; the line's own words then)
        fixed = line
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
        parts = msg.split(MARK)
        return {"regex": _MARK_RX.join(regex.escape(x, literal_spaces=True) for x in parts),
                "literal": max((x.strip() for x in parts), key=len)[:60] or "TODO: a fixed part of the line"}
    return {"regex": rx, "literal": draft_literal(msg)}


def draft(lines: List[str], source: Optional[str] = None) -> str:
    """The draft pattern file of the error block LINES (redacted here) seen at SOURCE."""
    msg = _message_line(redact_lines(lines))
    source = redact(source) if source else source
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
