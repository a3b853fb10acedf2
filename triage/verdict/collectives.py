"""The hang's culprit from the log alone (issue 43): what each rank's timeout and watchdog lines say
(process group, collective, sequence number, last enqueued and completed work; collectives.yaml holds
the wordings by PyTorch release), and from them the wavefront: the collective the others wait on and
the ranks that never enqueued it.  Said in one sentence ("ranks 5 and 13 never reached all_reduce #4812
of the data-parallel group; the 14 others waited 600 s"), with the evidence lines.

A rank is behind when its last enqueued work (or the work it itself timed out on) is below the sequence
number the others wait on; in the default group (every rank), a rank of the job that printed nothing
about the group is behind too (the job's ranks: those the log shows).
Nothing here is a guess from timing: a log without sequence numbers gives no sentence."""
from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..match.literals import derive_literals
from ..match.rx import IGNORECASE, LazyRx, digit_blind, lazy, search
from ..record import record
from ..scan.results import Match
from ..scan.state import DIGITS
from ..tables import load
from .frtrace import FRFinding
from .types import EVIDENCE_MAX, Evidence, HangDetail, rank_ranges

MAX_TEXT = 4000          # characters of a line read
MAX_OBS = 50_000         # observations kept per attempt (a line each; the matches are capped before this)
LAYOUTS_AFTER = 64       # lines read each by itself before the rest are read by their layout (observe)
NAMED_MAX = 8            # ranks named in the sentence (the rest counted)

_T = load("verdict/collectives")
_WORK = lazy(_T["work"])
_WORK_LINES = [(w["what"], lazy(w["regex"])) for w in _T["work_lines"]]
_STATUS = [lazy(s["regex"]) for s in _T["status_lines"]]
_PG = [lazy(p["regex"]) for p in _T["pg_prefixes"]]
_KINDS = [(re.compile(k["regex"]), k["kind"], k["name"]) for k in _T["group_kinds"]]
_OPS: Dict[str, str] = _T["ops"]
_PROBES = ("WorkNCCL(", "NCCL work:", "enqueued work:", "at work:")


@record
class Observation:
    """What one line says of one rank's place in one process group."""
    rank: Optional[int]           # the global rank (the line's), else the rank in the group
    pg: Optional[str]             # the group's key (its GUID, else its id), None: the line names none
    pg_id: Optional[str]
    desc: Optional[str]
    seq: Optional[int]            # the work it failed on (timed out, raised, or the watchdog named)
    op: Optional[str]
    timeout_ms: Optional[int]
    enq: Optional[int]            # last enqueued work
    done: Optional[int]           # last completed work
    what: str                     # timeout | error | status
    source: str
    line: int
    text: str


def observe(matches: Sequence[Match]) -> List[Observation]:
    """The observations of the matched lines of one attempt (bounded).  A line's reading is its layout's (its
    digits masked) when the collectives' regexes are blind to which digit is which (_blind): a storm's thousands of
    kept watchdog lines, the same but for their ranks, were ~10 searches each (issue 44)."""
    out: List[Observation] = []
    layouts: Optional[Dict[bytes, Optional[_Recipe]]] = None
    read = 0
    for m in matches:
        text = m.line.text
        if not any(p in text for p in _PROBES):
            continue
        text = text[:MAX_TEXT]
        read += 1
        if read == LAYOUTS_AFTER:           # (a small log's few lines: no blindness read, ~2 ms of its start)
            layouts = {} if _blind() else None
        if layouts is not None and text.isascii():
            key = text.encode("ascii").translate(DIGITS)
            if key in layouts:
                r = layouts[key]
            else:
                r = layouts[key] = _recipe(text)
        else:
            r = _recipe(text)
        o = _made(r, text, m.line.rank, m.line.source, m.line.lineno) if r is not None else None
        if o is not None:
            out.append(o)
            if len(out) >= MAX_OBS:
                break
    return out


_LITS: Dict[int, Tuple[Tuple[str, ...], bool]] = {}


