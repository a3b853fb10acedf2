"""The shapes pastes come in (issue 40), as data: each row of SHAPES is one way a real user or a log
collector reshapes a log on its way into a bug report (a GitHub comment's markdown quote or code
fence, a scraped page's HTML entities, an editor's line-number gutter, journald's header, ...), as a
small pure function of the log's text and what the log's own report says about it (`Facts`).

A new shape is one row.  A shape that cannot keep the evidence for some log (a head cut that drops
the error line) says so for that log, computed from the facts (`Shape.excluded`), never from a list
of names.  tests/test_paste_grid.py runs every shape over the real logs of the corpus.

Synthetic transformations of real logs: the logs are real (tests/fixtures/logs/real), the shapes are
written here from what the tools print (GitHub's markdown, html.escape, `cat -n`, journalctl's short
format, rich/colorlog's SGR colour codes, a collector's RFC 3339 stamp)."""
from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Facts:
    """What the original log's report says, for shapes that need to know where its evidence is."""
    outcome: str
    primary: Optional[str]
    first_failing_rank: Optional[int]
    evidence: Tuple[int, ...]      # 1-based line numbers of the first failure and the primary's findings
    prefix: Optional[str]          # the launcher prefix on the first failure's line ("[rank1]: "), if any
    rank: Optional[int]            # the rank that prefix names
    launcher_root_rank: Optional[int] = None   # the rank the launcher's own report names as the root cause
    one_of_several: bool = False   # the log is one file of a directory of per-rank logs


Fn = Callable[[str, Facts], str]
Why = Callable[[str, Facts], Optional[str]]


@dataclass(frozen=True)
class Shape:
    name: str
    fn: Fn
    excluded: Optional[Why] = None     # the reason this shape destroys the log's evidence, or None
    rank_lost: Optional[Why] = None    # the reason the reshaped log cannot name the first failing rank

    def why_not(self, text: str, facts: Facts) -> Optional[str]:
        from triage.inputs.paste import undress
        if undress(text.encode("utf-8")) is not None:     # (test_paste_grid's dressed pastes: their own test)
            return "the log already is a dressed paste: a shape goes around a log as a job wrote it"
        return self.excluded(text, facts) if self.excluded else None

    def why_no_rank(self, text: str, facts: Facts) -> Optional[str]:
        return self.rank_lost(text, facts) if self.rank_lost else None


