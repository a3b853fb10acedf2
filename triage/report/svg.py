"""Inline SVG charts for the HTML report: per-rank timeline and step times (drawn from the report
view's `charts`, whose numbers the view checked), and the fleet view's failing jobs per day.

Pure functions to SVG markup.  Every piece of text goes through markupsafe.escape; the fleet's
numbers are coerced with float(); odd values are skipped, never raised on.
Colours come from CSS classes (`c-root`, `c-cascade`, ...) so the page's light, dark and print
styles apply.  No JavaScript.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from markupsafe import Markup, escape

from ..caps import MAX_POINTS, MAX_SERIES
from .util import finite_num as _num
from .view import ChartRunView, ReportView, TimelineEventView

ROLES = ("root-cause", "cascade", "info")


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
    out: List[float] = []
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

_Point = Tuple[float, Optional[int], str, TimelineEventView]      # x, rank, role, event
_ROLE_ORDER = {"info": 0, "cascade": 1, "root-cause": 2}       # markers drawn later (on top)


def _timeline_points(evs: Sequence[TimelineEventView]) -> Tuple[bool, List[_Point]]:
    """Whether x is time (every event has a `t`), and each event's point."""
    use_t = all(e.t is not None for e in evs)
    pts: List[_Point] = []
    for i, e in enumerate(evs):
        x = e.t if use_t else e.seq
        if x is None:
            x = float(i)
        pts.append((x, e.rank, e.role, e))
    return use_t, pts


@dataclass
class _TimelineFrame:
    """The timeline's geometry: x from x0..x1, one row per rank r0..r1 (a row of its own for
    unknown ranks)."""
    width: int
    x0: float
    x1: float
    ranks: List[int]
    has_unknown: bool
    left: float = 64.0
    right: float = 16.0
    top: float = 12.0
    pad: float = 8.0

    def __post_init__(self) -> None:
        self.r0, self.r1 = (self.ranks[0], self.ranks[-1]) if self.ranks else (0, 0)
        self.nrows = (self.r1 - self.r0 + 1) if self.ranks else 0
        # height: one row per rank for small jobs, a continuous axis for large ones
        row = 14 if self.nrows <= 24 else max(1.0, 300.0 / self.nrows)
        self.plot_h = max(40.0, min(320.0, self.nrows * row)) if self.ranks else 0.0
        self.unk_h = 22.0 if self.has_unknown else 0.0
        self.height = int(self.top + self.plot_h + self.unk_h + 48)
        self.pw = self.width - self.left - self.right
        self.yb = self.top + self.plot_h + self.unk_h       # the x axis

    def X(self, v: float) -> float:
        pw, pad = self.pw, self.pad
        return self.left + pad + ((pw - 2 * pad) * (v - self.x0) / (self.x1 - self.x0) if self.x1 > self.x0
                                  else (pw - 2 * pad) / 2)

    def Y(self, r: Optional[int]) -> float:
        if r is None:
            return self.top + self.plot_h + self.unk_h / 2 + (4 if self.ranks else 0)
        if self.nrows <= 1:
            return self.top + self.plot_h / 2
        return self.top + 6 + (self.plot_h - 12) * (r - self.r0) / (self.r1 - self.r0)

    def shows_rank(self, r: Optional[int]) -> bool:
        return r is not None and bool(self.ranks) and self.r0 <= r <= self.r1

    def hline(self, cls: str, y: float) -> str:
        x2 = self.width - self.right
        return f'<line class="{cls}" x1="{_f(self.left)}" y1="{_f(y)}" x2="{_f(x2)}" y2="{_f(y)}"/>'


def _rank_ticks(g: _TimelineFrame) -> List[int]:
    if g.nrows <= 24:
        return list(range(g.r0, g.r1 + 1))
    rticks = sorted({int(v) for v in nice_ticks(g.r0, g.r1, 6) if g.r0 <= v <= g.r1} | {g.r0})
    if g.Y(g.r1) - g.Y(rticks[-1]) >= 12:
        rticks.append(g.r1)
    return rticks


def _timeline_y_axis(g: _TimelineFrame, first_rank: Optional[int]) -> List[str]:
    """The axes, a labelled grid line per rank tick (and the unknown row) and the first failing rank's line."""
    left = g.left
    out = [f'<line class="axis" x1="{_f(left)}" y1="{_f(g.top)}" x2="{_f(left)}" y2="{_f(g.yb)}"/>',
           f'<line class="axis" x1="{_f(left)}" y1="{_f(g.yb)}" x2="{_f(g.width - g.right)}" y2="{_f(g.yb)}"/>']
    for r in _rank_ticks(g) if g.ranks else []:
        y = g.Y(r)
        out.append(g.hline("grid", y))
        out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end">rank {r}</text>')
    if g.has_unknown:
        out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(g.Y(None) + 4)}" text-anchor="end">rank ?</text>')
    if g.shows_rank(first_rank):
        out.append(g.hline("first", g.Y(first_rank)))
    return out


