"""Rendering of the fleet view (fleet.view): text, json, markdown; html in fleet_html.

Everything shown comes from the view dict, which holds only redacted, bounded text (records are
redacted when made); the text and markdown renderers bound each field again."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from ..report.names import FLEET_FORMATS
from ..report.util import one_line

__all__ = ["FLEET_FORMATS", "render", "render_json", "render_markdown", "render_text"]
FIELD_MAX = 300
JOBS_IN_TEXT = 8


def _cut(s: Any, n: int = FIELD_MAX) -> str:
    s = "" if s is None else str(s)
    s = one_line(s.replace("\r", " "))      # a job's path cannot start a line of its own
    return s if len(s) <= n else s[: n - 1] + "…"


def _date(iso: Any) -> str:
    return str(iso)[:10] if iso else "?"


def render_json(v: Dict[str, Any]) -> str:
    return json.dumps(v, indent=2, ensure_ascii=False) + "\n"


def _jobs_text(g: Dict[str, Any], n: int = JOBS_IN_TEXT) -> str:
    jobs = [_cut(j, 120) for j in g["jobs"][:n]]
    more = g["count"] - len(jobs)
    return ", ".join(jobs) + (f" (+{more} more)" if more > 0 else "")


def _period(v: Dict[str, Any]) -> str:
    p = v.get("period") or {}
    if p.get("since"):
        return f" since {_date(p['since'])}"
    return ""


def _stop_text(v: Dict[str, Any]) -> List[str]:
    """Issue 43: the jobs to stop (the same root cause again, no progress between attempts)."""
    if not v.get("stop"):
        return []
    out = ["", "stop these jobs (the same root cause again, no iteration past the attempt before):"]
    out += [f"  {_cut(s.get('job'), 160)} attempts {_cut(s.get('attempts'), 40)}: {_cut(s.get('signature'), 200)}"
            for s in v["stop"][:50]]
    return out


def render_text(v: Dict[str, Any]) -> str:
    o = v["outcomes"]
    out: List[str] = []
    head = (f"triage fleet: {v['jobs']} job(s){_period(v)}: {o.get('pitfall', 0)} known pitfall, "
            f"{o.get('unexplained-failure', 0)} unexplained failure, {o.get('healthy', 0)} healthy")
    if o.get("error"):
        head += f", {o['error']} unreadable"
    out.append(head)
    if v["groups"]:
        out.append("")
        out.append(f"{len(v['groups'])} failure group(s) by signature:")
    for g in v["groups"]:
        out.extend(_group_text(g))
    if v["unexplained"]:
        out.append("")
        out.append(f"unexplained failures ({sum(g['count'] for g in v['unexplained'])} job(s), "
                   f"{len(v['unexplained'])} signature(s)):")
        for g in v["unexplained"]:
            out.extend(_group_text(g))
    out += _stop_text(v)
    if v.get("errors"):
        out.append("")
        out.append("jobs that could not be read:")
        for e in v["errors"][:50]:
            out.append(f"  {_cut(e['job'], 160)}: {_cut(e['error'], 200)}")
        if len(v["errors"]) > 50:
            out.append(f"  ... and {len(v['errors']) - 50} more")
    out.append("")
    out.append(f"healthy: {v['healthy']} job(s)")
    return "\n".join(out) + "\n"


def _group_text(g: Dict[str, Any]) -> List[str]:
    new = " NEW" if g.get("new") else ""
    lines = [f"  x{g['count']:<4} {_cut(g['signature'], 200)}{new}",
             f"        first seen {_date(g['first_seen'])}, last seen {_date(g['last_seen'])}"
             + (f", {g['seen_total']} in the store" if g.get("seen_total", g["count"]) != g["count"] else "")]
    if _sample(g):          # an unexplained group's key names no message: its first job's error line
        lines.append(f"        e.g. {_cut(g['title'], 200)}")
    if g.get("known"):
        k = g["known"]
        title = f" ({_cut(k['title'], 120)})" if k.get("title") else ""
        lines.append(f"        known issue: {_cut(k['url'], 300)}{title}")
    if g.get("blamed"):
        lines.append(f"        blamed setting: {', '.join(_cut(b, 80) for b in g['blamed'][:5])}")
    lines.append(f"        jobs: {_jobs_text(g)}")
    return lines


def _sample(g: Dict[str, Any]) -> bool:
    """G is an unexplained group whose title says more than its signature (the fleet HTML's test):
    the signature masked it, or is its group key (the exception type and frame, no message)."""
    t = g.get("title")
    return (not g.get("primary") and bool(t) and isinstance(t, str)
            and not str(g.get("signature") or "").endswith(t))


def _md(s: Any, n: int = FIELD_MAX) -> str:
    from ..report.markdown import md_text
    return md_text(_cut(s, n))          # the job report's escaping: HTML-escaped, punctuation escaped


def _code(s: Any, n: int = FIELD_MAX) -> str:
    from ..report.markdown import code_span
    t = _cut(s, n)
    return code_span(t) if t else ""    # survives backticks and table pipes


def render_markdown(v: Dict[str, Any]) -> str:
    o = v["outcomes"]
    out = [f"## triage fleet: {v['jobs']} job(s){_md(_period(v))}", "",
           f"**{o.get('pitfall', 0)}** known pitfall · **{o.get('unexplained-failure', 0)}** unexplained failure · "
           f"**{o.get('healthy', 0)}** healthy" + (f" · **{o['error']}** unreadable" if o.get("error") else ""), ""]
    for title, gs in (("Failure groups", v["groups"]), ("Unexplained failures", v["unexplained"])):
        if not gs:
            continue
        out += [f"### {title}", "", "| count | signature | first seen | last seen | known issue | jobs |",
                "|---:|---|---|---|---|---|"]
        for g in gs:
            k = g.get("known")
            known = (f"[{_md(k.get('title') or k['url'], 80)}]({_cut(k['url']).replace(')', '%29')})" if k else "")
            eg = f"<br>e.g. {_md(g['title'], 160)}" if _sample(g) else ""
            out.append(f"| {g['count']} | {_code(g['signature'], 200)}{' **new**' if g.get('new') else ''}{eg} | "
                       f"{_date(g['first_seen'])} | {_date(g['last_seen'])} | {known} | {_md(_jobs_text(g, 5), 400)} |")
        out.append("")
    if v.get("stop"):
        out += ["### Stop (the same root cause again, no progress)", ""]
        out += [f"- {_code(s.get('job'), 160)} attempts {_md(s.get('attempts'), 40)}: {_code(s.get('signature'), 200)}"
                for s in v["stop"][:50]]
        out.append("")
    if v.get("errors"):
        out += ["### Unreadable jobs", ""]
        out += [f"- {_code(e['job'], 160)}: {_md(e['error'], 200)}" for e in v["errors"][:50]]
        out.append("")
    out.append(f"Healthy: {v['healthy']} job(s)")
    return "\n".join(out) + "\n"


def render(v: Dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return render_json(v)
    if fmt == "markdown":
        return render_markdown(v)
    if fmt == "html":
        from .html import render_html
        return render_html(v)
    return render_text(v)
