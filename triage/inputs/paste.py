"""The shapes pastes come in (issue 40): what a paste carries around a log's lines is taken off before
anything is matched, each only where the whole paste has it, on inputs of at most PASTE_MAX bytes:

- the dressing a bug report gives a log (`undress`): a markdown quote (`> `, `>`, nested), a
  line-number gutter (`  123 | `, `cat -n`'s number and tab; numbers that go up line by line), a
  uniform indentation (a paste inside a markdown list: 2+ spaces or a tab on every line), HTML
  entities (`&lt;` `&gt;` `&amp;` `&quot;` `&#39;` of a scraped issue page, where no raw `<` or `"`
  is left), trailing whitespace (where most lines have it); inside the code fences
  (```` ``` ````, `~~~`) or `<details>` wrapper when there is one, whose lines stay as they are;
- a paste hard-wrapped at a fixed width (a terminal or a web page cut every long line at, say, 116
  columns, mid-word, its widths counted without ANSI colour codes) has its wrapped lines joined
  back (`unwrap`).

Each detector first looks at a few bytes or lines, so a log that is no such paste costs (almost)
nothing; no line is dropped by undressing, so line numbers are the paste's."""
from __future__ import annotations

from collections import Counter
from typing import List, Optional, Tuple

from ..lazyre import lazy_re

PASTE_MAX = 4 << 20       # bytes: only an input this small (read whole in one block) is looked at
MIN_WIDTH = 60            # columns: a narrower "width" is a log's own short lines
MIN_WRAPPED = 3           # lines cut at exactly the width
# the start of a log record: a launcher / logger prefix (srun's task id), a date, a glog header, a level,
# a traceback, an exception line
_CSI_TAIL = lazy_re(r"[0-9;?]*[ -/]*[@-~]")    # an ANSI CSI sequence after its `ESC [` (text.ANSI's first form)
_TABLE = "|+=-*#"          # a table's or a box's first character (its rows all start with it)
_NEW_RECORD = lazy_re(r"\d{1,6}: |\[[^\]\s][^\]]{0,80}\]|\d{4}-\d\d-\d\d[ T]|[IWEF]\d{4} \d\d:|"
                      r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|[a-z][\w.-]*: (?:error|info|warning)\b|"
                      r"Traceback \(most|\S+:\d+:\d+ \[\d+\] NCCL |\s+File \"|"
                      r"[A-Za-z_][\w.]*(?:Error|Exception|Warning): ")


def _width(lines: List[str]) -> Optional[int]:
    """The column every long line of LINES was cut at, when they look hard-wrapped: no line is longer,
    at least MIN_WRAPPED lines have exactly that length (not counting separator lines of one repeated
    character), and most of them go on in a line that starts no record of its own."""
    if len(lines) < MIN_WRAPPED + 1:
        return None
    lens = Counter(len(s) for s in lines if len(s) >= MIN_WIDTH and len(set(s.strip())) > 1)
    if not lens:
        return None
    width = max(len(s) for s in lines)
    exact = lens.get(width, 0)
    if width < MIN_WIDTH or width > 1000 or exact < MIN_WRAPPED:
        return None
    # a wrapped line goes on in the next one, mid-record: most lines of the width are followed by a
    # line that does not start a new record (a log's own lines of one length are whole records)
    pairs = [(s, lines[i + 1]) for i, s in enumerate(lines[:-1]) if len(s) == width]
    goes_on = sum(1 for s, x in pairs if _goes_on(s, x))
    return width if goes_on * 3 >= len(pairs) * 2 else None


def _goes_on(line: str, nxt: str) -> bool:
    """NXT can be the rest of LINE cut at the width: it is not empty, starts no record of its own (a
    prefix, a date, a level, ...), and is no copy of LINE's template (a log's fixed-width lines, such
    as Megatron's padded iteration lines, repeat their start)."""
    if not nxt or nxt[:6] == line[:6] or (nxt[0] == line[:1] and nxt[0] in _TABLE):
        return False                 # (a table's rows, a template's copies start alike)
    return not _NEW_RECORD.match(nxt.lstrip())


def _without_csi(text: str) -> str:
    """TEXT without its ANSI CSI sequences (colour codes): cut at each `ESC [` (a split in C: a
    regex search through megabytes for the few codes of a coloured log costs more)."""
    parts = text.split("\x1b[")
    out = [parts[0]]
    for p in parts[1:]:
        m = _CSI_TAIL.match(p)
        out.append(p[m.end():] if m else "\x1b[" + p)
    return "".join(out)