def _timeline_x_axis(g: _TimelineFrame, use_t: bool) -> List[str]:
    """Ticks (seconds since the first event, or order in the log) and the axis title."""
    out = []
    yb = g.yb
    for rel in nice_ticks(0.0, g.x1 - g.x0, 6) if g.x1 > g.x0 else [0.0]:
        v = g.x0 + rel
        x = g.X(v)
        label = (f"+{_fmt_tick(rel)} s" if use_t else _fmt_tick(v))
        out.append(f'<line class="tick" x1="{_f(x)}" y1="{_f(yb)}" x2="{_f(x)}" y2="{_f(yb + 4)}"/>')
        out.append(f'<text class="lbl" x="{_f(x)}" y="{_f(yb + 16)}" text-anchor="middle">{escape(label)}</text>')
    out.append(f'<text class="lbl axis-title" x="{_f(g.left + g.pw / 2)}" y="{_f(yb + 34)}" text-anchor="middle">'
               f'{"time since the first event" if use_t else "order in the log"}</text>')
    return out


def _thinned_marks(g: _TimelineFrame, pts: List[_Point]) -> List[Tuple[int, float, float, str, TimelineEventView]]:
    """One marker per (cell, role), the cell grown until at most MAX_POINTS remain, so a huge job
    is thinned evenly rather than cut off; root causes are placed first."""
    ranked = sorted(pts, key=lambda p: -_ROLE_ORDER[p[2]])
    cell = 2.0
    while True:
        seen = set()
        marks: List[Tuple[int, float, float, str, TimelineEventView]] = []
        for x, r, role, e in ranked:
            px, py = g.X(x), g.Y(r)
            key = (round(px / cell), round(py / cell), role)
            if key in seen:
                continue
            seen.add(key)
            marks.append((_ROLE_ORDER[role], px, py, role, e))
        if len(marks) <= MAX_POINTS or cell > 64:
            break
        cell *= 1.5
    return marks[:MAX_POINTS]


def _marker(px: float, py: float, role: str, e: TimelineEventView) -> str:
    rk = "?" if e.rank is None else str(e.rank)
    tip = f"{e.pitfall} ({role}) rank {rk} at {e.source}:{e.line}"
    return (f'<circle class="c-{role}" cx="{_f(px)}" cy="{_f(py)}" r="{4 if role == "root-cause" else 3}">'
            f'<title>{escape(tip[:300])}</title></circle>')


def timeline_svg(v: ReportView, width: int = 900) -> Markup:
    """Report view V's per-rank events: x = time (`t`, when every event has one) else order (`seq`);
    y = rank, with events of unknown rank on a row of their own ("?").  Markers coloured by role."""
    evs = v.charts.timeline
    if not evs:
        return Markup("")
    use_t, pts = _timeline_points(evs)
    xs = [p[0] for p in pts]
    g = _TimelineFrame(width, min(xs), max(xs), sorted({p[1] for p in pts if p[1] is not None}),
                       any(p[1] is None for p in pts))
    fr = v.charts.first_rank
    out = [_svg_open(width, g.height, "Per-rank timeline of matched events", "timeline")]
    out += _timeline_y_axis(g, fr)
    out += _timeline_x_axis(g, use_t)
    out += [_marker(px, py, role, e) for _, px, py, role, e in sorted(_thinned_marks(g, pts), key=lambda m: m[0])]
    out.append("</svg>")
    roles_seen = {p[2] for p in pts}
    legend = [(f"sw-{r}", r.replace("-", " ")) for r in ROLES if r in roles_seen]
    if g.shows_rank(fr):
        legend.append(("sw-first", f"first failing rank ({fr})"))
    return Markup('<figure class="chart">' + "".join(out) + _legend(legend) + "</figure>")


# --------------------------------------------------------------------------------------------
# step times


def _series(r: ChartRunView) -> List[Tuple[float, float]]:
    """The run's points the chart draws: at most MAX_SERIES, evenly thinned."""
    out = list(r.series)
    if len(out) > MAX_SERIES:
        step = math.ceil(len(out) / MAX_SERIES)
        out = out[::step]
    return out


