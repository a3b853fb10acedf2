"""Recall: every row of the secret-format table (tests/fixtures/secrets/recall_table.py) is redacted
wherever a report can carry it: one string, consecutive lines of a list, the report dict (an
evidence line with its context, an unmatched block), the text report; with and without Hyperscan."""
import os
import sys

import pytest

from triage import redact as R
from triage.redact import MARK, redact, redact_lines, redact_obj

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "secrets"))
from recall_table import ROWS, recall_table  # noqa: E402

IDS = [f"{r[0]}/{r[1]}" for r in ROWS]


@pytest.fixture(params=["hyperscan", "stdlib"])
def engine(request, monkeypatch):
    if request.param == "stdlib":
        monkeypatch.setattr(R, "_hs", lambda: False)
    elif not R._hs():
        pytest.skip("no hyperscan wheel here")
    return request.param


def _gone(out: str, secrets) -> bool:
    return all(s not in out for s in secrets)


def _views(text: str):
    """Every way a report carries the text, redacted, as one string each."""
    lines = text.split("\n")
    d = redact_obj({
        "findings": [{"evidence": [lines[0]], "evidence_detail": [
            {"source": "job.log", "line": 7, "text": lines[0], "before": ["[rank0]: step 3"], "after": lines[1:]}]}],
        "unmatched": [{"lines": lines}],
        "first_failure": {"message": text},
    })
    ed = d["findings"][0]["evidence_detail"][0]
    return {
        "string": redact(text),
        "lines": "\n".join(redact_lines(lines)),
        "report evidence": "\n".join([ed["text"]] + ed["after"]),
        "report unmatched": "\n".join(d["unmatched"][0]["lines"]),
        "report string": d["first_failure"]["message"],
        "text report": redact("\n".join("    | " + x for x in lines)),
    }


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_row(row, engine):
    family, where, text, secrets, caught = row
    views = _views(text)
    if caught:
        for name, out in views.items():
            assert _gone(out, secrets), f"{name}: {out!r}"
            assert MARK in out, name
    else:   # a known miss: when the redactor learns it, flip the row's flag in the table
        assert not _gone(views["string"], secrets), "now caught: set caught=True in recall_table.py"


def test_recall_table_numbers(engine):
    rows = recall_table(lambda text, secrets: _gone(redact(text), secrets))
    total, caught = sum(r[1] for r in rows), sum(r[2] for r in rows)
    assert total == len(ROWS) == 114
    assert caught == sum(1 for r in ROWS if r[4])
    families = {r[0] for r in rows}
    for f in ("aws-access-key-id", "aws-secret-access-key", "github", "gitlab", "slack", "huggingface", "ngc",
              "wandb", "bearer", "jwt", "url-password", "password", "export", "private-key"):
        assert f in families
        n, c = next((r[1], r[2]) for r in rows if r[0] == f)
        assert c >= n - 1, f


@pytest.mark.parametrize("fmt", ["json", "markdown", "html", "text"])
def test_secrets_in_a_real_report_are_redacted_in_every_format(tmp_path, fmt):
    """A real log with secrets spliced in (an env dump, a key block printed before the crash)."""
    from triage.pipeline import triage
    from triage.report import render
    import recall_table as T
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "fixtures", "logs", "real", "gpu", "oom_plain.log")
    with open(src, errors="replace") as f:
        real = f.read().split("\n")
    spliced = [f"HF_TOKEN={T.HF}", f"WANDB_API_KEY={T.WANDB}", f"AWS_SECRET_ACCESS_KEY={T.AWS_SECRET}",
               "git clone https://alice:s3cr3tP4ss@gitlab.example.com/x.git", *T.RSA.split("\n")]
    k = next(i for i, x in enumerate(real) if "out of memory" in x.lower())
    log = tmp_path / "job.log"
    log.write_text("\n".join(real[:k] + spliced + real[k:]))
    a = triage([str(log)])
    out = render(a, fmt)
    for s in [T.HF, T.WANDB, T.AWS_SECRET, "s3cr3tP4ss", *T.body(T.RSA)]:
        assert s not in out
    raw = render(a, "json", redact_secrets=False)     # the splice reached the report's context lines
    assert all(s in raw for s in T.body(T.RSA)[-2:])     # the block's tail, its BEGIN out of sight
