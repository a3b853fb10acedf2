"""Structure tests of the markdown and HTML reports (the browser test is test_browser.py)."""
import os
import re
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.report import CLIP, LINE_CLIP, MD_LIMIT, load_view, render_html, render_markdown

HERE = os.path.dirname(os.path.abspath(__file__))
XSS = '<script>alert(1)</script>'
ATTR = '"><img src=x onerror=alert(2)>'
TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3"
TE_RNG = ("[rank0]: AssertionError: Transformer engine's RNG tracker is required for cudagraphs, "
          "it can be enabled with use_te_rng_tracker=True'.\n")


def ev(text, line=10, rank=3, before=(), after=()):
    return {"source": "logs/job.log", "line": line, "rank": rank, "text": text,
            "before": list(before), "after": list(after)}


def finding(pitfall, role, text, **kw):
    f = {"pitfall": pitfall, "title": f"Title of {pitfall}", "severity": "error", "role": role, "rank": 3,
         "ranks": "0-4,6", "source": "logs/job.log", "line": 10, "count": 6,
         "evidence": [ev(text, before=["ctx before 1", "ctx before 2"], after=["ctx after 1"])],
         "fingerprint": "abc123def456", "rule": {"pattern": f"{pitfall}.yaml", "regex": "illegal (memory) access"},
         "explanation": "Why it happens.", "fix": "Set cuda_graph_impl=none.",
         "references": [{"source": "megatron-core cuda_graphs.py", "version": "0.15 .. HEAD"}],
         "implicates": ["cuda_graph_impl"]}
    f.update(kw)
    return f


def rich():
    """A report dict with every section filled and hostile log text everywhere it can appear."""
    return {
        "schema": 1, "primary": "capture-sync-forbidden",
        "summary": "rank 3 failed first with capture-sync-forbidden " + XSS,
        "first_failing_rank": 3, "launcher_root_rank": 5,
        "findings": [
            finding("capture-sync-forbidden", "root-cause", "RuntimeError: operation not permitted when stream is capturing " + XSS),
            finding("nccl-watchdog", "cascade", "Watchdog caught collective operation timeout " + ATTR, rank=None, ranks=""),
            finding("te-rng-tracker-missing", "info", "te_rng_tracker is not enabled", count=1),
        ],
        "suspects": [
            {"key": "cuda_graph_scope", "old": [], "new": ["attn", "moe_router"], "score": 0.9,
             "because": ["implicated by capture-sync-forbidden"], "unrelated": False, "evidence": []},
            {"key": "lr", "old": 0.0001, "new": 0.0002, "score": 0.0, "because": [], "unrelated": True, "evidence": []},
        ],
        "unmatched": [{"source": "logs/job.log", "line": 40, "rank": None, "ranks": [], "count": 2,
                       "lines": ["Traceback (most recent call last):", "  " + ATTR, "ValueError: x" * 200],
                       "fingerprint": "56fb26ec9c73"}],
        "stats": {"lines": 1234, "sources": ["logs/job.log"], "attempts": 2},
        "attempts": [{"attempt": 1, "primary": "cuda-oom", "first_failing_rank": 0, "summary": "oom"},
                     {"attempt": 2, "primary": "capture-sync-forbidden", "first_failing_rank": 3, "summary": "x"}],
        "timeline": [{"rank": r % 8 if r % 9 else None, "t": 100.0 + r, "seq": r, "pitfall": "nccl-watchdog",
                      "role": "root-cause" if r == 3 else "cascade", "source": "logs/job.log", "line": r}
                     for r in range(40)],
        "versions": {"torch_version": "2.6.0a0+ecf3bae40a", "te_version": "2.1.0", "mcore_version": "0.15.3",
                     "nccl_version": "2.25.1", "cuda_version": "12.8", "driver_version": "570.86.15"},
        "config": {"cuda_graph_impl": "transformer_engine"},
        "config_violations": [{"pitfall": "moe-scope-conflict", "keys": ["cuda_graph_scope"],
                               "message": "moe and moe_router together", "fix": "pick one"}],
        "diff": [{"key": "cuda_graph_scope", "old": [], "new": ["attn", "moe_router"]},
                 {"key": "lr", "old": 0.0001, "new": 0.0002},
                 {"key": "seq_length", "old": 4096, "new": 8192}],
        "step_times": {
            "current": {"iterations": 8, "series": [[i, 1000.0 + (300 if i == 4 else 0) + (500 if i == 1 else 0)]
                                                    for i in range(1, 9)],
                        "steady_iterations": [5, 6, 7, 8], "capture_iterations": [4], "warmup_steps": 3,
                        "steady_median_ms": 1000.0, "capture_seconds": 6.9, "graph_memory": "allocated 5 GB"},
            "baseline": {"iterations": 8, "series": [[i, 990.0] for i in range(1, 9)], "steady_iterations": [4, 5, 6, 7, 8],
                         "capture_iterations": [], "warmup_steps": 3, "steady_median_ms": 990.0},
            "run_vs_run": {"baseline_median_ms": 990.0, "current_median_ms": 1000.0, "delta_pct": 1.01,
                           "ci95_pct": [0.5, 1.5], "verdict": "no significant change"},
        },
        "notes": ["a note " + XSS],
    }


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.ids = [], [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))
        if dict(attrs).get("id"):
            self.ids.add(dict(attrs)["id"])


