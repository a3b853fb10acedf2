"""The first collective where the ranks' Flight Recorder dumps disagree (issue 43), as PyTorch's
fr_trace looks for it (torch/distributed/flight_recorder/components/builder.py, read for its rules,
not copied): in each process group, collective by collective (collective_seq_id), a rank that never
recorded a collective that other ranks of the group recorded (its newest entry is older), or ranks
that recorded another operation, or other input sizes, at the same place.

Each dump's ring buffer keeps its newest entries only: a collective older than some rank's oldest
kept entry is not compared (nothing says that rank missed it)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..inputs.frdump import FRDump, FREntry
from ..record import record
from .types import EVIDENCE_MAX, Evidence

NO_SIZE_CHECK = ("all_to_all", "alltoall", "alltoall_base", "scatter", "gather", "coalesced", "barrier")
MAX_SEQS = 100_000        # collectives compared per group at most
MAX_WORK = 2_000_000      # (collectives x ranks) compared per group at most: the oldest collectives first


@record
class FRFinding:
    pg: str                      # the group's name in the dumps
    desc: str                    # its description (TENSOR_MODEL_PARALLEL_GROUP, default_pg), "" when none
    seq: int
    op: str                      # what most ranks recorded there
    what: str                    # missing | op | sizes
    behind: List[int]            # the ranks that disagree (never recorded it, or recorded another)
    reached: List[int]           # the ranks that recorded it
    members: List[int]           # the ranks whose dumps show the group
    sentence: str
    evidence: List[Evidence]


def _who(ranks: Sequence[int]) -> str:
    rs = sorted(set(ranks))
    if len(rs) == 1:
        return f"rank {rs[0]}"
    if len(rs) <= 8:
        return "ranks " + ", ".join(str(r) for r in rs[:-1]) + f" and {rs[-1]}"
    return f"{len(rs)} ranks"


def _by_group(dumps: Sequence[FRDump]) -> Dict[Tuple[str, str], Dict[int, Dict[int, FREntry]]]:
    out: Dict[Tuple[str, str], Dict[int, Dict[int, FREntry]]] = {}
    for d in dumps:
        for e in d.entries:
            if not e.p2p:
                out.setdefault((e.pg, e.desc), {}).setdefault(d.rank, {})[e.seq] = e
    return out


def _ev(d: FRDump, e: FREntry) -> Evidence:
    return Evidence(d.path, e.index, d.rank, f"Flight Recorder entry {e.index}: {e.op} collective_seq_id="
                                             f"{e.seq} state={e.state} input_sizes={e.input_sizes}")


def _odd(have: Dict[int, FREntry], op: str, s: int, group: str) -> Tuple[List[int], str, str]:
    """The ranks that recorded another operation, or other input sizes, at collective S: (ranks, what,
    sentence); no ranks when they agree."""
    odd = sorted(r for r, e in have.items() if e.op != op)
    if odd:
        return odd, "op", (f"the Flight Recorder dumps show {_who(odd)} called {have[odd[0]].op} as collective #{s} "
                           f"of {group} where the others called {op}")
    if op.split(" ")[0] in NO_SIZE_CHECK:
        return [], "", ""
    size = Counter(e.input_sizes for e in have.values()).most_common(1)[0][0]
    odd = sorted(r for r, e in have.items() if e.input_sizes != size)
    if not odd:
        return [], "", ""
    return odd, "sizes", (f"the Flight Recorder dumps show {_who(odd)} passed input sizes {have[odd[0]].input_sizes} "
                          f"to {op} #{s} of {group} where the others passed {size}")


def _finding_evidence(odd: List[int], reached: List[int], have: Dict[int, FREntry], per: Dict[int, Dict[int, FREntry]],
                      newest: Dict[int, int], dump_of: Dict[int, FRDump]) -> List[Evidence]:
    """The entry of each rank that disagrees (its newest, when it never recorded the collective) and one
    of a rank that agrees."""
    ev: List[Evidence] = []
    for r in odd[:EVIDENCE_MAX - 1]:
        e = have.get(r) or (per[r][newest[r]] if per.get(r) else None)
        if e is not None:
            ev.append(_ev(dump_of[r], e))
        else:
            ev.append(Evidence(dump_of[r].path, 0, r, "Flight Recorder dump without an entry of this group"))
    other = next((r for r in reached if r not in odd), None)
    if other is not None:
        ev.append(_ev(dump_of[other], have[other]))
    return ev


def _compare(key: Tuple[str, str], per: Dict[int, Dict[int, FREntry]], dump_of: Dict[int, FRDump],
             default: bool) -> Optional[FRFinding]:
    members = set(per)
    if default:                   # every rank is in the default group: a dump without its entries is behind
        members |= set(dump_of)
    newest = {r: max(per[r]) if per.get(r) else 0 for r in members}
    lo = max((min(es) for es in per.values() if es), default=0)
    seqs = sorted({s for es in per.values() for s in es if s >= lo})[:min(MAX_SEQS, MAX_WORK // max(1, len(members)))]
    name = key[1] or (f"PG {key[0]}" if key[0] else "an unnamed")
    group = "the default group" if key[1] == "default_pg" else f"the {name} group"
    for s in seqs:
        have = {r: es[s] for r, es in per.items() if s in es}
        missing = sorted(r for r in members if r not in have and newest[r] < s)
        op = Counter(e.op for e in have.values()).most_common(1)[0][0]
        reached = sorted(have)
        if missing:
            sentence = (f"the Flight Recorder dumps show {_who(missing)} never recorded {op} #{s} of {group}, "
                        f"which {_who(reached)} recorded")
            odd, what = missing, "missing"
        else:
            odd, what, sentence = _odd(have, op, s, group)
            if not odd:
                continue
        ev = _finding_evidence(odd, reached, have, per, newest, dump_of)
        return FRFinding(key[0], key[1], s, op, what, odd, [r for r in reached if r not in odd], sorted(members),
                         sentence, ev)
    return None


def first_disagreement(dumps: Sequence[FRDump]) -> Optional[FRFinding]:
    """The first collective where the dumps disagree, in the group where that comes earliest (the
    default group last: a subgroup's stall stalls it too); None when they agree."""
    dump_of = {d.rank: d for d in dumps}
    found: List[FRFinding] = []
    def default(key: Tuple[str, str]) -> bool:
        return key[1] == "default_pg" or key[0] == "0" and not key[1]

    def order(kv: Tuple[Tuple[str, str], Any]) -> Tuple[bool, int, str]:     # pg "10" after pg "2"
        pg = kv[0][0]
        return default(kv[0]), int(pg) if pg.isdigit() and len(pg) < 19 else 1 << 62, pg
    for key, per in sorted(_by_group(dumps).items(), key=order):
        f = _compare(key, per, dump_of, default(key))
        if f is not None:
            found.append(f)
    return found[0] if found else None