def _found(rx: LazyRx, text: str) -> Any:
    """search(RX, TEXT), skipped when TEXT holds none of the plain text every match of RX holds
    (derive_literals, worked out at first use): a storm's thousands of kept watchdog lines were ~10 searches
    each, ~40 us a line, most of them of regexes whose words the line has not."""
    got = _LITS.get(id(rx))
    if got is None:
        fold = bool(rx.flags & IGNORECASE)
        got = _LITS[id(rx)] = (tuple(x.lower() if fold else x for x in derive_literals(rx.pattern, fold)[0]), fold)
    lits, fold = got
    if lits:
        hay = text.lower() if fold else text
        for x in lits:
            if x in hay:
                break
        else:
            return None
    return search(rx, text)


Span = Optional[Tuple[int, int]]
# where a line's observation is in it: the spans of its group's key, id, description (stripped when made) and the
# rank in the group; of the work it failed on, its op and timeout; of its last enqueued and completed work; what it is
_Recipe = Tuple[Span, Span, Span, Span, Span, Span, Span, Span, Span, str]


def _pg_of(text: str) -> Tuple[Span, Span, Span, Span]:
    """(key, id, description, rank in the group) of the process group a line names (logPrefix), as spans in TEXT."""
    for i, rx in enumerate(_PG):
        p = _found(rx, text)
        if p is None:
            continue
        if i == len(_PG) - 1:              # the last form ([Rank r]) names no group
            return None, None, None, p.span("grank")
        gd = p.groupdict()
        key = "guid" if gd.get("guid") else "id"
        return (_span(p, key) if gd.get(key) else None), _span(p, "id"), _span(p, "desc"), p.span("grank")
    return None, None, None, None


def _span(m: Any, name: str) -> Span:
    """The span of M's group NAME, None when it has none or did not take part."""
    if name not in m.re.groupindex:
        return None
    a, b = m.span(name)
    return (a, b) if a >= 0 else None


def _recipe(text: str) -> Optional[_Recipe]:
    """Where TEXT's observation is in it (_Recipe), None when it makes none."""
    pg, pg_id, desc, grank = _pg_of(text)
    seq = op = tmo = enq = done = None
    what = "status"
    w = _found(_WORK, text)
    kind = next((k for k, rx in _WORK_LINES if _found(rx, text)), None) if w is not None else None
    if w is not None and kind is not None:
        what, seq, op, tmo = kind, w.span("seq"), w.span("op"), w.span("tmo")
    s = next((m for m in (_found(rx, text) for rx in _STATUS) if m is not None), None)
    if s is not None:
        enq, done = s.span("enq"), s.span("done")
        if seq is None:
            seq = _span(s, "seq")
    if seq is None and enq is None:
        return None
    return pg, pg_id, desc, grank, seq, op, tmo, enq, done, what


def _made(r: _Recipe, text: str, rank: Optional[int], source: str, lineno: int) -> Observation:
    """The observation recipe R reads off TEXT (a line of its layout)."""
    pg, pg_id, desc, grank, seq, op, tmo, enq, done, what = r

    def cut(sp: Span) -> Optional[str]:
        return text[sp[0]:sp[1]] if sp is not None else None

    def num(sp: Span) -> Optional[int]:
        return int(text[sp[0]:sp[1]]) if sp is not None else None
    return Observation(rank if rank is not None else num(grank), cut(pg), cut(pg_id), (cut(desc) or "").strip() or None,
                       num(seq), cut(op), num(tmo), num(enq), num(done), what, source, lineno, text)


def _observe(text: str, rank: Optional[int], source: str, lineno: int) -> Optional[Observation]:
    """The observation of one line (None: it makes none)."""
    r = _recipe(text)
    return _made(r, text, rank, source, lineno) if r is not None else None


@functools.lru_cache(maxsize=None)
def _blind() -> bool:
    """A line's observation is its layout's: the collectives' regexes are digit-blind, and so are their literal
    prefilters (_found) and the probes (no digit in them)."""
    rxs = [*_PG, _WORK, *(rx for _, rx in _WORK_LINES), *_STATUS]
    for rx in rxs:
        _found(rx, "")                     # (its literals worked out)
    return (all(digit_blind(rx.pattern) for rx in rxs)
            and not any(c.isdigit() for rx in rxs for lit in _LITS[id(rx)][0] for c in lit)
            and not any(c.isdigit() for p in _PROBES for c in p))


def group_kind(desc: Optional[str], pg_id: Optional[str]) -> Tuple[str, str]:
    """(kind, name) of a process group by its description (collectives.yaml group_kinds)."""
    if desc:
        for rx, kind, name in _KINDS:
            if rx.fullmatch(desc):
                return kind, name
        return "other", desc
    if pg_id == "0":
        return "default", "default"
    return "unknown", "an unnamed"