def _lines(text: str) -> List[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _each(f: Callable[[int, str], str]) -> Fn:
    return lambda text, _facts: "".join(f(i, ln) + "\n" for i, ln in enumerate(_lines(text)))


def _around(head: str, tail: str) -> Fn:
    return lambda text, _facts: head + text.rstrip("\n") + "\n" + tail


# --- ANSI colour, as rich / colorlog print a level and an exception's name ----------------------------------------
_SGR = {"ERROR": "31", "CRITICAL": "1;31", "FATAL": "1;31", "WARNING": "33", "WARN": "33", "INFO": "32",
        "DEBUG": "36", "Traceback": "1;31"}
_WORD = re.compile(r"\b(ERROR|CRITICAL|FATAL|WARNING|WARN|INFO|DEBUG|Traceback|[A-Z]\w*(?:Error|Exception))\b")


def _ansi(text: str, _facts: Facts) -> str:
    return _WORD.sub(lambda m: f"\x1b[{_SGR.get(m.group(1), '1;31')}m{m.group(1)}\x1b[0m", text)


# --- HTML entities, as a scraped issue page shows a log -------------------------------------------------------------
def _entities(text: str, _facts: Facts) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


# --- hard wrap (tests/test_pastes.py does bare wraps at 116/100/80; here 120, and a wrapped paste quoted) ---------
def _fold(width: int) -> Fn:
    def fn(text: str, _facts: Facts) -> str:
        out = []
        for ln in _lines(text):
            while len(ln) > width:
                out.append(ln[:width])
                ln = ln[width:]
            out.append(ln)
        return "".join(x + "\n" for x in out)
    return fn


def _few_wrapped(width: int) -> Why:
    """One or two lines cut at a width cannot be told from a log's own lines of that length (paste.py
    asks for MIN_WRAPPED); a log already wrapped is not wrapped again."""
    def why(text: str, _f: Facts) -> Optional[str]:
        from triage.inputs.paste import MIN_WRAPPED
        n = sum(len(x) > width for x in _lines(text))
        if 0 < n < MIN_WRAPPED:
            return f"only {n} line(s) longer than {width}: a wrap of so few lines cannot be told"
        return _already_wrapped(text, _f)
    return why


# --- cuts -----------------------------------------------------------------------------------------------------------
def _head_cut(frac: float) -> Fn:
    return lambda text, _f: "".join(x + "\n" for x in _lines(text)[int(len(_lines(text)) * frac):])


def _wrapped(text: str) -> bool:
    from triage.inputs.paste import unwrap
    return unwrap(text.encode("utf-8")) is not None


def _positional(why: Optional[Why] = None) -> Why:
    """A shape that cuts or inserts at the report's line numbers: not for a hard-wrapped paste, whose
    report counts the joined lines."""
    def w(text: str, f: Facts) -> Optional[str]:
        if _wrapped(text):
            return "the log is a hard-wrapped paste: its report's line numbers count the joined lines"
        return why(text, f) if why else None
    return w


def _head_cut_loses(frac: float) -> Why:
    def why(text: str, f: Facts) -> Optional[str]:
        n = int(len(_lines(text)) * frac)
        lost = [x for x in f.evidence if x <= n]
        return f"evidence line(s) {lost} are in the {n} lines cut" if lost else None
    return _positional(why)


def _names_rank(lines: Sequence[str], rank: Optional[int]) -> bool:
    """Some line of LINES names RANK as triage's rank reader reads it (a launcher prefix or a rank
    named in the message)."""
    from triage.inputs.ranks import RankReader
    from triage.inputs.text import normalise
    rr = RankReader()
    for ln in lines:
        text, r = rr.split_prefix(normalise(ln))
        if (r if r is not None else rr.inner_rank(text)) == rank:
            return True
    return False


def _head_cut_rank(frac: float) -> Why:
    def why(text: str, f: Facts) -> Optional[str]:
        kept = _lines(text)[int(len(_lines(text)) * frac):]
        return None if _names_rank(kept, f.first_failing_rank) else \
            f"no kept line names rank {f.first_failing_rank}"
    return why


_FRAME = re.compile(r"\s|File \"|\^|~|\[rank\d+\]:\s|\d+: \s")


def _tail_end(lines: List[str], at: int) -> int:
    """The index after the traceback / error record that line AT (0-based) is part of ends: the
    following lines that go on in it (indented, a frame, a chained exception's words)."""
    i = at + 1
    while i < len(lines) and lines[i].strip() and _FRAME.match(lines[i]):
        i += 1
    return i


def _tail_cut(text: str, f: Facts) -> str:
    lines = _lines(text)
    return "".join(x + "\n" for x in lines[:_tail_end(lines, max(f.evidence) - 1)])


def _no_error_line(_text: str, f: Facts) -> Optional[str]:
    return None if f.evidence and f.outcome != "healthy" else "the log has no error line to cut after"


def _tail_cut_rank(text: str, f: Facts) -> Optional[str]:
    """The first failing rank the launcher's closing report names (torchrun's "Root Cause"), cut off
    with it when no kept line names that rank; else the kept lines must still name it."""
    kept = _lines(_tail_cut(text, f))
    if f.launcher_root_rank == f.first_failing_rank and len(kept) < len(_lines(text)):
        return f"rank {f.first_failing_rank} is the launcher's closing report's, cut"
    return None if _names_rank(kept, f.first_failing_rank) else f"no kept line names rank {f.first_failing_rank}"


# --- elision in the healthy middle ------------------------------------------------------------------------------------
_TROUBLE = re.compile(r"Traceback|Error|error|ERROR|Exception|FATAL|WARN|Fatal|Killed|fault|failed|^\s")


def _elide(mark: str) -> Fn:
    """MARK inserted halfway through the healthy part of the log: the lines before its first error,
    traceback or evidence line (and before any indented line: a record's own continuation)."""
    def fn(text: str, f: Facts) -> str:
        lines = _lines(text)
        first = min(f.evidence) - 1 if f.evidence else len(lines)
        first = next((i for i, x in enumerate(lines[:first]) if _TROUBLE.search(x)), first)
        at = first // 2
        return "".join(x + "\n" for x in lines[:at] + [mark] + lines[at:])
    return fn


# --- collector headers --------------------------------------------------------------------------------------------------
_OWN_TIME = re.compile(r"(20\d\d)-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?|"
                       r"\b[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,6})")


def _own_time(line: str) -> Optional[float]:
    """The time a line says it was written (an ISO date and time, a glog header), in seconds."""
    m = _OWN_TIME.search(line)
    if m is None:
        return None
    g = m.groups()
    y, mo, d, h, mi, sec, frac = (g[:7] if g[0] else ("2026",) + g[7:13])
    t = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(sec), 0, 0, 0))
    return t + (int(frac) / 10 ** len(frac) if frac else 0.0)


def _stamped(fmt: Callable[[float], str]) -> Fn:
    """A collector's time before each line: when it read the line, so the line's own time where it says
    one (collectors of several ranks agree on the order), else a millisecond after the line before."""
    def fn(text: str, _facts: Facts) -> str:
        lines = _lines(text)
        t = next((x for x in map(_own_time, lines) if x is not None), 1796200000.0)
        out = []
        for ln in lines:
            own = _own_time(ln)
            t = max(t + 0.001, own) if own is not None else t + 0.001
            out.append(fmt(t) + ln + "\n")
        return "".join(out)
    return fn


