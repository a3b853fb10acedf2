import os

import pytest

from triage.pipeline import scan_baseline
from triage.selftest import lines_of
from triage.verdict.steps import StepLog, assess, compare

HERE = os.path.dirname(os.path.abspath(__file__))
ST = os.path.join(HERE, "fixtures", "logs", "synthetic", "steptime")


def steps_of(name):
    seen = scan_baseline([os.path.join(ST, name)])
    return seen.steps, seen.config.config()


def test_parses_megatron_bridge_and_nemo_lines():
    s = StepLog()
    for ln in lines_of("\n".join([
        " [2026-12-03 06:41:56.123456] iteration        5/      30 | consumed samples:          320 | elapsed time per "
        "iteration (ms): 12.3 | throughput per GPU (TFLOP/s/GPU): 99.5 | learning rate: 1.0E-04 |",
        " [2026-12-03 06:41:57] iteration        6/      30 | consumed samples:          384 | elapsed time per "
        "iteration (ms): 12.9 | learning rate: 1.0E-04 | max attention logit: 12.500 |",
        "[rank7]: [2026-12-03 06:41:58] iteration        6/      30 | consumed samples: 384 | elapsed time per "
        "iteration (ms): 14.0 | learning rate: 1.0E-04 |",
        "Epoch 0: : 10/100 [00:30<04:30, v_num=1, reduced_train_loss=2.30, global_step=9.000, train_step_timing in s=2.970]",
    ])):
        s.feed(ln)
    assert s.times == {5: 12.3, 6: 14.0, 10: 2970.0}   # the slowest rank counts
    assert s.tflops == {5: 99.5}


def test_capture_step_and_warmup_excluded():
    s, cfg = steps_of("dense_graphs_slow_capture.log")
    assert s.capture_iters == [4] and s.times[4] == 10000.0
    assert all(i > 4 for i, _ in s.steady(cfg.get("cuda_graph_warmup_steps")))
    assert s.capture_seconds == 6.9 and s.graph_memory == "allocated 5.21 GB, reserved 6.00 GB"


def test_several_built_lines_say_the_last_graphs_the_longest_capture_the_last_memory(tmp_path):
    """megatron-core prints "> built N cuda graph(s)" once a capture (a rank each, or every pipeline stage):
    the graphs built are the last said, the capture's seconds the most, its memory the last said -- read
    line by line, and as the block scan's records (a worker's summary merged or the records replayed)."""
    from test_scan_blocks import block_scan, line_scan
    built = ("[rank{r}]:INFO:megatron.core.transformer.cuda_graphs:> built {n} cuda graph(s) in {s} sec{m}.")
    lines = [built.format(r=0, n=48, s="6.90", m=", with total memory usage: allocated 5.21 GB, reserved 6.00 GB"),
             built.format(r=1, n=24, s="3.10", m=""),
             built.format(r=2, n=12, s="4.50", m=", with total memory usage: allocated 1.5 GB, reserved 2.0 GB"),
             built.format(r=3, n=6, s="2.00", m="")]
    s = StepLog()
    for ln in lines_of("\n".join(lines)):
        s.feed(ln)
    assert (s.graphs_built, s.capture_seconds, s.graph_memory) == (6, 6.9, "allocated 1.5 GB, reserved 2.0 GB")
    p = tmp_path / "built.log"
    p.write_text("\n".join(lines) + "\n")
    line = line_scan([str(p)])
    assert line["steps"][3:5] == (6, 6.9) and line["graphs"][0] == "allocated 1.5 GB, reserved 2.0 GB"
    assert block_scan([str(p)]) == line


def test_reference_card_graphs_slower_than_eager_is_graph_no_speedup():
    cur, ccfg = steps_of("qwen3_30b_te_graphs.log")
    base, bcfg = steps_of("qwen3_30b_eager.log")
    verdicts, info = assess(cur, ccfg, base, bcfg)
    assert [v.pitfall for v in verdicts] == ["graph-no-speedup"]
    r = info["run_vs_run"]
    assert 1.0 < r["delta_pct"] < 2.2 and r["ci95_pct"][0] > 0
    assert info["current"]["steady_iterations"] == [5, 6, 7, 8]