def _steady_range(runs: Sequence[ChartRunView], pts: List[Tuple[float, float]]) -> Tuple[float, float]:
    """The y range of the step chart: the steady-state iterations' times with some room (a 9.9 s
    warm-up step must not flatten 1.4 s steady steps: it is drawn at the edge, marked off the
    scale); all points when no run says which iterations are steady."""
    steady: List[float] = []
    for r in runs:
        its = set(r.steady)
        steady += [y for x, y in _series(r) if x in its]
    ys = steady if len(steady) >= 2 else [y for _, y in pts]
    lo, hi = min(ys), max(ys)
    pad = max((hi - lo) * 0.25, abs(hi) * 0.02, 1e-6)
    if not steady or len(steady) < 2:
        return 0.0, (hi * 1.05 if hi > 0 else 1.0)
    return max(0.0, lo - pad), hi + pad


_Legend = List[Tuple[str, str]]


@dataclass
class _StepFrame:
    """The step chart's geometry: iterations x0..x1 across, y0..y1 ms up (a value outside is drawn
    at the edge, marked as off the scale)."""
    x0: float
    x1: float
    y1: float
    width: int
    height: int
    y0: float = 0.0
    left: float = 64.0
    right: float = 16.0
    top: float = 12.0
    bottom: float = 44.0

    def __post_init__(self) -> None:
        self.pw = self.width - self.left - self.right
        self.ph = self.height - self.top - self.bottom
        self.half = (self.pw / (self.x1 - self.x0) / 2) if self.x1 > self.x0 else 6.0     # half an iteration

    def X(self, v: float) -> float:
        return self.left + (self.pw * (v - self.x0) / (self.x1 - self.x0) if self.x1 > self.x0 else self.pw / 2)

    def Y(self, v: float) -> float:
        v = min(max(v, self.y0), self.y1)
        return self.top + self.ph - self.ph * (v - self.y0) / ((self.y1 - self.y0) or 1.0)

    def off(self, v: float) -> bool:
        return v > self.y1 or v < self.y0


def _step_bands(g: _StepFrame, cur: Optional[ChartRunView]) -> Tuple[List[str], _Legend]:
    """Shading of the current run's warmup iterations (1..warmup) and capture iterations."""
    out: List[str] = []
    legend: _Legend = []
    left, top, pw, ph, half = g.left, g.top, g.pw, g.ph, g.half
    warm = cur.warmup if cur else None
    if warm is not None and warm >= 1 and g.x0 <= warm:
        xa, xb = g.X(max(g.x0, 1.0)) - half, g.X(min(warm, g.x1)) + half
        out.append(f'<rect class="band-warmup" x="{_f(max(left, xa))}" y="{_f(top)}" '
                   f'width="{_f(max(1.0, min(xb, left + pw) - max(left, xa)))}" height="{_f(ph)}"/>')
        legend.append(("sw-warmup", f"warmup (iterations 1-{int(warm)})"))
    caps = list(cur.captures) if cur else []
    drawn_cap = False
    for c in caps[:200]:
        if g.x0 <= c <= g.x1:
            xa = max(left, g.X(c) - half)
            xb = min(left + pw, g.X(c) + half)
            out.append(f'<rect class="band-capture" x="{_f(xa)}" y="{_f(top)}" width="{_f(max(1.0, xb - xa))}" '
                       f'height="{_f(ph)}"/>')
            drawn_cap = True
    if drawn_cap:
        legend.append(("sw-capture", "CUDA graph capture"))
    return out, legend


def _step_axes(g: _StepFrame, yt: List[float]) -> List[str]:
    """Grid lines at the `yt` ticks, the axes, iteration ticks and the axis titles."""
    out: List[str] = []
    left, top, pw, ph = g.left, g.top, g.pw, g.ph
    for v in yt:
        y = g.Y(v)
        out.append(f'<line class="grid" x1="{_f(left)}" y1="{_f(y)}" x2="{_f(left + pw)}" y2="{_f(y)}"/>')
        out.append(f'<text class="lbl" x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end">'
                   f'{escape(_fmt_tick(v))}</text>')
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(top + ph)}"/>')
    out.append(f'<line class="axis" x1="{_f(left)}" y1="{_f(top + ph)}" x2="{_f(left + pw)}" y2="{_f(top + ph)}"/>')
    for v in nice_ticks(g.x0, g.x1, 8) if g.x1 > g.x0 else [g.x0]:
        x = g.X(v)
        out.append(f'<line class="tick" x1="{_f(x)}" y1="{_f(top + ph)}" x2="{_f(x)}" y2="{_f(top + ph + 4)}"/>')
        out.append(f'<text class="lbl" x="{_f(x)}" y="{_f(top + ph + 16)}" text-anchor="middle">'
                   f'{escape(_fmt_tick(v))}</text>')
    out.append(f'<text class="lbl axis-title" x="{_f(left + pw / 2)}" y="{_f(g.height - 6)}" '
               'text-anchor="middle">iteration</text>')
    out.append(f'<text class="lbl axis-title" x="12" y="{_f(top + ph / 2)}" text-anchor="middle" '
               f'transform="rotate(-90 12 {_f(top + ph / 2)})">ms / iteration</text>')
    return out