def parse(html):
    p = Tags()
    p.feed(html)
    return p


def test_html_sections_in_order_and_verdict_first():
    h = render_html(load_view(rich()))
    p = parse(h)
    order = ["verdict", "fix", "evidence", "findings", "timeline", "config", "steps", "unmatched", "versions", "patterns"]
    assert set(order) <= p.ids
    pos = [h.index(f'id="{i}"') for i in order]
    assert pos == sorted(pos)
    verdict = h[h.index('id="verdict"'):h.index('id="fix"')]
    for s in ("capture-sync-forbidden", "First failing rank", ">3", "cuda_graph_scope", "abc123def456"):
        assert s in verdict
    blamed = re.sub(r"<[^>]+>", "", verdict.split("Blamed setting")[1].split("First seen")[0])
    assert "cuda_graph_scope" in blamed and "lr" not in blamed


def test_html_is_self_contained_no_scripts_no_external_refs():
    h = render_html(load_view(rich()))
    p = parse(h)
    assert "script" not in p.tags and "img" not in p.tags and "link" not in p.tags and "iframe" not in p.tags
    for tag, attrs in p.attrs:
        for k, v in attrs.items():
            assert not k.startswith("on"), (tag, k)
            if k in ("src", "href", "xlink:href", "action", "srcset", "poster", "data"):
                assert v.startswith("#"), (tag, k, v)
    assert "@import" not in h and "url(" not in h and "@font-face" not in h
    assert "Content-Security-Policy" in h and "default-src 'none'" in h
    assert "prefers-color-scheme: dark" in h and "@media print" in h


def test_hostile_log_text_is_escaped_everywhere():
    h = render_html(load_view(rich()))
    assert XSS not in h and "<img" not in h
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in h
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in h or "&quot;&gt;&lt;img" in h
    # no tag other than the report's own
    assert set(parse(h).tags) <= {"html", "head", "meta", "title", "style", "body", "main", "header", "p", "h1", "h2",
                                   "h3", "code", "span", "small", "dl", "div", "dt", "dd", "nav", "a", "section",
                                   "figure", "figcaption", "pre", "article", "details", "summary", "table", "thead",
                                   "tbody", "tr", "th", "td", "ul", "li", "strong", "br", "footer", "svg", "line",
                                   "text", "circle", "rect", "polyline"}


def test_script_close_tag_in_style_or_title_cannot_break_out():
    d = rich()
    d["findings"][0]["title"] = "</title></style></script><script>alert(3)</script>"
    h = render_html(load_view(d))
    assert "<script>alert(3)" not in h and h.count("</style>") == 1 and h.count("</title>") == h.count("<title")


def test_long_lines_are_clipped():
    """A line longer than the log reader ever keeps (MAX_LINE and its clip mark) is clipped there in
    HTML; a comment (markdown) clips log lines at CLIP characters."""
    d = rich()
    d["findings"][0]["evidence"][0]["text"] = "A" * 100000
    d["unmatched"][0]["lines"] = ["B" * 100000] * 500
    h = render_html(load_view(d))
    assert "A" * (LINE_CLIP + 1) not in h and "B" * (LINE_CLIP + 1) not in h
    assert f"+{100000 - LINE_CLIP} chars" in h
    assert "more line(s)" in h and len(h) < 400000
    md = render_markdown(load_view(d))
    assert "A" * (CLIP + 1) not in md and "B" * (CLIP + 1) not in md and f"+{100000 - CLIP} chars" in md
    assert len(md) <= MD_LIMIT


