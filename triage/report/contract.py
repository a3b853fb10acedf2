"""The JSON contract of a report, written out in one place (`to_dict`), and its bounded, redacted
form (`report_dict`) that the JSON, markdown, jira, junit, HTML and text reports are made from."""
from __future__ import annotations

import json
import time
from collections.abc import Sequence as SequenceABC
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..caps import CLIP_MARK, FINDINGS_MAX, LEVELS, MAX_DEPTH, MAX_JSON_BYTES, SERIES_MAX, SUMMARY_MAX, Caps  # noqa: F401
from ..redact import redact_obj
from ..unicode import utf8_safe
from ..verdict.analysis import Analysis
from ..verdict.fingerprint import signature_id
from ..verdict.hangs import FR_ANALYSE, FR_DUMPS
from ..verdict.types import Evidence, Finding
from .jsontext import indented
from .parts import registered

SCHEMA_VERSION = 1

# ----------------------------------------------------------------------------------------------
# the JSON contract, written out in one place: `to_dict`.  Fields are only ever added.
#
# Bounded output: whatever the log size, the JSON stays under MAX_JSON_BYTES.  The analysis keeps
# at most EVIDENCE_MAX evidence lines per finding, TIMELINE_MAX timeline events and UNMATCHED_MAX
# unexplained signatures (findings.py); the JSON adds FINDINGS_MAX findings and SERIES_MAX step-time
# points per run (LEVELS[0]).  Should that still be too big (thousands of distinct findings, huge
# lines, a huge config), the tighter LEVELS are tried in turn; the last one cuts every list and
# string short.
# `omitted` (present only when something was left out) counts what each part left out.

class _Cut:
    """Applies one level's caps and counts what was left out (the `omitted` field)."""

    def __init__(self, caps: Caps):
        self.caps = caps
        self.omitted: Dict[str, int] = {}

    def count(self, part: str, n: int) -> None:
        if n > 0:
            self.omitted[part] = self.omitted.get(part, 0) + n

    def list(self, xs: Sequence[Any], n: Optional[int], part: str) -> List[Any]:
        if n is None or len(xs) <= n:
            return list(xs)
        self.count(part, len(xs) - n)
        return list(xs[:n])

    def text(self, t: Any) -> Any:
        n = self.caps.text
        if not isinstance(t, str) or n is None or len(t) <= n:
            return t
        self.count("text", 1)
        return t[:n] + CLIP_MARK

    def value(self, x: Any, part: str, depth: int = 0) -> Any:
        """A config value, diff row, note, ...: lists, dicts and strings cut to the level's caps (and,
        once anything is cut, containers nested deeper than MAX_DEPTH written as clipped text)."""
        if isinstance(x, str):
            return self.text(x)
        if isinstance(x, (dict, list, tuple)) and self.caps.items is not None and depth >= MAX_DEPTH:
            self.count(part, 1)
            return self.text(json.dumps(x, ensure_ascii=False, default=str))
        if isinstance(x, dict):
            items = self.list(list(x.items()), self.caps.items, part)
            return {self.text(k): self.value(v, part, depth + 1) for k, v in items}
        if isinstance(x, (list, tuple)):
            return [self.value(v, part, depth + 1) for v in self.list(list(x), self.caps.items, part)]
        return x


