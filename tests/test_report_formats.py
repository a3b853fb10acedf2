"""Report formats and report nits (issue 15): JUnit XML (one testcase per pitfall checked), Jira wiki
markup, check-config as markdown, and the HTML/markdown report fixes (evidence wrapped not clipped,
nav links resolve, no empty sections, versions as the log printed them, no request for flags given)."""
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.patterns import load_all
from triage.pipeline import Options, triage
from triage.report import (CLIP, FORMATS, JUNIT_UNEXPLAINED, MD_LIMIT, SUFFIX_FORMAT, render, render_check_config_markdown,
                           load_view, render_html, render_jira, render_junit, render_markdown, report_dict)

from test_browser import CHROMIUM, open_report  # noqa: F401
from test_report import ATTR, TOKEN, XSS, finding, rich

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
CONFIGS = os.path.join(HERE, "fixtures", "configs")
PATS = load_all()
IDS = [p.id for p in PATS]

REAL = [os.path.join(LOGS, "real", p) for p in (
    "torchrun-cpu/two_ranks_mcore_assert.log", "cpu-outcome/uncaught_torch_error.log",
    "cpu-outcome/caught_exception_continues.log", "cpu-outcome/torchrun_rank_segfault.log",
    "gpu/mcore_rng_tracker.log", "gpu/illegal_memory_access.log", "gpu/nccl_rank_early_exit.log",
    "gpu/nccl_rank_hang_timeout.log", "gpu/oom_during_capture.log", "gpu/capture_item_sync.log",
    "gpu-multirank/nccl_hang_flight_recorder.log", "gpu-multirank/nccl_rank_error_vs_timeouts.log")]
SYNTH = [os.path.join(LOGS, "synthetic", p) for p in (
    "healthy_megatron_te_graphs.log", "multirank_ima_cascade.log", "unrelated_dataset_error.log",
    "multirank/unexplained_crash_then_timeouts.log")]
SAMPLE = os.path.join(HERE, "..", "examples", "sample_job.log")
HOSTILE = "ctl\x01\x02\x07\x0b\x0c\x1b[31m\x7f\x85\x9f\ud800\ufffe end ]]> <script>alert(1)</script> & \"q\" 'a' ]]>"


def analysed(path, **kw):
    a = triage([path], Options(pats=tuple(PATS), **kw))
    return a


def run(args, input=None):
    return CliRunner().invoke(cli, args, input=input)


def junit_cases(xml):
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    return root, suites[0], suites[0].findall("testcase")


def test_formats_and_suffixes():
    assert "junit" in FORMATS and "jira" in FORMATS
    assert SUFFIX_FORMAT[".xml"] == "junit" and SUFFIX_FORMAT[".jira"] == "jira" and SUFFIX_FORMAT[".wiki"] == "jira"


# ---- junit


@pytest.mark.parametrize("path", REAL + SYNTH + [SAMPLE], ids=lambda p: os.path.basename(p))
def test_junit_one_testcase_per_pitfall_failures_exactly_the_found_ones(path):
    a = analysed(path)
    xml = render(a, "junit", pitfall_ids=IDS)
    root, suite, cases = junit_cases(xml)
    names = [c.get("name") for c in cases]
    assert names == IDS + [JUNIT_UNEXPLAINED]            # every shipped pitfall once, in catalog order
    assert all(c.get("classname") for c in cases)
    # only the verdict's root cause fails (issue 21): the counts agree with the verdict
    failing = {f.pitfall for f in a.findings if f.role == "root-cause"}
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == failing
    errored = {c.get("name") for c in cases if c.find("error") is not None}
    assert errored == ({JUNIT_UNEXPLAINED} if a.outcome == "unexplained-failure" else set())
    assert len(failed) + len(errored) == (1 if a.outcome != "healthy" else 0)
    for el in (root, suite):
        assert el.get("tests") == str(len(IDS) + 1)
        assert el.get("failures") == str(len(failing)) and el.get("errors") == str(len(errored))
        assert el.get("skipped") == "0" and el.get("time") is not None
    by_name = {c.get("name"): c for c in cases}
    for f in a.findings:
        if f.role not in ("root-cause", "cascade"):
            continue
        tc = by_name[f.pitfall]
        el = tc.find("failure") if tc.find("failure") is not None else tc.find("system-out")
        assert el is not None and el.text
        if f.role == "root-cause":
            assert el.tag == "failure" and el.get("type") == "root-cause" and el.get("message")
        elif el.tag == "system-out":
            assert "cascade of the root cause" in el.text
        # the evidence lines, each with its source:line
        for e in f.evidence[:8]:
            assert f"{e.source}:{e.line}" in el.text
    prim = a.primary
    if prim is not None and prim.role == "root-cause":
        fail = by_name[prim.pitfall].find("failure")
        assert fail.get("type") == "root-cause"
        assert prim.title in fail.get("message")
        assert (f"rank {prim.rank}" if prim.rank is not None else "rank") in fail.get("message")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["outcome"] == a.outcome


