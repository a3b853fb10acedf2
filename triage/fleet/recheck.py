"""`triage fleet recheck`: the stored jobs triaged again with today's catalog (issue 24), the way
OpenStack's elastic-recheck re-runs its queries over past failures.

Each stored job whose log is still readable (its record keeps the paths it was analysed from) is
analysed again -- with the shipped catalog, `--patterns`, and the known-issue table as they are
now -- and its record replaced; the old verdict goes to the store's history when it differs.  The
result says, per old group, what became of it:

- `explained`: jobs that were unexplained failures and now name a pitfall;
- `linked`: unexplained groups that a known issue (`triage known add`) now covers;
- `changed`: any other verdict that changed (another pitfall, healthy, or a pitfall no longer found);
- `unchanged`, and `skipped` jobs (the log is gone or unreadable, the job was piped on stdin, or
  it was analysed from several inputs) with why.
"""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..kinds import PITFALL, UNEXPLAINED
from .store import KNOWN_RE, Record, Store, known_match

SHOWN = 50          # jobs listed per changed group at most


@dataclass
class Recheck:
    checked: int = 0
    updated: bool = False
    explained: List[Dict[str, Any]] = field(default_factory=list)
    linked: List[Dict[str, Any]] = field(default_factory=list)
    changed: List[Dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0
    skipped: Dict[str, int] = field(default_factory=dict)
    errors: List[Dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        return {"checked": self.checked, "updated": self.updated, "explained": self.explained,
                "linked": self.linked, "changed": self.changed, "unchanged": self.unchanged,
                "skipped": dict(sorted(self.skipped.items())), "errors": self.errors}


def readable_paths(rec: Record) -> Tuple[Optional[str], str]:
    """(the one path the job can be analysed from again, "") or (None, why it cannot)."""
    if not rec.paths:
        return None, "read from stdin (nothing to read again)"
    try:
        paths = json.loads(rec.paths)
    except ValueError:
        return None, "no readable record of its inputs"
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        return None, "no readable record of its inputs"
    if len(paths) > 1:
        return None, "analysed from several inputs (recheck reads one file, directory or URL per job)"
    p = paths[0]
    if "://" not in p and not os.access(p, os.R_OK):
        return None, "its log is gone or unreadable"
    if "://" not in p and not (os.path.isfile(p) or os.path.isdir(p)):
        return None, "its log is no longer a file or a directory (a pipe, a device)"   # a FIFO: a wait for ever
    return p, ""


def _key(r: Record) -> Tuple[str, Optional[str], Optional[str]]:
    return (r.outcome, r.primary, r.signature)


def _sig(r: Record) -> str:
    return r.group_signature


def _known(known: Sequence[Dict[str, Any]], r: Record) -> Optional[Dict[str, Any]]:
    """The known issue of a stored verdict: by its signature, its message signature, a re: key."""
    return known_match(known, r.signature, r.primary, also=[r.message_signature] if r.message_signature else [])


def compare(old: Sequence[Record], new: Dict[Tuple[str, int], Record], known: Sequence[Dict[str, Any]]) -> Recheck:
    """What became of OLD's groups given the NEW records (keyed by (job id, attempt)) and the
    known-issue table now (KNOWN): an unexplained group whose verdict stayed is `linked` when a
    known issue covers it now."""
    out = Recheck()
    moves: Dict[Tuple[str, str], List[Record]] = defaultdict(list)
    linked: Dict[str, List[Record]] = defaultdict(list)
    for o in old:
        n = new.get((o.job_id, o.attempt))
        if n is None:
            continue
        out.checked += 1
        if _key(o) == _key(n):
            out.unchanged += 1
            if o.outcome == UNEXPLAINED and _known(known, n) is not None:
                linked[_sig(o)].append(n)
            continue
        moves[(_sig(o), _sig(n))].append(o)
    for (before, after), rs in sorted(moves.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        o0 = rs[0]
        n0 = new[(o0.job_id, o0.attempt)]
        entry = {"from": before, "to": after, "from_outcome": o0.outcome, "to_outcome": n0.outcome,
                 "primary": n0.primary, "count": len(rs), "jobs": [r.label for r in rs[:SHOWN]],
                 "jobs_omitted": max(0, len(rs) - SHOWN)}
        now_explained = o0.outcome == UNEXPLAINED and n0.outcome == PITFALL
        (out.explained if now_explained else out.changed).append(entry)
    for sig, rs in sorted(linked.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        k = _known(known, rs[0])
        assert k is not None
        out.linked.append({"signature": sig, "count": len(rs), "known": {"key": k["key"], "url": k["url"],
                                                                          "title": k["title"]},
                           "by_regex": k["key"].startswith(KNOWN_RE),
                           "jobs": [r.label for r in rs[:SHOWN]], "jobs_omitted": max(0, len(rs) - SHOWN)})
    return out


def recheck(db: Optional[str], since: Optional[float], pattern_dirs: Sequence[str] = (), workers: int = 0,
            dry_run: bool = False, tick: Optional[Callable[[int], None]] = None,
            on_total: Optional[Callable[[int], None]] = None) -> Recheck:
    """Triage again the stored jobs of the period (SINCE: epoch seconds, None for all) whose log is
    readable; store their new verdicts (unless DRY_RUN) and say what changed."""
    from .run import Job, analyse_jobs
    with Store(db, existing=True) as st:
        old = list(st.records(since=since))
        known = st.known_list()
    skipped: Counter = Counter()
    jobs: List[Job] = []
    for r in old:
        p, why = readable_paths(r)
        if p is None:
            skipped[why] += 1
            continue
        j = Job(r.job_id, p, attempt=r.attempt)
        jobs.append(j)
    if on_total:
        on_total(len(jobs))
    new: Dict[Tuple[str, int], Record] = {}
    errors: List[Dict[str, str]] = []
    if jobs:
        for res in analyse_jobs(jobs, pattern_dirs, workers, tick=tick):
            if res.record is None:
                errors.append({"job": res.job.job_id if not res.job.attempt else f"{res.job.job_id}#{res.job.attempt}",
                               "error": res.error or "not analysed"})
            else:
                new[(res.record.job_id, res.record.attempt)] = res.record
    rechecked = [r for r in old if (r.job_id, r.attempt) in new]
    out = compare(rechecked, new, known)
    out.skipped = dict(skipped)
    out.errors = errors
    if new and not dry_run:
        recs = list(new.values())
        with Store(db, existing=True) as st:
            for i in range(0, len(recs), 200):
                st.record_many(recs[i:i + 200], reason="recheck")
        out.updated = True
    return out


def _c(x: Any, n: int = 300) -> str:
    from .render import _cut
    return _cut(x, n)


def render_text(r: Recheck) -> str:
    lines = [f"rechecked {r.checked} stored job(s) with today's catalog"
             + ("" if r.updated or not r.checked else " (--dry-run: the store is unchanged)")]
    lines += _moves("NOW EXPLAINED (unexplained failures that a pattern now names)", r.explained)
    if r.linked:
        lines.append("")
        lines.append("NOW LINKED TO A KNOWN ISSUE (unexplained groups a ticket now covers)")
        for e in r.linked:
            lines.append(f"  {e['count']} job(s): {_c(e['signature'])}")
            title = f" ({_c(e['known']['title'])})" if e["known"]["title"] else ""
            lines.append(f"    known issue: {_c(e['known']['url'])}{title}")
            lines.append(f"    jobs: {_jobs(e)}")
    lines += _moves("VERDICT CHANGED", r.changed)
    lines.append("")
    lines.append(f"unchanged: {r.unchanged}")
    for why, n in sorted(r.skipped.items()):
        lines.append(f"skipped: {n} job(s) {_c(why)}")
    for e in r.errors[:50]:
        lines.append(f"error: {_c(e['job'], 120)}: {_c(e['error'])}")
    if len(r.errors) > 50:
        lines.append(f"... and {len(r.errors) - 50} more error(s)")
    return "\n".join(lines) + "\n"


def _moves(head: str, entries: Sequence[Dict[str, Any]]) -> List[str]:
    """A section of jobs whose verdict moved: the old signature, the new one, the jobs."""
    if not entries:
        return []
    out = ["", head]
    for e in entries:
        out += [f"  {e['count']} job(s): {_c(e['from'])}", f"    -> {_c(e['to'])}", f"    jobs: {_jobs(e)}"]
    return out


def _jobs(e: Dict[str, Any]) -> str:
    s = ", ".join(_c(j, 120) for j in e["jobs"][:8])
    more = e["count"] - min(8, len(e["jobs"]))
    return s + (f" (+{more} more)" if more > 0 else "")
