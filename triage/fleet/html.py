"""HTML rendering of the fleet view (fleet.view): one self-contained file like the job report.

`render_html(view)` first builds a view model from the dict without trusting it: every field is
read defensively (a missing key, a wrong type or a partial dict renders, never raises), every text
is clipped and every list capped.  The template (templates/fleet.html.j2) is rendered with
autoescape on; the per-day chart is inline SVG from svg.daily_chart_svg.  Known-issue links are
made only for http(s) URLs.  No JavaScript, no request beyond the file itself.
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Dict, List, Optional

from .. import __version__
from ..kinds import HEALTHY, PITFALL, UNEXPLAINED

TEXT_MAX = 300             # characters of a signature, title or error
JOB_MAX = 160              # characters of a job id
URL_MAX = 500
JOBS_SHOWN = 20            # job ids listed per group (the rest counted as "+N more")
JOBS_OPEN = 3              # a group's job list starts expanded when it has at most this many
GROUPS_MAX = 500           # groups per table
ERRORS_MAX = 50            # unreadable jobs listed
BLAMED_MAX = 5             # blamed settings per group
RANKS_MAX = 5              # first failing ranks per group
OUTCOMES = ((PITFALL, "Known pitfall"), (UNEXPLAINED, "Unexplained failure"),
            (HEALTHY, "Healthy"), ("error", "Unreadable"))


def _text(x: Any, n: int = TEXT_MAX) -> str:
    """One line of at most N characters (control characters made spaces, the cut marked)."""
    if x is None:
        return ""
    try:
        s = x if isinstance(x, str) else str(x)
    except Exception:  # noqa: BLE001 -- an object whose str() raises is shown as its type
        s = f"<{type(x).__name__}>"
    s = _CTRL.sub(" ", s[: n + 8]).strip()
    return s if len(s) <= n else s[: n - 1] + "…"


def _int(x: Any) -> int:
    if isinstance(x, bool) or x is None:
        return 0
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return 0
    return int(min(v, 1e15)) if math.isfinite(v) and v > 0 else 0


def _dict(x: Any) -> Dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else []


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_CTRL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def _date(x: Any) -> Dict[str, str]:
    """{"day": "YYYY-MM-DD" (or a clipped odd value), "full": the whole timestamp (hover)}."""
    s = _text(x, 40)
    if not s:
        return {"day": "?", "full": ""}
    return {"day": s[:10] if _ISO_DAY.match(s) else s[:20], "full": s}


def _href(url: str) -> Optional[str]:
    u = url.strip()
    if re.match(r"https?://[^\s]", u, re.I) and not any(c in u for c in "\x00\r\n\t"):
        return u
    return None


_REL = re.compile(r"(?!//)[A-Za-z0-9._~%/\-]{1,1000}")


def _report_href(x: Any) -> Optional[str]:
    """A job's report link (`reports`, fleet run --reports): a URL-quoted path only (no scheme, no
    host: nothing but the file beside the view); anything else is no link."""
    return x if isinstance(x, str) and _REL.fullmatch(x) else None


def _known(x: Any) -> Optional[Dict[str, Any]]:
    k = _dict(x)
    url = _text(k.get("url"), URL_MAX) if isinstance(k.get("url"), str) else ""
    title = _text(k.get("title"), 120)
    if not url and not title:
        return None
    return {"url": url, "title": title, "href": _href(url) if url else None}


def _group(g: Any) -> Optional[Dict[str, Any]]:
    if not isinstance(g, dict):
        return None
    count = _int(g.get("count"))
    jobs_in = _list(g.get("jobs"))
    reports = _dict(g.get("reports"))
    jobs = [{"label": _text(j, JOB_MAX), "href": _report_href(reports.get(j)) if isinstance(j, str) else None}
            for j in jobs_in[:JOBS_SHOWN] if j is not None and not isinstance(j, (dict, list))]
    total = max(count, len(jobs_in) + _int(g.get("jobs_omitted")))
    sig = _text(g.get("signature")) or "(no signature)"
    title = _text(g.get("title"))
    # the title says more than the signature only where the signature masked it
    show_title = bool(title) and not sig.endswith(title)
    ranks = []
    fr = _dict(g.get("first_failing_ranks"))
    for k, v in list(fr.items())[:RANKS_MAX]:
        ranks.append({"rank": _text(k, 12), "n": _int(v)})
    blamed_in = [b for b in _list(g.get("blamed")) if isinstance(b, (str, int, float)) and not isinstance(b, bool)]
    seen_total = _int(g.get("seen_total"))
    return {
        "signature": sig,
        "primary": _text(g.get("primary"), 80),
        "title": title if show_title else "",
        "count": count,
        "new": g.get("new") is True,
        "first": _date(g.get("first_seen")),
        "last": _date(g.get("last_seen")),
        "seen_total": seen_total if seen_total > count else 0,
        "jobs": jobs,
        "jobs_more": max(0, total - len(jobs)),
        "jobs_open": total <= JOBS_OPEN,
        "ranks": ranks,
        "ranks_more": max(0, len(fr) - RANKS_MAX),
        "blamed": [_text(b, 80) for b in blamed_in[:BLAMED_MAX]],
        "blamed_more": max(0, len(blamed_in) - BLAMED_MAX),
        "known": _known(g.get("known")),
    }


def _groups(x: Any) -> Dict[str, Any]:
    raw = _list(x)
    rows = [r for r in (_group(g) for g in raw[:GROUPS_MAX]) if r is not None]
    more = [g for g in raw[GROUPS_MAX:] if isinstance(g, dict)]
    return {"rows": rows, "more": len(more), "has_known": any(r["known"] for r in rows),
            "has_blamed": any(r["blamed"] for r in rows), "more_jobs": sum(_int(g.get("count")) for g in more),
            "jobs": sum(r["count"] for r in rows) + sum(_int(g.get("count")) for g in more),
            "n": len(rows) + len(more)}


def _model(v: Any) -> Dict[str, Any]:
    from ..report.svg import daily_chart_svg
    v = _dict(v)
    outcomes = _dict(v.get("outcomes"))
    groups = _groups(v.get("groups"))
    unexplained = _groups(v.get("unexplained"))
    errors_in = [e for e in _list(v.get("errors")) if isinstance(e, dict)]
    errors = [{"job": _text(e.get("job"), JOB_MAX) or "?", "error": _text(e.get("error"))}
              for e in errors_in[:ERRORS_MAX]]
    healthy = _int(v.get("healthy")) if v.get("healthy") is not None else _int(outcomes.get("healthy"))
    counts = []
    for key, label in OUTCOMES:
        n = _int(outcomes.get(key))
        if key == HEALTHY and HEALTHY not in outcomes:
            n = healthy
        if key != "error" or n:
            counts.append({"key": key, "label": label, "n": n})
    period = _dict(v.get("period"))
    daily = _dict(v.get("daily"))
    chart = daily_chart_svg(daily) if _list(daily.get("days")) else ""
    new = sum(1 for r in groups["rows"] + unexplained["rows"] if r["new"])
    failing = groups["jobs"] + unexplained["jobs"]
    nav = [(i, label) for i, label, present in (
        ("daily", "Per day", bool(chart)), ("groups", "Failure groups", bool(groups["rows"])),
        ("unexplained", "Unexplained", bool(unexplained["rows"])), ("errors", "Unreadable", bool(errors)),
        ("healthy", "Healthy", healthy > 0)) if present]
    return {
        "version": __version__,
        "jobs": _int(v.get("jobs")) or sum(c["n"] for c in counts),
        "outcomes": counts,
        "healthy": healthy,
        "failing": failing,
        "signatures": groups["n"] + unexplained["n"],
        "new": new,
        "since": _date(period.get("since")) if period.get("since") else None,
        "until": _date(period.get("until")) if period.get("until") else None,
        "chart": chart,
        "groups": groups,
        "unexplained": unexplained,
        "errors": errors,
        "errors_more": max(0, len(errors_in) - ERRORS_MAX),
        "stop": [{"job": _text(s.get("job"), JOB_MAX) or "?", "attempts": _text(s.get("attempts")),
                  "signature": _text(s.get("signature"))}
                 for s in _list(v.get("stop"))[:ERRORS_MAX] if isinstance(s, dict)],
        "nav": nav,
    }


_ENV = None


def _env():
    global _ENV
    if _ENV is None:
        from jinja2 import Environment, FileSystemLoader
        here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
        _ENV = Environment(loader=FileSystemLoader(here), autoescape=True, trim_blocks=True, lstrip_blocks=True)
    return _ENV


def render_html(view: Any) -> str:
    """The fleet view as one self-contained HTML file: inline CSS and SVG, no scripts."""
    return _env().get_template("fleet.html.j2").render(v=_model(view))