def test_junit_unexplained_failure_is_an_error_with_the_error_block():
    a = analysed(os.path.join(LOGS, "synthetic", "multirank", "unexplained_crash_then_timeouts.log"))
    assert a.outcome == "unexplained-failure"
    _, suite, cases = junit_cases(render(a, "junit", pitfall_ids=IDS))
    err = [c for c in cases if c.get("name") == JUNIT_UNEXPLAINED][0].find("error")
    ff = a.verdict.first_failure
    assert err is not None and f"rank {ff.rank}" in err.get("message") and err.get("type") == ff.kind
    assert f"{ff.source}:{ff.line}" in err.text and ff.lines[-1][:100] in err.text
    assert suite.get("errors") == "1"


def test_junit_ids_default_to_shipped_catalog_and_found_pitfalls_are_added():
    d = rich()
    _, _, cases = junit_cases(render_junit(load_view(d), ["my-user-pattern"]))
    names = [c.get("name") for c in cases]
    assert names == ["my-user-pattern", "capture-sync-forbidden", "nccl-watchdog", "te-rng-tracker-missing",
                     JUNIT_UNEXPLAINED]
    by = {c.get("name"): c for c in cases}
    assert by["my-user-pattern"].find("failure") is None
    assert by["capture-sync-forbidden"].find("failure").get("type") == "root-cause"
    assert by["nccl-watchdog"].find("failure") is None and "cascade" in by["nccl-watchdog"].find("system-out").text
    # an informational finding passes, its evidence in system-out
    info = by["te-rng-tracker-missing"]
    assert info.find("failure") is None and "te_rng_tracker is not enabled" in info.find("system-out").text
    _, _, cases = junit_cases(render_junit(load_view(d)))
    assert [c.get("name") for c in cases][:len(IDS)] == IDS


def test_junit_hostile_text_stays_valid_xml():
    d = rich()
    d["summary"] = HOSTILE
    d["findings"][0]["title"] = HOSTILE
    d["findings"][0]["evidence"][0]["text"] = HOSTILE
    d["findings"][0]["source"] = HOSTILE
    d["findings"][1]["fix"] = HOSTILE
    d["primary"] = None
    d["outcome"] = "unexplained-failure"
    d["first_failure"] = {"rank": 3, "source": "x.log", "line": 7, "message": HOSTILE, "kind": HOSTILE,
                          "lines": [HOSTILE, "]]>", "<![CDATA[x]]>"]}
    xml = render_junit(load_view(d), [HOSTILE, "ok-id"])
    root, suite, cases = junit_cases(xml)           # parses
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]", xml)
    assert "<script>" not in xml and "&lt;script&gt;" in xml and "<![CDATA[" not in xml
    by = {c.get("name"): c for c in cases}
    fail = by["capture-sync-forbidden"].find("failure")
    assert "]]>" in fail.get("message") and "<script>alert(1)</script>" in fail.get("message")
    assert "]]>" in fail.text and '& "q"' in fail.text
    err = by[JUNIT_UNEXPLAINED].find("error")
    assert "<![CDATA[x]]>" in err.text and "<script>" in err.get("message")
    assert any(n.startswith("ctl") and n.endswith("]]>") for n in by)     # the hostile id, cleaned