def _guessed_times(text: str, f: Facts) -> Optional[str]:
    """A collector's stamps on one of several per-rank files order its lines against the other files':
    lines before the file's first own time would get a time nobody knows (before it, by how much?)."""
    if f.one_of_several:
        lines = [x for x in _lines(text) if x.strip()]
        if lines and _own_time(lines[0]) is None:
            return "one of several files whose first line says no time: a collector's stamp would be guessed"
    return _already_wrapped(text, f)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z "


def _journald(t: float) -> str:
    return time.strftime("%b %d %H:%M:%S", time.gmtime(t)) + " gpu-node-07 python[1234]: "


# --- a second, healthy rank's lines interleaved ---------------------------------------------------------------------------
def _interleave(text: str, f: Facts) -> str:
    """The log's lines, with a second rank's lines between them one for one (as two ranks share one
    stdout): the same job's rank that stayed healthy, whose lines are this log's own up to its first
    evidence line.  A log whose lines carry a launcher prefix gets the other rank's lines behind the
    same prefix naming a rank the log does not hold; a log without one gets them bare."""
    lines = _lines(text)
    first = min(f.evidence) - 1 if f.evidence else len(lines)
    other = [x for x in lines[:first] if x.strip()]
    if f.prefix is not None and f.rank is not None:
        cut = f.prefix.rfind(str(f.rank))

        def named(r: int) -> str:
            return f.prefix[:cut] + str(r) + f.prefix[cut + len(str(f.rank)):]
        pre = next(named(r) for r in range(f.rank + 1, f.rank + 1000) if named(r) not in text)
        # (the other rank's own lines: this rank's prefix, where it has one, swapped for the other's)
        other = [pre + (x[len(f.prefix):] if x.startswith(f.prefix) else x) for x in other]
    out: List[str] = []
    for i, ln in enumerate(lines):
        out.append(ln)
        if i < len(other):
            out.append(other[i])
    return "".join(x + "\n" for x in out)


def _one_rank_per_file(text: str, f: Facts) -> Optional[str]:
    """A per-rank file holds one rank's lines: no second rank is interleaved into it."""
    return "a per-rank file holds one rank's lines" if f.one_of_several else _already_wrapped(text, f)


def _already_wrapped(text: str, _f: Facts) -> Optional[str]:
    """A collector stamps a log's lines before a paste of it is wrapped (a terminal wraps what it
    shows): a log that already is a hard-wrapped paste gets no collector's shape on top."""
    return "the log already is a hard-wrapped paste" if _wrapped(text) else None


SHAPES: Tuple[Shape, ...] = (
    Shape("quote", _each(lambda i, ln: "> " + ln)),
    Shape("quote-nospace", _each(lambda i, ln: ">" + ln)),
    Shape("fence", _around("```\n", "```\n")),
    Shape("fence-text", _around("Here is the log:\n\n```text\n", "```\n\nAny idea?\n")),
    Shape("details", _around("<details><summary>log</summary>\n\n```\n", "```\n\n</details>\n")),
    Shape("details-bare", _around("<details>\n<summary>full log</summary>\n\n", "\n</details>\n")),
    Shape("quote-fence", lambda t, f: _each(lambda i, ln: "> " + ln)(_around("```\n", "```\n")(t, f), f)),
    Shape("crlf", lambda t, _f: t.replace("\n", "\r\n")),
    Shape("ansi", _ansi),
    Shape("indent-4", _each(lambda i, ln: "    " + ln)),
    Shape("indent-tab", _each(lambda i, ln: "\t" + ln)),
    Shape("list-item", lambda t, f: "- the log:\n\n" + _each(lambda i, ln: "    " + ln)(_around("```\n", "```\n")(t, f), f)),
    Shape("html-entities", _entities),
    Shape("wrap-120", _fold(120), _few_wrapped(120)),
    Shape("wrap-98-quoted", lambda t, f: _each(lambda i, ln: "> " + ln)(_fold(98)(t, f), f), _few_wrapped(98)),
    Shape("head-cut-25", _head_cut(0.25), _head_cut_loses(0.25), _head_cut_rank(0.25)),
    Shape("head-cut-60", _head_cut(0.6), _head_cut_loses(0.6), _head_cut_rank(0.6)),
    Shape("tail-cut", _tail_cut, _positional(_no_error_line), _tail_cut_rank),
    Shape("elide-dots", _elide("..."), _positional()),
    Shape("elide-omitted", _elide("[... 300 lines omitted ...]"), _positional()),
    Shape("gutter-bar", _each(lambda i, ln: f"{i + 1:>5} | " + ln)),
    Shape("gutter-cat-n", _each(lambda i, ln: f"{i + 1:>6}\t" + ln)),
    Shape("iso-timestamp", _stamped(_iso), _guessed_times),
    Shape("journald", _stamped(_journald), _guessed_times),
    Shape("trailing-space", _each(lambda i, ln: ln + ("  " if i % 2 else " \t"))),
    Shape("interleaved-rank", _interleave, _one_rank_per_file),
)
