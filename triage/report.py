"""Report stage: text, json, markdown and html renderings of one analysis."""
from __future__ import annotations

import html as _html
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import __version__
from .findings import FR_ANALYSE, FR_DUMPS, TIMELINE_MAX, UNMATCHED_MAX, Analysis, Evidence, Finding, rank_ranges
from .redact import redact, redact_obj
from .sources import CLIP_MARK, MAX_LINE

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

MAX_JSON_BYTES = 256 * 1024
FINDINGS_MAX = 100         # findings written in full (the primary first, in verdict order)
SERIES_MAX = 1000          # step-time points per run (evenly thinned, the last one kept)


@dataclass(frozen=True)
class Caps:
    findings: int
    evidence: Optional[int]      # evidence lines per finding (None: all the analysis kept)
    context: Optional[int]       # context lines before / after one evidence line
    timeline: int
    unmatched: int
    block_lines: Optional[int]   # lines of one unmatched block (the first and the last ones)
    series: int                  # step-time points (and steady / capture iterations) per run
    text: Optional[int]          # characters of one log line or config value
    items: Optional[int]         # entries of rank_counts, config, diff, suspects, notes, sources, ...


LEVELS = (
    Caps(FINDINGS_MAX, None, None, TIMELINE_MAX, UNMATCHED_MAX, None, SERIES_MAX, None, None),
    Caps(40, 6, 3, 200, 20, 20, 400, 1000, 1000),
    Caps(15, 3, 1, 80, 8, 10, 150, 300, 200),
    Caps(5, 1, 0, 20, 3, 4, 40, 120, 40),
    Caps(3, 1, 0, 10, 2, 2, 10, 80, 10),        # last resort: every list and string cut short
)
SUMMARY_MAX = 2000         # characters of the summary (a hang of thousands of ranks lists them)
MAX_DEPTH = 4              # nesting kept in config values and the like once the caps apply


class _Cut:
    """Applies one level's caps and counts what was left out (the `omitted` field)."""

    def __init__(self, caps: Caps):
        self.caps = caps
        self.omitted: Dict[str, int] = {}

    def count(self, part: str, n: int) -> None:
        if n > 0:
            self.omitted[part] = self.omitted.get(part, 0) + n

    def list(self, xs: List[Any], n: Optional[int], part: str) -> List[Any]:
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
    rest = [i for i in range(n) if i not in chosen]
    room = limit - len(chosen)
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
        if isinstance(series, list) and len(series) > n:
            keep = _spread(len(series), n)
            keep[-1] = len(series) - 1               # the last iteration is always drawn
            cut.count(f"step_times.{name}.series", len(series) - len(keep))
            run["series"] = [series[i] for i in keep]
        for key in ("steady_iterations", "capture_iterations"):
            if isinstance(run.get(key), list):
                run[key] = cut.list(run[key], n, f"step_times.{name}.{key}")
        out[name] = run
    return out


def to_dict(a: Analysis, caps: Caps = LEVELS[0]) -> Dict[str, Any]:
    """The JSON report of an analysis, cut to CAPS (see LEVELS)."""
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
    if a.launcher_root_rank is not None:
        d["launcher_root_rank"] = a.launcher_root_rank
    d["timeline"] = _timeline(a, cut)
    if v.signature is not None:
        d["signature"] = cut.text(v.signature)
    if a.known is not None:
        k = a.known
        d["known"] = {"key": cut.text(str(k.get("key", ""))), "url": cut.text(str(k.get("url", ""))),
                      "title": cut.text(str(k["title"])) if k.get("title") else None,
                      "seen": k.get("seen"), "since": k.get("since")}
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
    if v.attempts:
        d["attempts"] = [{"attempt": x.attempt, "primary": x.primary, "first_failing_rank": x.first_failing_rank,
                          "summary": x.summary} for x in cut.list(v.attempts, caps.items, "attempts")]
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
    if cut.omitted:
        d["omitted"] = dict(sorted(cut.omitted.items()))
    return d


def _json(d: Dict[str, Any]) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False, default=str) + "\n"


def report_dict(a: Analysis, redact_secrets: bool = True, limit: int = MAX_JSON_BYTES) -> Dict[str, Any]:
    """The report dict (secrets redacted unless REDACT_SECRETS is False) at the first level of LEVELS
    whose JSON fits in LIMIT bytes; the JSON, markdown and HTML reports are all made from it."""
    d: Dict[str, Any] = {}
    for caps in LEVELS:
        d = to_dict(a, caps)
        if caps is not LEVELS[-1] and len(_json(d)) > limit * 1.1:
            continue                  # clearly too big: no need to redact it first
        if redact_secrets:
            d = redact_obj(d)
        if len(_json(d).encode("utf-8")) <= limit:
            break
    return d


def render_json(a: Analysis, redact_secrets: bool = True, limit: int = MAX_JSON_BYTES) -> str:
    return _json(report_dict(a, redact_secrets, limit))


TEXT_MAX_ITEMS = 50        # findings / attempts listed in the text report (the JSON has more)


def _clip(s: str, n: int = 300) -> str:
    return s if len(s) <= n else s[:n] + "…"


def known_line(k: Optional[Dict[str, Any]]) -> Optional[str]:
    """'known issue: URL (seen N times since DATE)' for a verdict the store knows."""
    if not k:
        return None
    seen = k.get("seen") or 0
    when = f" since {k['since']}" if k.get("since") else ""
    title = f" {k['title']}" if k.get("title") else ""
    return f"known issue: {k.get('url')}{title} (seen {seen} time{'s' if seen != 1 else ''}{when})"


