"""Report stage: text, json, markdown and html renderings of one analysis."""
from __future__ import annotations

import html as _html
import json
import os
import re
from typing import Any, Dict, List, Optional

from . import __version__
from .findings import Analysis, Finding, rank_ranges
from .redact import redact, redact_obj

SCHEMA_VERSION = 1


def finding_dict(f: Finding) -> Dict[str, Any]:
    return {
        "pitfall": f.pitfall,
        "title": f.title,
        "severity": f.severity,
        "role": f.role,
        "rank": f.rank,
        "ranks": f.ranks_text,
        "source": f.source,
        "line": f.line,
        "count": f.count,
        "evidence": [e.text for e in f.evidence],
        "evidence_detail": [{"source": e.source, "line": e.line, "rank": e.rank, "text": e.text,
                      "before": e.before, "after": e.after, "before_lines": e.before_lines,
                      "after_lines": e.after_lines} for e in f.evidence],
        "fingerprint": f.fingerprint,
        "rule": {"pattern": f.pattern_path.rsplit("/", 1)[-1], "regex": f.rule},
        "explanation": f.explanation,
        "fix": f.fix,
        "references": f.references,
        "implicates": f.implicates,
    }


def to_dict(a: Analysis) -> Dict[str, Any]:
    d: Dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "primary": a.primary.pitfall if a.primary else None,
        "summary": a.summary,
        "first_failing_rank": a.first_rank,
        "findings": [finding_dict(f) for f in a.findings],
        "suspects": a.extra.get("suspects", []),
        "unmatched": [
            {"source": u.source, "line": u.line, "rank": u.rank, "ranks": u.ranks, "count": u.count,
             "lines": u.lines, "fingerprint": u.fingerprint}
            for u in a.unmatched
        ],
        "stats": {"lines": a.lines, "sources": a.sources, "attempts": a.attempts},
    }
    if a.launcher_root_rank is not None:
        d["launcher_root_rank"] = a.launcher_root_rank
    for k, v in a.extra.items():
        if k not in d:
            d[k] = v
    return d


def _clip(s: str, n: int = 300) -> str:
    return s if len(s) <= n else s[:n] + "…"


def render_text(a: Analysis) -> str:
    out: List[str] = []
    if a.primary is None:
        out.append(f"triage: {a.summary}")
    else:
        p = a.primary
        out.append(f"triage: {a.summary}")
        out.append("")
        out.append(f"PRIMARY  {p.pitfall}  [{p.severity}]  {p.title}")
        out.append(f"  first seen: {p.source}:{p.line}" + (f" (rank {p.rank})" if p.rank is not None else ""))
        if a.launcher_root_rank is not None:
            agree = "agrees" if a.launcher_root_rank == p.rank else "differs: it reports the first process to exit"
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
    att = a.extra.get("attempts") or []
    if len(att) > 1:
        out.append("")
        out.append(f"ATTEMPTS (the job restarted; attempt {len(att)} is the headline)")
        for d in att:
            out.append(f"  attempt {d['attempt']}: {d['summary']}")
    others = [f for f in a.findings if f is not a.primary]
    if others:
        out.append("")
        out.append("OTHER FINDINGS")
        for f in others:
            rk = f" ranks {f.ranks_text}" if f.ranks else ""
            out.append(f"  {f.role:<10} {f.pitfall:<32} x{f.count}{rk}  {f.source}:{f.line}  {f.fingerprint}")
            out.append(f"             {_clip(f.evidence[0].text, 200)}")
    sus = a.extra.get("suspects") or []
    if sus:
        out.append("")
        out.append("CONFIG CHANGES SINCE THE BASELINE (>> = suspect, ranked; the rest is unrelated)")
        for s in sus:
            mark = ">>" if not s.get("unrelated") else "  "
            because = ", ".join(s.get("because") or []) or "unrelated"
            out.append(f"  {mark} {s['score']:>4.2f}  {s['key']}: {s['old']!r} -> {s['new']!r}   ({because})")
    elif a.extra.get("diff") == []:
        out.append("")
        out.append("CONFIG CHANGES SINCE THE BASELINE: none (nothing to blame on the config)")
    viol = a.extra.get("config_violations") or []
    if viol:
        out.append("")
        out.append("CONFIG CHECK (rules the run's config breaks)")
        for v in viol:
            out.append(f"  {v['pitfall']}: {v['message']}")
            if v.get("fix"):
                out.append(f"      fix: {v['fix']}")
    st = a.extra.get("step_times") or {}
    if st:
        out.append("")
        out.append("STEP TIMES (steady state: warmup and capture iterations excluded)")
        for name in ("current", "baseline"):
            d = st.get(name)
            if not d:
                continue
            extra = []
            if d.get("capture_iterations"):
                extra.append(f"capture in iteration {','.join(map(str, d['capture_iterations']))}")
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
    for n in a.extra.get("notes") or []:
        out.append(f"note: {n}")
    if a.unmatched:
        out.append("")
        out.append("UNMATCHED ERRORS (no pattern explains these)")
        for u in a.unmatched[:5]:
            rk = f" rank {u.rank}" if u.rank is not None else ""
            out.append(f"  {u.source}:{u.line}{rk} (x{u.count})")
            for x in u.lines[-4:]:
                out.append(f"    | {_clip(x, 200)}")
    return "\n".join(out) + "\n"


