"""Issue 25: a report a ticket reader follows -- no internals, each thing said once, the fix that
applies first, a step chart scaled to the steady state."""
import json
import os
import re
import subprocess
import sys
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYN = os.path.join(ROOT, "tests", "fixtures", "logs", "synthetic")
STEPS = os.path.join(SYN, "steptime")
IMA = os.path.join(SYN, "multirank_ima_cascade.log")
UNEXPLAINED = os.path.join(SYN, "unrelated_dataset_error.log")


def triage(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    return inproc.run(args, env=env)       # in-process: tests/inproc.py


def steps(fmt):
    return triage("analyze", os.path.join(STEPS, "qwen3_30b_te_graphs.log"), "--baseline-log",
                  os.path.join(STEPS, "qwen3_30b_eager.log"), "--format", fmt).stdout


def test_no_internals_in_the_text_report():
    text = steps("text")
    assert "<triage>" not in text and ": triage: CUDA graphs" not in text
    assert "measured by triage: CUDA graphs gave no steady-state speedup" in text
    assert not re.search(r"'[^']*' -> '", text) and "None" not in text          # no Python reprs
    assert "cuda_graph_impl: none -> transformer_engine" in text
    assert 'cuda_graph_scope: [] -> ["attn", "moe_router", "moe_preprocess"]' in text
    assert "rule:" not in text and "/step-time analysis" not in text           # the regex is the JSON's


def test_no_run_line_about_nothing():
    from triage.report.text import _run_line
    from triage.report.view import RunView
    fields = {f: None for f in RunView.__dataclass_fields__}
    fields.update(name="current", steady=0, median_ms=None, capture_list=(), captures_total=0, capture_s=None,
                  graph_memory="")
    line = _run_line(RunView(**fields))
    assert "median - ms" not in line and "over 0 steady" not in line
    assert "no steady-state iterations in the log" in line


def test_references_are_short_and_wrap_in_html():
    html = triage("analyze", IMA, "--format", "html").stdout
    cells = re.findall(r'<div class="ref" title="[^"]*">(.*?)(?: <span|</div>)', html)
    assert cells and all(len(c) <= 100 for c in cells), cells
    assert not any("[+" in c and "chars]" in c for c in cells)
    assert "overflow-wrap: anywhere" in html and "table.patterns { table-layout: fixed" in html
    nccl = triage("analyze", os.path.join(ROOT, "tests", "fixtures", "logs", "real", "gpu-multirank",
                                          "nccl_rank_error_vs_timeouts.log"), "--format", "markdown").stdout
    assert "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout" not in nccl     # symbol lists stay in the JSON


def test_the_unexplained_error_block_is_said_once():
    text = triage("analyze", UNEXPLAINED).stdout
    assert text.count("FileNotFoundError: [Errno 2] No such file or directory") == 3   # verdict, error, block
    assert "UNMATCHED ERRORS" not in text
    html = triage("analyze", UNEXPLAINED, "--format", "html").stdout
    assert 'id="unmatched"' not in html
    j = json.loads(triage("analyze", UNEXPLAINED, "--format", "json").stdout)
    assert j["unmatched"]                                                  # the JSON keeps everything


def test_a_conditional_fix_comes_after_the_advice_that_applies_and_first_when_it_holds(tmp_path):
    text = triage("analyze", IMA).stdout
    fix = next(ln for ln in text.splitlines() if ln.startswith("  fix: "))
    assert fix.startswith("  fix: Rerun with CUDA_LAUNCH_BLOCKING=1")
    assert fix.index("CUDA_LAUNCH_BLOCKING") < fix.index("expandable_segments")
    assert "note: This run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" not in text
    shown = triage("analyze", IMA, "--env", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True").stdout
    assert "note: This run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: set NCCL_GRAPH_REGISTER=0" in shown


def test_the_step_chart_is_scaled_to_the_steady_state():
    html = steps("html")
    svg = html[html.index('aria-label="Step time per iteration"') if 'aria-label="Step time per iteration"' in html
               else html.index("Step time per iteration"):]
    svg = svg[:svg.index("</svg>")]
    ticks = [float(t.replace("k", "")) * (1000 if t.endswith("k") else 1)
             for t in re.findall(r'text-anchor="end">([\d.]+k?)</text>', svg)]
    assert ticks and max(ticks) < 49100 and min(ticks) > 30000, ticks    # 41-42 s steps, not 0 .. 49 s
    assert "off the scale" in svg and "49100 ms (off the scale)" in svg
    assert html.count("off the scale (warm-up, capture)") == 1           # one legend entry


def test_fleet_html_says_its_counts_in_words(tmp_path):
    out = tmp_path / "f.html"
    r = triage("fleet", "run", IMA, IMA.replace("multirank_ima_cascade", "multirank_ima_cascade"), "--no-store",
               "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "first failing rank: 5 (in 1 job)" in html and "×" not in html