def test_cascades_are_collapsed_and_charts_are_inline_svg():
    h = render_html(load_view(rich()))
    det = h[h.index('<details class="cascades">'):]
    det = det[:det.index("</details>")]
    assert "nccl-watchdog" in det and "open" not in det.split(">")[0]
    tl = h[h.index('id="timeline"'):h.index('id="config"')]
    assert "<svg" in tl and tl.count("<circle") >= 8 and "rank ?" in tl and "c-root-cause" in tl
    st = h[h.index('id="steps"'):h.index('id="unmatched"')]
    assert "<svg" in st and "band-warmup" in st and "band-capture" in st and "s-baseline" in st and "m-current" in st


def test_config_diff_highlights_suspects_and_greys_unrelated():
    h = render_html(load_view(rich()))
    cfg = h[h.index('id="config"'):h.index('id="steps"')]
    assert re.search(r'<tr class="suspect"><td><code>cuda_graph_scope', cfg)
    assert re.search(r'<tr class="unrelated"><td><code>lr', cfg)
    assert re.search(r'<tr class=""><td><code>seq_length', cfg)
    assert "moe-scope-conflict" in cfg


def test_versions_and_patterns_fired():
    h = render_html(load_view(rich()))
    vs = h[h.index('id="versions"'):h.index('id="patterns"')]
    for label, val in (("PyTorch", "2.6.0a0+ecf3bae40a"), ("Transformer Engine", "2.1.0"), ("megatron-core", "0.15.3"),
                       ("NCCL", "2.25.1"), ("CUDA", "12.8"), ("NVIDIA driver", "570.86.15")):
        assert label in vs and val in vs
    pt = h[h.index('id="patterns"'):]
    assert "capture-sync-forbidden.yaml" in pt and "megatron-core cuda_graphs.py" in pt and "abc123def456" in pt


@pytest.mark.parametrize("d", [
    {}, {"primary": None, "findings": [], "suspects": [], "unmatched": [], "stats": {}},
    {"primary": "x", "findings": [{"pitfall": "x"}], "timeline": [{"rank": None}], "step_times": {"current": {}}},
    {"primary": "x", "findings": [{"pitfall": "x", "evidence": [{"text": None, "line": "7"}], "ranks": [1, 2, 3],
                                   "rule": None, "references": "nope", "count": None}],
     "timeline": [{"rank": "3", "t": "nan", "seq": None, "role": "weird"}] * 3,
     "step_times": {"current": {"series": [[1, "x"], [2, None], "bad", [3, float("inf")], [4, 5.0]],
                                "capture_iterations": "4", "warmup_steps": None}},
     "suspects": [{"key": None, "score": "high"}], "diff": [{}], "versions": {"torch_version": None},
     "attempts": [{}], "notes": [None], "stats": {"sources": None}},
])
def test_odd_and_partial_dicts_render(d):
    assert "<html" in render_html(load_view(d))
    assert render_markdown(load_view(d)).startswith("### triage")


def test_thousands_of_ranks_stay_small():
    d = rich()
    d["timeline"] = [{"rank": r, "t": float(r % 97), "seq": r, "pitfall": "nccl-watchdog", "role": "cascade",
                      "source": "x.log", "line": r} for r in range(4000)]
    h = render_html(load_view(d))
    tl = h[h.index('id="timeline"'):h.index('id="config"')]
    assert 0 < tl.count("<circle") <= 2000 and len(h) < 600000


def test_markdown_verdict_details_and_escaping():
    md = render_markdown(load_view(rich()))
    head = md.split("<details>")[0]
    assert md.startswith("### triage: `capture-sync-forbidden`")
    assert "| First failing rank | 3 (launcher: rank 5) |" in head
    assert "`cuda_graph_scope`" in head and "abc123def456" in head and "**Fix:**" in head
    assert "<details><summary>" in md and "</details>" in md
    outside = re.sub(r"(`{3,})text\n.*?\n\1", "", md, flags=re.S)
    assert "<script" not in outside and "<img" not in outside
    assert md.count("<details>") == md.count("</details>")