def _step_run(g: _StepFrame, r: ChartRunView) -> Tuple[List[str], _Legend]:
    """One run's line (with markers when it has few points) and its steady-state median."""
    name = r.name
    pts = _series(r)
    path = " ".join(f"{_f(g.X(x))},{_f(g.Y(y))}" for x, y in pts)
    out = [f'<polyline class="s-{name}" points="{path}"/>']
    if len(pts) <= 300:
        for x, y in pts:
            if g.off(y):
                continue
            out.append(f'<circle class="p-{name}" cx="{_f(g.X(x))}" cy="{_f(g.Y(y))}" r="2.5">'
                       f'<title>{escape(f"{name} iteration {x:g}: {y:g} ms")}</title></circle>')
    offs = [(x, y) for x, y in pts if g.off(y)]
    for x, y in offs[:300]:          # warm-up and capture steps beyond the steady scale: a marker at the edge
        cx, cy = g.X(x), g.Y(y)
        tip = -5.0 if y > g.y1 else 5.0
        out.append(f'<polyline class="p-off p-{name}" points="{_f(cx - 4)},{_f(cy - tip)} {_f(cx + 4)},'
                   f'{_f(cy - tip)} {_f(cx)},{_f(cy)} {_f(cx - 4)},{_f(cy - tip)}">'
                   f'<title>{escape(f"{name} iteration {x:g}: {y:g} ms (off the scale)")}</title></polyline>')
    legend: _Legend = [(f"sw-s-{name}", name)]
    if offs:
        legend.append(("sw-off", "off the scale (warm-up, capture): the value is in the tooltip"))
    med = r.median
    if med is not None:
        steady = r.steady
        xa = g.X(min(steady)) if steady and g.x0 <= min(steady) <= g.x1 else g.left
        y = g.Y(med)
        out.append(f'<line class="m-{name}" x1="{_f(xa)}" y1="{_f(y)}" x2="{_f(g.left + g.pw)}" y2="{_f(y)}">'
                   f'<title>{escape(f"{name} steady-state median {med:g} ms")}</title></line>')
        legend.append((f"sw-m-{name}", f"{name} steady-state median {med:g} ms"))
    return out, legend


def step_chart_svg(v: ReportView, width: int = 900, height: int = 300) -> Markup:
    """Report view V's step time per iteration: current and baseline series, warmup and capture
    iterations of the current run shaded, steady-state medians as horizontal lines."""
    runs = v.charts.runs          # those with a series of points, baseline first
    if not runs:
        return Markup("")
    all_pts = [p for r in runs for p in _series(r)]
    lo, hi = _steady_range(runs, all_pts)
    yt = nice_ticks(lo, hi, 5)
    y0 = min(yt[0], lo) if yt else lo
    g = _StepFrame(min(p[0] for p in all_pts), max(p[0] for p in all_pts), max(yt[-1] if yt else hi, hi, y0 + 1e-9),
                   width, height, y0=y0)
    cur = runs[-1] if runs[-1].name == "current" else None
    bands, legend = _step_bands(g, cur)
    out = [_svg_open(width, height, "Step time per iteration", "steps")] + bands + _step_axes(g, yt)
    for r in runs:
        parts, items = _step_run(g, r)
        out += parts
        legend += items
    out.append("</svg>")
    legend = list(dict.fromkeys(legend))          # the off-scale marker once, whichever run has some
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


_Series = Tuple[str, str, List[int]]        # css class, label, counts per day


def _series_counts(s: Any, off: int, nd: int) -> Optional[List[int]]:
    """A series' counts for the days drawn (missing days 0), None for a malformed series."""
    if not isinstance(s, dict):
        return None
    cs = s.get("counts")
    if not isinstance(cs, (list, tuple)):
        return None
    kept = list(cs)[off:off + nd]
    return [_count(c) for c in kept] + [0] * (nd - len(kept))