def render_text(a: Analysis) -> str:
    out: List[str] = []
    v = a.verdict
    kl = known_line(a.known)
    if a.primary is None:
        out.append(f"triage: {a.summary}")
        ff = v.first_failure
        if v.outcome == "unexplained-failure":
            out.append("")
            out.append("UNEXPLAINED FAILURE  the job failed and no known pitfall explains it")
            if ff is not None:
                rk = f"rank {ff.rank}" if ff.rank is not None else (
                    f"rank {v.first_rank}" if v.first_rank is not None else "rank unknown")
                out.append(f"  first failing: {rk}  at {ff.source}:{ff.line}  ({ff.kind})")
                out.append(f"  error: {_clip(ff.message)}")
                if ff.lines:
                    out.append("  error block:")
                    shown = ff.lines if len(ff.lines) <= 12 else ff.lines[:1] + ["..."] + ff.lines[-10:]
                    for x in shown:
                        out.append(f"    | {_clip(x, 200)}")
            elif v.first_rank is not None:
                out.append(f"  first failing: rank {v.first_rank} (the launcher reports it; its own output is not here)")
            if a.launcher_root_rank is not None and (ff is None or ff.rank != a.launcher_root_rank):
                out.append(f"  launcher (torchrun) root-cause rank: {a.launcher_root_rank}")
    else:
        p = a.primary
        out.append(f"triage: {a.summary}")
        out.append("")
        out.append(f"PRIMARY  {p.pitfall}  [{p.severity}]  {p.title}")
        out.append(f"  first seen: {p.source}:{p.line}" + (f" (rank {p.rank})" if p.rank is not None else ""))
        if a.launcher_root_rank is not None:
            agree = ("agrees" if a.launcher_root_rank == p.rank and not v.hang else
                     "the first process to exit: in a hang, only the first rank to time out" if v.hang else
                     "differs: it reports the first process to exit")
            out.append(f"  launcher (torchrun) root-cause rank: {a.launcher_root_rank} ({agree})")
        if p.ranks:
            out.append(f"  ranks: {p.ranks_text}  count: {p.count}")
        out.append("  evidence:")
        for e in p.evidence:
            out.append(f"    {e.source}:{e.line}: {_clip(e.text)}")
        out.append("  why: " + p.explanation)
        out.append("  fix: " + p.fix)
        out.append(f"  rule: {p.pattern_path.rsplit('/', 1)[-1]} /{_clip(p.rule, 120)}/")
        out.append(f"  fingerprint: {p.fingerprint}")
    if v.hang:
        out.append("")
        out.append("HANG  no rank failed first: the ranks above waited for one that did not come")
        if v.hang_suspects:
            for x in v.hang_suspects[:TEXT_MAX_ITEMS]:
                who = f"rank {x.rank}" if x.rank is not None else f"peer {x.peer}"
                out.append(f"  suspect: {who}: {_clip(x.because, 200)}")
        else:
            out.append("  suspects: none in this log (every rank that printed anything timed out); look at the "
                       "missing ranks' output")
    fr = v.flight_recorder
    if fr is not None:
        out.append("")
        out.append("FLIGHT RECORDER  PyTorch dumped its collective trace"
                   + (f" (ranks {rank_ranges(fr.ranks)})" if fr.ranks else ""))
        out.append(f"  dumps: {FR_DUMPS}")
        out.append(f"  analyse: {FR_ANALYSE}")
    att = a.verdict.attempts
    if len(att) > 1:
        out.append("")
        out.append(f"ATTEMPTS (the job restarted; attempt {len(att)} is the headline)")
        for d in att[:TEXT_MAX_ITEMS]:
            out.append(f"  attempt {d.attempt}: {d.summary}")
        if len(att) > TEXT_MAX_ITEMS:
            out.append(f"  ... {len(att) - TEXT_MAX_ITEMS} more attempt(s) in the JSON report")
    others = [f for f in a.findings if f is not a.primary]
    if others:
        out.append("")
        out.append("OTHER FINDINGS")
        for f in others[:TEXT_MAX_ITEMS]:
            rk = f" ranks {_clip(f.ranks_text, 200)}" if f.ranks else ""
            out.append(f"  {f.role:<10} {f.pitfall:<32} x{f.count}{rk}  {f.source}:{f.line}  {f.fingerprint}")
            out.append(f"             {_clip(f.evidence[0].text, 200)}")
        if len(others) > TEXT_MAX_ITEMS:
            out.append(f"  ... {len(others) - TEXT_MAX_ITEMS} more finding(s) in the JSON report")
    cfg = a.config
    sus = cfg.suspects if cfg else []
    if sus:
        out.append("")
        out.append("CONFIG CHANGES SINCE THE BASELINE (>> = suspect, ranked; the rest is unrelated)")
        for s in sus:
            mark = ">>" if not s.unrelated else "  "
            because = ", ".join(s.because) or "unrelated"
            out.append(f"  {mark} {s.score:>4.2f}  {s.key}: {s.old!r} -> {s.new!r}   ({because})")
    elif cfg is not None and cfg.diff == []:
        out.append("")
        out.append("CONFIG CHANGES SINCE THE BASELINE: none (nothing to blame on the config)")
    viol = cfg.violations if cfg else []
    if viol:
        out.append("")
        out.append("CONFIG CHECK (rules the run's config breaks)")
        for v in viol:
            out.append(f"  {v.pitfall}: {v.message}")
            if v.fix:
                out.append(f"      fix: {v.fix}")
    st = a.step_times
    if st:
        out.append("")
        out.append("STEP TIMES (steady state: warmup and capture iterations excluded)")
        for name in ("current", "baseline"):
            d = st.get(name)
            if not d:
                continue
            extra = []
            caps = d.get("capture_iterations") or []
            if caps:
                extra.append(f"capture in iteration {','.join(map(str, caps[:20]))}"
                             + (f" (+{len(caps) - 20} more)" if len(caps) > 20 else ""))
            if d.get("capture_seconds") is not None:
                extra.append(f"capture {d['capture_seconds']} s")
            if d.get("graph_memory"):
                extra.append(f"graph memory {d['graph_memory']}")
            med = d.get("steady_median_ms")
            out.append(f"  {name:<9} median {med if med is not None else '-'} ms over "
                       f"{len(d.get('steady_iterations') or [])} steady iterations"
                       + (f"; {'; '.join(extra)}" if extra else ""))
        for name, label in (("run_vs_run", "current vs baseline"), ("before_vs_after_capture", "replay vs eager before capture")):
            c = st.get(name)
            if c:
                lo, hi = c["ci95_pct"]
                out.append(f"  {label}: {c['delta_pct']:+.2f}% (95% CI {lo:+.2f}% .. {hi:+.2f}%): {c['verdict']}")
    for n in a.notes:
        out.append(f"note: {n}")
    if a.unmatched:
        out.append("")
        out.append("UNMATCHED ERRORS (no pattern explains these)")
        for u in a.unmatched[:5]:
            rk = f" rank {u.rank}" if u.rank is not None else ""
            out.append(f"  {u.source}:{u.line}{rk} (x{u.count})")
            for x in u.lines[-4:]:
                out.append(f"    | {_clip(x, 200)}")
    if kl:
        out.insert(1, kl)       # right under the verdict line (--quiet keeps only the verdict line)
    return "\n".join(out) + "\n"


FORMATS = ("text", "json", "markdown", "html", "junit", "jira")
SUFFIX_FORMAT = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
                 ".txt": "text", ".xml": "junit", ".jira": "jira", ".wiki": "jira"}