FORMATS = ("text", "json", "markdown", "html")
SUFFIX_FORMAT = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
                 ".txt": "text"}


def render(a: Analysis, fmt: str, redact_secrets: bool = True) -> str:
    """Render an analysis; secrets are redacted unless redact_secrets is False."""
    if fmt == "text":
        out = render_text(a)
        return "\n".join(redact(x) for x in out.split("\n")) if redact_secrets else out
    d = to_dict(a)
    if redact_secrets:
        d = redact_obj(d)
    if fmt == "json":
        return json.dumps(d, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "markdown":
        return render_markdown(d)
    if fmt == "html":
        return render_html(d)
    raise ValueError(f"unknown format {fmt!r}")


# ----------------------------------------------------------------------------------------------
# markdown and html: both render a "view" built from the (already redacted) report dict.  The
# view clips every piece of log text, caps every list and never trusts a value's type, so an odd
# or partial dict renders instead of raising.

CLIP = 400                 # characters of one log line shown
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


def _evidence_view(e: Dict[str, Any]) -> Dict[str, Any]:
    line = _int_or_none(e.get("line"))
    before = [_s(x) for x in _list(e.get("before"))][-MAX_CONTEXT:]
    after = [_s(x) for x in _list(e.get("after"))][:MAX_CONTEXT]
    # real line numbers when given (an interleaved multi-rank log's neighbours are not line +/- 1)
    bn = [_int_or_none(x) for x in _list(e.get("before_lines"))][-MAX_CONTEXT:]
    an = [_int_or_none(x) for x in _list(e.get("after_lines"))][:MAX_CONTEXT]
    rows = []
    for i, t in enumerate(before):
        n = bn[i - len(before) + len(bn)] if len(bn) == len(before) else (line - len(before) + i if line is not None else None)
        rows.append({"n": n if n is not None else "", "text": t, "hit": False})
    rows.append({"n": line if line is not None else "", "text": _s(e.get("text")), "hit": True})
    for i, t in enumerate(after):
        n = an[i] if len(an) == len(after) else (line + 1 + i if line is not None else None)
        rows.append({"n": n if n is not None else "", "text": t, "hit": False})
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


def _steps_view(st: Any) -> Optional[Dict[str, Any]]:
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
            "steady": len(_list(r.get("steady_iterations"))), "median": _num_text(r.get("steady_median_ms"), " ms"),
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


def _view(d: Dict[str, Any]) -> Dict[str, Any]:
    d = d if isinstance(d, dict) else {}
    findings_all = [_finding_view(f) for f in _dicts(d.get("findings"))]
    raw = _dicts(d.get("findings"))
    prim_id = d.get("primary")
    pi = next((i for i, f in enumerate(raw) if f.get("pitfall") == prim_id and f.get("role") == "root-cause"),
              next((i for i, f in enumerate(raw) if prim_id is not None and f.get("pitfall") == prim_id), None))
    primary = findings_all[pi] if pi is not None else None
    others = [f for i, f in enumerate(findings_all) if i != pi]
    shown, hidden = others[:MAX_FINDINGS], max(0, len(others) - MAX_FINDINGS)
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
        lines = [_s(x) for x in _list(u.get("lines"))]
        unmatched.append({"loc": _loc(u.get("source"), u.get("line")), "rank": _rank(u.get("rank")),
                          "ranks": _ranks(u.get("ranks")), "count": _int_or_none(u.get("count")) or 1,
                          "lines": lines[:MAX_BLOCK_LINES], "more": max(0, len(lines) - MAX_BLOCK_LINES),
                          "fingerprint": _s(u.get("fingerprint"), 64)})
    vers = d.get("versions") if isinstance(d.get("versions"), dict) else {}
    versions = [{"name": label, "value": _s(vers.get(k), 120)} for k, label in VERSION_LABELS]
    known = {k for k, _ in VERSION_LABELS}
    versions += [{"name": _s(k, 60), "value": _s(v, 120)} for k, v in list(vers.items())[:20] if k not in known]
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
    failed = primary is not None or any(_s(f.get("role")) in ("root-cause", "cascade") for f in _dicts(d.get("findings"))) \
        or isinstance(d.get("first_failure"), dict)
    return {
        "failed": failed,
        "summary": _s(d.get("summary"), 1000) or ("no known pitfall found" if primary is None else ""),
        "primary": primary, "primary_id": _s(prim_id, 120) if prim_id is not None else None,
        "first_rank": _rank(d.get("first_failing_rank")) if d.get("first_failing_rank") is not None else None,
        "launcher_root_rank": (_rank(d.get("launcher_root_rank"))
                               if _int_or_none(d.get("launcher_root_rank")) is not None else None),
        "blamed": blamed,
        "roots": [f for f in shown if f["role"] == "root-cause"],
        "cascades": [f for f in shown if f["role"] == "cascade"],
        "infos": [f for f in shown if f["role"] not in ("root-cause", "cascade")],
        "hidden_findings": hidden, "n_findings": len(findings_all),
        "suspects": suspects, "diff": diff_rows, "diff_more": max(0, len(_dicts(d.get("diff"))) - MAX_ROWS),
        "violations": violations,
        "unmatched": unmatched, "unmatched_more": max(0, len(_dicts(d.get("unmatched"))) - MAX_UNMATCHED),
        "versions": versions, "versions_found": any(v["value"] for v in versions),
        "patterns": list(patterns.values()),
        "steps": _steps_view(d.get("step_times")),
        "attempts": attempts,
        "stats": {"lines": _s(stats.get("lines"), 20), "sources": sources[:20], "more_sources": max(0, len(sources) - 20),
                  "attempts": _s(stats.get("attempts"), 10)},
        "notes": [_s(n, 1000) for n in _list(d.get("notes"))][:20],
        "timeline_events": len(_list(d.get("timeline"))),
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
            lines.append(f"{'>' if r['hit'] else ' '} {r['n']:>6} | {r['text']}" if r["n"] != "" else
                         f"{'>' if r['hit'] else ' '} {r['text']}")
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
    blocks: List[str] = []
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
        body = _fence(u["lines"] + ([f"… {u['more']} more line(s)"] if u["more"] else []))
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


def render_html(d: Dict[str, Any]) -> str:
    """One self-contained HTML file: inline CSS and SVG, no scripts, fonts, images or network."""
    from .svg import step_chart_svg, timeline_svg
    v = _view(d)
    d = d if isinstance(d, dict) else {}
    v["timeline_svg"] = timeline_svg(d.get("timeline"), d.get("first_failing_rank"))
    v["steps_svg"] = step_chart_svg(d.get("step_times"))
    v["version"] = __version__
    return _env().get_template("report.html.j2").render(v=v)