def unwrap(data: bytes) -> Optional[Tuple[bytes, int, int]]:
    """DATA (a whole input) with its hard-wrapped lines joined, the width and the lines joined; None
    when it does not look hard-wrapped."""
    if len(data) > PASTE_MAX or b"\n" not in data:
        return None
    text = data.decode("utf-8", "replace")
    if "\x1b[" in text:             # a terminal wraps what it shows: widths without colour codes
        text = _without_csi(text)
    lines = text.replace("\r\n", "\n").split("\n")
    width = _width(lines)
    if width is None:
        return None
    out: List[str] = []
    joined = 0
    cont, prev = False, ""
    for s in lines:
        if cont and _goes_on(prev, s):
            out[-1] += s
            joined += 1
        else:
            out.append(s)            # (a line of the width that was whole: the next one is a record of its own)
        cont, prev = len(s) == width, s
    return ("\n".join(out)).encode("utf-8"), width, joined


def wrapped_note(label: str, width: int, joined: int) -> str:
    return (f"{label} is a paste hard-wrapped at {width} columns: {joined:,} wrapped line(s) joined before "
            "matching (line numbers count the joined lines)")


# --- the dressing a bug report gives a log ---------------------------------------------------------------------
_WRAPPER = lazy_re(r"[ \t>]*(?:(?:`{3,}|~{3,})[\w+.#-]*|</?details(?: [^>]*)?>(?:\s*<summary>.*</summary>)?|"
                   r"<summary>.*</summary>)\s*")
_QUOTE = lazy_re(r"> ?")
_GUTTER = lazy_re(r"[ \t]*(\d{1,7})(\t| ?[|\u2502](?: |$)|$)")
_GUTTER_B = lazy_re(rb"[ \t]*\d{1,7}(?:\t| ?(?:\||\xe2\x94\x82)(?: |$)|$)")
_ENTITY_B = lazy_re(rb"&(?:lt|gt|amp|quot|apos|#39|#x27|#34|#60|#62);")
_ANY_ENTITY = lazy_re(r"&(?:[a-z]{2,8}|#\d{1,6}|#x[0-9a-fA-F]{1,6});")
MIN_DRESSED = 3           # lines: a dressing fewer lines carry is no paste's
MAX_PEELS = 6             # dressings taken off in turn (a quote around an indented list's gutter ...)


def _region(lines: List[str]) -> Tuple[int, int, List[int]]:
    """The lines a paste's dressing covers: between the first and the last code fence / <details>
    wrapper line when there are two (the prose around them is the report's, not the log's), else all;
    and the wrapper lines themselves (left out of every "all lines have it" test)."""
    wrappers = [i for i, s in enumerate(lines) if s and s.lstrip(" \t>")[:1] in "`~<" and _WRAPPER.fullmatch(s)]
    if len(wrappers) >= 2:
        return wrappers[0], wrappers[-1] + 1, wrappers
    return 0, len(lines), wrappers


def _common_space(lines: List[str]) -> str:
    lead = None
    for s in lines:
        w = s[:len(s) - len(s.lstrip(" \t"))]
        lead = w if lead is None else lead[:next((i for i, (a, b) in enumerate(zip(lead, w)) if a != b),
                                                min(len(lead), len(w)))]
        if not lead:
            return ""
    return lead or ""


def _gutter(seen: List[str], body: List[str]) -> Optional[List[str]]:
    """BODY without its line-number gutter, when every line of SEEN has one numbering the lines one
    after the other (an editor's `  123 | `, `cat -n`'s number right-aligned in 6 columns and a tab:
    a table whose first column is an id and a tab is no gutter); else None."""
    cuts = []
    for s in seen:
        m = _GUTTER.match(s)
        if m is None or (m.group(2) == "\t" and m.end(1) < 6):
            return None
        cuts.append(int(m.group(1)))
    if any(b != a + 1 for a, b in zip(cuts, cuts[1:])):
        return None
    out = []
    for s in body:
        m = _GUTTER.match(s)
        out.append(s[m.end():] if m else s)
    return out


def _peel(body: List[str]) -> Optional[Tuple[str, List[str]]]:
    """One dressing every line of BODY (its non-empty lines, wrappers left out) has, taken off:
    (its name, the lines without it); None when there is none."""
    seen = [s for s in body if s.strip() and not _WRAPPER.fullmatch(s)]
    if len(seen) < MIN_DRESSED:
        return None
    first = seen[0][:1]
    if first == ">" and all(s[:1] == ">" for s in seen):
        return "markdown quote", [_QUOTE.sub("", s, count=1) if s[:1] == ">" else s for s in body]
    if first in " \t" or first.isdigit():
        g = _gutter(seen, body)
        if g is not None:
            return "line-number gutter", g
        lead = _common_space(seen) if first in " \t" else ""
        if "\t" in lead or len(lead) >= 2:
            return "indentation", [s[len(lead):] if s.startswith(lead) else s.lstrip(" \t") for s in body]
    return None