def test_same_config_rerun_with_jitter_is_no_regression():
    a, acfg = steps_of("rerun_a.log")
    b, bcfg = steps_of("rerun_b.log")
    verdicts, info = assess(b, bcfg, a, acfg)
    assert verdicts == [] and info["run_vs_run"]["verdict"] == "no significant change"
    verdicts, _ = assess(a, acfg, b, bcfg)
    assert verdicts == []


def test_slow_capture_step_does_not_count():
    cur, ccfg = steps_of("dense_graphs_slow_capture.log")
    base, bcfg = steps_of("dense_eager.log")
    verdicts, info = assess(cur, ccfg, base, bcfg)
    assert verdicts == [] and info["run_vs_run"]["verdict"] == "faster"
    assert info["run_vs_run"]["delta_pct"] < -20


def test_regression_without_graph_change_is_step_time_regression():
    cur, ccfg = steps_of("regressed_dispatcher.log")
    base, bcfg = steps_of("rerun_a.log")
    verdicts, info = assess(cur, ccfg, base, bcfg)
    assert [v.pitfall for v in verdicts] == ["step-time-regression"]
    assert info["run_vs_run"]["delta_pct"] > 5


def test_compare_needs_samples_and_is_deterministic():
    assert compare([1.0], [1.0, 2.0]) is None
    c1 = compare([10, 11, 10, 12, 10], [15, 16, 15, 17, 15])
    c2 = compare([10, 11, 10, 12, 10], [15, 16, 15, 17, 15])
    assert c1 == c2 and c1.slower and not c1.faster


def _exact_median_law(data):
    """The law of the median of a bootstrap resample of DATA, by enumerating every resample."""
    import itertools
    from collections import Counter

    from triage.verdict.steps import _median
    law = Counter(_median(r) for r in itertools.product(data, repeat=len(data)))
    total = sum(law.values())
    return {v: c / total for v, c in law.items()}


@pytest.mark.parametrize("data", [[3.0, 1.0, 4.0, 1.5, 9.0], [2.0, 7.0, 1.0, 8.0], [5.0, 5.0, 6.0, 1.0, 2.0, 5.0]])
def test_a_resample_median_drawn_from_the_order_statistics_has_the_bootstraps_law(data):
    """Large samples are bootstrapped without drawing each resample (its median from the law of the
    order statistics of uniform draws): the law is the resampling bootstrap's, enumerated exactly
    here for small samples (odd, even, with ties), within the sampling error of 40,000 draws."""
    import random

    from triage.verdict.steps import _resample_median
    exact = _exact_median_law(data)
    rng = random.Random(5)
    n = 40000
    drawn = {}
    for _ in range(n):
        m = _resample_median(rng, sorted(data))
        drawn[m] = drawn.get(m, 0) + 1
    assert set(drawn) <= set(exact)
    tv = sum(abs(drawn.get(v, 0) / n - p) for v, p in exact.items()) / 2       # total variation distance
    assert tv < 0.015, (tv, exact, drawn)


def test_large_samples_are_compared_without_drawing_resamples(monkeypatch):
    """50,000 steady steps a side: sorting 2 x 2,000 resamples took ~20 s; the medians' bootstrap now
    draws order statistics.  The interval still holds the true shift, and the result is deterministic."""
    import random

    from triage.verdict import steps as S
    rng = random.Random(3)
    base = [100.0 + rng.gauss(0, 1) for _ in range(50000)]
    cur = [105.0 + rng.gauss(0, 1) for _ in range(50000)]
    monkeypatch.setattr(random.Random, "choices", lambda *a, **k: pytest.fail("a resample was drawn"))
    c = S.compare(base, cur)
    assert c == S.compare(base, cur) and c.slower and not c.faster
    assert c.ci_low < c.delta_pct < c.ci_high and 4.5 < c.ci_low and c.ci_high < 5.5
    assert c.n_base == c.n_cur == 50000


