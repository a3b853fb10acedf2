"""Issue 44: a `tail` failure form's lines after its first hit wait and are tried newest first
(forms.FailureForms._defer); the hits kept are the line driver's, at every block size.

The logs here are SYNTHETIC, built from real lines: ProcessGroupNCCL's watchdog timeout as
tests/fixtures/logs/real/gpu/nccl_rank_hang_timeout.log has it (rank, sequence id and time changed,
as bench/gen_biglog.py --storm does), then an ending of each kind."""
from __future__ import annotations

import pytest

from triage.inputs.sources import iter_inputs
from triage.patterns import load_all
from triage.scan import forms
from triage.scan.engine import Engine

PATS = load_all()
WATCHDOG = ("[rank{r}]:[E1203 08:32:{s:02d}.{us:06d}990 ProcessGroupNCCL.cpp:689] [Rank {g}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum={q}, OpType=ALLREDUCE, NumelIn=1048576, "
            "NumelOut=1048576, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
ENDINGS = {
    "storm-last": [],
    "not-a-form-line": ["[rank0]: the loader said: error: none, going on"],   # the anchor, not the regex
    "healthy-after": ["[rank0]: iteration 10/100 | loss 2.1"] * 3,
    "negative": ["[rank0]: ERROR: worker 3 failed (exitcode: 0)"],               # the form's `not`
    "error-then-not": ["[rank0]: ERROR: data loader failed", "[rank0]: the loader said: error: none"],
}


UNTIMED = "[rank{r}]: ERROR: data loader {g} failed"


def _log(tmp_path, n: int, ending: str, line: str = WATCHDOG) -> str:
    lines = ["[rank0]: [2026-12-03 08:31:00] iteration 1/100 | loss 2.5"]
    for g in range(n):
        lines.append(line.format(r=g % 8, s=5 + g // 100000, us=g * 17 % 1000000, g=g % 4096, q=2 + g // 4096))
    lines += ENDINGS[ending]
    p = tmp_path / f"{ending}.log"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _exits(res):
    return [(x.source, x.line, x.rank, x.text, x.seq, x.order_ts, x.group, x.form, x.tail) for x in res.exits]


@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("n", [3, forms.PENDING_MAX + 5])
@pytest.mark.parametrize("line", [WATCHDOG, UNTIMED], ids=["timed", "untimed"])
def test_deferred_tail_form_hits_are_the_line_drivers(tmp_path, ending, n, line):
    path = _log(tmp_path, n, ending, line)
    line = _exits(Engine(PATS).scan(iter_inputs([path])))
    assert any(x[7] == "error-last-line" for x in line)       # the storm's lines are the form's
    for bs in (1 << 23, 4096, 300):
        assert _exits(Engine(PATS).scan_paths([path], block_size=bs)) == line, f"block size {bs}"


def test_the_lines_of_a_storm_are_not_each_tried(tmp_path, monkeypatch):
    path = _log(tmp_path, 2000, "storm-last")
    tried = []
    real = forms.FailureForms._matches

    def counting(self, f, text):
        tried.append(f.id)
        return real(self, f, text)
    monkeypatch.setattr(forms.FailureForms, "_matches", counting)
    Engine(PATS).scan_paths([path])
    assert 0 < tried.count("error-last-line") < 50         # the first hit, then one a flush (2,000 lines)
