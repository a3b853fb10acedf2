"""Input stage: files, directories, stdin, .gz files and URLs -> normalised, tagged lines.

Everything here streams: a file is never read into memory as a whole.  Bytes are
decoded leniently, each line normalised (text.py: ANSI colour codes and carriage-return
progress bars removed, over-long lines clipped) and tagged with the rank that printed it
(ranks.py, from the launcher table: a launcher prefix, else the file name, else a rank the
message names) and a timestamp when the line carries one.  A path with a protocol (s3://bucket/...,
any fsspec URL) is expanded and opened by remote.py and then read here like a local file.
"""
from __future__ import annotations

import functools
import io
import os
import re
import stat
import sys
import time
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
    cast,
)

from ..caps import MAX_WINDOW, TAIL_MAX
from ..lazyre import lazy_re
from ..match.rx import DIGITS, IGNORECASE, digit_blind, lazy
from ..match.rx import search as _search
from ..record import record
from . import remote
from .dcgm import flatten as dcgm_flatten
from .frdump import looks_like_dump
from .names import COMPRESSED, MAX_DIR_DEPTH, MAX_DIR_ENTRIES, MAX_DIR_FILES, InputError, log_name
from .paste import PASTE_MAX, reshape, undressed_note, wrapped_note
from .ranks import RANKS, inner_rank, inner_rank_at, split_at, split_prefix
from .text import ANSI_RX, CSI_RX, MAX_LINE, clip_keeping_error, normalise, progress_updates
from .text import CLIP_MARK as CLIP_MARK  # noqa: F401 - read here by older code

if TYPE_CHECKING:
    from .digest import InputHash




@record
class Line:
    text: str                 # normalised text, launcher prefix removed
    source: str               # file name as given ("<stdin>" for stdin)
    lineno: int               # 1-based line number in that source
    rank: Optional[int]       # global rank if known
    ts: Optional[float]       # seconds since the epoch (UTC) if the line carries a time
    raw: str = ""             # normalised text with its prefix (for evidence)
    attempt: Optional[int] = None   # restart attempt known from the path (torchrun attempt_N/)


# Helper regexes below are anchored or linear and run with the stdlib `re` (no timeout needed);
# pattern-catalog regexes always run with the `regex` timeout (rx.search).
# Normalisation is text.normalise; launcher rank prefixes are ranks.split_prefix / inner_rank (generated
# from the launcher table, launchers.py).
# (a literal every match holds, lower case; the regex): a name without the literal is not searched,
# so a plain input name imports no regex engine
_FILE_RANK = [
    ("rank", lazy(r"(?:^|[_\-./])rank[_\-]?(\d+)(?:\D|$)", IGNORECASE)),
    ("slurm-", lazy(r"slurm-\d+[_\-](\d+)\.(?:out|err|log)", IGNORECASE)),
]


def rank_from_filename(path: str) -> Optional[int]:
    name = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    if parent.isdigit() and name in ("stdout.log", "stderr.log", "error.json"):   # torchrun --log-dir
        return int(parent)
    for suffix in COMPRESSED:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    low = name.lower()
    for needs, rx_ in _FILE_RANK:
        if needs not in low:
            continue
        m = _search(rx_, name)
        if m:
            return int(m.group(1))
    return None


# --- timestamps ---------------------------------------------------------------
_TS = [     # (pattern, kind, whether a match holds a `-`: a line of none is not searched for it, ~2.3 us saved)
    # ISO-ish / Megatron "[2026-12-03 06:41:56.123456]" / python logging "2026-12-03 06:41:56,123"
    (lazy_re(r"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?"), "iso", True),
    # glog "E1203 07:12:01.426415" (no year)
    (lazy_re(r"(?:^|[\s\[\]:])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})"), "glog", False),
    # vLLM's logger "ERROR 12-04 07:00:05 [core.py:1759]" (_DATE_FORMAT "%m-%d %H:%M:%S", no year)
    (lazy_re(r"(?:^|[\s)])(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)()(?=[ .])"),
     "glog", True),
]
_DEFAULT_YEAR = 2026
# What every line whose time depends on the year holds (a year-less _TS match: glog's, vLLM's), as bytes: a
# superset each, for Hyperscan and `re` (issue 44: the block scan looks for a year that changes inside a block
# -- prepare.year_changes -- only in a block that may hold one; AnchorSet's facts): the year-less headers in ASCII
# digits, the prefix a _TS regex wants before one left out.  A line with control characters is normalised first
# (ANSI colours or a NUL dropped may join a header): it is searched again normalised (prepare._retag_normalised); a
# carriage return keeps a segment of the line, a substring; a header in digits of another script (a str regex's
# \d reads any Unicode digit) is other_digits_in's.
YEARLESS_FORMS = (
    rb"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d",                                                    # glog
    rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d",                  # vLLM
)
_ASCII = bytes(range(128))
_DIGIT = re.compile(r"\d")


def other_digits_in(buf: bytes) -> bool:
    """Whether BUF holds a digit of another script than ASCII's, as a str regex's \\d reads it: its bytes not ASCII
    (isascii in C, ~0.04 ms a MiB) decoded as a line is, searched (bytes between two not ASCII taken out join no
    valid UTF-8 sequence: it decodes as it does in its line; they may join a new one, which only says "may")."""
    if buf.isascii():
        return False
    return _DIGIT.search(buf.translate(None, _ASCII).decode("utf-8", "replace")) is not None
# Every _TS regex holds "(\d\d):(\d\d):(\d\d)": a probe with no such run holds no time (_holds_hms; issue 44: a
# log of handled tracebacks, most lines of no time, searched each with every regex, ~10 us a line)
_HMS = lazy_re(r"\d\d:\d\d:\d\d")


class _MinuteMemo:
    """Cache: (kind, year, "date hh:mm") -> epoch of that minute (a log's timestamps share few minutes);
    cleared when it holds more than MAX entries."""
    MAX = 4096

    def __init__(self) -> None:
        self.memo: Dict[Tuple[str, int, str], Optional[int]] = {}

    def get(self, key: Tuple[str, int, str], groups: Sequence[Optional[str]]) -> Optional[int]:
        t = self.memo.get(key, -1)
        if t == -1:
            t = self.memo[key] = _epoch(groups, key[0], key[1])
            if len(self.memo) > self.MAX:
                self.memo.clear()
        return t


_MINUTES = _MinuteMemo()


def timegm(y: int, mo: int, d: int, h: int = 0, mi: int = 0, sec: int = 0) -> int:
    """calendar.timegm((Y, MO, D, H, MI, SEC, ...)) without importing calendar and datetime: the days
    from 1970-01-01 to the first of the month (the proleptic Gregorian calendar, H. Hinnant's
    days_from_civil), plus D - 1 (a day past the month's end runs on into the next, as there).
    A year outside 1..9999 is a ValueError, as datetime.date's."""
    if not 1 <= y <= 9999 or not 1 <= mo <= 12:
        raise ValueError(f"year {y} or month {mo} is out of range")
    yy = y - (mo <= 2)
    era, yoe = divmod(yy, 400)
    doy = (153 * (mo - 3 if mo > 2 else mo + 9) + 2) // 5
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468 + d - 1
    return ((days * 24 + h) * 60 + mi) * 60 + sec


def parse_ts_ahead(text: str) -> Tuple[Optional[float], bool]:
    """parse_ts(TEXT) in no known year, for a pool worker ahead of the scanner, and whether the time
    depends on the year (a year-less header was read: the scanner parses it again in the year it knows
    by then, reparse_in; a 29 February is a time in a leap year only)."""
    return _parse_ts(text, None)


# _TS's first regex (ISO) on the bytes of an ASCII line, where `\\d` is [0-9] as the str regex's is in ASCII text
_ISO_B = re.compile(rb"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")


def parse_ts_ahead_ascii(buf: bytes, s: int, e: int) -> Tuple[Optional[float], bool]:
    """parse_ts_ahead of the ASCII text buf[s:e] (E - S <= 200: a line's first 200 characters), its ISO time
    read on the bytes where _TS's first regex finds a valid one there (parse_ts's then: no year-less header
    read before it); else parse_ts_ahead's of the text (issue 44: a worker's step lines of a block with a capture
    line took ~6 us each in decoding and _parse_ts's str searches, more than their step parse)."""
    q = buf.find(b"-", s, e)            # (a match holds one 4 bytes in: none starts before the first less 4)
    m = _ISO_B.search(buf, max(s, q - 4), e) if q >= 0 else None
    if m is not None:                   # (_ts_of's reading, on the bytes: int() reads digits as bytes)
        g = m.groups()
        t = _time(_MINUTES.get(("iso", 0, buf[m.start(1):m.end(5)].decode("ascii")), g),   # type: ignore[arg-type]
                  g[5], g[6].decode("ascii") if g[6] else None)                             # type: ignore[arg-type]
        if t is not None:
            return t, False
    return _parse_ts(buf[s:e].decode("ascii"), None)


