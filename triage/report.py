"""Report stage: text, json, markdown and html renderings of one analysis."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from .findings import Analysis, Finding
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
        "evidence": [{"source": e.source, "line": e.line, "rank": e.rank, "text": e.text,
                      "before": e.before, "after": e.after} for e in f.evidence],
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


def render_json(a: Analysis) -> str:
    return json.dumps(to_dict(a), indent=2, ensure_ascii=False)


def _clip(s: str, n: int = 300) -> str:
    return s if len(s) <= n else s[:n] + "…"


def render_text(a: Analysis) -> str:
    out: List[str] = []
    if a.primary is None:
        out.append("triage: no known pitfall found")
    else:
        p = a.primary
        out.append(f"triage: {a.summary}")
        out.append("")
        out.append(f"PRIMARY  {p.pitfall}  [{p.severity}]  {p.title}")
        out.append(f"  first seen: {p.source}:{p.line}" + (f" (rank {p.rank})" if p.rank is not None else ""))
        if p.ranks:
            out.append(f"  ranks: {p.ranks_text}  count: {p.count}")
        out.append("  evidence:")
        for e in p.evidence:
            out.append(f"    {e.source}:{e.line}: {_clip(e.text)}")
        out.append("  why: " + p.explanation)
        out.append("  fix: " + p.fix)
        out.append(f"  rule: {p.pattern_path.rsplit('/', 1)[-1]} /{_clip(p.rule, 120)}/")
        out.append(f"  fingerprint: {p.fingerprint}")
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
        out.append("SUSPECTED CONFIG CHANGES")
        for s in sus:
            because = ", ".join(s.get("because") or []) or "unrelated"
            out.append(f"  {s['score']:>5.2f}  {s['key']}: {s['old']!r} -> {s['new']!r}   ({because})")
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


def render_markdown(d: Dict[str, Any]) -> str:
    raise NotImplementedError("markdown report: in progress")


def render_html(d: Dict[str, Any]) -> str:
    raise NotImplementedError("html report: in progress")
