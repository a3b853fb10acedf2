"""The report's timeline: per-rank events, one per matched log line, each naming its finding."""
from __future__ import annotations

from typing import Dict, List, Tuple

from ..scan.results import Match
from .fingerprint import fingerprint
from .grouping import EventKinds, event_kind
from .types import TIMELINE_MAX, TimelineEvent


def timeline(matches: List[Match], fps: Dict[Tuple[str, str], str], kinds: EventKinds,
             limit: int = TIMELINE_MAX) -> Tuple[List[TimelineEvent], int]:
    """Per-rank events for the report's timeline, one per log line (its most telling match), each
    naming the finding it belongs to (FPS: the fingerprint of each (pitfall, event kind), from
    _group), so an event's role is its finding's.  Over LIMIT events, the first event of each rank
    and pitfall is kept (up to half of LIMIT) and the rest is sampled evenly; returns the events and
    how many were left out."""
    one: List[Match] = []
    seen = set()
    for m in sorted(matches, key=lambda m: (m.seq, m.role == "info", -m.pattern.priority)):
        k = (m.line.source, m.line.lineno)
        if k not in seen:
            seen.add(k)
            one.append(m)
    keep = list(range(len(one)))
    if len(one) > limit:
        firsts: Dict[Tuple[object, str], int] = {}
        for i, m in enumerate(one):
            firsts.setdefault((m.line.rank if m.line.rank is not None else m.line.source, m.pattern.id), i)
        chosen = set(sorted(firsts.values())[:limit // 2])
        rest = [i for i in range(len(one)) if i not in chosen]
        room = limit - len(chosen)
        chosen.update(rest[(k * len(rest)) // room] for k in range(room))
        keep = sorted(chosen)
    events = [TimelineEvent(m.line.rank, m.order_ts, m.seq, m.pattern.id,
                            fps.get((m.pattern.id, kinds.get(id(m), event_kind([m]))))
                            or fingerprint(m.pattern.id, m.line.text),
                            m.role, m.line.source, m.line.lineno) for m in (one[i] for i in keep)]
    return events, len(one) - len(events)