def reparse_in(year: Optional[int], dep: bool) -> bool:
    """Whether a worker's parse_ts_ahead (DEP: the time depends on the year) is parsed again in YEAR."""
    return dep and year is not None and year != _DEFAULT_YEAR


def parse_ts(text: str, year_hint: Optional[int] = None) -> Optional[float]:
    return _parse_ts(text, year_hint)[0]


def _holds_hms(probe: str) -> bool:
    """Whether PROBE holds what every _TS regex's match holds, "\\d\\d:\\d\\d:\\d\\d" (an ASCII one: its digits
    masked, a substring test in C)."""
    if probe.isascii():
        return b"##:##:##" in probe.encode("ascii").translate(DIGITS)
    return _HMS.search(probe) is not None


def _may_hold_time(probe: str) -> bool:
    """Whether a _TS regex may match PROBE: it holds a `:` (a test in C first) and an HH:MM:SS run."""
    return ":" in probe and _holds_hms(probe)


def _ts_matches(probe: str) -> Iterator[Tuple[str, "re.Match[str]"]]:
    """(kind, match) of each _TS regex that PROBE (a line's first 200 characters, _may_hold_time) holds, in _TS's
    order; one a `-` of which PROBE has none is not searched."""
    dash = "-" in probe
    for rx_, kind, dashed in _TS:
        if dashed and not dash:
            continue
        m = rx_.search(probe)
        if m:
            yield kind, m


def _parse_ts(text: str, year_hint: Optional[int]) -> Tuple[Optional[float], bool]:
    """The time of TEXT's first 200 characters, and whether a year-less header was read on the way (the
    time then depends on the year: another year gives another time, or a 29 February none)."""
    probe = text[:200]
    if not _may_hold_time(probe):
        return None, False
    dep = False
    for kind, m in _ts_matches(probe):
        dep = dep or kind != "iso"
        t = _ts_of(kind, m.groups(), probe[m.start(1):m.end(5 if kind == "iso" else 4)], year_hint)
        if t is not None:
            return t, dep
    return None, dep


def _ts_of(kind: str, groups: Sequence[Optional[str]], minute: str, year_hint: Optional[int]) -> Optional[float]:
    """The time a timestamp match of KIND says (GROUPS: its groups; MINUTE: its text from the month or year to the
    minute), None when it is no valid time."""
    if kind == "iso":
        return _time(_MINUTES.get((kind, 0, minute), groups), groups[5], groups[6])
    return _time(_MINUTES.get((kind, year_hint or _DEFAULT_YEAR, minute), groups), groups[4], groups[5])


def _time(minute: Optional[int], sec: Optional[str], frac: Optional[str]) -> Optional[float]:
    """The time MINUTE's epoch seconds (None: no valid date) and a match's SEC and FRAC say (None: no valid time)."""
    s = int(sec)            # type: ignore[arg-type]  # (a match's seconds: never None)
    if minute is None or s >= 61:
        return None
    return minute + min(s, 59) + (float("0." + frac) if frac else 0.0)


# --- a line's parse by its layout (issue 44) ---------------------------------------------------------------
# A storm of one message on every rank is lines the same but for their digits (the rank, the time): the
# rank and time regexes, blind to which digit is which (rx.digit_blind), read them alike, so a line's
# reading -- where its text starts, where the digits of its rank and of each time match are -- is made once
# a layout and the digits read off each line (parse_hits: ~14 us a storm line in a pool worker).
# (cut, the rank's digits by its prefix, the rank's digits its message names, each time match that the probe
# holds: (kind, its minute's span, its seconds', its fraction's, its groups' spans)); positions in the normalised line
Template = Tuple[int, Optional[Tuple[int, int]], Optional[Tuple[int, int]],
                 Tuple[Tuple[str, Tuple[int, int], Tuple[int, int], Tuple[int, int], Tuple[Tuple[int, int], ...]], ...]]


@functools.lru_cache(maxsize=None)
def templates_ok() -> bool:
    """Whether lines are read by their layout: every regex a line's rank and time are read with is digit-blind."""
    return RANKS.digit_blind() and all(digit_blind(rx_.pattern, rx_.flags) for rx_, _, _ in _TS)


def parse_template(norm: str, file_rank: Optional[int]) -> Tuple[Tuple[int, Optional[int], Optional[float], bool],
                                                                 Template]:
    """The normalised line NORM's (prefix length, rank, parse_ts_ahead's time and year dependence) -- what
    text_and_rank and parse_ts_ahead say of it -- and its Template (templates_ok: a line of the same layout but
    other digits is then read by from_template)."""
    cut, rank, span = split_at(norm)
    inner = inner_rank_at(norm[cut:])
    inner_span = (inner[0] + cut, inner[1] + cut) if inner is not None else None
    cands = []
    probe = norm[:200]
    for kind, m in _ts_matches(probe) if _may_hold_time(probe) else ():
        sec = 6 if kind == "iso" else 5
        cands.append((kind, (m.start(1), m.end(sec - 1)), m.span(sec), m.span(sec + 1),
                      tuple(m.span(i) for i in range(1, len(m.groups()) + 1))))
    tpl: Template = (cut, span, inner_span, tuple(cands))
    return from_template(tpl, norm, file_rank), tpl


def from_template(tpl: Template, norm: str, file_rank: Optional[int]) -> Tuple[int, Optional[int], Optional[float],
                                                                                bool]:
    """parse_template's parse of NORM, a line of TPL's layout: its digits read where TPL says they are."""
    cut, span, inner_span, cands = tpl
    if span is not None:
        rank: Optional[int] = int(norm[span[0]:span[1]])
    elif file_rank is not None:
        rank = file_rank
    else:
        rank = int(norm[inner_span[0]:inner_span[1]]) if inner_span is not None else None
    dep = False
    memo = _MINUTES.memo
    for kind, (a, b), (c, d), (e, f), spans in cands:
        iso = kind == "iso"
        dep = dep or not iso
        key = (kind, 0 if iso else _DEFAULT_YEAR, norm[a:b])
        t = memo.get(key, -1)
        if t == -1:
            t = _MINUTES.get(key, [norm[x:y] if x >= 0 else None for x, y in spans])
        got = _time(t, norm[c:d], norm[e:f] if e >= 0 else None)
        if got is not None:
            return cut, rank, got, dep
    return cut, rank, None, dep


def _epoch(groups: Sequence[Optional[str]], kind: str, year: int) -> Optional[int]:
    """Epoch seconds of the minute a timestamp match's GROUPS name (None when it is no valid date)."""
    try:
        if kind == "iso":
            y, mo, d, h, mi = (int(cast(str, g)) for g in groups[:5])
        else:
            mo, d, h, mi = (int(cast(str, g)) for g in groups[:4])
            y = year
        if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60):
            return None
        return timegm(y, mo, d, h, mi)
    except (ValueError, OverflowError):
        return None


# --- opening inputs -------------------------------------------------------------
def _regular_or_note(path: str, notes: Optional[List[str]]) -> bool:
    """A file found in a directory is read only when it is a regular file (a FIFO named rank_1.log
    would block the run forever; a socket or device is no log); the others get a note."""
    try:
        st = os.stat(path)
    except OSError:
        return True                 # unreadable: opening it says why, in a note
    if stat.S_ISREG(st.st_mode):
        return True
    if notes is not None:
        what = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        notes.append(f"skipped {path!r} found in a directory: {what} (name it on the command line to read it)")
    return False