def test_mann_whitney_ranks_ties_at_their_mean_rank():
    from triage.verdict.steps import mann_whitney
    assert mann_whitney((1.0, 2.0), [1.0, 2.0, 3.0]) == mann_whitney([1.0, 2.0], (1.0, 2.0, 3.0))   # any sequences
    # by hand: all values 1 1 2 2 3 | ranks 1.5 1.5 3.5 3.5 5; cur = [1, 2, 3] -> 1.5 + 3.5 + 5 = 10, U = 10 - 6 = 4
    ps, pf = mann_whitney([1.0, 2.0], [1.0, 2.0, 3.0])
    import math
    n1, n2, u = 2, 3, 4.0
    var = n1 * n2 / 12 * ((n1 + n2 + 1) - (6 + 6) / ((n1 + n2) * (n1 + n2 - 1)))
    assert ps == pytest.approx(0.5 * math.erfc((u - n1 * n2 / 2 - 0.5) / math.sqrt(var) / math.sqrt(2)))
    assert pf == pytest.approx(0.5 * math.erfc(-(u - n1 * n2 / 2 + 0.5) / math.sqrt(var) / math.sqrt(2)))


def test_the_summarys_series_is_made_when_read():
    """A million-step run's [iteration, ms] pairs are made only as the report reads them (it keeps at
    most SERIES_MAX); read whole, they are the list they were."""
    import json

    from triage.verdict.steps import StepSeries, summary
    s = StepLog()
    for i in range(1, 6):
        s.times[i] = 100.0 + i
    d = summary(s, None)
    assert isinstance(d["series"], StepSeries) and len(d["series"]) == 5
    assert d["series"] == [[i, 100.0 + i] for i in range(1, 6)] == d["series"].tolist()
    assert d["series"][-1] == [5, 105.0] and d["series"][1:3] == [[2, 102.0], [3, 103.0]]
    assert json.loads(json.dumps(d["series"].tolist())) == [[i, 100.0 + i] for i in range(1, 6)]


def test_too_few_steady_steps_give_no_verdict():
    assert compare([1000.0, 1012.0], [1024.0, 1031.0]) is None


def test_capture_in_another_ranks_file_is_placed_by_time():
    from triage.inputs.sources import make_line
    s = StepLog()
    s.feed(make_line("[2026-12-03 10:00:05.000000] INFO: Start CUDA Graphs capture...", "rank_0.log", 1))
    for i, (t, ms) in enumerate([("10:00:01", 1000), ("10:00:02", 1000), ("10:00:03", 1000),
                                 ("10:01:03", 60000), ("10:01:04", 1000)], 1):
        s.feed(make_line(f" [2026-12-03 {t}.000000] iteration {i:8d}/ 10 | elapsed time per iteration (ms): {ms}.0 |",
                         "rank_7.log", i))
    assert s.capture_iters == [4]


REAL = os.path.join(HERE, "fixtures", "logs", "real", "gpu")


def real_steps(name):
    seen = scan_baseline([os.path.join(REAL, name)])
    return seen.steps, seen.config.config()


def test_real_h200_replay_vs_eager():
    """Real timings (H200): whole-step graph replay of a host-bound model is far faster; of a
    GPU-bound model only slightly faster -- neither is a pitfall, and the capture step is excluded."""
    cur, ccfg = real_steps("steptime_graph.log")
    base, bcfg = real_steps("steptime_eager.log")
    assert cur.capture_iters == [4]
    verdicts, info = assess(cur, ccfg, base, bcfg)
    assert verdicts == [] and info["run_vs_run"]["verdict"] == "faster" and info["run_vs_run"]["delta_pct"] < -50
    cur, ccfg = real_steps("steptime_large_graph.log")
    base, bcfg = real_steps("steptime_large_eager.log")
    verdicts, info = assess(cur, ccfg, base, bcfg)
    assert verdicts == [] and -10 < info["run_vs_run"]["delta_pct"] < 0


def test_a_garbled_warmup_setting_is_no_crash(tmp_path):
    """Found by fuzzing (2026-12-06): an arguments block whose cuda_graph_warmup_steps line was pasted
    three times on one line (`3  cuda_graph_warmup_steps ..... 3 ...`) crashed the step-time
    assessment (int() of that text); the default warmup is taken instead."""
    import subprocess
    import sys
    block = ("------------------------ arguments ------------------------\n"
             "  cuda_graph_impl ................................. local\n"
             "  cuda_graph_warmup_steps ......................... " + "3  cuda_graph_warmup_steps ..... " * 3 + "3\n"
             "-------------------- end of arguments ---------------------\n")
    steps = "".join(f" [2026-12-03 08:{i // 60:02d}:{i % 60:02d}] iteration {i:8d}/     100 | consumed samples: "
                    f"{i * 8:10d} | elapsed time per iteration (ms): {400 + i % 3:.1f} | learning rate: 1.0E-04 |\n"
                    for i in range(1, 40))
    p = tmp_path / "run.log"
    p.write_text(block + steps)
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", str(p), "--format", "json"], capture_output=True,
                       text=True)
    assert r.returncode in (0, 1, 3), r.stderr[-400:]


