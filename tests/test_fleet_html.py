"""The fleet report's HTML (triage/fleet_html.py, templates/fleet.html.j2, svg.daily_chart_svg).

Unit tests on hand-made view dicts (hostile text, odd and partial dicts, the NEW badge, the chart,
nav links) and a browser test: a fleet report made through the real CLI, opened in headless
Chromium (helpers from test_browser), with no console error, CSP violation or request, the chart
drawn, the group rows present and no horizontal overflow at 800 px.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from triage.fleet.html import JOBS_SHOWN, render_html
from triage.report.svg import SERIES_CLASSES, daily_chart_svg

from test_browser import CHROMIUM, open_report, png_size, problems, shot  # noqa: F401
import inproc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GPU_LOGS = os.path.join(HERE, "fixtures", "logs", "real", "gpu")

EVIL = "<script>alert('x')</script>"
EVIL_IMG = '"><img src="http://127.0.0.1:9/leak.png" onerror="alert(1)">'


def group(sig="cuda-oom: CUDA out of memory", count=2, new=False, **kw):
    g = {"signature": sig, "primary": sig.split(":")[0], "title": sig.split(": ", 1)[-1], "count": count,
         "first_seen": "2026-12-01T10:00:00Z", "last_seen": "2026-12-03T11:00:00Z", "seen_total": count,
         "jobs": [f"job-{i}" for i in range(count)], "jobs_omitted": 0, "first_failing_ranks": {"0": count},
         "blamed": [], "known": None, "new": new}
    g.update(kw)
    return g


def full_view():
    return {
        "jobs": 9, "outcomes": {"pitfall": 5, "unexplained-failure": 1, "healthy": 2, "error": 1}, "healthy": 2,
        "groups": [group(count=3, known={"url": "https://github.com/org/repo/issues/7", "title": "OOM ticket"},
                         blamed=["optimizer.lr"]),
                   group("nccl-error: NCCL error", count=2, new=True)],
        "unexplained": [group("unexplained-failure: RuntimeError: boom <n>", count=1,
                              title="RuntimeError: boom 42", primary=None)],
        "errors": [{"job": "broken.log", "error": "cannot read"}],
        "period": {"since": "2026-11-26T00:00:00Z", "until": "2026-12-03T12:00:00Z"},
        "daily": {"days": ["2026-12-01", "2026-12-02", "2026-12-03"],
                  "series": [{"signature": "cuda-oom: CUDA out of memory", "counts": [1, 0, 2]},
                             {"signature": "nccl-error: NCCL error", "counts": [0, 2, 0]},
                             {"signature": "unexplained-failure: RuntimeError: boom <n>", "counts": [0, 0, 1]}]},
    }


def ids_and_links(html):
    ids = re.findall(r'\bid="([^"]+)"', html)
    links = re.findall(r'href="#([^"]*)"', html)
    return ids, links


def assert_nav_resolves(html):
    ids, links = ids_and_links(html)
    assert len(ids) == len(set(ids)), "duplicate ids"
    missing = [x for x in links if x not in ids]
    assert not missing, missing


def chart_svg(html):
    m = re.search(r"<svg class=\"plot daily\".*?</svg>", html, re.S)
    return m.group(0) if m else None


# ---- content ------------------------------------------------------------------------------------


def test_full_view_sections_nav_and_self_contained():
    html = render_html(full_view())
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "<script" not in html and "<link" not in html and "<img" not in html and "src=" not in html
    for sid in ("summary", "daily", "groups", "unexplained", "errors", "healthy"):
        assert f'id="{sid}"' in html, sid
    assert_nav_resolves(html)
    assert html.count('<tr class="group') == 3
    assert "OOM ticket" in html and 'href="https://github.com/org/repo/issues/7" rel="noopener noreferrer"' in html
    assert "<code>optimizer.lr</code>" in html
    # known issue / blamed columns only in tables where some group has one
    assert html.count("<th>known issue</th>") == 1 and html.count("<th>blamed setting</th>") == 1
    assert "RuntimeError: boom 42" in html           # the unmasked title under a masked signature
    assert "broken.log" in html and "cannot read" in html
    assert "@media (prefers-color-scheme: dark)" in html and "@media print" in html


def test_empty_sections_left_out_and_nav_still_resolves():
    v = full_view()
    v.update(unexplained=[], errors=[], healthy=0, outcomes={"pitfall": 5, "unexplained-failure": 0, "healthy": 0})
    del v["daily"]
    html = render_html(v)
    for sid in ("daily", "unexplained", "errors", "healthy"):
        assert f'id="{sid}"' not in html and f'href="#{sid}"' not in html, sid
    assert 'id="groups"' in html
    assert "Unreadable" not in html                  # no error outcome: no "Unreadable" fact either
    assert_nav_resolves(html)
    # nothing at all: still a page, no nav, no sections
    html = render_html({"jobs": 0, "outcomes": {}, "healthy": 0, "groups": [], "unexplained": [], "errors": []})
    assert "No jobs in this period" in html and "<nav" not in html and "<section" not in html
    assert_nav_resolves(html)


def test_hostile_signatures_job_ids_and_text_are_escaped():
    g = group(EVIL, count=2, jobs=[EVIL, EVIL_IMG], title=EVIL_IMG, blamed=[EVIL], primary=EVIL,
              first_failing_ranks={EVIL: 1}, first_seen=EVIL, last_seen=EVIL_IMG,
              known={"url": "https://example.com/?q=\"><script>alert(1)</script>", "title": EVIL})
    v = full_view()
    v["groups"] = [g]
    v["unexplained"] = [group(EVIL_IMG, count=1)]
    v["errors"] = [{"job": EVIL, "error": EVIL_IMG}]
    v["period"] = {"since": EVIL, "until": EVIL_IMG}
    v["daily"]["series"][0]["signature"] = EVIL
    v["daily"]["days"][1] = EVIL_IMG
    html = render_html(v)
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    assert 'onerror="' not in html
    # the link keeps its URL, escaped inside the attribute
    assert 'href="https://example.com/?q=&#34;&gt;&lt;script&gt;' in html
    # the chart's SVG is still well-formed XML with the hostile labels as text
    svg = ET.fromstring(chart_svg(html))
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")] + [t.text for t in svg.iter("title")]
    assert any(t and EVIL in t for t in titles)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)",
                                 "data:text/html,<b>x</b>", "vbscript:x", "//evil.example/x", "file:///etc/passwd",
                                 "https:alert(1)", "http://\nexample.com"])
def test_only_http_urls_are_linked(url):
    v = full_view()
    v["groups"][0]["known"] = {"url": url, "title": "the ticket"}
    html = render_html(v)
    assert "the ticket" in html
    hrefs = re.findall(r'href="([^"#][^"]*)"', html)
    assert hrefs == [], hrefs


def test_http_and_https_are_linked_with_noopener():
    v = full_view()
    v["groups"][0]["known"] = {"url": "http://jira.example.com/browse/T-1", "title": None}
    v["groups"][1]["known"] = {"url": "HTTPS://jira.example.com/browse/T-2", "title": ""}
    html = render_html(v)
    links = re.findall(r"<a href=\"(http[^\"]*)\"([^>]*)>([^<]*)</a>", html, re.I)
    assert [(h, r.strip()) for h, r, _ in links] == [("http://jira.example.com/browse/T-1", 'rel="noopener noreferrer"'),
                                                   ("HTTPS://jira.example.com/browse/T-2", 'rel="noopener noreferrer"')]
    assert links[0][2] == "http://jira.example.com/browse/T-1"     # no title: the URL is the link text


def test_new_badge_only_on_new_groups():
    html = render_html(full_view())
    rows = re.findall(r'<tr class="group[^"]*".*?</tr>', html, re.S)
    assert len(rows) == 3
    assert ["NEW</span>" in r for r in rows] == [False, True, False]
    assert ['is-new' in r.split(">", 1)[0] for r in rows] == [False, True, False]
    assert "1 new" in html                                           # headline
    # "new" must be a real true: a string is not
    v = full_view()
    v["groups"][0]["new"] = "false"
    v["groups"][1]["new"] = 1
    assert "badge new\" title" not in render_html(v)


def test_jobs_list_capped_with_more_count():
    v = full_view()
    v["groups"][0].update(count=250, jobs=[f"job-{i:03d}" for i in range(200)], jobs_omitted=50)
    html = render_html(v)
    row = re.findall(r'<tr class="group[^"]*".*?</tr>', html, re.S)[0]
    assert row.count("<li><code>job-") == JOBS_SHOWN
    assert "job-019" in row and "job-020" not in row
    assert f"+{250 - JOBS_SHOWN} more" in row and "250 jobs</summary>" in row


def test_long_text_is_clipped():
    big = "x" * 100_000
    v = full_view()
    v["groups"][0].update(signature=big, title=big, jobs=[big] * 30, blamed=[big] * 30)
    v["errors"] = [{"job": big, "error": big}] * 500
    v["daily"]["series"][0]["signature"] = big
    html = render_html(v)
    assert len(html) < 200_000
    assert "…" in html and "+25 more" in html and "450 more" in html


ODD_VIEWS = [
    None, [], "a string", 42, {},
    {"groups": "x", "unexplained": 3, "errors": {"a": 1}, "outcomes": [1, 2], "period": "p", "daily": []},
    {"jobs": float("nan"), "healthy": "lots", "outcomes": {"pitfall": float("inf"), "healthy": -4, "error": "x"}},
    {"groups": [None, 1, "g", [], {}, {"count": "abc", "jobs": "notalist", "known": "str", "first_failing_ranks": [1],
                                     "blamed": {"a": 1}, "first_seen": 12345, "last_seen": None, "new": None,
                                     "seen_total": "9", "jobs_omitted": -3, "signature": {"nested": [1]}}]},
    {"groups": [{"signature": "s", "known": {"url": 5, "title": ["t"]}, "jobs": [None, 3, {"x": 1}, "ok"]}]},
    {"errors": [None, "x", {"job": None}, {"error": 5}]},
    {"daily": {"days": "x"}}, {"daily": {"days": [], "series": []}},
    {"daily": {"days": ["d1", None, 3, {"x": 1}],
               "series": [None, {"counts": None}, {"signature": None, "counts": ["a", -1, float("inf"), 2, 9, 9]},
                          {"signature": "s", "counts": "1234"}, {"signature": "t", "counts": [True, 1e300, 1]}]}},
    {"period": {"since": 5, "until": ["x"]}},
]


@pytest.mark.parametrize("v", ODD_VIEWS, ids=range(len(ODD_VIEWS)))
def test_odd_or_partial_views_render(v):
    html = render_html(v)
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert_nav_resolves(html)
    svg = chart_svg(html)
    if svg:
        ET.fromstring(svg)


def test_object_with_failing_str_does_not_raise():
    class Bad:
        def __str__(self):
            raise RuntimeError("no")
    html = render_html({"groups": [{"signature": Bad(), "jobs": [Bad()], "count": 1}],
                        "errors": [{"job": Bad(), "error": Bad()}]})
    assert "&lt;Bad&gt;" in html


# ---- the chart ----------------------------------------------------------------------------------


def test_chart_one_bar_group_per_day_with_titles_and_legend():
    v = full_view()
    html = render_html(v)
    svg = chart_svg(html)
    assert svg is not None
    assert svg.count('<g class="day">') == len(v["daily"]["days"])
    # one segment per non-zero count, each with its hover title
    rects = re.findall(r'<rect class="c-(s\d|other)"[^>]*><title>([^<]*)</title></rect>', svg)
    assert len(rects) == 4
    assert ("s0", "2026-12-03: cuda-oom: CUDA out of memory: 2 job(s)") in rects
    for d in v["daily"]["days"]:
        assert f">{d}</text>" in svg                                    # x labels
    assert ">failing jobs</text>" in svg and ">day (UTC)</text>" in svg   # axis titles
    legend = re.search(r'<figcaption class="legend">.*?</figcaption>', html, re.S).group(0)
    assert legend.count('class="key"') == 3 and "nccl-error: NCCL error" in legend
    ET.fromstring(svg)


def test_chart_left_out_without_days():
    v = full_view()
    v["daily"] = {"days": [], "series": []}
    html = render_html(v)
    assert chart_svg(html) is None and 'id="daily"' not in html
    assert daily_chart_svg(None) == "" and daily_chart_svg({"days": []}) == ""


def test_chart_folds_extra_series_into_other_and_every_class_is_styled():
    series = [{"signature": f"sig-{i}", "counts": [i + 1, 1]} for i in range(SERIES_CLASSES + 3)]
    series.append({"signature": "other", "counts": [5, 0]})
    svg = str(daily_chart_svg({"days": ["2026-12-01", "2026-12-02"], "series": series}))
    classes = set(re.findall(r'class="c-([\w-]+)"', svg))
    assert classes == {f"s{i}" for i in range(SERIES_CLASSES)} | {"other"}
    # other = the 3 series past the palette + the given "other": day 1: 9+10+11+5, day 2: 3
    assert "2026-12-01: other: 35 job(s)" in svg and "2026-12-02: other: 3 job(s)" in svg
    tpl = open(os.path.join(ROOT, "triage", "templates", "fleet.html.j2"), encoding="utf-8").read()
    for c in classes:
        assert f"svg .c-{c} {{" in tpl and f".sw-{c} {{" in tpl, c


def test_chart_many_days_is_bounded():
    days = [f"d{i}" for i in range(1000)]
    svg = str(daily_chart_svg({"days": days, "series": [{"signature": "a", "counts": [1] * 1000}]}))
    assert svg.count('<g class="day">') == 400 and "d999" in svg and ">d0<" not in svg
    assert len(re.findall(r'<text class="lbl"[^>]*text-anchor="middle">d\d+</text>', svg)) <= 12


def test_chart_y_axis_covers_the_tallest_bar():
    svg = str(daily_chart_svg({"days": ["a", "b"], "series": [{"signature": "s", "counts": [7, 3]},
                                                               {"signature": "t", "counts": [0, 2]}]}))
    ticks = [int(t) for t in re.findall(r'text-anchor="end">(\d+)</text>', svg)]
    assert ticks[0] == 0 and ticks[-1] >= 7 and all(b > a for a, b in zip(ticks, ticks[1:]))
    ys = [float(y) for y in re.findall(r'<rect class="c-s0" x="[^"]*" y="([^"]*)"', svg)]
    assert min(ys) >= 12 - 1e-6                                          # inside the plot area


# ---- through the real CLI, in Chromium ----------------------------------------------------------


def make_jobs(d):
    """Fixture logs as jobs, their mtimes (job time) spread over three days, one with a hostile name."""
    os.makedirs(d)
    names = ["oom_plain.log", "oom_after_capture.log", "illegal_memory_access.log", "nccl_rank_early_exit.log",
             "capture_item_sync.log", "mcore_local_replay.log", "gloo_rank_hang_timeout.log"]
    now = time.time()
    for i, n in enumerate(names):
        p = os.path.join(d, n)
        shutil.copy(os.path.join(GPU_LOGS, n), p)
        t = now - 86400 * (i % 3)
        os.utime(p, (t, t))
    p = os.path.join(d, "<script>alert(1)<'script>.log")
    shutil.copy(os.path.join(GPU_LOGS, "oom_plain.log"), p)
    with open(p, "a", encoding="utf-8") as f:      # other content: the store keeps one verdict per content
        f.write("\nanother job\n")
    return len(names) + 1


def triage_cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONDONTWRITEBYTECODE="1")
    r = inproc.run(args, cwd=ROOT, env=env)       # in-process: tests/inproc.py
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


@pytest.fixture
def cli_fleet(tmp_path):
    """(html path, view dict) of `triage fleet report --since all` over stored fixture jobs."""
    n = make_jobs(str(tmp_path / "jobs"))
    db = str(tmp_path / "verdicts.db")
    triage_cli("fleet", "--jobs-in", str(tmp_path / "jobs"), "--db", db, "-j", "1", "--format", "json")
    out = tmp_path / "fleet.html"
    triage_cli("fleet", "report", "--since", "all", "--db", db, "-o", str(out))
    view = json.loads(triage_cli("fleet", "report", "--since", "all", "--db", db, "--format", "json"))
    assert view["jobs"] == n
    return out, view


def test_cli_fleet_report_html_unit(cli_fleet):
    out, view = cli_fleet
    html = out.read_text(encoding="utf-8")
    assert_nav_resolves(html)
    assert "<script" not in html and "&lt;script&gt;alert(1)" in html
    assert html.count('<tr class="group') == len(view["groups"]) + len(view["unexplained"])
    assert chart_svg(html).count('<g class="day">') == len(view["daily"]["days"]) >= 3


chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                              reason=f"{CHROMIUM} not installed (.ci/run installs Debian's chromium)")


@chromium
def test_cli_fleet_report_in_chromium(cli_fleet, browser, tmp_path):
    out, view = cli_fleet
    s, url = open_report(browser, out)
    assert any(e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"] == url
               for e in browser.events), "no request seen for the page itself"
    assert problems(browser.events, url) == []
    probe = (
        "JSON.stringify((() => {"
        " const svg = document.querySelector('#daily svg.daily'); const r = svg ? svg.getBoundingClientRect() : null;"
        " return {scripts: document.scripts.length, images: document.images.length,"
        "  resources: performance.getEntriesByType('resource').length,"
        "  svgW: r ? r.width : 0, svgH: r ? r.height : 0,"
        "  days: document.querySelectorAll('#daily g.day').length,"
        "  bars: [...document.querySelectorAll('#daily g.day rect')].filter(e => e.getBBox().height > 0).length,"
        "  groupRows: document.querySelectorAll('#groups tr.group').length,"
        "  unexplainedRows: document.querySelectorAll('#unexplained tr.group').length,"
        "  badLinks: [...document.querySelectorAll('a[href^=\"#\"]')].map(a => a.getAttribute('href').slice(1))"
        "    .filter(id => !document.getElementById(id)),"
        "  hostile: document.body.textContent.includes(\"<script>alert(1)<'script>.log\"),"
        "  scrollW: document.documentElement.scrollWidth, viewW: window.innerWidth};"
        "})())")

    def info():
        return json.loads(browser.call("Runtime.evaluate", session=s, returnByValue=True, expression=probe)["result"]["value"])

    i = info()
    assert i["scripts"] == 0 and i["images"] == 0 and i["resources"] == 0
    assert i["svgW"] > 300 and i["svgH"] > 100, i
    assert i["days"] == len(view["daily"]["days"]) and i["bars"] >= i["days"]
    assert i["groupRows"] == len(view["groups"]) > 0 and i["unexplainedRows"] == len(view["unexplained"]) > 0
    assert i["badLinks"] == [] and i["hostile"]
    assert i["scrollW"] <= i["viewW"], i
    light = shot(browser, s, tmp_path / "fleet-light.png")
    assert png_size(light)[0] >= 800 and len(light) > 20000
    # 800 px wide, light and dark: still no horizontal overflow
    browser.call("Emulation.setDeviceMetricsOverride", session=s, width=800, height=900, deviceScaleFactor=1, mobile=False)
    i = info()
    assert i["viewW"] == 800 and i["scrollW"] <= 800, i
    assert i["svgW"] > 300 and i["svgH"] > 100, i
    browser.call("Emulation.setEmulatedMedia", session=s, features=[{"name": "prefers-color-scheme", "value": "dark"}])
    dark = shot(browser, s, tmp_path / "fleet-dark-800.png")
    assert png_size(dark)[0] == 800 and dark != light
    assert info()["scrollW"] <= 800
    browser.drain(0.3)
    assert problems(browser.events, url) == []

