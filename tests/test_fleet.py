"""`triage fleet`: many jobs analysed in parallel, stored, grouped by signature (exactly), with
known issues linked; `triage fleet report` from the store alone.  Job logs come from
bench/gen_fleet.py (synthetic healthy filler, failure blocks copied from real fixture logs)."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gen_fleet  # noqa: E402

from triage.fleet.run import FleetError, find_jobs, parse_since, view  # noqa: E402
from triage.fleet.store import Record, Store  # noqa: E402
import inproc  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_DB", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")}
REAL = os.path.join(ROOT, "tests", "fixtures", "logs", "real")


def triage(*args, env=None):
    return inproc.run(args, cwd=ROOT, env=dict(ENV, **(env or {})))       # in-process: tests/inproc.py


@pytest.fixture(scope="module")
def jobs100(tmp_path_factory):
    """100 jobs of about 24 KB: 40 illegal memory accesses on varying ranks and times, 20 OOMs,
    10 moe scope conflicts, 10 unexplained failures, 20 healthy."""
    d = tmp_path_factory.mktemp("fleet") / "jobs"
    kinds = gen_fleet.make_jobs(str(d), 100, 24 << 10, seed=1)
    return str(d), kinds


def test_grouping_is_exact(jobs100, tmp_path):
    d, kinds = jobs100
    r = triage("fleet", "--jobs-in", d, "--db", str(tmp_path / "s.db"), "--format", "json", "-j", "2")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["jobs"] == 100
    assert v["outcomes"] == {"pitfall": 70, "unexplained-failure": 10, "healthy": 20}
    by = {g["primary"]: g for g in v["groups"]}
    assert sorted((g["primary"], g["count"]) for g in v["groups"]) == [
        ("capture-memory-overhead", 20), ("illegal-memory-access", 40), ("moe-scope-conflict", 10)]
    # the same failure in 40 jobs is one group of 40, listing exactly those jobs
    ima = {os.path.basename(p) for p, k in kinds.items() if k == "ima"}
    assert {os.path.basename(j) for j in by["illegal-memory-access"]["jobs"]} == ima
    assert len(v["unexplained"]) == 1 and v["unexplained"][0]["count"] == 10
    # grouped by exception type and frame (issue 24), its first job's error line beside it
    assert v["unexplained"][0]["signature"] == ("unexplained-failure: RuntimeError @ "
                                                "transformer_layer.py:_forward_attention (raised in functional.py:layer_norm)")
    assert v["unexplained"][0]["title"].startswith("RuntimeError: expected scalar type")
    assert v["healthy"] == 20
    # and the ranks that failed first vary, yet it is one group
    assert len(by["illegal-memory-access"]["first_failing_ranks"]) >= 1


def test_parallel_equals_serial_and_store_is_idempotent(jobs100, tmp_path):
    d, _ = jobs100
    db = str(tmp_path / "s.db")
    one = json.loads(triage("fleet", "--jobs-in", d, "--db", db, "--format", "json", "-j", "1").stdout)
    two = json.loads(triage("fleet", "--jobs-in", d, "--db", db, "--format", "json", "-j", "2").stdout)
    assert one == two
    with Store(db) as st:
        assert st.count() == 100          # analysed twice, stored once each
    assert all(g["seen_total"] == g["count"] for g in two["groups"])


def test_known_issue_linked_and_text_view(jobs100, tmp_path):
    d, _ = jobs100
    db = str(tmp_path / "s.db")
    assert triage("known", "add", "illegal-memory-access", "https://github.com/org/train/issues/42",
                  "--title", "IMA in attn kernel", "--db", db).returncode == 0
    r = triage("fleet", "--jobs-in", d, "--db", db)
    assert r.returncode == 0
    assert "x40   illegal-memory-access: Illegal memory access / GPU kernel fault" in r.stdout
    assert "known issue: https://github.com/org/train/issues/42 (IMA in attn kernel)" in r.stdout
    assert "healthy: 20 job(s)" in r.stdout
    v = json.loads(triage("fleet", "--jobs-in", d, "--db", db, "--format", "json").stdout)
    known = {g["primary"]: g["known"] for g in v["groups"]}
    assert known["illegal-memory-access"] == {"url": "https://github.com/org/train/issues/42",
                                              "title": "IMA in attn kernel"}
    assert known["moe-scope-conflict"] is None
    md = triage("fleet", "--jobs-in", d, "--db", db, "--format", "markdown").stdout
    assert "| 40 | `illegal-memory-access: Illegal memory access / GPU kernel fault` |" in md
    # analyze of one of those jobs now says it is known, and how often it was seen
    one = os.path.join(d, "job-00000.log")
    out = triage("analyze", one, "--db", db).stdout
    assert "known issue: https://github.com/org/train/issues/42 IMA in attn kernel (seen 40 times since" in out


def test_fleet_report_from_store_marks_new_and_counts_per_day(tmp_path):
    db = str(tmp_path / "s.db")
    day = 86400.0
    now = time.time()
    recs = []
    for i in range(6):       # an old signature: seen 20 days ago and in the period
        recs.append(Record(f"old-{i}", now - (20 if i < 3 else 1) * day, "pitfall", "cuda-oom", "cuda-oom: OOM", "OOM",
                           0, None, "s", f"o{i}", "t"))
    for i in range(4):       # a new one, in the period only
        recs.append(Record(f"new-{i}", now - 2 * day, "pitfall", "nccl-error", "nccl-error: NCCL", "NCCL",
                           1, None, "s", f"n{i}", "t"))
    recs.append(Record("ok", now - day, "healthy", None, None, "fine", None, None, "s", "h", "t"))
    with Store(db) as st:
        st.record_many(recs)
    r = triage("fleet", "report", "--since", "7d", "--db", db, "--format", "json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["jobs"] == 8 and v["healthy"] == 1
    g = {x["primary"]: x for x in v["groups"]}
    assert g["nccl-error"]["new"] is True and g["nccl-error"]["count"] == 4
    assert g["cuda-oom"]["new"] is False and g["cuda-oom"]["count"] == 3 and g["cuda-oom"]["seen_total"] == 6
    assert g["cuda-oom"]["first_seen"][:10] == time.strftime("%Y-%m-%d", time.gmtime(now - 20 * day))
    days = v["daily"]["days"]
    series = {s["signature"]: s["counts"] for s in v["daily"]["series"]}
    assert sum(series["nccl-error: NCCL"]) == 4 and sum(series["cuda-oom: OOM"]) == 3
    assert len(days) == len(series["cuda-oom: OOM"]) >= 2
    text = triage("fleet", "report", "--since", "7d", "--db", db).stdout
    assert "nccl-error: NCCL NEW" in text
    html_path = tmp_path / "fleet.html"
    r = triage("fleet", "report", "--since", "all", "--db", db, "-o", str(html_path))
    assert r.returncode == 0 and "fleet report written" in r.stderr
    assert "<svg" in html_path.read_text()
    again = triage("fleet", "report", "--since", "all", "--db", db, "-o", str(html_path))
    assert again.returncode == 2 and "--force" in again.stderr       # never overwritten without asking


def test_per_rank_directories_are_one_job_each(tmp_path):
    jobs = tmp_path / "jobs"
    for name, src in (("a", "illegal_memory_access.log"), ("b", "oom_plain.log")):
        (jobs / name).mkdir(parents=True)
        shutil.copy(os.path.join(REAL, "gpu", src), jobs / name / "rank0.log")
        (jobs / name / "rank1.log").write_text("[rank1]: iteration ok\n")
    (jobs / "README.md").write_text("notes about these jobs\n")
    (jobs / "result.expected.json").write_text("{}\n")
    found = find_jobs([], [str(jobs)])
    assert [os.path.basename(j.path) for j in found] == ["a", "b"]     # non-log files beside them skipped
    v = json.loads(triage("fleet", "--jobs-in", str(jobs), "--no-store", "--format", "json").stdout)
    assert v["jobs"] == 2 and sorted(g["primary"] for g in v["groups"]) == ["cuda-oom", "illegal-memory-access"]


def test_unreadable_job_is_listed_not_fatal(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    shutil.copy(os.path.join(REAL, "gpu", "oom_plain.log"), jobs / "ok.log")
    (jobs / "broken.log.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (jobs / "empty-dir").mkdir()
    r = triage("fleet", "--jobs-in", str(jobs), "--no-store", "--format", "json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["jobs"] == 3 and v["outcomes"]["error"] == 2
    assert {os.path.basename(e["job"]) for e in v["errors"]} == {"broken.log.gz", "empty-dir"}
    assert "jobs that could not be read" in triage("fleet", "--jobs-in", str(jobs), "--no-store").stdout


@pytest.mark.parametrize("args,msg", [
    (["--jobs-in", "/no/such/dir"], "is not a directory"),
    (["/no/such/job.log"], "no such file or directory"),
    ([], "no jobs"),
    (["report", "--since", "yesterday"], "--since 'yesterday'"),
    (["-", "--no-store"], "not stdin"),
])
def test_fleet_usage_errors_are_one_line(tmp_path, args, msg):
    r = triage("fleet", *args, env={"TRIAGE_DB": str(tmp_path / "s.db")})
    assert r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_parse_since():
    assert parse_since("7d", now=1_000_000.0) == 1_000_000.0 - 7 * 86400
    assert parse_since("12h", now=100_000.0) == 100_000.0 - 12 * 3600
    assert parse_since("2026-12-01") == 1_796_083_200.0
    with pytest.raises(FleetError):
        parse_since("7 days ago")


def test_view_of_nothing():
    v = view([])
    assert v == {"jobs": 0, "outcomes": {"pitfall": 0, "unexplained-failure": 0, "healthy": 0}, "healthy": 0,
                 "groups": [], "unexplained": [], "errors": [], "period": {"since": None, "until": None}}


def test_fleet_outputs_match_the_schema(jobs100, tmp_path):
    """Both views (a run's and the store report's) validate against `triage schema fleet`, strictly
    (every object closed, so a new key must be described in the schema)."""
    from jsonschema import Draft202012Validator
    from test_schemas import _strict
    schema = json.loads(triage("schema", "fleet").stdout)
    d, _ = jobs100
    db = str(tmp_path / "s.db")
    triage("known", "add", "moe-scope-conflict", "https://t/1", "--db", db)
    docs = [json.loads(triage("fleet", "--jobs-in", d, "--db", db, "--format", "json").stdout),
            json.loads(triage("fleet", "report", "--since", "all", "--db", db, "--format", "json").stdout),
            view([])]
    for doc in docs:
        Draft202012Validator(schema).validate(doc)
        Draft202012Validator(_strict(schema)).validate(doc)
    bad = dict(docs[0], groups=[dict(docs[0]["groups"][0], count="many")])
    assert not Draft202012Validator(schema).is_valid(bad)


def _work_or_die(job):
    """A worker that dies (as a segfault or the OOM killer would kill it) on one job."""
    from triage.fleet.run import analyse_in_worker
    if job.job_id.endswith("job-00003.log"):
        os._exit(9)
    return analyse_in_worker(job)


# A process that installed the CLI's SIGTERM handler (raise KeyboardInterrupt) or one that returns
# (some host programs do), then runs a pool in which one job kills its worker: the pool terminates the
# other workers (SIGTERM).  Inherited by a forked worker, the first handler printed a KeyboardInterrupt
# traceback per worker, and the second kept the worker alive: the pool's shutdown never returned
# (Python 3.13).  Each worker now dies of SIGTERM whatever its parent installed (procs.as_worker).
_PARENT_HANDLER = r"""
import os, signal, sys
from triage.cli import _on_term
signal.signal(signal.SIGTERM, _on_term if sys.argv[2] == "cli" else (lambda *a: None))
from triage.fleet.run import analyse_jobs, analyse_in_worker, find_jobs

