"""NVIDIA DCGM's `dcgmi health -c` and `dcgmi diag` tables given among the logs (issue 43), read by their
shape and said as one line per result, so that the pattern files can name a GPU fault and its action:

    dcgmi health on node-7: GPU 1 Memory system Failure: Detected 2 volatile double-bit ECC error(s) in GPU 1.
    dcgmi diag on node-4: memory GPU 1 Fail: GPU 1 had uncorrectable memory errors and row remapping failed.

The tables as DCGM 4.6.0 prints them (github NVIDIA/DCGM v4.6.0): health is dcgmi/Health.cpp's
DcgmiOutputTree(28, 60) ("| <left 25> | <right 56> |", "-> " per level: the entity group, "-> <id>",
"-> Errors", "-> <system>", then the message wrapped on words in rows with an empty left cell; Healthy /
Warning / Failure); diag is dcgmi/Diag.cpp's DIAG_DATA stencil ("| <name 25> | <info 46> |": a test
and its result, "GPU1: Fail" per entity, "Warning: GPU1" and its message cut every 45 characters).
A `host: NAME` (or `hostname: NAME`) line shortly before a table, or pdsh's `NAME: ` prefix on its
rows, names the host.  Bounded: only an input of at most PASTE_MAX bytes is looked at (the reader's
small-input path); a table's message at most MSG_MAX characters.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

MSG_MAX = 2000
_PDSH = re.compile(r"^([A-Za-z][\w.\-]{0,62}): (?=[|+])")
_HOST = re.compile(r"^\s*(?:host|hostname|Host|Hostname)\s*[:=]\s*([A-Za-z][\w.\-]{0,62})\s*$")
_HEALTH_ROW = re.compile(r"^\| (.{25}) \| (.{0,200}?) *\|$")
_DIAG_ROW = re.compile(r"^\| (.{25}) \| (.{46}) \|$")
_ENTITY = re.compile(r"^([A-Za-z_]{1,20}?)(\d{1,6}): (Pass|Fail|Skip|Warn|Not Run)\s*$")
_WARN_NAME = re.compile(r"^(?:Warning|Info)(?:: ([A-Za-z_]{1,20}?)(\d{1,6}))?$")
_RESULTS = ("Pass", "Fail", "Skip", "Warn")


def _strip(line: str) -> Tuple[Optional[str], str]:
    m = _PDSH.match(line)
    return (m.group(1), line[m.end():]) if m else (None, line)


def flatten(data: bytes) -> Optional[Tuple[bytes, int]]:
    """DATA with each DCGM table said as lines (and how many tables), or None: no DCGM table in it."""
    if b"Health Monitor Report" not in data and b"| Diagnostic " not in data:
        return None
    lines = data.decode("utf-8", "replace").replace("\r\n", "\n").split("\n")
    out: List[str] = []
    tables = 0
    host: Optional[str] = None
    i = 0
    while i < len(lines):
        pre, body = _strip(lines[i])
        h = _HOST.match(body)
        if h:
            host = h.group(1)
        if body.startswith("| Health Monitor Report") or body.startswith("| Diagnostic "):
            health = body.startswith("| Health")
            j, said = (_health if health else _diag)(lines, i + 1, pre or host)
            if out and _strip(out[-1])[1].startswith("+-"):
                out.pop()                      # the table's top rule
            out += said
            tables += 1
            i = j
            continue
        out.append(lines[i])
        i += 1
    return ("\n".join(out)).encode("utf-8"), tables


def _rows(lines: List[str], i: int) -> Tuple[int, List[str]]:
    """The table's rows from line I to its end: a line that is no row nor rule, another host's line
    (pdsh's `NAME: ` prefix changed: `pdsh -w node-1,node-2 dcgmi health -c` prints one table a host),
    or the next table's header."""
    rows: List[str] = []
    first = _strip(lines[i - 1])[0] if i > 0 else None
    while i < len(lines):
        pre, body = _strip(lines[i])
        if not body.startswith(("|", "+")) or pre != first \
                or body.startswith(("| Health Monitor Report", "| Diagnostic ")):
            break
        rows.append(body)
        i += 1
    return i, rows


def _who(host: Optional[str]) -> str:
    return f" on {host}" if host else ""


def _health(lines: List[str], i: int, host: Optional[str]) -> Tuple[int, List[str]]:
    end, rows = _rows(lines, i)
    said: List[str] = []
    group, ent, system, state = "", "", "", ""
    msg: List[str] = []
    where = f"dcgmi health{_who(host)}"

    def flush() -> None:
        if system:
            text = " ".join(msg)[:MSG_MAX]
            said.append(f"{where}: {group} {ent} {system} {state}" + (f": {text}" if text else ""))

    for r in rows:
        m = _HEALTH_ROW.match(r)
        if m is None:
            continue
        left, right = m.group(1).rstrip(), m.group(2).strip()
        label = left.strip()
        if not left:
            msg.append(right)
            continue
        if left.startswith("Overall Health"):
            said.append(f"{where}: Overall Health {right}")
        elif not label.startswith("->"):
            group = label
        elif left.startswith("-> "):
            flush()
            ent, system, msg = label[3:].strip(), "", []
        elif left.startswith("      -> "):
            flush()
            system, state, msg = label[3:].strip(), right, []
    flush()
    return end, said


class _Diag:
    """The rows of one diag table, said as lines: a test, its entities' results, their messages."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.said: List[str] = []
        self.test = ""
        self.results: List[List[str]] = []      # [entity, result, message]
        self.cur: Optional[List[str]] = None

    def flush(self) -> None:
        for ent, res, text in self.results:
            self.said.append(f"{self.where}: {self.test} {ent} {res}"
                             + (f": {text.strip()[:MSG_MAX]}" if text.strip() else ""))
        self.results.clear()

    def warning(self, name: str, w: "re.Match[str]", info: str) -> None:
        ent = f"{w.group(1)} {w.group(2)}" if w.group(1) else "all"
        self.cur = next((x for x in self.results if x[0] == ent), None)
        if self.cur is None:
            self.cur = [ent, "Fail" if name.startswith("Warning") else "Info", ""]
            self.results.append(self.cur)
        self.cur[2] += (" " if self.cur[2] else "") + info[:45]

    def row(self, name: str, info: str) -> None:
        e = _ENTITY.match(info.strip()) if not name else None
        w = _WARN_NAME.match(name) if name else None
        if e:
            self.results.append([f"{e.group(1)} {e.group(2)}", e.group(3), ""])
            self.cur = None
        elif w:
            self.warning(name, w, info)
        elif name:
            self.flush()
            self.test, self.cur = name, None
            res = info.strip()
            if res.split(" ")[0] in _RESULTS:
                self.said.append(f"{self.where}: {self.test} {res}")
        elif self.cur is not None:
            self.cur[2] += info[:45]


def _diag(lines: List[str], i: int, host: Optional[str]) -> Tuple[int, List[str]]:
    end, rows = _rows(lines, i)
    d = _Diag(f"dcgmi diag{_who(host)}")
    meta = False
    for r in rows:
        if r.startswith(("|-----", "+-----")):     # a category: Metadata, Deployment, Hardware, ...
            d.flush()
            meta = "Metadata" in r
            d.test, d.cur = "", None
            continue
        m = _DIAG_ROW.match(r)
        if m is not None and not meta:
            d.row(m.group(1).strip(), m.group(2))
    d.flush()
    return end, d.said