def test_junit_of_hostile_log_through_the_cli(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(("[rank0]: AssertionError: Transformer engine's RNG tracker is required for cudagraphs, "
                     "it can be enabled with use_te_rng_tracker=True'. " + HOSTILE.replace("\ud800", "")
                     + "\n").encode("utf-8") + b"[rank0]: \xff\xfe bad bytes ]]> \x00\x01\n")
    r = run(["analyze", str(log), "--format", "junit"])
    assert r.exit_code == 1, r.output
    _, suite, cases = junit_cases(r.output)
    fail = [c for c in cases if c.get("name") == "te-rng-tracker-missing"][0].find("failure")
    assert "]]>" in fail.text and "<script>alert(1)</script>" in fail.text
    out = tmp_path / "report.xml"
    r = run(["analyze", str(log), "-o", str(out)])
    assert ET.fromstring(out.read_text(encoding="utf-8")).tag == "testsuites"


@pytest.mark.parametrize("fmt", ["junit", "jira"])
def test_new_formats_redact_secrets(fmt, tmp_path):
    log = tmp_path / "job.log"
    log.write_text("[rank0]: AssertionError: Transformer engine's RNG tracker is required for cudagraphs, "
                   f"it can be enabled with use_te_rng_tracker=True'. token {TOKEN}\n"
                   f"[rank1]: Traceback (most recent call last):\n[rank1]: RuntimeError: login failed {TOKEN}\n")
    a = analysed(str(log))
    assert TOKEN not in render(a, fmt, pitfall_ids=IDS)
    assert TOKEN in render(a, fmt, redact_secrets=False, pitfall_ids=IDS)
    assert TOKEN not in run(["analyze", str(log), "--format", fmt]).output


# ---- jira


def _outside_noformat(text):
    parts = text.split("{noformat}")
    assert len(parts) % 2 == 1, "unbalanced {noformat}"
    return "".join(parts[0::2])


def test_jira_structure_of_a_real_report():
    a = analysed(SAMPLE)
    j = render(a, "jira")
    md = render(a, "markdown")
    assert j.startswith("h3. triage: {{moe\\-scope\\-conflict}} — moe and moe\\_router graph scopes set together")
    assert "\n*Verdict:* rank 1 failed first" in j
    assert "||Pitfall|{{moe\\-scope\\-conflict}} (error)|" in j and "||Fingerprint|{{c07e65ab4756}}|" in j
    assert "||pattern file||id||fingerprints||references||" in j
    assert "{noformat}\n# examples/sample_job.log:22 (rank 1)" in j or "{noformat}\n# " in j
    assert ">     22 | AssertionError: cuda_graph_scope must not contain both moe and moe_router." in j
    # no markdown or HTML left over
    out = _outside_noformat(j)
    assert "<details>" not in out and "```" not in out and "**" not in out and "<sub>" not in out
    # the same content as the markdown comment: every fingerprint and pattern file
    for s in re.findall(r"`([0-9a-f]{12})`", md):
        assert s in j
    assert len(j) <= MD_LIMIT


def test_jira_same_sections_as_markdown():
    d = rich()
    d["known"] = {"key": "k", "url": "https://jira.example.com/browse/ML-1?x=a|b]", "title": "ML-1 [graphs] *x*",
                  "seen": 3, "since": "2026-01-01"}
    md, j = render_markdown(load_view(d)), render_jira(load_view(d))
    for md_s, j_s in (("**Fix:**", "*Fix:*"), ("**Why:**", "*Why:*"), ("Config diff (3 change(s))", "h4. Config diff (3 change(s))"),
                      ("Step times", "h4. Step times"), ("Patterns that fired", "h4. Patterns that fired"),
                      ("Unmatched error block at", "h4. Unmatched error block at"), ("**Versions:**", "*Versions:*"),
                      ("**Config checks:**", "*Config checks:*"), ("cascade finding(s)", "cascade finding(s)"),
                      ("- note:", "* note:")):
        assert md_s in md and j_s in j, (md_s, j_s)
    assert "||setting||good||failed||blame||" in j
    row = [x for x in j.splitlines() if x.startswith("|{{cuda\\_graph\\_scope}}")][0]
    assert row.count("|") == 5 and "*suspect*" in row
    # a [title|url] link, the url's markup characters percent-encoded, the title's escaped
    assert "[ML\\-1 \\[graphs\\] \\*x\\*|https://jira.example.com/browse/ML-1?x=a%7Cb%5D]" in j
    d["known"]["url"] = "javascript:alert(1)"
    assert "[" + "javascript" not in render_jira(load_view(d))


def test_jira_escapes_markup_in_log_text():
    evil = "a|b *bold* _it_ {code}x{code} [link|http://e.invalid] !http://e.invalid/i.png! \\\\ -s- +u+ ^s^ ~t~ ??c?? &#124; h1. x"
    d = rich()
    d["summary"] = evil
    d["findings"][0]["title"] = evil
    d["findings"][0]["evidence"][0]["text"] = evil + " {noformat} out {NOFORMAT}"
    d["unmatched"][0]["lines"] = [evil, "{noformat}", "{code:java}"]
    d["config_violations"][0]["message"] = evil
    d["diff"][0]["key"] = evil
    j = render_jira(load_view(d))
    esc = ("a&#124;b \\*bold\\* \\_it\\_ \\{code\\}x\\{code\\} \\[link&#124;http://e.invalid\\] "
           "\\!http://e.invalid/i.png\\! &#92;&#92; \\-s\\- \\+u\\+ \\^s\\^ \\~t\\~ \\?\\?c\\?\\? &amp;\\#124; h1. x")
    assert "*Verdict:* " + esc in j and esc in j.splitlines()[0]
    out = _outside_noformat(j)
    assert evil not in out and not re.search(r"(?<!\\)(\{code|\[link|!http|\*bold|_it_)", out)
    assert "\\\\" not in out.replace("\\\\-", "").replace("\\\\_", "")   # no `\\` line break from log text
    # inside {noformat} the log text is literal, but it cannot close the block
    assert evil in j and "{ noformat} out { NOFORMAT}" in j and "\n{code:java}\n" in j
    assert j.count("{noformat}") % 2 == 0
    # table rows keep their cell count
    for line in j.splitlines():
        if line.startswith("|{{") and "&#124;" in line:
            assert line.count("|") == 5


def test_jira_under_the_comment_limit():
    d = rich()
    d["unmatched"] = [dict(d["unmatched"][0], lines=["E" * 300] * 40, line=i) for i in range(200)]
    d["findings"] += [finding(f"p{i}", "cascade", "x" * 300) for i in range(100)]
    j = render_jira(load_view(d))
    assert len(j) <= MD_LIMIT and "left out to stay under the 32767\\-character comment limit" in j
    assert j.startswith("h3. triage") and "*Fix:*" in j


@pytest.mark.parametrize("d", [{}, {"primary": "x", "findings": [{"pitfall": "x", "evidence": [{"text": None}]}]}])
def test_odd_dicts_render_in_new_formats(d):
    assert render_jira(load_view(d)).startswith("h3. triage")
    assert junit_cases(render_junit(load_view(d), ["x", "y"]))[2]


def test_cli_jira_and_junit(tmp_path):
    r = run(["analyze", SAMPLE, "--format", "jira"])
    assert r.exit_code == 1 and r.output.startswith("h3. triage: {{moe\\-scope\\-conflict}}")
    r = run(["analyze", SAMPLE, "-o", str(tmp_path / "c.wiki")])
    assert (tmp_path / "c.wiki").read_text().startswith("h3. triage")
    r = run(["analyze", SAMPLE, "--format", "junit"])
    _, suite, cases = junit_cases(r.output)
    assert r.exit_code == 1 and suite.get("failures") == "1" and len(cases) == len(IDS) + 1


# ---- check-config as markdown


def _check(files, over=()):
    from triage.config import build_config, check
    cfg = build_config(files, list(over), [])
    return check(cfg, PATS), cfg


def test_check_config_markdown_violations():
    vs, cfg = _check([os.path.join(CONFIGS, "bad_run_config.yaml")])
    md = render_check_config_markdown(vs, cfg)
    assert md.startswith(f"### triage check-config: {len(vs)} CUDA-graph pitfalls in this config")
    for v in vs:
        assert f"- **`{v.pitfall}`**:" in md
        for k in v.keys:
            assert f"`{k}` = " in md
    assert '`cuda_graph_scope` = `["attn", "moe", "moe_router", "moe_preprocess"]`' in md
    assert "**Fix:**" in md and "<details><summary>Config checked (" in md and md.count("<details>") == md.count("</details>")
    # the same through dicts (check-config's JSON)
    assert render_check_config_markdown([vars(v) for v in vs], cfg) == md


def test_check_config_markdown_clean_and_redacted_and_bounded():
    vs, cfg = _check([os.path.join(CONFIGS, "good_run_config.yaml")])
    md = render_check_config_markdown(vs, cfg)
    assert vs == [] and md.startswith("### triage check-config: no CUDA-graph pitfall in this config")
    cfg = dict(cfg, hf_token=TOKEN, note=XSS + " | `x` " + ATTR)
    md = render_check_config_markdown([{"pitfall": "p", "keys": ["hf_token", "note"], "message": XSS, "fix": "f"}], cfg)
    outside_code = re.sub(r"(`+).*?\1", "", md)
    assert TOKEN not in md and "<script" not in outside_code and "<img" not in outside_code
    assert "`<script>alert(1)</script>" in md and "&lt;script&gt;" in md
    assert TOKEN in render_check_config_markdown([], cfg, redact_secrets=False)
    big = {f"k{i}": "v" * 200 for i in range(5000)}
    md = render_check_config_markdown([], big)
    assert len(md) <= MD_LIMIT and "more setting(s)" in md


# ---- report nits


REPORT_LOGS = [SAMPLE] + REAL[:6] + SYNTH + [os.path.join(LOGS, "real", "gpu-multirank", "nccl_hang_flight_recorder.log")]


def html_of(path, *extra):
    r = run(["analyze", path, "--format", "html", *extra])
    assert r.exit_code in (0, 1, 3), r.output
    return r.output


@pytest.mark.parametrize("path", REPORT_LOGS, ids=lambda p: os.path.basename(p))
def test_html_nav_links_all_resolve_and_no_empty_sections(path):
    h = html_of(path)
    ids = set(re.findall(r'\bid="([^"]+)"', h))
    hrefs = re.findall(r'href="#([^"]*)"', h)
    assert hrefs, "the nav lists the sections"
    assert [x for x in hrefs if x not in ids] == []
    # every section is in the nav, and every section has something in it besides its heading
    sections = re.findall(r'<section id="([^"]+)">(.*?)</section>', h, flags=re.S)
    assert sorted(s for s, _ in sections) == sorted(set(hrefs))
    for sid, body in sections:
        text = re.sub(r"<h2>.*?</h2>", "", body, flags=re.S)
        assert re.sub(r"<[^>]+>|\s", "", text), f"section {sid} is empty"
    for placeholder in ("No pattern matched", "No matched events", "No step times found", "None: every error",
                        "No pattern fired", ">not found<" if "versions" not in h else "\x00"):
        assert placeholder not in h, placeholder


def test_html_sections_follow_the_report_dict():
    a = analysed(os.path.join(LOGS, "synthetic", "healthy_megatron_te_graphs.log"))
    d = report_dict(a)
    h = render_html(load_view(d))
    ids = set(re.findall(r'<section id="([^"]+)"', h))
    assert d["unmatched"] == [] and "unmatched" not in ids
    assert not any(f["role"] != "info" for f in d["findings"]) and "fix" not in ids and "evidence" not in ids
    assert ("steps" in ids) == bool(d.get("step_times")) and ("versions" in ids) == bool(d.get("versions"))
    h = render_html(load_view({}))
    assert "<section" not in h and "<nav" not in h


def test_html_evidence_lines_are_wrapped_not_clipped(tmp_path):
    long = "RuntimeError: operation not permitted when stream is capturing " + " ".join(
        f"tensor{i}=[{i}.0, {i}.5]" for i in range(150))
    assert 2000 < len(long) < 4000
    log = tmp_path / "job.log"
    log.write_text(f"[rank0]: Traceback (most recent call last):\n[rank0]: {long}\n")
    h = run(["analyze", str(log), "--format", "html"]).output
    assert "capture-sync-forbidden" in h and long in h          # the whole line, not 400 characters of it
    css = h[h.index("<style>"):h.index("</style>")]
    pre = re.search(r"\npre \{[^}]*\}", css).group(0)
    assert "pre-wrap" in pre and "max-height" not in pre and "overflow: auto" not in pre and "hidden" not in pre
    # a comment still clips to its size budget
    md = run(["analyze", str(log), "--format", "markdown"]).output
    assert long not in md and long[:CLIP] in md


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed")
def test_html_evidence_lines_wrap_in_chromium(browser, tmp_path):
    """In a browser no log line is clipped or scrolled out of sight: every <pre> shows all its text."""
    d = rich()
    unbroken = "X" * 3000
    spaced = " ".join(f"word{i}" for i in range(500))
    d["findings"][0]["evidence"][0].update(text=unbroken, before=[spaced] * 6, after=[spaced] * 6)
    d["unmatched"][0]["lines"] = [spaced] * 40
    page = tmp_path / "report.html"
    page.write_text(render_html(load_view(d)), encoding="utf-8")
    s, url = open_report(browser, page)
    res = browser.call("Runtime.evaluate", session=s, returnByValue=True, expression=(
        "JSON.stringify([...document.querySelectorAll('pre')].map(p => ({w: p.scrollWidth - p.clientWidth,"
        " h: p.scrollHeight - p.clientHeight, text: p.textContent.length})))"))
    pres = json.loads(res["result"]["value"])
    assert len(pres) >= 4
    assert all(p["w"] <= 1 and p["h"] <= 1 for p in pres), pres
    assert max(p["text"] for p in pres) > 3000 + 12 * len(spaced)


def test_versions_read_as_the_log_printed_them():
    a = analysed(os.path.join(LOGS, "real", "gpu", "mcore_rng_tracker.log"))   # `torch 2.11.0+cu130`
    d = report_dict(a)
    h = render_html(load_view(d))
    vs = h[h.index('id="versions"'):]
    vs = vs[:vs.index("</section>")]
    assert "<th>CUDA</th><td><code>13.0</code>" in vs and ">130<" not in vs and "2.11.0+cu130" in vs
    assert "CUDA `13.0`" in render_markdown(load_view(d)) and "CUDA {{13.0}}" in render_jira(load_view(d))
    # NCCL's `cudaDriverVersion 12080` is the CUDA version the driver supports, not the NVIDIA driver's
    a = analysed(os.path.join(LOGS, "synthetic", "healthy_megatron_te_graphs.log"))
    h = render_html(load_view(report_dict(a)))
    assert "12080" not in h and "<code>12.8</code>" in h and "NVIDIA driver</th><td><code>" not in h
    # versions already written out stay as they are
    h = render_html(load_view(rich()))
    assert "<code>12.8</code>" in h and "<code>570.86.15</code>" in h


def test_config_section_does_not_ask_for_flags_that_were_given():
    good = os.path.join(CONFIGS, "good_run_config.yaml")
    asks_config = re.compile(r"(?<![\w-])--config\b")
    # both configs given, nothing changed
    h = html_of(SAMPLE, "--config", good, "--baseline-config", good)
    assert not asks_config.search(h) and "--baseline-config" not in h and "--baseline-log" not in h
    cfg = h[h.index('<section id="config">'):]
    assert "No config change from the last good run" in cfg[:cfg.index("</section>")]
    assert "none (no config change from the last good run)" in h
    # only the run's config: the baseline is asked for, --config is not
    h = html_of(SAMPLE, "--config", good)
    assert not asks_config.search(h) and "--baseline-config" in h
    # a baseline log without a config: its note, no request for it
    h = html_of(SAMPLE, "--config", good, "--baseline-log", SAMPLE)
    assert "--baseline-log" not in h.replace("--baseline-log</code>", "") or "shows no configuration" in h
    # nothing given: both asked for, in the verdict box, and no empty config section
    h = html_of(SAMPLE)
    assert asks_config.search(h) and '<section id="config">' not in h


# ---- properties and secrets (as test_properties.py and test_redact_recall.py do for the other formats)


def _any_text_dict(text):
    d = rich()
    d["summary"] = text
    d["findings"][0].update(title=text, source=text, fix=text, pitfall=text[:50] or "x")
    d["findings"][0]["evidence"][0].update(text=text, before=[text])
    d["findings"][1]["evidence"][0]["text"] = text
    d["first_failure"] = {"rank": 1, "source": text, "line": 3, "message": text, "kind": text, "lines": [text, text]}
    d["outcome"] = "unexplained-failure"
    d["unmatched"][0]["lines"] = [text]
    return d


def test_junit_and_jira_of_any_text_and_any_log():
    from hypothesis import given
    from hypothesis import strategies as st
    from test_properties import ENGINE, LOG, SETTINGS
    from triage.verdict.analyse import analyse
    from triage.selftest import lines_of

    @SETTINGS
    @given(st.text(max_size=300))
    def any_text(text):
        d = _any_text_dict(text)
        root = ET.fromstring(render_junit(load_view(d), [text, "x"]))
        assert root.find("testsuite").get("errors") == "1"
        j = render_jira(load_view(d))
        assert j.count("{noformat}") % 2 == 0 and j.startswith("h3. triage")

    @SETTINGS
    @given(LOG)
    def any_log(log):
        a = analyse(ENGINE.scan(lines_of(log)))
        _, suite, cases = junit_cases(render(a, "junit", pitfall_ids=IDS))
        assert len(cases) == len(IDS) + 1
        assert render(a, "jira").count("{noformat}") % 2 == 0

    any_text()
    any_log()


@pytest.mark.parametrize("fmt", ["junit", "jira"])
def test_new_formats_redact_the_recall_table_secrets(fmt, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(HERE, "fixtures", "secrets"))
    import recall_table as T
    src = os.path.join(LOGS, "real", "gpu", "oom_plain.log")
    with open(src, errors="replace") as f:
        real = f.read().split("\n")
    spliced = [f"HF_TOKEN={T.HF}", f"WANDB_API_KEY={T.WANDB}", f"AWS_SECRET_ACCESS_KEY={T.AWS_SECRET}",
               "git clone https://alice:s3cr3tP4ss@gitlab.example.com/x.git", *T.RSA.split("\n")]
    k = next(i for i, x in enumerate(real) if "out of memory" in x.lower())
    log = tmp_path / "job.log"
    log.write_text("\n".join(real[:k] + spliced + real[k:]))
    a = analysed(str(log))
    out = render(a, fmt, pitfall_ids=IDS)
    for s in [T.HF, T.WANDB, T.AWS_SECRET, "s3cr3tP4ss", *T.body(T.RSA)]:
        assert s not in out
    raw = render(a, fmt, redact_secrets=False, pitfall_ids=IDS)
    assert any(s in raw for s in T.body(T.RSA)[-2:])       # the splice reached the evidence context