def op_name(op: Optional[str]) -> str:
    if not op:
        return "a collective"
    return _OPS.get(op, op.lower().lstrip("_"))


def _attach(obs: List[Observation]) -> Dict[str, List[Observation]]:
    """Observations by group; a line that names no group goes to its rank's group that failed on the
    same work, else to its rank's only group, else to the unnamed group '?'."""
    named: Dict[Optional[int], Dict[str, List[Observation]]] = {}
    for o in obs:
        if o.pg is not None:
            named.setdefault(o.rank, {}).setdefault(o.pg, []).append(o)
    by: Dict[str, List[Observation]] = {}
    for o in obs:
        key = o.pg
        if key is None:
            groups = named.get(o.rank, {})
            same = [k for k, os in groups.items() if o.seq is not None and any(x.seq == o.seq for x in os)]
            key = same[0] if same else (next(iter(groups)) if len(groups) == 1 else "?")
        by.setdefault(key, []).append(o)
    return by


def _who(ranks: Sequence[int]) -> str:
    rs = sorted(set(ranks))
    if len(rs) == 1:
        return f"rank {rs[0]}"
    if len(rs) <= NAMED_MAX:
        return "ranks " + ", ".join(str(r) for r in rs[:-1]) + f" and {rs[-1]}"
    return f"{len(rs)} ranks ({rank_ranges(rs)})"


def _secs(ms: Optional[int]) -> str:
    if ms is None:
        return ""
    s = ms / 1000
    return f" {s:.0f} s" if s >= 10 or s == int(s) else f" {s:.1f} s"


def culprit(obs: Sequence[Observation], job_ranks: Callable[[], Sequence[int]] = lambda: (),
            capture: Optional[Evidence] = None) -> Optional[HangDetail]:
    """The wavefront of the hang the observations show, or None (no sequence number in the log).
    JOB_RANKS: the ranks that printed any line, asked for only for the default group (its silent
    ranks are behind);
    CAPTURE: a CUDA graph capture line the log printed before the hang."""
    best: Optional[Tuple[Tuple[int, int, int], HangDetail]] = None
    memo: List[Sequence[int]] = []

    def ranks() -> Sequence[int]:
        if not memo:
            memo.append(job_ranks())
        return memo[0]
    for key, os in _attach(list(obs)).items():
        d = _group(key, os, ranks, capture)
        if d is None:
            continue
        score = (1 if d.behind else 0, len(d.waited), -min(o.line for o in os))
        if best is None or score > best[0]:
            best = (score, d)
    return best[1] if best is not None else None


def _tally(os: List[Observation]) -> Tuple[Dict[int, int], Dict[int, int]]:
    """Per rank: the highest work it failed on, the highest work it enqueued."""
    waiting: Dict[int, int] = {}
    enq: Dict[int, int] = {}
    for o in os:
        if o.rank is None:
            continue
        if o.seq is not None:
            waiting[o.rank] = max(waiting.get(o.rank, 0), o.seq)
        if o.enq is not None:
            enq[o.rank] = max(enq.get(o.rank, 0), o.enq)
    return waiting, enq


def _silent(kind: str, ranks: set, job_ranks: Callable[[], Sequence[int]]) -> List[int]:
    """The default group's ranks that printed nothing about it: the ranks of the job the log shows (any
    line of theirs) that are not in RANKS.  A rank the log never shows is not guessed at (its output may
    just not be in the log)."""
    if kind != "default" or not ranks:
        return []
    return sorted({r for r in job_ranks() if r is not None} - ranks)


def _sentence(late: List[int], silent: List[int], waited: List[int], ranks: set, what: str, gname: str,
              tmo: Optional[int], graph: str) -> str:
    if late:
        quiet = (f" ({_who(silent)} printed nothing about it)" if silent and len(silent) < len(late) else
                 " (it printed nothing about it)" if len(silent) == 1 else
                 " (they printed nothing about it)" if silent else "")
        rest = "the other" if len(waited) == 1 else f"the {len(waited)} others"
        return f"{_who(late)} never reached {what} of {gname}{quiet}; {rest} waited{_secs(tmo)}{graph}"
    if len(ranks) == 1:
        return (f"{_who(waited)} waited{_secs(tmo)} on {what} of {gname}{graph}; the log shows no other rank "
                f"of the group, so which one never reached it is not in this log")
    return (f"{_who(waited)} waited{_secs(tmo)} on {what} of {gname}{graph} and no rank that logged is "
            f"behind it: a rank stuck inside it, a rank the log does not show, or a network or NCCL fault")