def render(a: Analysis, fmt: str, redact_secrets: bool = True,
           pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """Render an analysis; secrets are redacted unless redact_secrets is False.  PITFALL_IDS (junit):
    the ids of the pattern catalog that was checked (`[p.id for p in pats]`); default: the shipped one."""
    if fmt == "text":
        out = render_text(a)
        return redact(out) if redact_secrets else out      # whole text: key blocks span lines
    d = report_dict(a, redact_secrets)
    if fmt == "json":
        return _json(d)
    if fmt == "markdown":
        return render_markdown(d)
    if fmt == "html":
        return render_html(d)
    if fmt == "junit":
        return render_junit(d, pitfall_ids)
    if fmt == "jira":
        return render_jira(d)
    raise ValueError(f"unknown format {fmt!r}")


# ----------------------------------------------------------------------------------------------
# markdown and html: both render a "view" built from the (already redacted) report dict.  The
# view clips every piece of log text, caps every list and never trusts a value's type, so an odd
# or partial dict renders instead of raising.

CLIP = 400                 # characters of one log line shown in the markdown / jira comment
LINE_CLIP = MAX_LINE + len(CLIP_MARK)   # ... in HTML: in full, as the log reader kept it (and wrapped)
MAX_FINDINGS = 60          # findings shown in full; the rest are counted
MAX_EVIDENCE = 8           # evidence lines per finding
MAX_CONTEXT = 6            # context lines before/after an evidence line
MAX_UNMATCHED = 20         # unmatched blocks
MAX_BLOCK_LINES = 40       # lines per unmatched block
MAX_ROWS = 400             # config diff rows
MD_LIMIT = 32767           # Jira's comment limit, the smallest of GitHub (65536), GitLab (1000000), Jira
VERSION_LABELS = (("torch_version", "PyTorch"), ("te_version", "Transformer Engine"),
                  ("mcore_version", "megatron-core"), ("nccl_version", "NCCL"),
                  ("cuda_version", "CUDA"), ("driver_version", "NVIDIA driver"))


def _s(x: Any, n: int = CLIP) -> str:
    """Any value as one clipped line of text."""
    if x is None:
        return ""
    t = x if isinstance(x, str) else str(x)
    t = t.replace("\r", "").replace("\x00", "")
    if len(t) > n:
        t = t[:n] + f"… [+{len(t) - n} chars]"
    return t


def _val(x: Any, n: int = 200) -> str:
    """A config value as text: lists and dicts as compact JSON, None as unset."""
    if x is None:
        return "(unset)"
    if isinstance(x, (list, dict, tuple)):
        try:
            return _s(json.dumps(x, ensure_ascii=False, default=str), n)
        except (TypeError, ValueError):
            pass
    return _s(x, n)


def _int_or_none(x: Any) -> Any:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else []


def _dicts(x: Any) -> List[Dict[str, Any]]:
    return [e for e in _list(x) if isinstance(e, dict)]


def _rank(x: Any) -> str:
    r = _int_or_none(x)
    return "?" if r is None else str(r)


def _ranks(x: Any) -> str:
    if isinstance(x, (list, tuple)):
        try:
            return _s(rank_ranges([r for r in x if isinstance(r, int)]), 200)
        except Exception:  # pragma: no cover - defensive
            return ""
    return _s(x, 200)


def _loc(src: Any, line: Any) -> str:
    src = _s(src, 200) or "?"
    return f"{src}:{line}" if _int_or_none(line) is not None else src


def _row(n: Any, text: Any, hit: bool) -> Dict[str, Any]:
    """One log line of an evidence block: `text` in full (HTML, wrapped), `short` for a comment."""
    return {"n": n if n is not None else "", "text": _s(text, LINE_CLIP), "short": _s(text), "hit": hit}


def _block_view(lines: List[Any]) -> Dict[str, Any]:
    """An error block's lines: `lines` in full (HTML), `short` for a comment (markdown, jira)."""
    return {"lines": [_s(x, LINE_CLIP) for x in lines[:MAX_BLOCK_LINES]],
            "short": [_s(x) for x in lines[:MAX_BLOCK_LINES]], "more": max(0, len(lines) - MAX_BLOCK_LINES)}


def _evidence_view(e: Dict[str, Any]) -> Dict[str, Any]:
    line = _int_or_none(e.get("line"))
    before = _list(e.get("before"))[-MAX_CONTEXT:]
    after = _list(e.get("after"))[:MAX_CONTEXT]
    # real line numbers when given (an interleaved multi-rank log's neighbours are not line +/- 1)
    bn = [_int_or_none(x) for x in _list(e.get("before_lines"))][-MAX_CONTEXT:]
    an = [_int_or_none(x) for x in _list(e.get("after_lines"))][:MAX_CONTEXT]
    rows = []
    for i, t in enumerate(before):
        n = bn[i - len(before) + len(bn)] if len(bn) == len(before) else (line - len(before) + i if line is not None else None)
        rows.append(_row(n, t, False))
    rows.append(_row(line, e.get("text"), True))
    for i, t in enumerate(after):
        n = an[i] if len(an) == len(after) else (line + 1 + i if line is not None else None)
        rows.append(_row(n, t, False))
    return {"loc": _loc(e.get("source"), line), "rank": _rank(e.get("rank")), "text": _s(e.get("text")),
            "rows": rows}


def _finding_view(f: Dict[str, Any]) -> Dict[str, Any]:
    ev = _dicts(f.get("evidence_detail")) or _dicts(f.get("evidence"))
    rule = f.get("rule") if isinstance(f.get("rule"), dict) else {}
    refs = [{"source": _s(r.get("source"), 300), "version": _s(r.get("version"), 120)} for r in _dicts(f.get("references"))]
    return {
        "pitfall": _s(f.get("pitfall"), 120) or "?", "title": _s(f.get("title"), 300),
        "severity": _s(f.get("severity"), 20), "role": _s(f.get("role"), 20) or "info",
        "rank": _rank(f.get("rank")), "ranks": _ranks(f.get("ranks")),
        "count": _int_or_none(f.get("count")) or len(ev) or 1,
        "loc": _loc(f.get("source"), f.get("line")),
        "evidence": [_evidence_view(e) for e in ev[:MAX_EVIDENCE]], "more_evidence": max(0, len(ev) - MAX_EVIDENCE),
        "fingerprint": _s(f.get("fingerprint"), 64),
        "pattern_file": _s(rule.get("pattern"), 200), "regex": _s(rule.get("regex"), 300),
        "explanation": _s(f.get("explanation"), 4000), "fix": _s(f.get("fix"), 4000), "references": refs[:12],
        "implicates": [_s(x, 120) for x in _list(f.get("implicates"))][:20],
    }


def _suspect_view(s: Dict[str, Any]) -> Dict[str, Any]:
    score = s.get("score")
    return {"key": _s(s.get("key"), 200), "old": _val(s.get("old")), "new": _val(s.get("new")),
            "score": f"{score:.2f}" if isinstance(score, (int, float)) and not isinstance(score, bool) else "",
            "because": [_s(b, 300) for b in _list(s.get("because"))][:10], "unrelated": bool(s.get("unrelated"))}


def _num_text(x: Any, unit: str = "") -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return _s(x, 60) if x is not None else ""
    return f"{x:g}{unit}"


def _steps_view(st: Any, omitted: Any = None) -> Optional[Dict[str, Any]]:
    omitted = omitted if isinstance(omitted, dict) else {}
    if not isinstance(st, dict):
        return None
    runs = []
    for name in ("current", "baseline"):
        r = st.get(name)
        if not isinstance(r, dict):
            continue
        caps = [c for c in _list(r.get("capture_iterations")) if isinstance(c, (int, float))]
        runs.append({
            "name": name, "iterations": _num_text(r.get("iterations", len(_list(r.get("series"))))),
            "steady": len(_list(r.get("steady_iterations")))
            + (_int_or_none(omitted.get(f"step_times.{name}.steady_iterations")) or 0), "median": _num_text(r.get("steady_median_ms"), " ms"),
            "warmup": _num_text(r.get("warmup_steps")), "captures": ", ".join(str(c) for c in caps[:20]),
            "capture_seconds": _num_text(r.get("capture_seconds"), " s"), "graph_memory": _s(r.get("graph_memory"), 120),
            "tflops": _num_text(r.get("steady_median_tflops")),
        })
    comps = []
    for key, label in (("run_vs_run", "current vs baseline (steady state)"),
                       ("before_vs_after_capture", "after vs before capture (same run)")):
        c = st.get(key)
        if not isinstance(c, dict):
            continue
        ci = _list(c.get("ci95_pct"))
        comps.append({"label": label, "base": _num_text(c.get("baseline_median_ms"), " ms"),
                      "cur": _num_text(c.get("current_median_ms"), " ms"),
                      "delta": (f"{c['delta_pct']:+.2f}%" if isinstance(c.get("delta_pct"), (int, float)) else ""),
                      "ci": (f"[{ci[0]:+.2f}%, {ci[1]:+.2f}%]" if len(ci) == 2 and all(
                          isinstance(v, (int, float)) for v in ci) else ""),
                      "verdict": _s(c.get("verdict"), 60)})
    if not runs and not comps:
        return None
    return {"runs": runs, "comparisons": comps}


def _known_view(k: Any) -> Optional[Dict[str, Any]]:
    """The known issue, with a link only for an http(s) URL."""
    if not isinstance(k, dict) or not k.get("url"):
        return None
    url = _s(k.get("url"), 2000)
    return {"url": url, "href": url if url.startswith(("https://", "http://")) else None,
            "title": _s(k.get("title"), 200) if k.get("title") else None,
            "seen": _int_or_none(k.get("seen")) or 0, "since": _s(k.get("since"), 20) if k.get("since") else None}


def _cuda_text(v: str) -> str:
    """A CUDA version as people write it: torch's build tag `+cu130` reads 13.0, a CUDA API version
    number (NCCL's `cudaDriverVersion 12080`, 1000 * major + 10 * minor) 12.8; `13.0` stays."""
    if re.fullmatch(r"\d{3}", v):
        return f"{v[:-1]}.{v[-1]}"
    if re.fullmatch(r"\d{4,6}", v):
        return f"{int(v) // 1000}.{int(v) % 1000 // 10}"
    return v


def _versions_view(vers: Any) -> List[Dict[str, str]]:
    """The versions rows as the log printed them.  The collector keeps the digits of torch's `+cu130`
    tag as cuda_version and NCCL's `cudaDriverVersion 12080` (the CUDA version the driver supports: no
    NVIDIA driver version has no dot) as driver_version: both are shown as CUDA versions (13.0, 12.8)."""
    vers = vers if isinstance(vers, dict) else {}
    vals = {k: _s(vers.get(k), 120) for k, _ in VERSION_LABELS}
    vals["cuda_version"] = _cuda_text(vals["cuda_version"])
    driver_cuda = ""
    if re.fullmatch(r"\d{4,6}", vals["driver_version"]):
        driver_cuda, vals["driver_version"] = _cuda_text(vals["driver_version"]), ""
    out = []
    for k, label in VERSION_LABELS:
        out.append({"name": label, "value": vals[k]})
        if k == "cuda_version" and driver_cuda:
            out.append({"name": "CUDA (driver supports)", "value": driver_cuda})
    known = {k for k, _ in VERSION_LABELS}
    out += [{"name": _s(k, 60), "value": _s(v, 120)} for k, v in list(vers.items())[:20] if k not in known]
    return out


def _blame_note(d: Dict[str, Any], notes: List[str]) -> str:
    """Why no setting is blamed, asking only for what was not given: a diff was made (both configs
    given or read), only the run's config is known, or none is."""
    diff = d.get("diff")
    if isinstance(diff, list):
        return "no config change from the last good run" if not diff else "no change is implicated"
    if any(n.startswith("the baseline log shows no configuration") for n in notes):
        return "the baseline log shows no configuration"
    if "config" in d:
        return "no config of a good run to compare with: pass --baseline-config or --baseline-log"
    return "no config of this run found: pass --config"


def _view(d: Dict[str, Any]) -> Dict[str, Any]:
    d = d if isinstance(d, dict) else {}
    findings_all = [_finding_view(f) for f in _dicts(d.get("findings"))]
    raw = _dicts(d.get("findings"))
    prim_id = d.get("primary")
    pi = next((i for i, f in enumerate(raw) if f.get("pitfall") == prim_id and f.get("role") == "root-cause"),
              next((i for i, f in enumerate(raw) if prim_id is not None and f.get("pitfall") == prim_id), None))
    primary = findings_all[pi] if pi is not None else None
    others = [f for i, f in enumerate(findings_all) if i != pi]
    omitted = d.get("omitted") if isinstance(d.get("omitted"), dict) else {}
    left_out = _int_or_none(omitted.get("findings")) or 0     # findings the bounded JSON left out
    shown, hidden = others[:MAX_FINDINGS], max(0, len(others) - MAX_FINDINGS) + left_out
    suspects = sorted((_suspect_view(s) for s in _dicts(d.get("suspects"))),
                      key=lambda s: (s["unrelated"], -float(s["score"] or 0)))
    blamed = next((s for s in suspects if not s["unrelated"]), None)
    by_key = {s["key"]: s for s in suspects}
    diff_rows = []
    for c in _dicts(d.get("diff"))[:MAX_ROWS]:
        k = _s(c.get("key"), 200)
        s = by_key.get(k)
        diff_rows.append({"key": k, "old": _val(c.get("old")), "new": _val(c.get("new")),
                          "cls": "suspect" if s and not s["unrelated"] else ("unrelated" if s else ""),
                          "score": s["score"] if s else "", "because": s["because"] if s else []})
    if not diff_rows and suspects:
        diff_rows = [{"key": s["key"], "old": s["old"], "new": s["new"], "score": s["score"], "because": s["because"],
                      "cls": "unrelated" if s["unrelated"] else "suspect"} for s in suspects[:MAX_ROWS]]
    unmatched = []
    for u in _dicts(d.get("unmatched"))[:MAX_UNMATCHED]:
        unmatched.append({"loc": _loc(u.get("source"), u.get("line")), "rank": _rank(u.get("rank")),
                          "ranks": _ranks(u.get("ranks")), "count": _int_or_none(u.get("count")) or 1,
                          **_block_view(_list(u.get("lines"))), "fingerprint": _s(u.get("fingerprint"), 64)})
    versions = _versions_view(d.get("versions"))
    patterns: Dict[str, Dict[str, Any]] = {}
    for f in findings_all:
        p = patterns.setdefault(f["pattern_file"] + "\x00" + f["pitfall"], {
            "file": f["pattern_file"], "id": f["pitfall"], "regexes": [], "references": f["references"],
            "fingerprints": [], "count": 0, "roles": []})
        if f["regex"] and f["regex"] not in p["regexes"]:
            p["regexes"].append(f["regex"])
        if f["fingerprint"] and len(p["fingerprints"]) < 10:
            p["fingerprints"].append(f["fingerprint"])
        if f["role"] not in p["roles"]:
            p["roles"].append(f["role"])
        p["count"] += f["count"] if isinstance(f["count"], int) else 1
    stats = d.get("stats") if isinstance(d.get("stats"), dict) else {}
    sources = [_s(x, 300) for x in _list(stats.get("sources"))]
    attempts = [{"attempt": _s(a.get("attempt"), 10), "primary": _s(a.get("primary"), 120) or "none",
                 "rank": _rank(a.get("first_failing_rank")), "summary": _s(a.get("summary"), 400)}
                for a in _dicts(d.get("attempts"))[:50]]
    violations = [{"pitfall": _s(v.get("pitfall"), 120), "settings": [_s(k, 120) for k in _list(v.get("keys"))][:10],
                   "message": _s(v.get("message"), 1000), "fix": _s(v.get("fix"), 1000)}
                  for v in _dicts(d.get("config_violations"))[:50]]
    outcome = d.get("outcome")
    if outcome not in ("healthy", "pitfall", "unexplained-failure"):      # a dict from before `outcome`
        failed = primary is not None or any(_s(f.get("role")) in ("root-cause", "cascade")
                                            for f in _dicts(d.get("findings"))) or isinstance(d.get("first_failure"), dict)
        outcome = "pitfall" if primary is not None else "unexplained-failure" if failed else "healthy"
    ff = d.get("first_failure") if isinstance(d.get("first_failure"), dict) else None
    first_failure = None
    if ff is not None:
        rk = ff.get("rank") if _int_or_none(ff.get("rank")) is not None else d.get("first_failing_rank")
        first_failure = {"rank": _rank(rk), "loc": _loc(ff.get("source"), ff.get("line")),
                         "message": _s(ff.get("message")), "kind": _s(ff.get("kind"), 40),
                         **_block_view(_list(ff.get("lines")))}
    hang = "hang_suspects" in d
    notes = [_s(n, 1000) for n in _list(d.get("notes"))][:20]
    suspects_h = [{"who": (f"rank {_rank(x.get('rank'))}" if _int_or_none(x.get("rank")) is not None
                           else f"peer {_s(x.get('peer'), 200)}"), "because": _s(x.get("because"), 400)}
                  for x in _dicts(d.get("hang_suspects"))[:50]]
    frd = d.get("flight_recorder") if isinstance(d.get("flight_recorder"), dict) else None
    flight = None
    if frd is not None:
        flight = {"ranks": _ranks(frd.get("ranks")), "dumps": _s(frd.get("dumps"), 1000),
                  "analyse": _s(frd.get("analyse"), 1000),
                  "evidence": [{"loc": _loc(e.get("source"), e.get("line")), "rank": _rank(e.get("rank")),
                                "text": _s(e.get("text"))} for e in _dicts(frd.get("evidence"))[:MAX_EVIDENCE]]}
    return {
        "failed": outcome != "healthy", "outcome": outcome, "first_failure": first_failure,
        "hang": hang, "hang_suspects": suspects_h, "flight_recorder": flight,
        "signature": _s(d.get("signature"), 300) if d.get("signature") is not None else None,
        "known": _known_view(d.get("known")),
        "summary": _s(d.get("summary"), 1000) or ("no known pitfall found" if primary is None else ""),
        "primary": primary, "primary_id": _s(prim_id, 120) if prim_id is not None else None,
        "first_rank": _rank(d.get("first_failing_rank")) if d.get("first_failing_rank") is not None else None,
        "launcher_root_rank": (_rank(d.get("launcher_root_rank"))
                               if _int_or_none(d.get("launcher_root_rank")) is not None else None),
        "blamed": blamed,
        "roots": [f for f in shown if f["role"] == "root-cause"],
        "cascades": [f for f in shown if f["role"] == "cascade"],
        "infos": [f for f in shown if f["role"] not in ("root-cause", "cascade")],
        "hidden_findings": hidden, "n_findings": len(findings_all) + left_out,
        "suspects": suspects, "diff": diff_rows, "diff_more": max(0, len(_dicts(d.get("diff"))) - MAX_ROWS),
        "violations": violations,
        "unmatched": unmatched, "unmatched_more": max(0, len(_dicts(d.get("unmatched"))) - MAX_UNMATCHED)
        + (_int_or_none(omitted.get("unmatched")) or 0),
        "versions": versions, "versions_found": any(v["value"] for v in versions),
        "patterns": list(patterns.values()),
        "steps": _steps_view(d.get("step_times"), d.get("omitted")),
        "attempts": attempts,
        "stats": {"lines": _s(stats.get("lines"), 20), "sources": sources[:20], "more_sources": max(0, len(sources) - 20),
                  "attempts": _s(stats.get("attempts"), 10)},
        "notes": notes,
        "timeline_events": len(_list(d.get("timeline"))),
        "diff_given": isinstance(d.get("diff"), list), "blame_note": _blame_note(d, notes),
    }


# ---- markdown


def _md(t: Any) -> str:
    """Text outside code: HTML-escaped and markdown punctuation backslash-escaped, one line."""
    t = _html.escape(_s(t, 4000), quote=False).replace("\n", " ")
    out = []
    for ch in t:
        out.append("\\" + ch if ch in "\\`*_[]|~" else ch)
    return "".join(out)


def _code(t: Any) -> str:
    """Inline code span that survives backticks and table pipes."""
    t = _s(t, 400).replace("\n", " ").replace("|", "\\|")
    run = max((len(r) for r in re.findall(r"`+", t)), default=0)
    fence = "`" * (run + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or not t else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def _fence(lines: List[str]) -> str:
    body = "\n".join(lines)
    run = max((len(r) for r in re.findall(r"`{3,}|~{3,}", body)), default=0)
    f = "`" * max(3, run + 1)
    return f"{f}text\n{body}\n{f}"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{_html.escape(summary)}</summary>\n\n{body}\n\n</details>"


def _md_evidence(f: Dict[str, Any], brief: bool = False) -> str:
    """Evidence lines in a code block; BRIEF (cascades): two lines, no context."""
    lines: List[str] = []
    evs = f["evidence"][:2] if brief else f["evidence"]
    for e in evs:
        lines.append(f"# {e['loc']} (rank {e['rank']})")
        for r in e["rows"]:
            if brief and not r["hit"]:
                continue
            lines.append(f"{'>' if r['hit'] else ' '} {r['n']:>6} | {r['short']}" if r["n"] != "" else
                         f"{'>' if r['hit'] else ' '} {r['short']}")
    more = f["more_evidence"] + len(f["evidence"]) - len(evs)
    if more:
        lines.append(f"# … {more} more evidence line(s) in the HTML/JSON report")
    return _fence(lines)


def _md_finding(f: Dict[str, Any]) -> str:
    head = f"{f['role']}: {f['pitfall']} x{f['count']}" + (f" ranks {f['ranks']}" if f["ranks"] else "") + f" at {f['loc']}"
    body = [f"**{_md(f['title'])}** ({_md(f['severity'])}), fingerprint {_code(f['fingerprint'])}", "",
            _md_evidence(f, brief=f["role"] == "cascade")]
    if f["role"] != "cascade" and f["fix"]:
        body += ["", f"**Fix:** {_md(f['fix'])}"]
    return _details(head, "\n".join(body))


def render_markdown(d: Dict[str, Any], limit: int = MD_LIMIT) -> str:
    """A ticket comment (GitHub / GitLab / Jira): verdict first, details collapsed, under LIMIT chars."""
    v = _view(d)
    p = v["primary"]
    head: List[str] = []
    if p:
        head.append(f"### triage: {_code(p['pitfall'])} — {_md(p['title'])}")
    elif v.get("failed"):
        head.append("### triage: a failure no known pitfall explains")
    else:
        head.append("### triage: no known pitfall found")
    head.append("")
    head.append(f"**Verdict:** {_md(v['summary'])}")
    head.append("")
    head.append("| | |")
    head.append("|---|---|")
    if p:
        head.append(f"| Pitfall | {_code(p['pitfall'])} ({_md(p['severity'])}) |")
    head.append(f"| Outcome | {_code(v['outcome'])} |")
    if v["hang"]:
        sus = ", ".join(_md(x["who"]) for x in v["hang_suspects"][:10]) or "none in this log"
        head.append(f"| First failing rank | none: a hang (suspects: {sus})"
                    + (f" (launcher: rank {_md(v['launcher_root_rank'])}, the first to exit)"
                       if v["launcher_root_rank"] is not None else "") + " |")
    else:
        head.append(f"| First failing rank | {_md(v['first_rank']) if v['first_rank'] is not None else 'unknown'}"
                    + (f" (launcher: rank {_md(v['launcher_root_rank'])})" if v["launcher_root_rank"] is not None else "")
                    + " |")
    b = v["blamed"]
    head.append("| Blamed setting | " + (f"{_code(b['key'])}: {_code(b['old'])} → {_code(b['new'])}" if b else "none")
                + " |")
    if p:
        head.append(f"| First seen | {_code(p['loc'])} |")
        head.append(f"| Fingerprint | {_code(p['fingerprint'])} |")
        head.append(f"| Pattern | {_code(p['pattern_file'])} |")
    if v["signature"]:
        head.append(f"| Signature | {_code(v['signature'])} |")
    kv = v["known"]
    if kv:
        since = f" since {_md(kv['since'])}" if kv["since"] else ""
        label = _md(kv["title"]) if kv["title"] else _md(kv["url"])
        href = (kv["href"] or "").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
        link = f"[{label}](<{href}>)" if href else label
        head.append(f"| Known issue | {link} (seen {kv['seen']} time{'s' if kv['seen'] != 1 else ''}{since}) |")
    blocks: List[str] = []
    ffv = v["first_failure"]
    if not p and ffv is not None:
        body = _fence(ffv["short"] + ([f"… {ffv['more']} more line(s)"] if ffv["more"] else [])) if ffv["short"] else ""
        rk = f", rank {_md(ffv['rank'])}" if ffv["rank"] != "?" else ""
        blocks.append(f"**Error** ({_md(ffv['kind'])}{rk}, {_code(ffv['loc'])}): "
                      f"{_code(ffv['message'])}" + (f"\n\n{body}" if body else ""))
    if v["hang"] and v["hang_suspects"]:
        blocks.append("**Hang suspects:**\n\n" + "\n".join(f"- {_md(x['who'])}: {_md(x['because'])}"
                                                         for x in v["hang_suspects"][:20]))
    if v["flight_recorder"]:
        frv = v["flight_recorder"]
        blocks.append("**Flight Recorder:** PyTorch dumped its collective trace"
                      + (f" (ranks {_md(frv['ranks'])})" if frv["ranks"] else "")
                      + f". Dumps: {_md(frv['dumps'])} Analyse them with {_code(frv['analyse'])}.")
    if p:
        blocks.append(f"**Fix:** {_md(p['fix'])}\n\n**Why:** {_md(p['explanation'])}")
        blocks.append(_details(f"Evidence ({p['loc']}, x{p['count']}" + (f", ranks {p['ranks']}" if p["ranks"] else "")
                               + ")", _md_evidence(p)))
    for f in v["roots"] + v["infos"]:
        blocks.append(_md_finding(f))
    if v["cascades"]:
        blocks.append(_details(f"{len(v['cascades'])} cascade finding(s) (consequences of the root cause)",
                               "\n\n".join(_md_finding(f) for f in v["cascades"])))
    if v["violations"]:
        blocks.append("**Config checks:**\n\n" + "\n".join(
            f"- {_code(x['pitfall'])}: {_md(x['message'])} Fix: {_md(x['fix'])}" for x in v["violations"]))
    if v["diff"]:
        rows = ["| setting | good | failed | blame |", "|---|---|---|---|"]
        for r in v["diff"]:
            tag = ("**suspect** " + _md(", ".join(r["because"])) if r["cls"] == "suspect"
                   else "unrelated" if r["cls"] == "unrelated" else "")
            rows.append(f"| {_code(r['key'])} | {_code(r['old'])} | {_code(r['new'])} | {tag} |")
        blocks.append(_details(f"Config diff ({len(v['diff'])} change(s))", "\n".join(rows)))
    if v["steps"]:
        rows = ["| run | steady median | steady iterations | warmup | capture iterations | capture time |",
                "|---|---|---|---|---|---|"]
        for r in v["steps"]["runs"]:
            rows.append(f"| {r['name']} | {_md(r['median'])} | {r['steady']} | {_md(r['warmup'])} | "
                        f"{_md(r['captures'])} | {_md(r['capture_seconds'])} |")
        for c in v["steps"]["comparisons"]:
            rows.append("")
            rows.append(f"- {_md(c['label'])}: {_md(c['cur'])} vs {_md(c['base'])} ({_md(c['delta'])}, 95% CI "
                        f"{_md(c['ci'])}): **{_md(c['verdict'])}**")
        blocks.append(_details("Step times", "\n".join(rows)))
    for u in v["unmatched"]:
        body = _fence(u["short"] + ([f"… {u['more']} more line(s)"] if u["more"] else []))
        blocks.append(_details(f"Unmatched error block at {u['loc']} (rank {u['rank']}, x{u['count']}, "
                               f"fingerprint {u['fingerprint']})", body))
    if v["versions_found"]:
        blocks.append("**Versions:** " + ", ".join(f"{_md(x['name'])} {_code(x['value'])}"
                                                   for x in v["versions"] if x["value"]))
    if v["patterns"]:
        rows = ["| pattern file | id | fingerprints | references |", "|---|---|---|---|"]
        for pt in v["patterns"]:
            refs = "; ".join(_md(r["source"]) + (f" ({_md(r['version'])})" if r["version"] else "")
                             for r in pt["references"][:3])
            rows.append(f"| {_code(pt['file'])} | {_code(pt['id'])} | "
                        f"{', '.join(_code(x) for x in pt['fingerprints'][:3])} | {refs} |")
        blocks.append(_details("Patterns that fired", "\n".join(rows)))
    if v["notes"]:
        blocks.append("\n".join(f"- note: {_md(n)}" for n in v["notes"]))
    foot = (f"<sub>triage {__version__}: {_md(v['stats']['lines'])} lines from "
            f"{len(v['stats']['sources']) + v['stats']['more_sources']} source(s). Secrets are redacted unless "
            f"--no-redact.</sub>")
    out = "\n".join(head)
    omitted = 0
    reserve = len(foot) + 200
    for blk in blocks:
        if len(out) + 2 + len(blk) + reserve > limit:
            omitted += 1
            continue
        out += "\n\n" + blk
    if omitted:
        out += (f"\n\n_{omitted} section(s) left out to stay under the {limit}-character comment limit; "
                f"attach the HTML report (`-o report.html`) for everything._")
    out += "\n\n" + foot + "\n"
    if len(out) > limit:   # only with a pathological head (should not happen: every field is clipped)
        out = out[:limit - 80] + "\n\n_(truncated to the comment size limit)_\n"
    return out


# ---- html


_ENV = None


def _env():
    global _ENV
    if _ENV is None:
        from jinja2 import Environment, FileSystemLoader
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
        _ENV = Environment(loader=FileSystemLoader(here), autoescape=True, trim_blocks=True, lstrip_blocks=True)
    return _ENV


HTML_SECTIONS = (("error", "Error"), ("hang", "Hang suspects"), ("flight-recorder", "Flight Recorder"),
                 ("fix", "Fix"), ("evidence", "Evidence"), ("findings", "Findings"), ("timeline", "Timeline"),
                 ("config", "Config"), ("steps", "Step times"), ("unmatched", "Unmatched"), ("versions", "Versions"),
                 ("patterns", "Patterns"))


def _html_sections(v: Dict[str, Any]) -> Dict[str, bool]:
    """Which sections of the HTML report have something in them (the rest are left out, and so is
    their link in the nav)."""
    return {
        "error": not v["primary"] and v["first_failure"] is not None,
        "hang": bool(v["hang"] and v["hang_suspects"]),
        "flight-recorder": v["flight_recorder"] is not None,
        "fix": v["primary"] is not None, "evidence": v["primary"] is not None,
        "findings": bool(v["roots"] or v["cascades"] or v["infos"] or v["hidden_findings"]),
        "timeline": bool(v.get("timeline_svg")),
        "config": bool(v["violations"] or v["diff"] or v["diff_given"]),
        "steps": v["steps"] is not None,
        "unmatched": bool(v["unmatched"] or v["unmatched_more"]),
        "versions": v["versions_found"],
        "patterns": bool(v["patterns"]),
    }


def render_html(d: Dict[str, Any]) -> str:
    """One self-contained HTML file: inline CSS and SVG, no scripts, fonts, images or network."""
    from .svg import step_chart_svg, timeline_svg
    v = _view(d)
    d = d if isinstance(d, dict) else {}
    v["timeline_svg"] = timeline_svg(d.get("timeline"), d.get("first_failing_rank"))
    v["steps_svg"] = step_chart_svg(d.get("step_times"))
    v["version"] = __version__
    v["show"] = show = _html_sections(v)
    v["nav"] = [(sid, label) for sid, label in HTML_SECTIONS if show[sid]]
    return _env().get_template("report.html.j2").render(v=v)


# ---- junit: one testcase per pitfall checked, for Jenkins / GitLab test reporters

# characters XML 1.0 cannot carry (C0 controls but tab and newlines, lone surrogates, U+FFFE/FFFF),
# and the C1 controls, which it can but readers choke on
_XML_BAD = re.compile("[^\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
JUNIT_UNEXPLAINED = "unexplained-failure"


def _x(t: Any, n: int = LINE_CLIP) -> str:
    """Text for an XML document: clipped, with the characters XML cannot carry removed (the XML
    serializer escapes the rest: `<`, `&`, `]]>`, quotes)."""
    return _XML_BAD.sub("", _s(t, n))


def _junit_body(fs: List[Dict[str, Any]]) -> str:
    """Each finding of one pitfall: role, ranks, location, fingerprint, its evidence lines
    (`source:line (rank r): text`, then the lines around it but for a cascade) and the fix."""
    out: List[str] = []
    for f in fs:
        rk = f" ranks {f['ranks']}" if f["ranks"] else (f" rank {f['rank']}" if f["rank"] != "?" else "")
        out.append(f"{f['role']}:{rk} x{f['count']} at {f['loc']}, fingerprint {f['fingerprint']}, "
                   f"pattern {f['pattern_file']}")
        for e in f["evidence"]:
            hit = next((r for r in e["rows"] if r["hit"]), None)
            out.append(f"  {e['loc']}" + (f" (rank {e['rank']})" if e["rank"] != "?" else "")
                       + f": {hit['text'] if hit else e['text']}")
            if f["role"] != "cascade" and len(e["rows"]) > 1:      # its context, as in the other reports
                out += [f"    {'>' if r['hit'] else ' '} {r['n']:>6} | {r['text']}" for r in e["rows"]]
        if f["more_evidence"]:
            out.append(f"  … {f['more_evidence']} more evidence line(s) in the JSON report")
        if f["fix"] and f["role"] != "cascade":
            out.append(f"fix: {f['fix']}")
    return "\n".join(out)


def _junit_message(f: Dict[str, Any]) -> str:
    where = f"rank {f['rank']}" if f["rank"] != "?" else (f"ranks {f['ranks']}" if f["ranks"] else "rank unknown")
    return f"{f['title'] or f['pitfall']} ({f['role']}, {where})"


def render_junit(d: Dict[str, Any], pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """JUnit XML (the schema Jenkins' and GitLab's test reports read) of a report dict: one testcase
    per pitfall of the catalog checked (PITFALL_IDS, default the shipped patterns; a pitfall found
    that is not in it is added), passed when the log does not show it and a <failure> (message: title
    and rank; text: the evidence lines with source:line, and the fix) when a root-cause or cascade
    finding names it; an informational finding passes with its evidence in <system-out>.  One more
    testcase, `unexplained-failure`, carries an <error> when the job failed and no pattern explains
    it.  Make it from the redacted dict (report_dict) so that secrets are redacted as elsewhere."""
    import xml.etree.ElementTree as ET
    d = d if isinstance(d, dict) else {}
    if pitfall_ids is None:
        from .patterns import load_all
        pitfall_ids = [p.id for p in load_all()]
    v = _view(d)
    by_id: Dict[str, List[Dict[str, Any]]] = {}
    for f in _dicts(d.get("findings")):
        fv = _finding_view(f)
        by_id.setdefault(fv["pitfall"], []).append(fv)
    ids: List[str] = []
    for pid in list(pitfall_ids) + list(by_id):
        pid = _s(pid, 120)
        if pid and pid not in ids:
            ids.append(pid)
    order = {"root-cause": 0, "cascade": 1}
    suite = ET.Element("testsuite", name="triage", tests=str(len(ids) + 1), failures="0", errors="0",
                       skipped="0", time="0")
    props = ET.SubElement(suite, "properties")
    for k, val in (("outcome", v["outcome"]), ("primary", v["primary_id"] or ""), ("summary", v["summary"]),
                   ("signature", v["signature"] or ""), ("first_failing_rank", v["first_rank"] or ""),
                   ("known_issue", v["known"]["url"] if v["known"] else ""),
                   ("sources", ", ".join(v["stats"]["sources"])), ("triage_version", __version__)):
        if val:
            ET.SubElement(props, "property", name=k, value=_x(val, 2000))
    failures = errors = 0
    for pid in ids:
        fs = sorted(by_id.get(pid, []), key=lambda f: order.get(f["role"], 2))
        tc = ET.SubElement(suite, "testcase", classname="triage.pitfalls", name=_x(pid, 120), time="0")
        failing = [f for f in fs if f["role"] in order]
        if failing:
            failures += 1
            el = ET.SubElement(tc, "failure", message=_x(_junit_message(failing[0]), 1000), type=failing[0]["role"])
            el.text = _x(_junit_body(fs), 200000)
        elif fs:
            ET.SubElement(tc, "system-out").text = _x("found (informational):\n" + _junit_body(fs), 200000)
    tc = ET.SubElement(suite, "testcase", classname="triage", name=JUNIT_UNEXPLAINED, time="0")
    if v["outcome"] == "unexplained-failure":
        errors += 1
        ff = v["first_failure"]
        if ff is not None:
            rk = f"rank {ff['rank']}: " if ff["rank"] != "?" else ""
            el = ET.SubElement(tc, "error", message=_x(rk + (ff["message"] or v["summary"]), 1000),
                               type=_x(ff["kind"] or "error", 40))
            el.text = _x("\n".join([f"{ff['loc']} ({ff['kind']}): no pattern explains it"] + ff["lines"]
                                   + ([f"… {ff['more']} more line(s)"] if ff["more"] else [])), 200000)
        else:
            el = ET.SubElement(tc, "error", message=_x(v["summary"], 1000), type="error")
            el.text = _x(v["summary"], 4000)
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    root = ET.Element("testsuites", name="triage", tests=suite.get("tests", "0"), failures=str(failures),
                      errors=str(errors), skipped="0", time="0")
    root.append(suite)
    if hasattr(ET, "indent"):      # Python 3.9+
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ---- jira wiki markup: the markdown comment's content, for Jira tickets

_JIRA_ESCAPE = set("*_-+^~?!{}[]#")     # markup characters: backslash-escaped
_JIRA_ENTITY = {"\\": "&#92;", "|": "&#124;"}   # `\\` is a line break and `\\|` is unreliable in tables


def _jira(t: Any, n: int = 4000) -> str:
    """Text outside {noformat}: one line, Jira markup neutralised (markup characters escaped, backslash
    and pipe as character references, an `&` that would start a character reference escaped too)."""
    t = re.sub(r"&(?=#?\w+;)", "&amp;", _s(t, n).replace("\n", " "))
    out = []
    for ch in t:
        out.append(_JIRA_ENTITY.get(ch) or ("\\" + ch if ch in _JIRA_ESCAPE else ch))
    return "".join(out)


def _jmono(t: Any, n: int = 400) -> str:
    """Inline monospace ({{...}}), its text escaped like any other."""
    t = _jira(t, n)
    return "{{" + t + "}}" if t.strip() else "(none)"


def _noformat(lines: List[str]) -> str:
    """A {noformat} block: literal text, except that a `{noformat` inside would end it."""
    body = "\n".join(re.sub(r"(?i)\{(noformat)", r"{ \1", x) for x in lines)
    return "{noformat}\n" + body + "\n{noformat}"


def _jira_link(label: str, href: Optional[str]) -> str:
    if not href:
        return _jira(label)
    url = "".join(c if c.isascii() and c.isprintable() and c not in " |[]{}<>\"'\\^`" else
                  "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in href)
    return f"[{_jira(label)}|{url}]"


def _jira_evidence(f: Dict[str, Any], brief: bool = False) -> str:
    lines: List[str] = []
    evs = f["evidence"][:2] if brief else f["evidence"]
    for e in evs:
        lines.append(f"# {e['loc']} (rank {e['rank']})")
        for r in e["rows"]:
            if brief and not r["hit"]:
                continue
            lines.append(f"{'>' if r['hit'] else ' '} {r['n']:>6} | {r['short']}" if r["n"] != "" else
                         f"{'>' if r['hit'] else ' '} {r['short']}")
    more = f["more_evidence"] + len(f["evidence"]) - len(evs)
    if more:
        lines.append(f"# … {more} more evidence line(s) in the HTML/JSON report")
    return _noformat(lines)


def _jira_finding(f: Dict[str, Any]) -> str:
    head = (f"h4. {_jira(f['role'])}: {_jmono(f['pitfall'])} x{f['count']}"
            + (f" ranks {_jira(f['ranks'])}" if f["ranks"] else "") + f" at {_jira(f['loc'])}")
    body = [head, f"*{_jira(f['title'])}* ({_jira(f['severity'])}), fingerprint {_jmono(f['fingerprint'])}",
            _jira_evidence(f, brief=f["role"] == "cascade")]
    if f["role"] != "cascade" and f["fix"]:
        body.append(f"*Fix:* {_jira(f['fix'])}")
    return "\n".join(body)


def _jrow(*cells: str) -> str:
    return "|" + "|".join(c if c.strip() else " " for c in cells) + "|"


def render_jira(d: Dict[str, Any], limit: int = MD_LIMIT) -> str:
    """The markdown ticket comment (render_markdown) in Jira wiki markup: h3./h4. headings, ||heading||
    tables, {noformat} log blocks, [title|url] links; every piece of log text is escaped or inside
    {noformat}.  Jira has no collapsed blocks: what markdown folds into <details> gets an h4. heading.
    Stays under LIMIT characters (Jira's comment limit), leaving out whole sections with a note."""
    v = _view(d)
    p = v["primary"]
    head: List[str] = []
    if p:
        head.append(f"h3. triage: {_jmono(p['pitfall'])} — {_jira(p['title'])}")
    elif v.get("failed"):
        head.append("h3. triage: a failure no known pitfall explains")
    else:
        head.append("h3. triage: no known pitfall found")
    head.append("")
    head.append(f"*Verdict:* {_jira(v['summary'])}")
    head.append("")
    if p:
        head.append(f"||Pitfall|{_jmono(p['pitfall'])} ({_jira(p['severity'])})|")
    head.append(f"||Outcome|{_jmono(v['outcome'])}|")
    if v["hang"]:
        sus = ", ".join(_jira(x["who"]) for x in v["hang_suspects"][:10]) or "none in this log"
        head.append(f"||First failing rank|none: a hang (suspects: {sus})"
                    + (f" (launcher: rank {_jira(v['launcher_root_rank'])}, the first to exit)"
                       if v["launcher_root_rank"] is not None else "") + "|")
    else:
        head.append(f"||First failing rank|{_jira(v['first_rank']) if v['first_rank'] is not None else 'unknown'}"
                    + (f" (launcher: rank {_jira(v['launcher_root_rank'])})" if v["launcher_root_rank"] is not None
                       else "") + "|")
    b = v["blamed"]
    head.append("||Blamed setting|" + (f"{_jmono(b['key'])}: {_jmono(b['old'])} → {_jmono(b['new'])}" if b
                                       else "none") + "|")
    if p:
        head.append(f"||First seen|{_jmono(p['loc'])}|")
        head.append(f"||Fingerprint|{_jmono(p['fingerprint'])}|")
        head.append(f"||Pattern|{_jmono(p['pattern_file'])}|")
    if v["signature"]:
        head.append(f"||Signature|{_jmono(v['signature'])}|")
    kv = v["known"]
    if kv:
        since = f" since {_jira(kv['since'])}" if kv["since"] else ""
        link = _jira_link(kv["title"] or kv["url"], kv["href"])
        head.append(f"||Known issue|{link} (seen {kv['seen']} time{'s' if kv['seen'] != 1 else ''}{since})|")
    blocks: List[str] = []
    ffv = v["first_failure"]
    if not p and ffv is not None:
        body = _noformat(ffv["short"] + ([f"… {ffv['more']} more line(s)"] if ffv["more"] else [])) if ffv["short"] else ""
        rk = f", rank {_jira(ffv['rank'])}" if ffv["rank"] != "?" else ""
        blocks.append(f"*Error* ({_jira(ffv['kind'])}{rk}, {_jmono(ffv['loc'])}): {_jmono(ffv['message'])}"
                      + (f"\n{body}" if body else ""))
    if v["hang"] and v["hang_suspects"]:
        blocks.append("*Hang suspects:*\n" + "\n".join(f"* {_jira(x['who'])}: {_jira(x['because'])}"
                                                      for x in v["hang_suspects"][:20]))
    if v["flight_recorder"]:
        frv = v["flight_recorder"]
        blocks.append("*Flight Recorder:* PyTorch dumped its collective trace"
                      + (f" (ranks {_jira(frv['ranks'])})" if frv["ranks"] else "")
                      + f". Dumps: {_jira(frv['dumps'])} Analyse them with {_jmono(frv['analyse'], 1000)}.")
    if p:
        blocks.append(f"*Fix:* {_jira(p['fix'])}\n\n*Why:* {_jira(p['explanation'])}")
        blocks.append(f"h4. Evidence ({_jira(p['loc'])}, x{p['count']}"
                      + (f", ranks {_jira(p['ranks'])}" if p["ranks"] else "") + ")\n" + _jira_evidence(p))
    for f in v["roots"] + v["infos"]:
        blocks.append(_jira_finding(f))
    if v["cascades"]:
        blocks.append(f"h4. {len(v['cascades'])} cascade finding(s) (consequences of the root cause)\n"
                      + "\n".join(_jira_finding(f) for f in v["cascades"]))
    if v["violations"]:
        blocks.append("*Config checks:*\n" + "\n".join(
            f"* {_jmono(x['pitfall'])}: {_jira(x['message'])} Fix: {_jira(x['fix'])}" for x in v["violations"]))
    if v["diff"]:
        rows = [f"h4. Config diff ({len(v['diff'])} change(s))", "||setting||good||failed||blame||"]
        for r in v["diff"]:
            tag = ("*suspect* " + _jira(", ".join(r["because"])) if r["cls"] == "suspect"
                   else "unrelated" if r["cls"] == "unrelated" else "")
            rows.append(_jrow(_jmono(r["key"]), _jmono(r["old"]), _jmono(r["new"]), tag))
        blocks.append("\n".join(rows))
    if v["steps"]:
        rows = ["h4. Step times", "||run||steady median||steady iterations||warmup||capture iterations||capture time||"]
        for r in v["steps"]["runs"]:
            rows.append(_jrow(_jira(r["name"]), _jira(r["median"]), str(r["steady"]), _jira(r["warmup"]),
                              _jira(r["captures"]), _jira(r["capture_seconds"])))
        for c in v["steps"]["comparisons"]:
            rows.append(f"* {_jira(c['label'])}: {_jira(c['cur'])} vs {_jira(c['base'])} ({_jira(c['delta'])}, "
                        f"95% CI {_jira(c['ci'])}): *{_jira(c['verdict'])}*")
        blocks.append("\n".join(rows))
    for u in v["unmatched"]:
        body = _noformat(u["short"] + ([f"… {u['more']} more line(s)"] if u["more"] else []))
        blocks.append(f"h4. Unmatched error block at {_jira(u['loc'])} (rank {_jira(u['rank'])}, x{u['count']}, "
                      f"fingerprint {_jira(u['fingerprint'])})\n{body}")
    if v["versions_found"]:
        blocks.append("*Versions:* " + ", ".join(f"{_jira(x['name'])} {_jmono(x['value'])}"
                                                 for x in v["versions"] if x["value"]))
    if v["patterns"]:
        rows = ["h4. Patterns that fired", "||pattern file||id||fingerprints||references||"]
        for pt in v["patterns"]:
            refs = "; ".join(_jira(r["source"]) + (f" ({_jira(r['version'])})" if r["version"] else "")
                             for r in pt["references"][:3])
            rows.append(_jrow(_jmono(pt["file"]), _jmono(pt["id"]),
                              ", ".join(_jmono(x) for x in pt["fingerprints"][:3]), refs))
        blocks.append("\n".join(rows))
    if v["notes"]:
        blocks.append("\n".join(f"* note: {_jira(n)}" for n in v["notes"]))
    foot = (f"_triage {_jira(__version__)}: {_jira(v['stats']['lines'])} lines from "
            f"{len(v['stats']['sources']) + v['stats']['more_sources']} source(s). Secrets are redacted unless "
            f"{_jira('--no-redact')}._")
    out = "\n".join(head)
    omitted = 0
    reserve = len(foot) + 200
    for blk in blocks:
        if len(out) + 2 + len(blk) + reserve > limit:
            omitted += 1
            continue
        out += "\n\n" + blk
    if omitted:
        out += (f"\n\n_{omitted} section(s) left out to stay under the {limit}\\-character comment limit; "
                f"attach the HTML report ({{{{\\-o report.html}}}}) for everything._")
    out += "\n\n" + foot + "\n"
    if len(out) > limit:
        out = out[:limit - 80] + "\n\n_(truncated to the comment size limit)_\n"
    return out


# ---- check-config as a markdown comment (a pull request that changes a run config)


def render_check_config_markdown(violations: Sequence[Any], config: Dict[str, Any], redact_secrets: bool = True,
                                 limit: int = MD_LIMIT) -> str:
    """`triage check-config --format markdown`: VIOLATIONS (triage.config Violation objects, or their
    dicts: pitfall, keys, message, fix) of CONFIG (the canonical config checked) as a comment: the
    verdict heading, each violation with the settings it names and their values and the fix, then
    the whole config collapsed; secrets redacted as in check-config's JSON, under LIMIT characters."""
    vs = [dict(x) if isinstance(x, dict) else dict(vars(x)) for x in violations]
    cfg = dict(config) if isinstance(config, dict) else {}
    if redact_secrets:
        red = redact_obj({"violations": vs, "config": cfg})
        vs, cfg = red["violations"], red["config"]
    n = len(vs)
    out = [f"### triage check-config: {n} CUDA-graph pitfall{'s' if n != 1 else ''} in this config" if n else
           "### triage check-config: no CUDA-graph pitfall in this config", ""]
    if n:
        out.append("**Verdict:** launching this config would hit "
                   + ", ".join(_code(x.get("pitfall")) for x in vs[:20]) + (" …" if n > 20 else "") + ".")
        out.append("")
    for x in vs[:50]:
        keys = [_s(k, 200) for k in _list(x.get("keys"))][:10]
        out.append(f"- **{_code(x.get('pitfall'))}**: {_md(x.get('message'))}")
        if keys:
            out.append("  - settings: " + ", ".join(f"{_code(k)} = {_code(_val(cfg.get(k)))}" for k in keys))
        if x.get("fix"):
            out.append(f"  - **Fix:** {_md(x.get('fix'))}")
    if n > 50:
        out.append(f"- … {n - 50} more violation(s) in `--format json`")
    foot = (f"<sub>triage {__version__} check-config."
            + (" Secrets are redacted." if redact_secrets else "") + "</sub>")
    text = "\n".join(out).rstrip("\n")
    items = list(cfg.items())
    if items:
        rows = ["| setting | value |", "|---|---|"]
        room = limit - len(text) - len(foot) - 300
        shown = 0
        for k, val in items[:MAX_ROWS]:
            row = f"| {_code(k)} | {_code(_val(val))} |"
            if sum(len(r) + 1 for r in rows) + len(row) > room:
                break
            rows.append(row)
            shown += 1
        if shown < len(items):
            rows.append("")
            rows.append(f"_… {len(items) - shown} more setting(s) in `--format json`._")
        text += "\n\n" + _details(f"Config checked ({len(items)} setting{'s' if len(items) != 1 else ''})",
                                  "\n".join(rows))
    text += "\n\n" + foot + "\n"
    if len(text) > limit:
        text = text[:limit - 80] + "\n\n_(truncated to the comment size limit)_\n"
    return text