def _unescaped(data: bytes) -> Optional[str]:
    """DATA's text with the HTML entities of a scraped page decoded, when it is one: entities, and no
    raw `<` or `"` outside the wrapper lines (a log with both is a log that prints an entity)."""
    if not _ENTITY_B.search(data):
        return None
    if b'"' in data or b"<" in data:
        if b"<details" not in data and b"<summary" not in data:
            return None
        for s in data.split(b"\n"):
            if (b"<" in s or b'"' in s) and not _WRAPPER.fullmatch(s.decode("utf-8", "replace")):
                return None
    import html  # (here: its entity table's import was ~2% of every run's start-up, issue 44)
    return _ANY_ENTITY.sub(lambda m: html.unescape(m.group(0)), data.decode("utf-8", "replace"))


def _decoded(data: bytes, done: List[str]) -> Tuple[bytes, Optional[str]]:
    """DATA, and its text when it holds a scraped page's HTML entities (decoded; "HTML entities"
    added to DONE)."""
    if b"&" in data:
        u = _unescaped(data)
        if u is not None:
            done.append("HTML entities")
            return data, u
    return data, None


def _maybe_dressed(data: bytes) -> bool:
    """A cheap look at the first lines: a code fence or a <details> wrapper among them, or all of
    them quoted, numbered, indented alike, or most of them padded with blanks."""
    head = data[:4096]
    if b"```" in head or b"~~~" in head or b"<details" in head:
        return True
    lines = [s.rstrip(b"\r") for s in head.split(b"\n")[:-1] if s.strip()][:32]
    if len(lines) < MIN_DRESSED:
        return False
    if all(s[:1] == b">" for s in lines) or all(_GUTTER_B.match(s) for s in lines):
        return True
    if all(s[:2] in (b"  ", b" \t") or s[:1] == b"\t" for s in lines):
        return True
    return sum(1 for s in lines if s[-1:] in (b" ", b"\t")) * 2 >= len(lines)


def _peeled(lines: List[str], done: List[str]) -> List[str]:
    """LINES with trailing whitespace (where most lines have it) and the dressings of the paste's
    region (_region) taken off, their names added to DONE."""
    ends = [s for s in lines if s.strip()]
    if ends and sum(1 for s in ends if s[-1] in " \t") * 2 >= len(ends):
        lines = [s.rstrip(" \t") for s in lines]        # (a terminal's copy pads its lines)
        done.append("trailing whitespace")
    lo, hi, _ = _region(lines)
    body = lines[lo:hi]
    for _ in range(MAX_PEELS):
        p = _peel(body)
        if p is None:
            break
        if p[0] not in done:
            done.append(p[0])
        body = p[1]
    return lines[:lo] + body + lines[hi:]


def undress(data: bytes) -> Optional[Tuple[bytes, List[str]]]:
    """DATA (a whole input) with what a paste carries around its lines taken off (the module doc),
    and the names of the dressings taken off; None when it has none.  Line for line: no line is
    added or dropped, a wrapper line stays as it is."""
    if len(data) > PASTE_MAX or b"\n" not in data:
        return None
    done: List[str] = []
    data, text = _decoded(data, done)
    if not done and not _maybe_dressed(data):
        return None
    if text is None:
        text = data.decode("utf-8", "replace")
    crlf = "\r\n" in text
    lines = _peeled(text.replace("\r\n", "\n").split("\n") if crlf else text.split("\n"), done)
    if not done:
        return None
    out = "\n".join(lines)
    return (out.replace("\n", "\r\n") if crlf else out).encode("utf-8"), done


def undressed_note(label: str, done: List[str]) -> Optional[str]:
    """The note a report carries when a paste was read undressed (padding alone goes unsaid)."""
    said = [d for d in done if d != "trailing whitespace"]
    if not said:
        return None
    return (f"{label} is a pasted log: its {', '.join(said)} taken off each line before matching "
            "(line numbers are the paste's)")


def reshape(data: bytes) -> Optional[Tuple[bytes, List[str], Optional[Tuple[int, int]]]]:
    """A small input's bytes as they are matched: undressed (undress), then hard-wrapped lines
    joined (unwrap); with the dressings taken off and the wrap's (width, lines joined); None: as
    it is."""
    d = undress(data)
    if d is not None:
        data = d[0]
    u = unwrap(data)
    if d is None and u is None:
        return None
    return (u[0] if u else data), (d[1] if d else []), ((u[1], u[2]) if u else None)