def work(job):
    if job.job_id.endswith("job-00003.log"):
        os._exit(9)
    if job.job_id.endswith("job-00000.log"):
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])   # held only while forked
    return analyse_in_worker(job)

rs = list(analyse_jobs(find_jobs([], [sys.argv[1]])[:8], workers=2, work=work))
print(sorted(os.path.basename(r.job.job_id) for r in rs if r.record is None), len(rs))
"""


@pytest.mark.parametrize("handler", ["cli", "returns"])
def test_workers_die_of_sigterm_whatever_handler_their_parent_installed(jobs100, handler):
    d, _ = jobs100
    p = subprocess.run([sys.executable, "-c", _PARENT_HANDLER, d, handler], cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[0] == "['job-00003.log'] 8"
    assert "Traceback" not in p.stderr and "KeyboardInterrupt" not in p.stderr, p.stderr


def test_a_job_that_kills_its_worker_is_an_error_not_a_hang(jobs100):
    from triage.fleet.run import analyse_jobs
    d, kinds = jobs100
    jobs = find_jobs([], [d])[:12]
    ticks = []
    results = list(analyse_jobs(jobs, workers=2, tick=ticks.append, work=_work_or_die))
    assert len(results) == 12 and ticks == list(range(1, 13))
    errors = [r for r in results if r.record is None]
    assert [os.path.basename(r.job.job_id) for r in errors] == ["job-00003.log"]
    assert "worker process analysing this job died" in errors[0].error
    ok = {os.path.basename(r.job.job_id): r.record.primary for r in results if r.record is not None}
    assert ok["job-00000.log"] == "illegal-memory-access" and ok["job-00006.log"] == "moe-scope-conflict"


def test_fleet_and_report_on_postgresql(jobs100, pg_url):
    """The same fleet run and report on a real PostgreSQL server: the grouping, the known link and
    the idempotent store hold there too."""
    d, _ = jobs100
    assert triage("known", "add", "moe-scope-conflict", "https://t/9", "--db", pg_url).returncode == 0
    v = json.loads(triage("fleet", "--jobs-in", d, "--db", pg_url, "--format", "json").stdout)
    assert sorted((g["primary"], g["count"]) for g in v["groups"]) == [
        ("capture-memory-overhead", 20), ("illegal-memory-access", 40), ("moe-scope-conflict", 10)]
    assert {g["primary"]: g["known"] for g in v["groups"]}["moe-scope-conflict"] == {"url": "https://t/9",
                                                                                      "title": None}
    again = json.loads(triage("fleet", "report", "--since", "all", "--db", pg_url, "--format", "json").stdout)
    assert again["jobs"] == 100 and again["outcomes"] == v["outcomes"]
    with Store(pg_url) as st:
        assert st.count() == 100


def test_markdown_view_escapes_like_the_job_report():
    """A signature or job id holding a table pipe, backticks or HTML stays inside its cell."""
    from triage.fleet.render import render_markdown
    r = [Record("job|`x`<script>", 1.7e9, "pitfall", "p", "p: a | b `c`", "t", 1, None, "s", "h", "v")]
    row = next(ln for ln in render_markdown(view(r)).splitlines() if ln.startswith("| 1 |"))
    assert row == "| 1 | `` p: a \\| b `c` `` | 2023-11-14 | 2023-11-14 |  | job\\|\\`x\\`&lt;script&gt; |"