def _reference_records(buf: bytes, starts):
    """What scan_lines claims of each plain step line, read the long way: _MEGATRON_B's search from the line's start,
    its numbers as _num reads them, and the number after the line's first "lm loss:" (the records it made before
    issue 44's one match at the first "iteration")."""
    from triage.verdict import steps as S
    out = {}
    for ls in starts:
        le = buf.find(b"\n", ls)
        le = len(buf) if le < 0 else le
        m = S._MEGATRON_B.search(buf, ls, le)
        if m is None:
            continue
        ms, tf = S._num(m.group(2)), S._num(m.group(3)) if m.group(3) else None
        if ms is None or (m.group(3) and tf is None):
            continue
        li = buf.find(b"lm loss:", ls, le)
        n = S._LOSS_B.match(buf, li + 8, le) if li >= 0 else None
        out[ls] = (int(m.group(1)), ms, tf, le - ls, S._num(n.group(1)) if n else None)
    return out


def test_step_lines_of_every_layout_read_as_the_long_way_reads_them():
    """scan_lines' one match at a line's first "iteration" (issue 44) against the search from the line's start, on a
    grid of layouts: the header's spacing, a second "iteration" before the header, the keys' order, numbers that are
    no numbers ("1.2.3"), a loss before the step's time, two losses, a loss that reads as none, no throughput."""
    heads = [b" iteration        7/ 5000000 |", b"iteration 7/5000000|", b"iteration\t7 / 50 |",
             b"data iteration time | iteration 7/ 50 |", b"iteration 7/ 50 | iteration 8/ 50 |"]
    times = [b" elapsed time per iteration (ms): 5092.0 |", b" elapsed time per iteration (ms):1.2.3 |",
             b" elapsed time per iteration (ms): 12 | elapsed time per iteration (ms): 13 |",
             b" elapsed time per iteration (ms): x | elapsed time per iteration (ms): 14 |"]
    tfs = [b"", b" throughput per GPU (TFLOP/s/GPU): 471.3 |", b" throughput per GPU (TFLOP/s/GPU): 4.7.1 |",
           b" throughput per GPU (TFLOP/s/GPU): | throughput per GPU (TFLOP/s/GPU): 5 |"]
    losses = [b"", b" lm loss: 1.057388E+01 |", b" lm loss: nan |", b" lm loss: -x | lm loss: 2.0 |"]
    lines = []
    for h in heads:
        for t in times:
            for f in tfs:
                for lo in losses:
                    lines.append(b"[rank7]: " + h + b" consumed samples: 1024 |" + t + f + b" learning rate: 3E-04 |"
                                 + lo + b" loss scale: 1.0 |")
                    lines.append(b"[rank7]: " + lo + h + t + f)          # the loss first
    buf = b"\n".join(lines) + b"\n"
    starts, pos = [], 0
    for ln in lines:
        starts.append(pos)
        pos += len(ln) + 1
    got = StepLog().scan_lines(buf, starts)
    want = _reference_records(buf, starts)
    assert {k: repr(v) for k, v in got.items() if v[0] is not None} == {k: repr(v) for k, v in want.items()}  # (nan)
    assert len(want) > len(lines) // 4          # (the grid holds step lines of every kind, not only rejects)
    assert any(r[4] is None for r in want.values()) and any(r[2] is None for r in want.values())
    # the one step-line parse `watch` calls reads each line as scan_lines does, and watch's Progress its rank and step
    from triage.verdict.steps import step_of
    from triage.watch.progress import Progress
    prog = Progress(clock=lambda: 0.0)
    for ls in starts:
        le = buf.index(b"\n", ls)
        r = step_of(buf, ls, le)
        assert (r is None) == (ls not in want) and (r is None or r == want[ls][:3]), buf[ls:le]
        assert prog._parse(buf, ls, le, None) == (None if r is None else (7, r[0], str(r[1]).encode()))