def _group_name(key: str, kind: str, kname: str, desc: Optional[str], group: str) -> str:
    if kind == "unknown":
        return "its process group (the log names none)" if key == "?" else f"process group {group}"
    return f"the {kname} group" + (f" ({desc})" if desc and desc not in kname and desc != "default_pg" else "")


def _evidence(os: List[Observation], late: List[int], waited: List[int], seq: int,
              capture: Optional[Evidence]) -> List[Evidence]:
    """A line of each rank behind (the first EVIDENCE_MAX - 2), one of a rank that waited, the capture line."""
    first: Dict[int, Observation] = {}
    for o in os:
        if o.rank is not None and o.rank not in first:
            first[o.rank] = o
    ev = [Evidence(first[r].source, first[r].line, r, first[r].text) for r in late if r in first][:EVIDENCE_MAX - 2]
    wait = next((o for o in os if o.rank in waited and o.seq == seq), None)
    ev += [Evidence(wait.source, wait.line, wait.rank, wait.text)] if wait is not None else []
    return ev + ([capture] if capture is not None else [])


def _group(key: str, os: List[Observation], job_ranks: Callable[[], Sequence[int]],
           capture: Optional[Evidence]) -> Optional[HangDetail]:
    waiting, enq = _tally(os)
    if not waiting:
        return None
    seq = max(waiting.values())
    named = next((o for o in os if o.pg is not None), None)
    pg_id, desc = (named.pg_id, named.desc) if named is not None else (None, None)
    kind, kname = group_kind(desc, pg_id)
    ranks = {o.rank for o in os if o.rank is not None}
    behind = {r for r in ranks if waiting.get(r, seq) < seq or enq.get(r, seq) < seq}
    silent = _silent(kind, ranks, job_ranks)
    waited = sorted(r for r, s in waiting.items() if s == seq and r not in behind)
    at = [o for o in os if o.seq == seq and o.op]
    op = at[0].op if at else None
    tmo = max((o.timeout_ms for o in at if o.timeout_ms is not None), default=None)
    late = sorted(behind | set(silent))
    group = desc or (f"PG {pg_id}" if pg_id is not None else "")
    graph = (", with CUDA graphs captured before it (a collective inside a replayed graph is invisible to "
             "the watchdog)" if capture is not None else "")
    sentence = _sentence(late, silent, waited, ranks, f"{op_name(op)} #{seq}", _group_name(key, kind, kname, desc,
                                                                                            group), tmo, graph)
    ev = _evidence(os, late, waited, seq, capture)
    return HangDetail(group=group or None, kind=kind, group_ranks=sorted(ranks | set(silent)),
                      op=op_name(op) if op else None, seq=seq, behind=late, silent=silent, waited=waited,
                      waited_s=tmo / 1000 if tmo is not None else None, in_graph=capture is not None,
                      sentence=sentence, evidence=ev)


def with_dumps(h: Optional[HangDetail], fr: FRFinding, capture: Optional[Evidence]) -> HangDetail:
    """The wavefront with what the Flight Recorder dumps say (frtrace.py): added to the log's sentence and
    evidence, or, when the log names no collective, the wavefront itself."""
    if h is not None:
        return replace(h, sentence=f"{h.sentence}; {fr.sentence}", source="log+flight-recorder",
                       evidence=(h.evidence + fr.evidence)[:EVIDENCE_MAX * 2])
    kind, kname = group_kind(fr.desc or None, fr.pg or None)
    graph = (", with CUDA graphs captured before it (a collective inside a replayed graph is invisible to "
             "the Flight Recorder)" if capture is not None else "")
    return HangDetail(group=fr.desc or (f"PG {fr.pg}" if fr.pg else None), kind=kind, group_ranks=fr.members,
                      op=fr.op.split(" ")[0], seq=fr.seq, behind=fr.behind, silent=[], waited=fr.reached,
                      waited_s=None, in_graph=capture is not None, sentence=fr.sentence + graph,
                      evidence=fr.evidence + ([capture] if capture is not None else []), source="flight-recorder")