def test_markdown_under_tracker_limit_with_note():
    d = rich()
    d["unmatched"] = [dict(d["unmatched"][0], lines=["E" * 300] * 40, line=i) for i in range(200)]
    d["findings"] += [finding(f"p{i}", "cascade", "x" * 300) for i in range(100)]
    md = render_markdown(load_view(d))
    assert len(md) <= MD_LIMIT
    assert "left out to stay under the 32767-character comment limit" in md
    assert md.startswith("### triage") and "**Fix:**" in md


def test_markdown_code_fence_survives_backticks():
    d = rich()
    d["findings"][0]["evidence"][0]["text"] = "```\n<b>break</b>\n```"
    md = render_markdown(load_view(d))
    assert "````text" in md


# ---- through the CLI


def run(args, input=None):
    return CliRunner().invoke(cli, args, input=input)


def test_cli_html_and_markdown_outputs(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("[rank2]: starting\n" + TE_RNG.replace("rank0", "rank2") + f"[rank2]: {XSS}\n")
    out = tmp_path / "report.html"
    r = run(["analyze", str(log), "-o", str(out)])
    assert r.exit_code == 1, r.output
    h = out.read_text()
    assert h.startswith("<!doctype html>") and "te-rng-tracker-missing" in h and XSS not in h
    assert 'id="verdict"' in h and "te-rng-tracker-missing.yaml" in h
    r = run(["analyze", str(log), "--format", "markdown"])
    assert r.output.startswith("### triage: `te-rng-tracker-missing`")
    r = run(["analyze", str(log), "-o", str(tmp_path / "c.md")])
    assert (tmp_path / "c.md").read_text().startswith("### triage")


@pytest.mark.parametrize("fmt", ["html", "markdown", "json", "text"])
def test_cli_redacts_by_default_and_not_with_no_redact(fmt, tmp_path):
    log = tmp_path / "job.log"
    log.write_text(TE_RNG + f"[rank0]: export HF_TOKEN={TOKEN}\n[rank0]: Traceback (most recent call last):\n"
                   f"[rank0]: RuntimeError: login failed with token {TOKEN}\n")
    r = run(["analyze", str(log), "--format", fmt])
    assert TOKEN not in r.output
    r = run(["analyze", str(log), "--format", fmt, "--no-redact"])
    assert TOKEN in r.output


def test_cli_no_redact_shows_secret_in_html(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(TE_RNG + f"[rank0]: Traceback (most recent call last):\n[rank0]: RuntimeError: bad key {TOKEN}\n")
    assert TOKEN not in run(["analyze", str(log), "--format", "html"]).output
    assert TOKEN in run(["analyze", str(log), "--format", "html", "--no-redact"]).output
    assert TOKEN in run(["analyze", str(log), "--format", "markdown", "--no-redact"]).output


def test_cli_report_with_baseline_has_step_chart(tmp_path):
    st = os.path.join(HERE, "fixtures", "logs", "synthetic", "steptime")
    cur, base = os.path.join(st, "qwen3_30b_te_graphs.log"), os.path.join(st, "qwen3_30b_eager.log")
    if not (os.path.exists(cur) and os.path.exists(base)):
        pytest.skip("step-time fixtures not present")
    out = tmp_path / "r.html"
    run(["analyze", cur, "--baseline-log", base, "-o", str(out)])
    h = out.read_text()
    st_sec = h[h.index('id="steps"'):]
    st_sec = st_sec[:st_sec.index("</section>")]
    assert "<svg" in st_sec and "band-capture" in st_sec and "s-baseline" in st_sec


def test_unexplained_failure_heading_is_not_clean():
    import os as _os
    from click.testing import CliRunner as _R

    from triage.cli import cli as _cli
    log = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "fixtures", "logs", "synthetic",
                        "multirank", "unexplained_crash_then_timeouts.log")
    md = _R().invoke(_cli, ["analyze", log, "--format", "markdown"]).output
    assert md.startswith("### triage: a failure no known pitfall explains")
    html = _R().invoke(_cli, ["analyze", log, "--format", "html"]).output
    assert "A failure no known pitfall explains" in html and 'class="verdict clean"' not in html