def _spread(n: int, limit: int, first: Sequence[int] = ()) -> List[int]:
    """Indexes of at most LIMIT of N items: FIRST (up to half of LIMIT), then evenly spread."""
    if n <= limit:
        return list(range(n))
    chosen = set(list(first)[:limit // 2])
    room = limit - len(chosen)
    if not chosen:          # (every index the rest: the same indexes without a list of N, 85,226 steps ~3 ms)
        return sorted({(k * n) // room for k in range(room)})
    rest = [i for i in range(n) if i not in chosen]
    chosen.update(rest[(k * len(rest)) // room] for k in range(room))
    return sorted(chosen)


def finding_dict(f: Finding, cut: Optional[_Cut] = None) -> Dict[str, Any]:
    cut = cut or _Cut(LEVELS[0])
    ev = cut.list(f.evidence, cut.caps.evidence, "evidence")
    ctx = cut.caps.context

    def before(e: Evidence) -> Tuple[List[str], List[int]]:     # the lines nearest the hit are kept
        if ctx is None or len(e.before) <= ctx:
            return e.before, e.before_lines
        cut.count("evidence.context", len(e.before) - ctx)
        return e.before[len(e.before) - ctx:], e.before_lines[max(0, len(e.before_lines) - ctx):]

    def after(e: Evidence) -> Tuple[List[str], List[int]]:
        if ctx is None or len(e.after) <= ctx:
            return e.after, e.after_lines
        cut.count("evidence.context", len(e.after) - ctx)
        return e.after[:ctx], e.after_lines[:ctx]

    detail = []
    for e in ev:
        (b, bl), (af, al) = before(e), after(e)
        detail.append({"source": cut.text(e.source), "line": e.line, "rank": e.rank, "text": cut.text(e.text),
                       "before": [cut.text(x) for x in b], "after": [cut.text(x) for x in af],
                       "before_lines": list(bl), "after_lines": list(al)})
    rc = cut.list(list(f.rank_counts.items()), cut.caps.items, "rank_counts")
    t = cut.text
    return {
        "pitfall": f.pitfall,
        "title": t(f.title),
        "severity": f.severity,
        "role": f.role,
        "rank": f.rank,
        "ranks": t(f.ranks_text),
        "source": t(f.source),
        "line": f.line,
        "count": f.count,
        "evidence": [t(e.text) for e in ev],
        "evidence_detail": detail,
        "fingerprint": f.fingerprint,
        "rule": {"pattern": t(f.pattern_path.rsplit("/", 1)[-1]), "regex": t(f.rule)},
        "explanation": t(f.explanation),
        "fix": t(f.fix),
        "references": cut.value(f.references, "references"),
        "implicates": cut.value(f.implicates, "implicates"),
        "rank_counts": {str(r): n for r, n in rc},
        "matched_lines": f.matched_lines,
        "settings": [t(x) for x in f.settings[:32]],
    }


def _timeline(a: Analysis, cut: _Cut) -> List[Dict[str, Any]]:
    roles = a.verdict.roles()
    evs = a.timeline
    cut.count("timeline", a.timeline_omitted)
    if len(evs) > cut.caps.timeline:
        firsts: Dict[Tuple[Any, str], int] = {}
        for i, e in enumerate(evs):
            if roles.get(e.fingerprint, e.rule_role) == "root-cause":
                firsts.setdefault((None, e.fingerprint), i)
        for i, e in enumerate(evs):
            firsts.setdefault((e.rank if e.rank is not None else e.source, e.pitfall), i)
        keep = _spread(len(evs), cut.caps.timeline, sorted(set(firsts.values()), key=lambda i: (
            roles.get(evs[i].fingerprint, evs[i].rule_role) != "root-cause", i)))
        cut.count("timeline", len(evs) - len(keep))
        evs = [evs[i] for i in keep]
    return [{"rank": e.rank, "t": e.t, "seq": e.seq, "pitfall": e.pitfall,
             "role": roles.get(e.fingerprint, e.rule_role), "source": e.source, "line": e.line} for e in evs]


def _block_lines(lines: Sequence[str], cut: _Cut, part: str = "first_failure.lines") -> List[str]:
    """An error block's lines, cut to the level's block_lines (the first line and the last ones)."""
    lines = list(lines)
    n = cut.caps.block_lines
    if n is not None and len(lines) > n:
        cut.count(part, len(lines) - n)
        lines = lines[:1] + lines[len(lines) - (n - 1):] if n > 1 else lines[:n]
    return [cut.text(x) for x in lines]


def _unmatched(a: Analysis, cut: _Cut) -> List[Dict[str, Any]]:
    cut.count("unmatched", a.unmatched_omitted)
    out = []
    n = cut.caps.block_lines
    for u in cut.list(a.unmatched, cut.caps.unmatched, "unmatched"):
        lines = list(u.lines)
        if n is not None and len(lines) > n:       # the first line and the last ones (the exception)
            cut.count("unmatched.lines", len(lines) - n)
            lines = lines[:1] + lines[len(lines) - (n - 1):] if n > 1 else lines[:n]
        out.append({"source": u.source, "line": u.line, "rank": u.rank,
                    "ranks": cut.list(u.ranks, cut.caps.items, "unmatched.ranks"),
                    "count": u.count, "lines": [cut.text(x) for x in lines], "fingerprint": u.fingerprint})
    return out


def _step_times(st: Dict[str, Any], cut: _Cut) -> Dict[str, Any]:
    out = dict(st)
    n = cut.caps.series
    for name in ("current", "baseline"):
        run = st.get(name)
        if not isinstance(run, dict):
            continue
        run = dict(run)
        series = run.get("series")
        if isinstance(series, SequenceABC) and not isinstance(series, (str, bytes)):
            if len(series) > n:                      # (the step log's series makes its pairs when read)
                keep = _spread(len(series), n)
                keep[-1] = len(series) - 1           # the last iteration is always drawn
                cut.count(f"step_times.{name}.series", len(series) - len(keep))
                run["series"] = [series[i] for i in keep]
            else:
                run["series"] = list(series)
        for key in ("steady_iterations", "capture_iterations"):
            if isinstance(run.get(key), list):
                run[key] = cut.list(run[key], n, f"step_times.{name}.{key}")
        out[name] = run
    return out


def _known(k: Dict[str, Any], cut: _Cut) -> Dict[str, Any]:
    return {"key": cut.text(str(k.get("key", ""))), "url": cut.text(str(k.get("url", ""))),
            "title": cut.text(str(k["title"])) if k.get("title") else None,
            "seen": k.get("seen"), "since": k.get("since")}


def _verdict_parts(a: Analysis, cut: _Cut, d: Dict[str, Any]) -> None:
    """The first failure, hang suspects, Flight Recorder and attempts (each only when there is one)."""
    v = a.verdict
    caps = cut.caps
    if v.first_rank_by is not None:
        d["first_failing_rank_by"] = cut.text(v.first_rank_by)
    if v.first_failure is not None:
        ff = v.first_failure
        d["first_failure"] = {"rank": ff.rank, "source": ff.source, "line": ff.line, "message": cut.text(ff.message),
                              "explained": ff.explained, "kind": ff.kind, "lines": _block_lines(ff.lines, cut)}
    if v.hang:
        d["hang_suspects"] = [{"rank": x.rank, "peer": cut.text(x.peer), "because": cut.text(x.because)}
                              for x in cut.list(v.hang_suspects, caps.items, "hang_suspects")]
    if v.flight_recorder is not None:
        fr = v.flight_recorder
        d["flight_recorder"] = {
            "ranks": cut.list(fr.ranks, caps.items, "flight_recorder.ranks"),
            "evidence": [{"source": cut.text(e.source), "line": e.line, "rank": e.rank, "text": cut.text(e.text)}
                         for e in cut.list(fr.evidence, caps.evidence, "flight_recorder.evidence")],
            "dumps": FR_DUMPS, "analyse": FR_ANALYSE}
    if v.hang_detail is not None:
        h = v.hang_detail
        d["hang"] = {"sentence": cut.text(h.sentence), "group": cut.text(h.group), "kind": h.kind,
                     "group_ranks": cut.list(h.group_ranks, caps.items, "hang.group_ranks"),
                     "op": h.op, "seq": h.seq,
                     "behind": cut.list(h.behind, caps.items, "hang.behind"),
                     "silent": cut.list(h.silent, caps.items, "hang.silent"),
                     "waited": cut.list(h.waited, caps.items, "hang.waited"),
                     "waited_s": h.waited_s, "in_graph": h.in_graph, "from": h.source,
                     "evidence": [{"source": cut.text(e.source), "line": e.line, "rank": e.rank,
                                   "text": cut.text(e.text)}
                                  for e in cut.list(h.evidence, caps.evidence, "hang.evidence")]}
    if v.attempts:
        d["attempts"] = [{"attempt": x.attempt, "primary": x.primary, "first_failing_rank": x.first_failing_rank,
                          "summary": x.summary} for x in cut.list(v.attempts, caps.items, "attempts")]


def _config_parts(a: Analysis, cut: _Cut, d: Dict[str, Any]) -> None:
    """Versions, config, violations, step times, notes and the config diff (each only when known)."""
    cfg = a.config
    if a.versions:
        d["versions"] = cut.value(a.versions, "versions")
    if cfg is not None:
        d["config"] = cut.value(cfg.config, "config")
        d["config_violations"] = cut.value([vars(x) for x in cfg.violations], "config_violations")
    if a.step_times:
        d["step_times"] = _step_times(a.step_times, cut)
    if a.notes:
        d["notes"] = cut.value(list(a.notes), "notes")
    if cfg is not None and cfg.diff is not None:
        d["diff"] = cut.value([vars(c) for c in cfg.diff], "diff")


def iso_utc(t: Optional[float]) -> Optional[str]:
    """Epoch seconds as ISO-8601 UTC to the second ("2026-11-02T10:00:03Z"); None stays None."""
    if t is None:
        return None
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    except (OverflowError, OSError, ValueError):
        return None


def _job(job: Any, cut: _Cut) -> Dict[str, Any]:
    """The job header (verdict.job.JobInfo): which job, its hosts, the log's time span, when and by
    which triage it was analysed."""
    d = {"id": cut.text(job.job_id), "attempt": job.attempt, "id_source": cut.text(job.id_source),
         "hosts": [cut.text(h) for h in job.hosts], "hosts_more": job.hosts_more,
         "log_start": iso_utc(job.log_start), "log_end": iso_utc(job.log_end),
         "analysed_at": iso_utc(job.analysed_at), "triage_version": job.triage_version}
    several = getattr(job, "several_jobs", None)
    if several:
        d["several_jobs"] = {k: cut.text(v) if isinstance(v, str) else v for k, v in several.items()}
    return d


def to_dict(a: Analysis, caps: Caps = LEVELS[0]) -> Dict[str, Any]:
    """The JSON report of an analysis, cut to CAPS (see LEVELS).  The key order is part of it."""
    cut = _Cut(caps)
    v = a.verdict
    cfg = a.config
    d: Dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "outcome": v.outcome,
        "primary": v.primary.pitfall if v.primary else None,
        "summary": v.summary if len(v.summary) <= SUMMARY_MAX else v.summary[:SUMMARY_MAX] + CLIP_MARK,
        "first_failing_rank": v.first_rank,
        "findings": [finding_dict(f, cut) for f in cut.list(v.findings, caps.findings, "findings")],
        "suspects": cut.value([s.as_dict() for s in cfg.suspects], "suspects") if cfg else [],
        "unmatched": _unmatched(a, cut),
        "stats": {"lines": a.lines, "sources": cut.value(a.sources, "stats.sources"),
                  "attempts": a.attempts},
    }
    if a.job is not None:
        d["job"] = _job(a.job, cut)
    if a.launcher_root_rank is not None:
        d["launcher_root_rank"] = a.launcher_root_rank
    d["timeline"] = _timeline(a, cut)
    if v.signature is not None:
        d["signature"] = cut.text(v.signature)
        d["signature_id"] = signature_id(v.signature)
        # the old, message-based signature of an unexplained failure (groupkey.py); null for a pitfall
        d["message_signature"] = cut.text(v.message_signature) if v.message_signature is not None else None
    if a.known is not None:
        d["known"] = _known(a.known, cut)
    _verdict_parts(a, cut, d)
    _config_parts(a, cut, d)
    d["engine"] = getattr(a, "engine", None)
    d["action"] = {"do": v.action, "why": cut.text(v.action_why), "host": v.action_host}
    plan = getattr(a, "bisect", None)
    if plan:
        d["bisect"] = cut.value([r.as_dict() for r in plan], "bisect")
    novel = getattr(a, "novel_lines", None)
    if novel:
        d["novel_lines"] = [{k: cut.text(v) if isinstance(v, str) else v for k, v in n.as_dict().items()}
                            for n in novel]
    for part in registered():          # the fields declared in parts.py, each once
        value = part.value(a, cut)
        if value is not None:
            d[part.key] = value
    if cut.omitted:
        d["omitted"] = dict(sorted(cut.omitted.items()))
    return d


def json_text(d: Dict[str, Any]) -> str:
    """A report dict as the JSON report's text."""
    return indented(d, default=str) + "\n"


def _compact(d: Dict[str, Any]) -> str:
    """D's JSON without indentation (json's C encoder: the indented one is pure Python, ~5 ms a report)."""
    return json.dumps(d, ensure_ascii=False, default=str, separators=(",", ":"))


def report_json(a: Analysis, redact_secrets: bool = True, limit: int = MAX_JSON_BYTES) -> Tuple[Dict[str, Any], str]:
    """The report dict (secrets redacted unless REDACT_SECRETS is False) at the first level of LEVELS
    whose JSON fits in LIMIT bytes, and that JSON (json_text of it: the size test's, not made again);
    the JSON, markdown and HTML reports are all made from the dict."""
    d: Dict[str, Any] = {}
    text = ""
    for caps in LEVELS:
        d = to_dict(a, caps)
        # clearly too big: no need to redact it first (the compact JSON, by the C encoder, is at most the
        # indented one's size: a level it passes may still be too big, which the real text's size says)
        if caps is not LEVELS[-1] and len(_compact(d)) > limit * 1.1:
            continue
        if redact_secrets:
            d = redact_obj(d)
        text = json_text(d)
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:    # a file name, job id or variable of bytes that are no UTF-8 (os.fsdecode's
            text = utf8_safe(text)                      # lone surrogates): U+FFFD in every report made from it
            d = json.loads(text)
            size = len(text.encode("utf-8"))
        if size <= limit:
            break
    return d, text


def report_dict(a: Analysis, redact_secrets: bool = True, limit: int = MAX_JSON_BYTES) -> Dict[str, Any]:
    return report_json(a, redact_secrets, limit)[0]


def render_json(a: Analysis, redact_secrets: bool = True, limit: int = MAX_JSON_BYTES) -> str:
    return report_json(a, redact_secrets, limit)[1]