def _daily_series(raw: Any, off: int, nd: int) -> List[_Series]:
    """At most SERIES_CLASSES named series, then "other" (the rest summed) when it has any jobs."""
    named: List[_Series] = []
    other = [0] * nd
    for s in raw if isinstance(raw, (list, tuple)) else []:
        counts = _series_counts(s, off, nd)
        if counts is None:
            continue
        sig = s.get("signature")
        label = "?" if sig is None else str(sig)[:300]
        if label == "other" or len(named) >= SERIES_CLASSES:
            other = [a + b for a, b in zip(other, counts)]
        else:
            named.append((f"s{len(named)}", label, counts))
    return named + ([("other", "other", other)] if any(other) else [])


@dataclass
class _DailyFrame:
    """The daily chart's geometry: `nd` day slots across, 0..ytop jobs up."""
    nd: int
    ytop: int
    width: int
    height: int
    left: float = 56.0
    right: float = 16.0
    top: float = 12.0
    bottom: float = 46.0

    def __post_init__(self) -> None:
        self.pw = self.width - self.left - self.right
        self.ph = self.height - self.top - self.bottom
        self.slot = self.pw / self.nd
        self.bw = max(1.0, min(48.0, self.slot * 0.72))      # bar width

    def Y(self, v: float) -> float:
        return self.top + self.ph - self.ph * v / self.ytop

    def cx(self, i: int) -> float:
        return self.left + self.slot * (i + 0.5)


def _daily_bar(g: _DailyFrame, i: int, d: str, total: int, series: List[_Series]) -> str:
    """Day i's stacked bar: a segment per series with jobs that day."""
    x = g.cx(i) - g.bw / 2
    y0 = g.top + g.ph
    seg = [f'<g class="day"><title>{escape(f"{d}: {total} failing job(s)")}</title>']
    for cls, label, counts in series:
        n = counts[i]
        if n <= 0:
            continue
        h = g.ph * n / g.ytop
        y0 -= h
        seg.append(f'<rect class="c-{cls}" x="{_f(x)}" y="{_f(y0)}" width="{_f(g.bw)}" height="{_f(max(h, 0.5))}">'
                   f'<title>{escape(f"{d}: {label}: {n} job(s)")}</title></rect>')
    seg.append("</g>")
    return "".join(seg)


def _daily_axes(g: _DailyFrame, days: List[str]) -> List[str]:
    """The axes, a day label per ~80 units at most, and the axis titles."""
    left, top, pw, ph = g.left, g.top, g.pw, g.ph
    out = [f'<line class="axis" x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(top + ph)}"/>',
           f'<line class="axis" x1="{_f(left)}" y1="{_f(top + ph)}" x2="{_f(left + pw)}" y2="{_f(top + ph)}"/>']
    every = max(1, math.ceil(g.nd / max(1, int(pw // 80))))
    for i in range(0, g.nd, every):
        cx = g.cx(i)
        out.append(f'<line class="tick" x1="{_f(cx)}" y1="{_f(top + ph)}" x2="{_f(cx)}" y2="{_f(top + ph + 4)}"/>')
        out.append(f'<text class="lbl" x="{_f(cx)}" y="{_f(top + ph + 16)}" text-anchor="middle">'
                   f'{escape(days[i][:10])}</text>')
    out.append(f'<text class="lbl axis-title" x="{_f(left + pw / 2)}" y="{_f(g.height - 6)}" text-anchor="middle">'
               f'day (UTC)</text>')
    out.append(f'<text class="lbl axis-title" x="12" y="{_f(top + ph / 2)}" text-anchor="middle" '
               f'transform="rotate(-90 12 {_f(top + ph / 2)})">failing jobs</text>')
    return out


def daily_chart_svg(daily: Any, width: int = 900, height: int = 280) -> Markup:
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
    series = _daily_series(daily.get("series"), off, nd)
    totals = [sum(s[2][i] for s in series) for i in range(nd)]
    ticks, ytop = _count_ticks(max(totals) if totals else 0)
    g = _DailyFrame(nd, ytop, width, height)
    out = [_svg_open(width, height, "Failing jobs per day, by signature", "daily")]
    for v in ticks:
        y = g.Y(v)
        out.append(f'<line class="grid" x1="{_f(g.left)}" y1="{_f(y)}" x2="{_f(g.left + g.pw)}" y2="{_f(y)}"/>')
        out.append(f'<text class="lbl" x="{_f(g.left - 6)}" y="{_f(y + 4)}" text-anchor="end">{v}</text>')
    out += [_daily_bar(g, i, d, totals[i], series) for i, d in enumerate(days)]
    out += _daily_axes(g, days)
    out.append("</svg>")
    legend = [(f"sw-{cls}", label if len(label) <= 90 else label[:89] + "…") for cls, label, _ in series]
    return Markup('<figure class="chart">' + "".join(out) + _legend(legend) + "</figure>")
