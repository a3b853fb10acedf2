"""Inline SVG charts for the HTML report: per-rank timeline and step times.

Pure functions from report data to SVG markup.  Every piece of text goes through
markupsafe.escape; numbers are coerced with float(); odd values are skipped, never raised on.
Colours come from CSS classes (`c-root`, `c-cascade`, ...) so the page's light, dark and print
styles apply.  No JavaScript.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from markupsafe import Markup, escape

MAX_POINTS = 2000          # markers drawn at most; more are thinned (root causes kept first)
MAX_SERIES = 1500          # points per step-time line at most
ROLES = ("root-cause", "cascade", "info")


def _num(x: Any) -> Optional[float]:
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _int(x: Any) -> Optional[int]:
    v = _num(x)
    return int(v) if v is not None else None


def _f(v: float) -> str:
    """Compact coordinate."""
    return f"{v:.1f}".rstrip("0").rstrip(".")


def nice_ticks(lo: float, hi: float, n: int = 5) -> List[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out = []
    v = start
    while v <= hi + step * 1e-9 and len(out) < 50:
        out.append(round(v, 10))
        v += step
    return out


def _fmt_tick(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def _svg_open(w: int, h: int, label: str, cls: str) -> str:
    return (f'<svg class="plot {cls}" viewBox="0 0 {w} {h}" '
            f'role="img" aria-label="{escape(label)}" preserveAspectRatio="xMinYMin meet">'
            f'<title>{escape(label)}</title>')


def _legend(items: Sequence[Tuple[str, str]]) -> str:
    """An HTML legend under the chart (wraps with the page); items: (swatch css class, label)."""
    if not items:
        return ""
    return ('<figcaption class="legend">' + "".join(
        f'<span class="key"><span class="sw {cls}"></span>{escape(label)}</span>' for cls, label in items)
        + "</figcaption>")


# --------------------------------------------------------------------------------------------
# timeline


def timeline_svg(events: Any, first_rank: Any = None, width: int = 900) -> Markup:  # noqa: C901 - TODO(issue 16): split
    """Per-rank events: x = time (`t`, when every event has one) else order (`seq`); y = rank,
    with events of unknown rank on a row of their own ("?").  Markers coloured by role."""
    evs = [e for e in (events or []) if isinstance(e, dict)]
    if not evs:
        return Markup("")
    use_t = all(_num(e.get("t")) is not None for e in evs)
    pts: List[Tuple[float, Optional[int], str, Dict[str, Any]]] = []
    for i, e in enumerate(evs):
        x = _num(e.get("t")) if use_t else _num(e.get("seq"))
        if x is None:
            x = float(i)
        role = e.get("role") if e.get("role") in ROLES else "info"
        pts.append((x, _int(e.get("rank")), str(role), e))
    xs = [p[0] for p in pts]
    x0, x1 = min(xs), max(xs)
    ranks = sorted({p[1] for p in pts if p[1] is not None})
    has_unknown = any(p[1] is None for p in pts)
    r0, r1 = (ranks[0], ranks[-1]) if ranks else (0, 0)
    nrows = (r1 - r0 + 1) if ranks else 0
    # height: one row per rank for small jobs, a continuous axis for large ones
    row = 14 if nrows <= 24 else max(1.0, 300.0 / nrows)
    plot_h = max(40.0, min(320.0, nrows * row)) if ranks else 0.0
    unk_h = 22.0 if has_unknown else 0.0
    left, right, top = 64.0, 16.0, 12.0
    h = int(top + plot_h + unk_h + 48)
    pw = width - left - right

    pad = 8.0

    def X(v: float) -> float:
        return left + pad + ((pw - 2 * pad) * (v - x0) / (x1 - x0) if x1 > x0 else (pw - 2 * pad) / 2)

    def Y(r: Optional[int]) -> float:
        if r is None:
            return top + plot_h + unk_h / 2 + (4 if ranks else 0)
        if nrows <= 1:
            return top + plot_h / 2
        return top + 6 + (plot_h - 12) * (r - r0) / (r1 - r0)

    out = [_svg_open(width, h, "Per-rank timeline of matched events", "timeline")]
    # axes
    yb = top + plot_h + unk_h
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(yb)}"/>')
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(yb)}" x2="{_f(width - right)}" y2="{_f(yb)}"/>')
    if ranks:
        if nrows <= 24:
            rticks = list(range(r0, r1 + 1))
        else:
            rticks = sorted({int(v) for v in nice_ticks(r0, r1, 6) if r0 <= v <= r1} | {r0})
            if Y(r1) - Y(rticks[-1]) >= 12:
                rticks.append(r1)
        for r in rticks:
            y = Y(r)
            out.append(f'<line class="grid" x1="{_f(left)}" y1="{_f(y)}" x2="{_f(width - right)}" y2="{_f(y)}"/>')
            out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end">rank {r}</text>')
    if has_unknown:
        out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(Y(None) + 4)}" text-anchor="end">rank ?</text>')
    fr = _int(first_rank)
    if fr is not None and ranks and r0 <= fr <= r1:
        y = Y(fr)
        out.append(f'<line class="first" x1="{_f(left)}" y1="{_f(y)}" x2="{_f(width - right)}" y2="{_f(y)}"/>')
    for rel in nice_ticks(0.0, x1 - x0, 6) if x1 > x0 else [0.0]:
        v = x0 + rel
        x = X(v)
        label = (f"+{_fmt_tick(rel)} s" if use_t else _fmt_tick(v))
        out.append(f'<line class="tick" x1="{_f(x)}" y1="{_f(yb)}" x2="{_f(x)}" y2="{_f(yb + 4)}"/>')
        out.append(f'<text class="lbl" x="{_f(x)}" y="{_f(yb + 16)}" text-anchor="middle">{escape(label)}</text>')
    out.append(f'<text class="lbl axis-title" x="{_f(left + pw / 2)}" y="{_f(yb + 34)}" text-anchor="middle">'
               f'{"time since the first event" if use_t else "order in the log"}</text>')
    # markers: one per (cell, role), the cell grown until at most MAX_POINTS remain, so a
    # huge job is thinned evenly rather than cut off; root causes are placed first
    order = {"info": 0, "cascade": 1, "root-cause": 2}
    ranked = sorted(pts, key=lambda p: -order[p[2]])
    cell = 2.0
    while True:
        seen = set()
        marks: List[Tuple[int, float, float, str, Dict[str, Any]]] = []
        for x, r, role, e in ranked:
            px, py = X(x), Y(r)
            key = (round(px / cell), round(py / cell), role)
            if key in seen:
                continue
            seen.add(key)
            marks.append((order[role], px, py, role, e))
        if len(marks) <= MAX_POINTS or cell > 64:
            break
        cell *= 1.5
    marks = marks[:MAX_POINTS]
    for _, px, py, role, e in sorted(marks, key=lambda m: m[0]):
        rk = "?" if _int(e.get("rank")) is None else str(_int(e.get("rank")))
        tip = f"{e.get('pitfall', '')} ({role}) rank {rk} at {e.get('source', '')}:{e.get('line', '')}"
        out.append(f'<circle class="c-{role}" cx="{_f(px)}" cy="{_f(py)}" r="{4 if role == "root-cause" else 3}">'
                   f'<title>{escape(tip[:300])}</title></circle>')
    out.append("</svg>")
    roles_seen = {p[2] for p in pts}
    legend = [(f"sw-{r}", r.replace("-", " ")) for r in ROLES if r in roles_seen]
    if fr is not None and ranks and r0 <= fr <= r1:
        legend.append(("sw-first", f"first failing rank ({fr})"))
    return Markup('<figure class="chart">' + "".join(out) + _legend(legend) + "</figure>")


# --------------------------------------------------------------------------------------------
# step times


def _series(s: Any) -> List[Tuple[float, float]]:
    out: List[Tuple[float, float]] = []
    for p in (s or []) if isinstance(s, (list, tuple)) else []:
        if isinstance(p, (list, tuple)) and len(p) >= 2:
            x, y = _num(p[0]), _num(p[1])
            if x is not None and y is not None:
                out.append((x, y))
    out.sort()
    if len(out) > MAX_SERIES:
        step = math.ceil(len(out) / MAX_SERIES)
        out = out[::step]
    return out


def _iters(v: Any) -> List[float]:
    if not isinstance(v, (list, tuple)):
        return []
    return [x for x in (_num(i) for i in v) if x is not None]


def step_chart_svg(step_times: Any, width: int = 900, height: int = 300) -> Markup:  # noqa: C901 - TODO(issue 16): split
    """Step time per iteration: current and baseline series, warmup and capture iterations of the
    current run shaded, steady-state medians as horizontal lines."""
    if not isinstance(step_times, dict):
        return Markup("")
    runs = [(name, step_times.get(name)) for name in ("baseline", "current")]
    runs = [(n, r) for n, r in runs if isinstance(r, dict) and _series(r.get("series"))]
    if not runs:
        return Markup("")
    all_pts = [p for _, r in runs for p in _series(r.get("series"))]
    x0, x1 = min(p[0] for p in all_pts), max(p[0] for p in all_pts)
    ymax = max(p[1] for p in all_pts)
    yt = nice_ticks(0, ymax * 1.05 if ymax > 0 else 1, 5)
    y1 = max(yt[-1] if yt else 1.0, ymax, 1e-9)
    left, right, top, bottom = 64.0, 16.0, 12.0, 44.0
    pw, ph = width - left - right, height - top - bottom

    def X(v: float) -> float:
        return left + (pw * (v - x0) / (x1 - x0) if x1 > x0 else pw / 2)

    def Y(v: float) -> float:
        return top + ph - ph * max(v, 0.0) / y1

    half = (pw / (x1 - x0) / 2) if x1 > x0 else 6.0
    out = [_svg_open(width, height, "Step time per iteration", "steps")]
    legend: List[Tuple[str, str]] = []
    cur = dict(runs[-1][1]) if runs[-1][0] == "current" else {}
    warm = _num(cur.get("warmup_steps")) if cur else None
    caps = _iters(cur.get("capture_iterations")) if cur else []
    # shading: warmup iterations (1..warmup) and capture iterations
    if warm is not None and warm >= 1 and x0 <= warm:
        xa, xb = X(max(x0, 1.0)) - half, X(min(warm, x1)) + half
        out.append(f'<rect class="band-warmup" x="{_f(max(left, xa))}" y="{_f(top)}" '
                   f'width="{_f(max(1.0, min(xb, left + pw) - max(left, xa)))}" height="{_f(ph)}"/>')
        legend.append(("sw-warmup", f"warmup (iterations 1-{int(warm)})"))
    drawn_cap = False
    for c in caps[:200]:
        if x0 <= c <= x1:
            xa = max(left, X(c) - half)
            xb = min(left + pw, X(c) + half)
            out.append(f'<rect class="band-capture" x="{_f(xa)}" y="{_f(top)}" width="{_f(max(1.0, xb - xa))}" '
                       f'height="{_f(ph)}"/>')
            drawn_cap = True
    if drawn_cap:
        legend.append(("sw-capture", "CUDA graph capture"))
    # grid and axes
    for v in yt:
        y = Y(v)
        out.append(f'<line class="grid" x1="{_f(left)}" y1="{_f(y)}" x2="{_f(left + pw)}" y2="{_f(y)}"/>')
        out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end">'
                   f'{escape(_fmt_tick(v))}</text>')
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(top + ph)}"/>')
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top + ph)}" x2="{_f(left + pw)}" y2="{_f(top + ph)}"/>')
    for v in nice_ticks(x0, x1, 8) if x1 > x0 else [x0]:
        x = X(v)
        out.append(f'<line class="tick" x1="{_f(x)}" y1="{_f(top + ph)}" x2="{_f(x)}" y2="{_f(top + ph + 4)}"/>')
        out.append(f'<text class="lbl" x="{_f(x)}" y="{_f(top + ph + 16)}" text-anchor="middle">'
                   f'{escape(_fmt_tick(v))}</text>')
    out.append(f'<text class="lbl axis-title" x="{_f(left + pw / 2)}" y="{_f(height - 6)}" '
               'text-anchor="middle">iteration</text>')
    out.append(f'<text class="lbl axis-title" x="12" y="{_f(top + ph / 2)}" text-anchor="middle" '
               f'transform="rotate(-90 12 {_f(top + ph / 2)})">ms / iteration</text>')
    # series and medians
    for name, r in runs:
        pts = _series(r.get("series"))
        path = " ".join(f"{_f(X(x))},{_f(Y(y))}" for x, y in pts)
        out.append(f'<polyline class="s-{name}" points="{path}"/>')
        if len(pts) <= 300:
            for x, y in pts:
                out.append(f'<circle class="p-{name}" cx="{_f(X(x))}" cy="{_f(Y(y))}" r="2.5">'
                           f'<title>{escape(f"{name} iteration {x:g}: {y:g} ms")}</title></circle>')
        legend.append((f"sw-s-{name}", name))
        med = _num(r.get("steady_median_ms"))
        if med is not None:
            steady = _iters(r.get("steady_iterations"))
            xa = X(min(steady)) if steady and x0 <= min(steady) <= x1 else left
            y = Y(med)
            out.append(f'<line class="m-{name}" x1="{_f(xa)}" y1="{_f(y)}" x2="{_f(left + pw)}" y2="{_f(y)}">'
                       f'<title>{escape(f"{name} steady-state median {med:g} ms")}</title></line>')
            legend.append((f"sw-m-{name}", f"{name} steady-state median {med:g} ms"))
    out.append("</svg>")
    return Markup('<figure class="chart">' + "".join(out) + _legend(legend) + "</figure>")


# --------------------------------------------------------------------------------------------
# fleet: failing jobs per day per signature

SERIES_CLASSES = 8         # distinct colours (css classes c-s0 .. c-s7); later series join "other"
DAYS_MAX = 400             # days drawn at most (the most recent kept)


def _count(x: Any) -> int:
    v = _num(x)
    return min(int(v), 10 ** 9) if v is not None and v >= 1 else 0


def _count_ticks(hi: int, n: int = 5) -> Tuple[List[int], int]:
    """Whole-number ticks from 0 covering HI in about N steps; (ticks, top of the axis)."""
    hi = max(1, hi)
    step = 1
    for mag in (10 ** k for k in range(0, 10)):
        for m in (1, 2, 5):
            step = m * mag
            if hi / step <= n:
                break
        else:
            continue
        break
    top = -(-hi // step) * step
    return list(range(0, top + 1, step)), top


def daily_chart_svg(daily: Any, width: int = 900, height: int = 280) -> Markup:  # noqa: C901 - TODO(issue 16): split
    """Stacked bars: failing jobs per day (x), one segment per signature, coloured by series
    (css classes `c-s0`.. `c-s7`, `c-other`); each day is one `<g class="day">` and each segment
    carries a `<title>` (day, signature, count).  `daily` is fleet.per_day's
    {"days": [...], "series": [{"signature", "counts"}]}; odd values are skipped or read as 0."""
    if not isinstance(daily, dict):
        return Markup("")
    days_in = daily.get("days")
    if not isinstance(days_in, (list, tuple)) or not days_in:
        return Markup("")
    days = [("" if d is None else str(d))[:32] for d in days_in]
    off = max(0, len(days) - DAYS_MAX)
    days = days[off:]
    nd = len(days)
    # series: [(css class, label, counts)], at most SERIES_CLASSES named ones plus "other"
    named: List[Tuple[str, str, List[int]]] = []
    other = [0] * nd
    raw = daily.get("series")
    for s in raw if isinstance(raw, (list, tuple)) else []:
        if not isinstance(s, dict):
            continue
        cs = s.get("counts")
        if not isinstance(cs, (list, tuple)):
            continue
        cs = list(cs)[off:off + nd]
        counts = [_count(c) for c in cs] + [0] * (nd - len(cs))
        sig = s.get("signature")
        label = "?" if sig is None else str(sig)[:300]
        if label == "other" or len(named) >= SERIES_CLASSES:
            other = [a + b for a, b in zip(other, counts)]
        else:
            named.append((f"s{len(named)}", label, counts))
    series = named + ([("other", "other", other)] if any(other) else [])
    totals = [sum(s[2][i] for s in series) for i in range(nd)]
    ticks, ytop = _count_ticks(max(totals) if totals else 0)
    left, right, top, bottom = 56.0, 16.0, 12.0, 46.0
    pw, ph = width - left - right, height - top - bottom
    slot = pw / nd
    bw = max(1.0, min(48.0, slot * 0.72))

    def Y(v: float) -> float:
        return top + ph - ph * v / ytop

    out = [_svg_open(width, height, "Failing jobs per day, by signature", "daily")]
    for v in ticks:
        y = Y(v)
        out.append(f'<line class="grid" x1="{_f(left)}" y1="{_f(y)}" x2="{_f(left + pw)}" y2="{_f(y)}"/>')
        out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end">{v}</text>')
    for i, d in enumerate(days):
        cx = left + slot * (i + 0.5)
        x = cx - bw / 2
        y0 = top + ph
        seg = [f'<g class="day"><title>{escape(f"{d}: {totals[i]} failing job(s)")}</title>']
        for cls, label, counts in series:
            n = counts[i]
            if n <= 0:
                continue
            h = ph * n / ytop
            y0 -= h
            seg.append(f'<rect class="c-{cls}" x="{_f(x)}" y="{_f(y0)}" width="{_f(bw)}" height="{_f(max(h, 0.5))}">'
                       f'<title>{escape(f"{d}: {label}: {n} job(s)")}</title></rect>')
        seg.append("</g>")
        out.append("".join(seg))
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(top + ph)}"/>')
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top + ph)}" x2="{_f(left + pw)}" y2="{_f(top + ph)}"/>')
    every = max(1, math.ceil(nd / max(1, int(pw // 80))))     # a label per ~80 units at most
    for i in range(0, nd, every):
        cx = left + slot * (i + 0.5)
        out.append(f'<line class="tick" x1="{_f(cx)}" y1="{_f(top + ph)}" x2="{_f(cx)}" y2="{_f(top + ph + 4)}"/>')
        out.append(f'<text class="lbl" x="{_f(cx)}" y="{_f(top + ph + 16)}" text-anchor="middle">'
                   f'{escape(days[i][:10])}</text>')
    out.append(f'<text class="lbl axis-title" x="{_f(left + pw / 2)}" y="{_f(height - 6)}" text-anchor="middle">'
               f'day (UTC)</text>')
    out.append(f'<text class="lbl axis-title" x="12" y="{_f(top + ph / 2)}" text-anchor="middle" '
               f'transform="rotate(-90 12 {_f(top + ph / 2)})">failing jobs</text>')
    out.append("</svg>")
    legend = [(f"sw-{cls}", label if len(label) <= 90 else label[:89] + "…") for cls, label, _ in series]
    return Markup('<figure class="chart">' + "".join(out) + _legend(legend) + "</figure>")