def _walk_logs(top: str, notes: Optional[List[str]] = None) -> List[str]:
    """The log-like files under TOP (hidden files and directories skipped, at most MAX_DIR_DEPTH
    levels down); a tree that is clearly not one job's logs is an InputError."""
    found: List[str] = []
    seen = 0
    base = top.rstrip(os.sep).count(os.sep)

    def unreadable(e: OSError) -> None:
        if notes is not None:
            notes.append(f"cannot read directory {e.filename!r}: {e.strerror or e} (its logs were not triaged)")
    for root, dirs, files in os.walk(top, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if root.count(os.sep) - base < MAX_DIR_DEPTH else []
        seen += len(dirs) + len(files)
        if seen > MAX_DIR_ENTRIES:
            raise InputError(f"directory {top!r} holds more than {MAX_DIR_ENTRIES:,} entries: it does not look like "
                             "one job's logs; pass the job's own directory or its log files")
        for f in sorted(files):
            if log_name(f) and not looks_like_dump(os.path.join(root, f)):   # a Flight Recorder dump: frdump.py
                path = os.path.join(root, f)
                if _regular_or_note(path, notes):
                    found.append(path)
        if len(found) > MAX_DIR_FILES:
            raise InputError(f"directory {top!r} holds more than {MAX_DIR_FILES:,} log-like files: it does not look "
                             "like one job's logs; pass the job's own directory or its files (for many jobs: "
                             f"triage fleet --jobs-in {top})")
    return found


# Slurm's default output names: slurm-%j.out, slurm-%j_%t.out (per task), slurm-%A_%a.out (arrays)


def _one_job(top: str, files: Sequence[str]) -> None:
    """A directory given as one job that holds the logs of several Slurm jobs (slurm-101.out,
    slurm-102.out) would get one mixed verdict: an InputError that points at triage fleet."""
    from ..jobid import SLURM_OUTPUT
    ids = sorted({m.group(1) for f in files for m in [SLURM_OUTPUT.match(os.path.basename(f))] if m},
                 key=int)
    if len(ids) > 1:
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        raise InputError(f"directory {top!r} holds the logs of {len(ids)} Slurm jobs ({shown}): one verdict would mix "
                         f"them; triage each job's files, or all of them with `triage fleet --jobs-in {top}`")


def _not_reports(files: List[str], notes: Optional[List[str]]) -> List[str]:
    """FILES less triage's own reports (ourreports: told by their first bytes), each skipped with a note."""
    from .ourreports import report_file
    out = []
    for f in files:
        fmt = report_file(f) if f != "-" and not remote.is_url(f) else None
        if fmt is None:
            out.append(f)
        elif notes is not None:
            notes.append(f"skipped {f!r}: a triage {fmt} report, not a log (triage never reads its own output)")
    return out


def _only_reports(skipped: List[str]) -> str:
    first = skipped[0].replace("skipped ", "", 1).replace(": a triage", " is a triage", 1)
    return first + (f" (and {len(skipped) - 1} more input(s) like it)" if len(skipped) > 1 else "") + \
        ": no log left to triage; give the job's log"


def expand_paths(paths: Iterable[str], notes: Optional[List[str]] = None) -> List[str]:
    """Expand directories (recursively, sorted, bounded: see _walk_logs) into files; '-' means stdin.
    What a directory holds that is not read (an unreadable subdirectory, a FIFO, triage's own report)
    is noted in NOTES; inputs that are all triage reports are an InputError."""
    given = list(paths)
    skipped: List[str] = []
    out = _not_reports(_expand(given, notes), skipped)
    if notes is not None:
        notes.extend(skipped)
    if not out and skipped:
        raise InputError(_only_reports(skipped))
    return out


def _expand(paths: Iterable[str], notes: Optional[List[str]] = None) -> List[str]:
    out: List[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
        elif remote.is_url(p):
            found = remote.expand(p, notes)
            if not found:
                raise InputError(f"directory {p!r} holds no log files (*.log, *.out, *.err, *.txt, *.gz)")
            _one_job(p, found)
            out.extend(found)
        elif os.path.isdir(p):
            found = _walk_logs(p, notes)
            if not found:
                raise InputError(f"directory {p!r} holds no log files (*.log, *.out, *.err, *.txt, *.gz)")
            _one_job(p, found)
            out.extend(found)
        else:
            why = not_there(p)
            if why:
                raise InputError(why)
            out.append(p)
    return out


def not_there(p: str) -> Optional[str]:
    """Why local path P cannot be looked at ("no such file or directory", or the OS's reason: a
    directory on its way that this user may not enter), or None."""
    try:
        os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        return f"no such file or directory: {p!r}"
    except OSError as e:
        return f"cannot read {p!r}: {e.strerror or e}"
    except ValueError:                  # a NUL in the name
        return f"no such file or directory: {p!r}"
    return None


# PyTorch's hints under a CUDA error (torch c10/cuda/CUDAException.cpp, CUDAMiscFunctions.cpp 2.1-2.11):
# they continue the error's message and are never an error of their own (verdict/unexplained.py)
TORCH_CUDA_HINTS = (r"CUDA kernel errors might be asynchronously reported|"
                    r"For debugging consider passing CUDA_LAUNCH_BLOCKING=1|"
                    r"Compile with `TORCH_USE_CUDA_DSA`|Device-side assertions? (?:were|was) explicitly omitted|"
                    r"Search for `cudaError\w*' in https?://")
# lines that continue the message of the line before (exception text, NCCL's "Last error:", C++ frames)
_CONTINUATION = lazy(
    r"^(?:nccl[A-Z]\w*: |Last error:|Exception raised from |frame #\d+|terminate called after|"
    r"[A-Z]\w*(?:Error|Exception): |  what\(\): |" + TORCH_CUDA_HINTS + r"|Duplicate GPU detected|\s+\S)")
# a dotted exception line ("torch.OutOfMemoryError: ...") right under a traceback's frame or source line
_DOTTED_EXC = lazy(r"^(?:[a-z_]\w*\.)+[A-Z]\w*(?:Error|Exception): ")


def continues(text: str, prev_text: str) -> bool:
    """A line that continues the message of the line before it (and so takes its rank): the
    continuation shapes above, the line after NCCL's "Last error:" (the error text itself), or a dotted
    exception line ending the traceback whose indented frame is the line before."""
    return (bool(_CONTINUATION.match(text)) or prev_text.startswith("Last error:")
            or (prev_text[:1] in (" ", "\t") and bool(_DOTTED_EXC.match(text))))


def _read_errors() -> Tuple[Type[BaseException], ...]:
    """What reading an input can raise: gzip's and bz2's errors are OSErrors; lzma's only once an .xz
    input imported lzma (an `except _read_errors()` is evaluated only when something was raised)."""
    lz = sys.modules.get("lzma")
    z = sys.modules.get("zlib")             # (likewise: loaded by gzip, or by whoever needed it)
    return (OSError, EOFError, UnicodeError) + ((z.error,) if z is not None else ()) + \
        ((lz.LZMAError,) if lz is not None else ())


# compressed inputs, by their magic bytes: (name, opener)
_MAGIC = [(b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd")]
MAX_RATIO = 100          # decompressed / compressed bytes beyond which (and past MAX_EXPANDED) reading stops
MAX_EXPANDED = 1 << 30   # ... a decompression bomb is told from a very repetitive log only past 1 GiB
EARLY_AFTER = 32 << 20   # ... or, a file of known size, as soon as this much came out at a ratio that makes the
#                          whole file pass MAX_EXPANDED: it would be stopped there, now rather than ~50 s later
#                          (a ratio alone tells nothing: a log of time-stamped repeated lines is 1,500x in xz)


def _stored_size(raw: Any) -> int:
    """The size of a compressed input as stored (a regular file, a fetched object; through a _Tap); 0
    when not known (stdin, a pipe)."""
    for _ in range(3):
        try:
            st = os.fstat(raw.fileno())
            return st.st_size if stat.S_ISREG(st.st_mode) else 0
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
        size = getattr(getattr(raw, "_f", None), "size", None)      # remote._Raw: the fsspec file's size
        if isinstance(size, int):
            return size
        inner = getattr(raw, "_f", None) or getattr(raw, "raw", None)
        if inner is None or inner is raw:
            return 0
        raw = inner
    return 0


class _Limited(io.BufferedIOBase):
    """A decompressing reader that stops at a decompression-bomb ratio (`stopped` says so)."""

    def __init__(self, f: "Union[io.BufferedIOBase, _ZstdFrames]", raw: IO[bytes], label: str, kind: str):
        super().__init__()
        self.f, self.raw, self.label, self.kind = f, raw, label, kind
        self.out = 0
        self.stopped = ""
        self.stored = _stored_size(raw)

    @property
    def name(self) -> str:          # the compressed file's (TextIOWrapper.name)
        return self.raw.name

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        return self.read(n if n and n > 0 else 1 << 16)

    def read(self, n: Optional[int] = -1) -> bytes:
        if self.stopped:
            return b""
        data = self.f.read(-1 if n is None else n)
        self.out += len(data)
        if self.out > MAX_EXPANDED or (self.stored and self.out > EARLY_AFTER):
            try:       # the compressed bytes read, less those read ahead and not yet decompressed (zstd's)
                comp = self.raw.tell() - getattr(self.f, "pending", 0)
            except (OSError, ValueError, AttributeError):
                comp = 0
            if comp > 0 and self.out > MAX_RATIO * comp and self._bomb(comp):
                self.stopped = (f"stopped reading {self.label} after {self.out >> 20:,} MiB decompressed from "
                                f"{comp >> 10:,} KiB (ratio over {MAX_RATIO}: a decompression bomb?)")
        return data

    def _bomb(self, comp: int) -> bool:
        """Past MAX_RATIO (the caller's test), a bomb: past MAX_EXPANDED, or bound to pass it: the whole
        stored file at the ratio so far (a log compresses about evenly; a stream of unknown size, or an
        input the decompressor has read to its end, is stopped at MAX_EXPANDED)."""
        if self.out > MAX_EXPANDED:
            return True
        return 0 < comp < self.stored and self.out * min(self.stored, 1 << 50) > MAX_EXPANDED * comp

    def peek(self, n: int) -> bytes:
        return self.f.peek(n) if hasattr(self.f, "peek") else b""

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.f.close()
        super().close()


def _decompressor(kind: str, f: IO[bytes]) -> "Union[io.BufferedIOBase, _ZstdFrames]":
    import bz2
    import gzip
    import lzma
    if kind == "gzip":
        return gzip.GzipFile(fileobj=f)
    if kind == "bzip2":
        return bz2.BZ2File(f)
    if kind == "xz":
        return lzma.LZMAFile(f)
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise InputError("a .zst (zstandard) input needs the `zstandard` package: pip install zstandard, "
                         "or decompress it first (zstd -d)") from None
    return _ZstdFrames(f, zstandard.ZstdDecompressor(), zstandard.ZstdError)


class _ZstdFrames(io.RawIOBase):
    """A zstd stream of one or more frames, decompressed; an input that ends inside a frame (a log
    a crashed node left truncated) raises EOFError once what it held is read, so the reader notes
    the break (zstandard's own stream reader returns the partial data as if the file were whole)."""
    CHUNK = 1 << 16             # compressed bytes read at a time
    FEED = 1 << 12              # ... given to the decompressor at a time
    OUT = 1 << 20               # decompressed bytes made at most (about) in one _fill

    def __init__(self, f: IO[bytes], dctx: Any, error: Type[Exception]):
        self._f, self._dctx, self._zerr = f, dctx, error
        self._obj = dctx.decompressobj()
        self._in_frame = False      # bytes of a frame fed and its end not reached
        self._out = b""             # decompressed, read up to _pos
        self._pos = 0
        self._pending = b""         # read, not yet decompressed
        self._done = False
        self._error: Optional[Exception] = None    # raised once what came before it is read

    def readable(self) -> bool:
        return True

    @property
    def pending(self) -> int:
        """Compressed bytes read and not yet decompressed (a bomb's ratio is of what was)."""
        return len(self._pending)

    def readinto(self, b: Any) -> int:
        while self._pos >= len(self._out) and not self._done:
            if self._error is not None:
                raise self._error
            self._out, self._pos = b"", 0
            self._fill()
        n = min(len(b), len(self._out) - self._pos)
        b[:n] = memoryview(self._out)[self._pos:self._pos + n]
        self._pos += n                  # (a slice of what is left at every read: quadratic, 64 MiB 20 s)
        return n

    def _fill(self) -> None:
        """Decompress what is pending (reading a CHUNK when nothing is) FEED bytes at a time until
        OUT bytes came out: a very repetitive input (or a bomb, which _Limited stops) never makes
        more than ~OUT + FEED x the ratio at once."""
        if not self._pending:
            self._pending = self._f.read(self.CHUNK)
            if not self._pending:
                self._done = True
                if self._in_frame:
                    raise EOFError("the zstd frame is truncated (the input ends inside it)")
                return
        parts = []
        got = 0
        while self._pending and got < self.OUT:
            data, self._pending = self._pending[:self.FEED], self._pending[self.FEED:]
            self._in_frame = True
            try:
                piece = self._obj.decompress(data)
            except self._zerr as e:         # corrupt data (a ZstdError: not an OSError)
                self._error = OSError(f"corrupt zstd data ({e})")
                break
            parts.append(piece)
            got += len(piece)
            if self._obj.eof:                   # a frame ended: the next one starts in what it left
                self._pending = self._obj.unused_data + self._pending
                self._obj = self._dctx.decompressobj()
                self._in_frame = False
        self._out = b"".join(parts)


_Binary = Union[IO[bytes], _Limited]     # an input opened as bytes (_Limited: decompressing it)


def _open_file(path: str, label: str) -> Tuple[IO[bytes], bytes]:
    """A local file (or a named pipe) opened, and its first BINARY_PROBE bytes."""
    try:
        st = os.stat(path)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise InputError(f"cannot read {label}: not a regular file or a pipe")
        f = open(path, "rb")
        if not stat.S_ISREG(st.st_mode):
            return _with_head(f)
        head = f.read(BINARY_PROBE)
        f.seek(0)
        return f, head
    except OSError as e:
        raise InputError(f"cannot read {label}: {e.strerror or e}") from None


class _Tap(io.BufferedIOBase):
    """A raw input whose bytes go to a digest as they are read (digest.InputHash): what a
    decompressor or the UTF-16 decoder reads of a compressed or UTF-16 input is its bytes as stored.
    Only reading in order is hashed: a seek gives the hash up."""
    mode = "rb"

    def __init__(self, f: IO[bytes], sink: "InputHash"):
        super().__init__()
        self._f, self._sink = f, sink

    def read(self, n: Optional[int] = -1) -> bytes:
        data = self._f.read(-1 if n is None else n)
        if data:
            self._sink.update(data)
        return data

    def read1(self, n: int = -1) -> bytes:
        read1 = getattr(self._f, "read1", None)
        data = read1(n) if read1 is not None else self._f.read(n)
        if data:
            self._sink.update(data)
        return data

    def readinto(self, b: Any) -> int:
        n = getattr(self._f, "readinto")(b)  # noqa: B009 - IO[bytes] does not declare it
        if n:
            self._sink.update(memoryview(b)[:n])
        return n or 0

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def seek(self, offset: int, whence: int = 0) -> int:
        self._sink.broken()
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def fileno(self) -> int:
        return self._f.fileno()

    @property
    def name(self) -> Any:
        return getattr(self._f, "name", "")

    @property
    def closed(self) -> bool:
        return self._f.closed

    def close(self) -> None:
        self._f.close()
        super().close()

    def drain(self) -> None:
        """Read (and hash) what the reader left of the input: a compressed file's trailing bytes."""
        while self.read(1 << 20):
            pass


def _open_binary(path: str, sink: "Optional[InputHash]" = None) -> Tuple[_Binary, str]:
    """Open a file or stdin as bytes, decompressing gzip/bzip2/xz/zstd (by magic bytes, with a
    decompression-bomb bound); also return the text encoding (UTF-16 when a byte-order mark says
    so, as PowerShell writes, else UTF-8).  SINK: where the input's bytes as stored go as they are
    read (a _Tap under the decompressor or decoder; a plain UTF-8 input's blocks are hashed by _chunks)."""
    label = "<stdin>" if path == "-" else repr(path) if path not in _ALIASES else _ALIASES[path].label
    if path == "-":
        f, head = _with_head(sys.stdin.buffer)
        _no_report(head, label)           # (a file is looked at when the inputs are listed: expand_paths)
    elif remote.is_url(path):          # s3://, gs://, http(s)://, ...: fetched in blocks as it is read
        f, head = remote.open_with_head(path, BINARY_PROBE)
    else:
        f, head = _open_file(path, label)
    kind = next((k for m, k in _MAGIC if head.startswith(m)), None)
    if sink is not None and kind is not None:
        f = _Tap(f, sink)  # type: ignore[assignment]   # a raw file to the decompressor
    fb: _Binary = f
    if kind is not None:
        try:
            fb = _Limited(_decompressor(kind, f), f, label, kind)
            head = fb.peek(4)[:4]
        except InputError:
            raise
        except _read_errors() + (ValueError,) as e:
            raise InputError(f"cannot read {label}: not a valid {kind} file ({e})") from None
    enc = "utf-16" if head[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"
    if sink is not None and kind is None and enc == "utf-16":
        fb = _Tap(f, sink)  # type: ignore[assignment]   # the decoder reads the bytes as stored
    if isinstance(fb, _Limited):
        head = fb.peek(BINARY_PROBE)[:BINARY_PROBE]
    if enc == "utf-8" and _binary(head):
        raise InputError(f"cannot read {label}: not a text log (binary data, e.g. an executable or a core file)")
    return fb, enc


def _no_report(head: bytes, label: str) -> None:
    """A piped triage report (ourreports) is an InputError: triage never reads its own output."""
    from .ourreports import report_format
    fmt = report_format(head)
    if fmt:
        raise InputError(f"{label} is a triage {fmt} report, not a log (triage never reads its own output): "
                         "pipe the job's log")


BINARY_PROBE = 4096        # bytes looked at to tell a text log from binary data


class _Prefixed(io.RawIOBase):
    """A pipe whose first bytes were already read (to decide its compression and encoding): they
    come first, then the pipe, as much as it has at a time."""

    def __init__(self, head: bytes, f: IO[bytes]):
        self._head, self._f = head, f
        self._pos = 0               # bytes given so far: a pipe's tell() (a decompression bomb's ratio)

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            self._pos += n
            return n
        read1 = getattr(self._f, "read1", None)
        data = read1(len(b)) if read1 is not None else self._f.read(len(b))
        n = len(data)
        b[:n] = data
        self._pos += n
        return n

    def close(self) -> None:
        if self._f is not sys.stdin.buffer:
            self._f.close()
        super().close()


def _with_head(f: IO[bytes]) -> "Tuple[IO[bytes], bytes]":
    """A pipe's first BINARY_PROBE bytes (or all it has, to its end), read however slowly the pipe
    delivers them (a peek returns what one read got: a slow pipe can cut the magic bytes short),
    and the pipe to read from the start."""
    head = b""
    read1 = getattr(f, "read1", None)
    while len(head) < BINARY_PROBE:
        piece = read1(BINARY_PROBE - len(head)) if read1 is not None else f.read(BINARY_PROBE - len(head))
        if not piece:
            break
        head += piece
    return io.BufferedReader(_Prefixed(head, f)), head  # type: ignore[return-value]


_NUL_RUN = re.compile(rb"\x00{16,}")


def _binary(head: bytes) -> bool:
    """Binary data, not a log: an ELF executable or core file, or NUL bytes scattered through the
    text (a UTF-16 log, which has them, starts with a byte-order mark).  Runs of NULs are gaps in a
    log (logrotate's copytruncate, a writer that kept its offset after `> log`), never a refusal."""
    if head.startswith(b"\x7fELF"):
        return True
    if b"\x00" not in head:
        return False
    rest = _NUL_RUN.sub(b"", head)
    return rest.count(b"\x00") > max(2, len(rest) // 100)


def decode_line(data: bytes) -> str:
    """One physical line's bytes (at most MAX_RAW, without its newline) as the text the scanner
    reads: decoded (a bad byte replaced), its first LONG_LINE characters cut to MAX_LINE * 4 keeping a failure word
    past the cut (as _readline), a lone CR at its end dropped (a CRLF line end)."""
    raw = data.decode("utf-8", "replace")
    if "\x00" in raw:     # a NUL run is a gap (logrotate copytruncate, a writer past a truncation), left out once
        raw = raw.replace("\x00", "")      # decoded, as _readline does: the bytes on its two sides are no one character
    if len(raw) > LONG_LINE:             # (its first LONG_LINE characters, as _readline keeps)
        raw = raw[:LONG_LINE]
    if len(raw) > MAX_LINE * 4:
        raw = clip_keeping_error(raw, MAX_LINE * 4)
    if raw.endswith("\r") and "\r" not in raw[:-1]:
        raw = raw[:-1]
    return raw


# a NUL run between two bytes not ASCII: decode_line leaves it out only once decoded (the bytes on its two sides are no
# one character), so without_gaps keeps one NUL of it
_JOINING_GAP = re.compile(rb"(?<=[\x80-\xff])\x00+(?=[\x80-\xff])")


def without_gaps(data: bytes) -> bytes:
    """DATA (lines, or a part of one) as the line reader reads its bytes: its NUL runs left out (_readline: a gap
    logrotate's copytruncate or a writer past a truncation leaves, the text after it read as its line's), one NUL
    kept of a run between two bytes not ASCII (decode_line then reads them as _readline does); and the CR that ends
    a line with no other CR left out (decode_line drops it: a CRLF line end); and the ANSI escapes of a line that
    normalise() reads the same without them (_without_colours).  The block scan reads a block with NULs so (issue
    44: a line glued to a NUL run lost its rank prefix, its date in its first 200 bytes, and past MAX_RAW its text),
    and a terminal's (issue 44's twentieth pass: every line of a CRLF file took the scanner's slowest path, ~40x a
    LF file's scanner work -- a log a tty wrote: `docker run -t`, `script`, a pod with `tty: true`).
    Idempotent, and of a concatenation the concatenation where no run is cut between two bytes not ASCII (lines
    are cut at newlines).  DATA starts at a line's start or holds no newline (a CR is left out only before one)."""
    if b"\x00" in data:
        if data.isascii() or _JOINING_GAP.search(data) is None:
            data = data.translate(None, b"\x00")
        else:
            data = b"\x00".join(p.translate(None, b"\x00") for p in _JOINING_GAP.split(data))
    if b"\r" in data:
        if _NOT_LINE_END_CR.search(data) is None:
            data = data.translate(None, b"\r")          # (every CR before a newline, its line's only one: in C)
        elif b"\r\n" in data:
            data = _LONE_END_CR.sub(rb"\1", data)
    return _without_colours(data) if b"\x1b" in data else data


# a CR no newline follows; a line's CR before its newline, the only CR of the line (decode_line's lone CR at its end);
# normalise's ANSI escapes, and the first kind of them (a CSI's: a colour's) in bytes
_NOT_LINE_END_CR = lazy_re(rb"\r(?!\n)")
_LONE_END_CR = lazy_re(rb"(?m)^([^\r\n]*)\r(?=\n)")
_ANSI_B = lazy_re(ANSI_RX.encode("ascii"))
_CSI_B = lazy_re(CSI_RX.encode("ascii"))


def _without_colours(data: bytes) -> bytes:
    """DATA with the ANSI escapes left out of each line that normalise() would read the same without them: a line
    of DATA's (its newline in DATA) of ASCII, no longer than MAX_LINE * 4 bytes (not clipped by decode_line before
    normalise() takes them out), with no CR nor NUL, none left once text._ANSI's are taken out (normalise's one pass
    then finds none: the same text).  Issue 44's twentieth pass: a line with a colour was normalised and searched
    again by a pool worker, and its step record parsed by the scanner line by line -- a log a third of whose lines a
    colour formatter wrapped ran ~4x slower (a tty's: `docker run -t`, rich, loguru).  Where every escape of DATA is
    a CSI's (a colour's, text._ANSI's first kind: none holds a newline) and every line is one such, in one pass."""
    if data.endswith(b"\n") and data.isascii() and b"\r" not in data and b"\x00" not in data and _short_lines(data):
        new = _CSI_B.sub(b"", data)
        if b"\x1b" not in new:          # (each escape a CSI's: _ANSI's first alternative, as normalise's would take it)
            return new
    return _lines_without_colours(data)


def _lines_without_colours(data: bytes) -> bytes:
    """_without_colours line by line (each line holding an escape looked at by itself)."""
    sub = _ANSI_B.sub
    find = data.find
    out: List[bytes] = []
    at = 0
    i = find(b"\x1b")
    while i >= 0:
        s = data.rfind(b"\n", at, i) + 1 or at
        e = find(b"\n", i)
        if e < 0:
            break
        line = data[s:e]
        if e - s <= MAX_LINE * 4 and line.isascii() and b"\r" not in line and b"\x00" not in line:
            new = sub(b"", line)
            if b"\x1b" not in new:
                out.append(data[at:s])
                out.append(new)
                at = e
        i = find(b"\x1b", e)
    if not out:
        return data
    out.append(data[at:])
    return b"".join(out)


def _short_lines(data: bytes) -> bool:
    """No line of DATA is longer than MAX_LINE * 4 bytes: a newline in every window of MAX_LINE * 3 bytes from each
    multiple of MAX_LINE (a run of MAX_LINE * 4 bytes without one holds such a window; a false no: a line of over
    MAX_LINE * 3 bytes)."""
    find, w = data.find, MAX_LINE * 3
    return all(find(b"\n", p, p + w) >= 0 for p in range(0, len(data) - w + 1, MAX_LINE))


def updates_of(data: bytes) -> Optional[List[str]]:
    """text.progress_updates of a physical line's bytes DATA (at most MAX_RAW, without its newline), read as the
    scanner reads a line (decode_line); None, without decoding it, for a line with no CR or no step record."""
    if b"\r" not in data or b"train_step_timing" not in data:
        return None
    return progress_updates(decode_line(data))


def scanned_text(data: bytes) -> str:
    """The text the scanner reads of one physical line (DATA: at most MAX_RAW bytes, without its
    newline): decoded, normalised, its launcher prefix split off (sources.make_line's Line.text)."""
    return scanned(data)[1]


def scanned(data: bytes) -> Tuple[str, str]:
    """scanned_text's line DATA normalised (Line.raw), and its text (Line.text)."""
    norm = normalise(decode_line(data))
    return norm, split_prefix(norm)[0]


def text_and_rank(norm: str, file_rank: Optional[int]) -> Tuple[str, Optional[int]]:
    """A normalised line's text (its launcher prefix split off) and rank: the prefix's, else the file's,
    else the one its message names."""
    text, rank = split_prefix(norm)
    if rank is None:
        rank = file_rank
    if rank is None:
        rank = inner_rank(text)
    return text, rank


def make_line(raw: str, source: str, lineno: int, file_rank: Optional[int] = None,
              year_hint: Optional[int] = None, attempt: Optional[int] = None) -> Line:
    """Normalise one physical line and tag it with its rank and time."""
    norm = normalise(raw)
    text, rank = text_and_rank(norm, file_rank)
    return Line(text=text, source=source, lineno=lineno, rank=rank, ts=parse_ts(norm, year_hint), raw=norm,
                attempt=attempt)


_ATTEMPT_DIR = lazy(r"(?:^|/)attempt_(\d+)(?:/|$)")


def attempt_from_path(path: str) -> Optional[int]:
    """torchrun --log-dir keeps each restart in attempt_N/."""
    if "attempt_" not in path:
        return None
    m = _search(_ATTEMPT_DIR, path.replace(os.sep, "/"))
    return int(m.group(1)) if m else None


def _readline(stream: io.TextIOWrapper, label: str) -> str:
    """The next physical line, NUL runs left out (gaps, as decode_line), cut to MAX_LINE * 4
    characters keeping a failure word past the cut (text.clip_keeping_error; LONG_LINE of it looked
    through, the rest skipped, streaming); "" at the end of the input."""
    try:
        raw = stream.readline(MAX_LINE * 4)
        if not raw or (raw.endswith("\n") and "\x00" not in raw):
            return raw
        parts, kept, rest = [raw.replace("\x00", "")], 0, raw
        kept = len(parts[0])
        while rest and not rest.endswith("\n"):
            rest = stream.readline(MAX_LINE * 4)
            if kept < LONG_LINE:
                parts.append(rest.replace("\x00", "")[:LONG_LINE - kept])
                kept += len(parts[-1])
    except _read_errors() as e:
        raise InputError(f"cannot read {label!r}: {e}") from None
    line = "".join(parts).rstrip("\n")
    return (clip_keeping_error(line, MAX_LINE * 4) if len(line) > MAX_LINE * 4 else line) + "\n"


def _tagged_lines(stream: io.TextIOWrapper, inp: Input) -> Iterator[Line]:
    """read_lines() of an opened input."""
    lineno = 0
    year: Optional[int] = None
    prev_rank: Optional[int] = None
    prev_text = ""
    while True:
        raw = _readline(stream, inp.label)
        if not raw:
            break
        lineno += 1
        raw = raw.rstrip("\n")
        if raw.endswith("\r") and "\r" not in raw[:-1]:
            raw = raw[:-1]               # a CRLF line end (as the block view reads it)
        segs = progress_updates(raw)
        if segs is not None:             # a progress bar written to a file: every update is a step record
            for seg in segs:
                yield make_line(seg, inp.label, lineno, inp.file_rank, year, inp.attempt)
            continue
        ln = make_line(raw, inp.label, lineno, inp.file_rank, year, inp.attempt)
        if ln.rank is None and prev_rank is not None and continues(ln.text, prev_text):
            ln.rank = prev_rank          # a multi-line message printed under one "[rankN]:" prefix
        prev_rank = ln.rank
        prev_text = ln.text
        if ln.ts is not None and "-" in ln.raw[:40]:
            year = time.gmtime(ln.ts).tm_year   # a dated line tells glog lines (no year) their year
        yield ln


def read_lines(path: str) -> Iterator[Line]:
    """Yield normalised, rank- and time-tagged lines of one input, streaming."""
    inp = describe_input(path)
    fb, enc = _open_binary(path)
    if enc == "utf-8":               # a small paste hard-wrapped at a fixed width: its lines joined (paste.py)
        head = fb.read(PASTE_MAX + 1)
        # (its lone CRs line breaks first, as the block reader's _chunks reads them: a paste's lines are those)
        u = _reshaped(head.replace(b"\r", b"\n") if _lone_cr(head) else head, inp.label, None) \
            if len(head) <= PASTE_MAX else None
        fb = io.BufferedReader(_Prefixed(u if u is not None else head, fb))  # type: ignore[assignment,arg-type]
    stream = io.TextIOWrapper(fb, encoding=enc, errors="replace", newline="\n")
    try:
        yield from _tagged_lines(_LoneCr.of(stream, inp.label), inp)  # type: ignore[arg-type]
    finally:
        if path != "-":
            fb.close()


class _LoneCr:
    """A text stream whose lines end with lone CRs (the block reader's _lone_cr rule on the first
    LONE_CR_PROBE bytes), read with each CR a line break, as the block reader reads it."""

    def __init__(self, stream: io.TextIOWrapper, head: str):
        self.stream, self.buf = stream, head.replace("\r", "\n")

    @staticmethod
    def of(stream: io.TextIOWrapper, label: str) -> Any:
        try:
            head = stream.read(LONE_CR_PROBE)
        except _read_errors() as e:
            raise InputError(f"cannot read {label!r}: {e}") from None
        if _lone_cr(head.encode("utf-8", "replace")):
            return _LoneCr(stream, head)
        return _HeadFirst(stream, head)

    def readline(self, limit: int) -> str:
        while "\n" not in self.buf[:limit] and len(self.buf) < limit:
            more = self.stream.read(1 << 16)
            if not more:
                break
            self.buf += more.replace("\r", "\n")
        nl = self.buf.find("\n", 0, limit)
        cut = nl + 1 if nl >= 0 else min(limit, len(self.buf))
        line, self.buf = self.buf[:cut], self.buf[cut:]
        return line


class _HeadFirst(_LoneCr):
    """A text stream with its first characters (read for the probe) put back in front."""

    def __init__(self, stream: io.TextIOWrapper, head: str):
        self.stream, self.buf = stream, head

    def readline(self, limit: int) -> str:
        if not self.buf:
            return self.stream.readline(limit)
        nl = self.buf.find("\n", 0, limit)
        if nl >= 0 or len(self.buf) >= limit:
            cut = nl + 1 if nl >= 0 else limit
            line, self.buf = self.buf[:cut], self.buf[cut:]
            return line
        line, self.buf = self.buf, ""
        return line + self.stream.readline(limit - len(line))


def iter_inputs(paths: Iterable[str]) -> Iterator[Line]:
    for p in expand_paths(paths):
        yield from read_lines(p)


# --- block reading (the fast path) -------------------------------------------------------
BLOCK_SIZE = 2 << 20          # bytes read at a time (issue 44: a block that fits the cache is read, scanned for
#                               anchors and counted faster: the 128 MiB production mix -j 1 0.35-0.37 -> 0.33-0.34 s,
#                               the reader thread's CPU 59-63 -> 31-41 ms, than in 8 MiB blocks; on the 16-core
#                               host a 256 MiB file's pread 74 ms in 8 MiB blocks, 54 ms in 2 MiB)
# characters of one physical line kept: an over-long line is looked through this far for a failure word past
# its head (text.clip_keeping_error), the rest of it is skipped ...
LONG_LINE = 1 << 20
# ... and the bytes kept of it, which hold that many characters however many bytes each takes (UTF-8: 4 at most;
# an invalid byte is one; 4 more for a character the cut splits): decode_line cuts the text (issue 44: a line of
# 1.2 MB of two-byte characters, 600,000 of them, lost the failure word at its end to the block scan, which cut
# its bytes at 1 MiB, but not to the line reader, which kept 2^20 characters)
MAX_RAW = 4 * LONG_LINE + 4


@record
class Input:
    """One input of a scan: its label and what its path says (rank, restart attempt)."""
    path: str
    label: str
    file_rank: Optional[int]
    attempt: Optional[int]


# inputs read from a file of another name: stdin copied to a file (spool.py), its label `<stdin>`
_ALIASES: Dict[str, Input] = {}


def alias_input(path: str, inp: Input) -> None:
    """PATH is read as INP says (describe_input): a pipe's copy, labelled as the pipe."""
    _ALIASES[path] = inp


def describe_input(path: str) -> Input:
    if path == "-":
        return Input(path, "<stdin>", None, None)
    got = _ALIASES.get(path)
    if got is not None:
        return got
    return Input(path, path, rank_from_filename(path), attempt_from_path(path))


def iter_blocks(path: str, block_size: int = BLOCK_SIZE, progress=None, max_bytes: int = 0) -> Iterator[bytes]:
    """Yield the input as UTF-8 blocks of whole lines (each ends with a newline), streaming.

    gzip is decompressed into the same loop, UTF-16 (a byte-order mark) is transcoded first, a
    physical line longer than a block keeps its first MAX_RAW bytes (the scanner cuts every line to
    MAX_RAW bytes before decoding it, as readline did); `progress(n)` is called with the number of
    bytes read from the file (compressed bytes for .gz) after each block."""
    for buf, _lo in iter_blocks_with_tail(path, block_size, progress, 0, max_bytes):
        yield buf


def block_tail(buf: bytes, tail: int) -> int:
    """Offset of the first whole line within the last `tail` bytes of `buf` (a block of lines), or, when its
    last line is longer than `tail` (up to MAX_RAW: the reader clips longer ones), within the last `tail`
    bytes before that line and the line (issue 44's review: a block ending on a line of a few MiB left the
    next block no line to look back on, so a hit right after it lost the lines before it, as 2 MiB blocks
    made likelier); and at least its last MAX_WINDOW lines, within TAIL_MAX bytes (caps.py: a rule's context
    window looks back that many lines, as the line scan does: lines of a few KiB before a block's first hit left
    its context out, issue 44's seventeenth pass)."""
    if len(buf) <= tail:
        return 0
    last = len(buf) - 1 - buf.rfind(b"\n", 0, len(buf) - 1)       # the last line's bytes, its newline included
    if last > tail:
        tail += last
        if len(buf) <= tail:
            return 0
    nl = buf.find(b"\n", len(buf) - tail - 1)
    at = nl + 1 if nl >= 0 else len(buf)
    if buf.count(b"\n", at) >= MAX_WINDOW:           # (enough lines there: a log of short lines, told at once)
        return at
    floor = max(0, len(buf) - TAIL_MAX - 1)             # (the newline before a line that starts TAIL_MAX back)
    end = len(buf) - 1                                  # (the last line's newline; END + 1: the start of a line)
    for _ in range(MAX_WINDOW):
        nl = buf.rfind(b"\n", floor, end)
        if nl < 0:
            return min(at, end + 1) if floor else 0     # (the first whole line within TAIL_MAX, or the buffer's)
        end = nl
    return min(at, end + 1)


def _tail_of(buf: bytes, tail: int) -> bytes:
    """The whole lines within the last `tail` bytes of a block (none when `tail` is 0)."""
    return buf[block_tail(buf, tail):] if tail else b""


def _block_reader(fb: _Binary, enc: str) -> Callable[[int], bytes]:
    """read(n): up to n more bytes of the input as UTF-8 (UTF-16 transcoded)."""
    if enc != "utf-16":
        return fb.read
    tw = io.TextIOWrapper(fb, encoding="utf-16", errors="replace", newline="\n")
    return lambda n: tw.read(max(1, n // 2)).encode("utf-8", "replace")


def _report_progress(progress: Optional[Callable[[int], object]], raw_f: _Binary) -> None:
    if progress is not None:
        try:
            progress(raw_f.tell())
        except (OSError, ValueError, AttributeError):
            pass


def _note_stops(notes: Optional[List[str]], fb: _Binary, label: str, got: bool, total: int, max_bytes: int) -> None:
    """Note in `notes` that reading stops at --max-bytes, or (once) at a decompression bomb."""
    if notes is None:
        return
    if max_bytes and total >= max_bytes and got:
        notes.append(f"stopped reading {label} after {max_bytes:,} bytes (--max-bytes); the rest is not triaged")
    stopped = fb.stopped if isinstance(fb, _Limited) else ""
    if stopped and stopped not in notes:
        notes.append(stopped)


def _chunks(fb: _Binary, enc: str, label: str, block_size: int, progress: Optional[Callable[[int], object]],
            max_bytes: int, notes: Optional[List[str]], consumed: Optional[List[int]],
            sink: "Optional[InputHash]" = None) -> Iterator[bytes]:
    """The input's bytes (UTF-8), up to `block_size` at a time, until its end or `max_bytes`
    (see iter_blocks_with_tail).  SINK: gets a plain input's bytes here (a compressed or UTF-16
    one's through its _Tap), and is told at the end whether the input was read whole."""
    read = _block_reader(fb, enc)
    raw_f: _Binary = getattr(fb, "fileobj", None) or fb
    total = 0
    broken = [False]
    size = _size_at_open(fb, enc)      # a plain file is read up to the size it had when opened
    lone_cr: Optional[bool] = None
    tap = _tap_of(fb)
    feed = sink.update if sink is not None and tap is None else None    # the bytes read are the bytes stored
    src = _Ahead(read, isinstance(fb, _Limited), label, notes, broken)
    while not broken[0]:
        want = _want(block_size, max_bytes, size, total)
        if want <= 0:
            break
        data = src.take(want, total)
        if feed is not None:
            feed(data)
        total += len(data)
        if consumed is not None:
            consumed[0] = total     # bytes of the (decompressed) stream read so far
        _note_stops(notes, fb, label, bool(data), total, max_bytes)
        _report_progress(progress, raw_f)
        if not data:
            break
        if lone_cr is None:         # the probe: the input's first LONE_CR_PROBE bytes, whatever the block size
            more = b"" if len(data) >= LONE_CR_PROBE or b"\n" in data else \
                src.ahead(_want(LONE_CR_PROBE, max_bytes, size, total - len(data)) - len(data), total)
            lone_cr = _lone_cr_noted(data + more, label, notes)
        if lone_cr:
            data = data.replace(b"\r", b"\n")
        yield data
    grew = size is not None and total >= size and _grew(fb, size)
    if grew and notes is not None:
        notes.append(f"{label} grew while it was read: triaged up to the {size:,} bytes it had when opened")
    if sink is not None:
        _hashed_to_end(fb, tap, sink, broken[0] or grew or bool(max_bytes and total >= max_bytes))


class _Ahead:
    """An input's reads (_read_salvaging), with bytes read ahead served first: the lone-CR probe
    reads past a block smaller than the probe."""

    def __init__(self, read: Callable[[int], bytes], compressed: bool, label: str, notes: Optional[List[str]],
                 broken: List[bool]):
        self.read, self.compressed, self.label, self.notes, self.broken = read, compressed, label, notes, broken
        self.pending = b""
        self.pending_broken = [False]      # the read ahead broke off: the input ends after the pending bytes

    def take(self, n: int, total: int) -> bytes:
        if not self.pending:
            return _read_salvaging(self.read, n, self.compressed, self.label, total, self.notes, self.broken)
        d, self.pending = self.pending[:n], self.pending[n:]
        if not self.pending:
            if self.pending_broken[0]:
                self.broken[0] = True
            elif len(d) < n:
                d += _read_salvaging(self.read, n - len(d), self.compressed, self.label, total + len(d), self.notes,
                                     self.broken)
        return d

    def ahead(self, n: int, total: int) -> bytes:
        """Up to N bytes read ahead (served by take() before any new read)."""
        if n <= 0:
            return b""
        more = _read_salvaging(self.read, n, self.compressed, self.label, total, self.notes, self.pending_broken)
        if more:
            self.pending = more
        elif self.pending_broken[0]:
            self.broken[0] = True
        return more


def _tap_of(fb: _Binary) -> Optional[_Tap]:
    """The _Tap an input's bytes as stored are read through (compressed or UTF-16), if any."""
    raw = fb.raw if isinstance(fb, _Limited) else fb
    return raw if isinstance(raw, _Tap) else None


def _hashed_to_end(fb: _Binary, tap: Optional[_Tap], sink: "InputHash", short: bool) -> None:
    """Tell SINK whether the input was read whole (not SHORT: cut by --max-bytes, broken off, grown
    since it was opened; nor stopped as a decompression bomb), hashing what a decompressor left of it."""
    whole = not short and not (isinstance(fb, _Limited) and fb.stopped)
    if whole and tap is not None:
        try:
            tap.drain()
        except _read_errors():
            whole = False
    sink.finish(whole)


def _want(block_size: int, max_bytes: int, size: Optional[int], total: int) -> int:
    """Bytes to read next: a block, short of --max-bytes and of a plain file's size at open."""
    want = block_size if not max_bytes else min(block_size, max_bytes - total)
    return want if size is None else min(want, size - total)


def _lone_cr_noted(data: bytes, label: str, notes: Optional[List[str]]) -> bool:
    """_lone_cr of an input's first block, noted in NOTES when so."""
    lone = _lone_cr(data)
    if lone and notes is not None:
        notes.append(f"{label}: its lines end with a lone carriage return (CR, old Mac OS style): "
                     "read as line breaks")
    return lone


LONE_CR_PROBE = 1 << 20    # bytes at the start of an input that tell lone-CR line ends


def _lone_cr(data: bytes) -> bool:
    """The input's lines end with a lone CR (no LF in its first LONE_CR_PROBE bytes, CRs in them):
    old Mac OS line endings, or a logger that writes them. A progress bar's CRs come with LFs."""
    probe = data[:LONE_CR_PROBE]
    return b"\n" not in probe and probe.count(b"\r") >= 2


def _size_at_open(fb: _Binary, enc: str) -> Optional[int]:
    """The size of a plain (uncompressed, UTF-8) regular file when it was opened; None otherwise."""
    if isinstance(fb, _Limited) or enc != "utf-8":
        return None
    try:
        st = os.fstat(fb.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _grew(fb: _Binary, size: int) -> bool:
    try:
        return os.fstat(fb.fileno()).st_size > size
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


SALVAGE_STEP = 1 << 16      # a compressed input is read this much at a time: a break loses less


def _read_salvaging(read: Callable[[int], bytes], want: int, compressed: bool, label: str, total: int,
                    notes: Optional[List[str]], broken: List[bool]) -> bytes:
    """Up to `want` bytes.  A compressed input that ends early (a truncated .gz / .zst / .xz, as a
    crashed node leaves its logs) is triaged up to where it breaks, with a note; any other read
    error is an input error."""
    if not compressed:
        try:
            return read(want)
        except _read_errors() as e:
            raise InputError(f"cannot read {label!r}: {e}") from None
    parts: List[bytes] = []
    got = 0
    while got < want:
        try:
            piece = read(min(SALVAGE_STEP, want - got))
        except _read_errors() as e:
            if total + got == 0:
                raise InputError(f"cannot read {label!r}: {e}") from None
            if notes is not None:
                notes.append(f"{label}: the compressed file breaks off after {total + got:,} bytes ({e}): "
                             "triaged up to there")
            broken[0] = True
            break
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


def _unwrapped(chunks: Iterator[bytes], label: str, notes: Optional[List[str]]) -> Iterator[bytes]:
    """CHUNKS, and when they are a whole input of at most PASTE_MAX bytes, with its hard-wrapped lines
    joined (paste.py), in chunks of the first one's size (whatever the block size, as the line reader).
    A bigger input's chunks are passed on as they come, none of them kept."""
    head: List[bytes] = []
    size = 0
    for c in chunks:
        head.append(c)
        size += len(c)
        if size > PASTE_MAX:
            break
    else:
        if head:
            yield from _joined_chunks(head, label, notes)
        return
    del c
    while head:
        yield head.pop(0)
    yield from chunks


def _reshaped(data: bytes, label: str, notes: Optional[List[str]]) -> Optional[bytes]:
    """A small input's bytes as they are matched: DCGM's tables said as lines (dcgm.py), else a
    paste's dressing (a markdown quote, a gutter, ...) taken off and its hard-wrapped lines joined
    (paste.py); None: as it is."""
    d = dcgm_flatten(data)
    if d is not None:
        if notes is not None:
            notes.append(f"{label} holds {d[1]} DCGM table(s) (dcgmi health / diag): each result read as one line "
                         "(line numbers count those lines)")
        return d[0]
    u = reshape(data)            # a paste's dressing taken off, its hard-wrapped lines joined (paste.py)
    if u is None:
        return None
    if notes is not None:
        said = undressed_note(label, u[1])
        if said:
            notes.append(said)
        if u[2] is not None:
            notes.append(wrapped_note(label, *u[2]))
    return u[0]


def _joined_chunks(head: List[bytes], label: str, notes: Optional[List[str]]) -> Iterator[bytes]:
    u = _reshaped(b"".join(head), label, notes)
    if u is None:
        yield from head
        return
    step = max(len(head[0]), 1)
    for at in range(0, len(u), step):
        yield u[at:at + step]


def _whole_line_blocks(chunks: Iterable[bytes], tail: int) -> Iterator[Tuple[bytes, int]]:
    """(buf, lo) blocks of whole lines from `chunks` (see iter_blocks_with_tail): a line's part
    at the end of a chunk is carried over to the next; a line longer than MAX_RAW bytes keeps
    its first MAX_RAW bytes, the rest is skipped (its NUL runs left out first: without_gaps, as _readline; the
    scanner leaves out the rest's, the block's)."""
    carry = b""
    prev = b""                  # tail of the previous block
    skipping = False            # inside the over-long remainder of a line
    for data in chunks:
        if skipping:
            nl = data.find(b"\n")
            if nl < 0:
                continue
            data = data[nl + 1:]
            skipping = False
        cut = data.rfind(b"\n")
        if cut < 0:
            carry += data
            if len(carry) > MAX_RAW:
                carry = without_gaps(carry)     # (a NUL run is no part of the line's bytes kept: _readline's)
            if len(carry) > MAX_RAW:
                buf = prev + carry[:MAX_RAW] + b"\n"
                yield buf, len(prev)
                prev = _tail_of(buf, tail)
                carry = b""
                skipping = True
            continue
        extra = b""
        rest = data[cut + 1:]
        if len(rest) > MAX_RAW:
            rest = without_gaps(rest)
        if len(rest) > MAX_RAW:
            extra = rest[:MAX_RAW] + b"\n"
            rest = b""
            skipping = True
        buf = b"".join((prev, carry, memoryview(data)[:cut + 1], extra))
        carry = rest
        yield buf, len(prev)
        prev = _tail_of(buf, tail)
    if carry:
        buf = prev + carry + b"\n"
        yield buf, len(prev)


def iter_blocks_with_tail(path: str, block_size: int = BLOCK_SIZE, progress: Optional[Callable[[int], object]] = None,
                          tail: int = 0, max_bytes: int = 0, notes: Optional[List[str]] = None,
                          consumed: Optional[List[int]] = None,
                          sink: "Optional[InputHash]" = None, paste: bool = False) -> Iterator[Tuple[bytes, int]]:
    """(buf, lo): buf[lo:] is the next block of whole lines, buf[:lo] up to `tail` bytes of whole
    lines before it (for looking back across the boundary).  One copy per block.  Reading stops
    after `max_bytes` bytes (0: no cap) or at a decompression bomb, with a note in `notes`;
    `consumed[0]` tells how many bytes of the stream were read (over-long lines included).
    `sink` (digest.InputHash): gets the input's bytes as stored, as they are read (the content
    hash of `analyze --record`, folded into this one read), then whether all were read.  `paste`: a
    small input that is a hard-wrapped paste has its lines joined (paste.py; the scanner asks)."""
    label = "<stdin>" if path == "-" else _ALIASES[path].label if path in _ALIASES else path
    fb, enc = _open_binary(path, sink)
    try:
        chunks = _chunks(fb, enc, label, block_size, progress, max_bytes, notes, consumed, sink)
        # (a paste is UTF-8: the line reader reshapes only such an input, so does this one)
        yield from _whole_line_blocks(_unwrapped(chunks, label, notes) if paste and enc == "utf-8" else chunks, tail)
    finally:
        if path != "-":
            fb.close()
