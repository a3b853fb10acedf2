"""Issue 24: every report says which job it is about (id, attempt, hosts, the log's own time span,
analysis time, triage version), a job's date is its log's, and `fleet run --reports DIR` links
each job to its own report."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from click.testing import CliRunner

from triage import __version__
from triage.cli import cli
from triage.fleet.job_reports import GENERATOR, report_name
from triage.scan.jobfacts import facts_of, hosts_in

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "logs")
SRUN_OOM = os.path.join(FIX, "synthetic", "outcome", "srun_task_oom.log")          # node-2, node-1; 10:01:00-10:06:12
TORCHRUN = os.path.join(FIX, "real", "gpu-multirank", "nccl_rank_error_vs_timeouts.log")   # glog first, no year
IMA = os.path.join(FIX, "synthetic", "multirank_ima_cascade.log")
HEALTHY = os.path.join(FIX, "synthetic", "healthy_megatron_te_graphs.log")
HOSTILE_ID = "<script>x</script>|*bold*{code}"


def run(*args, env=None):
    e = {"TRIAGE_DB": "", "SLURM_JOB_ID": "", "TRIAGE_JOB_ID": "", "TORCHELASTIC_RUN_ID": "", "TRIAGE_ATTEMPT": "",
         "SLURM_RESTART_COUNT": "", "TORCHELASTIC_RESTART_COUNT": "", "SLURM_JOB_NODELIST": ""}
    e.update(env or {})
    return CliRunner().invoke(cli, list(args), env=e, catch_exceptions=False)


def slurm_copy(tmp_path, src=SRUN_OOM, job="424242", sub=None):
    """SRC copied as slurm-JOB.out (its id from the name), its mtime now (a copied log is "today");
    SUB: (old, new) replaced in its text."""
    p = tmp_path / f"slurm-{job}.out"
    text = open(src, encoding="utf-8").read()
    if sub:
        text = text.replace(*sub)
    p.write_text(text, encoding="utf-8")
    os.utime(p, None)
    return str(p)


class _Text(HTMLParser):
    """The text of the element with id="job" (the HTML report's header line) and every <a href>."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.job = ""
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if self.depth:
            self.depth += 1
        elif a.get("id") == "job":
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.job += data


def html_parts(doc):
    p = _Text()
    p.feed(doc)
    return p


def test_every_format_shows_job_id_attempt_hosts_log_span_analysis_time_and_version(tmp_path):
    log = slurm_copy(tmp_path)
    before = time.time()
    out = {fmt: run("analyze", log, "--attempt", "1", "--format", fmt).output
           for fmt in ("json", "text", "markdown", "jira", "html", "junit")}
    j = json.loads(out["json"])["job"]
    assert j["id"] == "424242" and j["attempt"] == 1 and j["id_source"] == "name"
    assert j["hosts"] == ["node-2", "node-1"] and j["hosts_more"] == 0
    assert (j["log_start"], j["log_end"]) == ("2026-12-03T10:01:00Z", "2026-12-03T10:06:12Z")
    assert j["triage_version"] == __version__
    analysed = time.mktime(time.strptime(j["analysed_at"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert before - 2 <= analysed <= time.time() + 2
    want = ["424242", "attempt 1", "node-2, node-1", "2026-12-03 10:01:00", "10:06:12 UTC", "(5 min)",
            "analysed " + j["analysed_at"][:10], "triage " + __version__]
    # text: the verdict line stays first (-q prints only it); the job line comes after the signature
    text = out["text"].splitlines()
    assert text[0].startswith("triage: ") and text[1].startswith("signature ")
    assert text[2].startswith("job 424242 (attempt 1) · hosts node-2, node-1 · log 2026-12-03 10:01:00 – 10:06:12 UTC")
    md = [ln for ln in out["markdown"].splitlines() if ln.startswith("| Job |")]
    jira = [ln for ln in out["jira"].splitlines() if ln.startswith("||Job|")]
    assert len(md) == 1 and len(jira) == 1
    html_job = html_parts(out["html"]).job
    for w in want:
        assert w in text[2] and w in md[0] and w in html_job, w
        assert w.replace("-", "\\-") in jira[0], w
    suite = ET.fromstring(out["junit"]).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["job_id"] == "424242" and props["job_attempt"] == "1" and props["job_hosts"] == "node-2, node-1"
    assert props["log_start"] == "2026-12-03T10:01:00Z" and props["log_end"] == "2026-12-03T10:06:12Z"
    assert props["analysed_at"].startswith(j["analysed_at"][:10]) and props["triage_version"] == __version__
    assert suite.find("system-out").text == text[2]
    # -q: only the verdict line
    assert run("analyze", log, "-q").output.splitlines() == [text[0]]


def test_a_hostile_job_id_is_escaped_in_html_markdown_and_jira(tmp_path):
    log = slurm_copy(tmp_path)
    h = run("analyze", log, "--job-id", HOSTILE_ID, "--format", "html").output
    assert "<script>" not in h and "&lt;script&gt;x&lt;/script&gt;|*bold*{code}" in h
    assert HOSTILE_ID in html_parts(h).job
    md = [ln for ln in run("analyze", log, "--job-id", HOSTILE_ID, "--format", "markdown").output.splitlines()
          if ln.startswith("| Job |")][0]
    # one table row of two cells: the id's pipe is escaped, the id is inside a code span
    assert len(re.findall(r"(?<!\\)\|", md)) == 3
    assert "`<script>x</script>\\|*bold*{code}`" in md
    jira = [ln for ln in run("analyze", log, "--job-id", HOSTILE_ID, "--format", "jira").output.splitlines()
            if ln.startswith("||Job|")][0]
    assert "{{<script>x</script>&#124;\\*bold\\*\\{code\\}}}" in jira
    assert "*bold*" not in jira.replace("\\*", "") and jira.count("|") == 4      # ||Job|...|: no extra cell
    d = json.loads(run("analyze", log, "--job-id", HOSTILE_ID, "--format", "json").output)
    assert d["job"]["id"] == HOSTILE_ID and d["job"]["id_source"] == "option"


def test_a_job_date_is_its_logs_own_not_the_copys_mtime(tmp_path):
    log = slurm_copy(tmp_path, sub=("2026-12-03", "2026-11-02"))
    assert time.strftime("%Y-%m-%d", time.gmtime(os.path.getmtime(log))) != "2026-11-02"
    j = json.loads(run("analyze", log, "--format", "json").output)["job"]
    assert j["log_start"] == "2026-11-02T10:01:00Z" and j["log_end"] == "2026-11-02T10:06:12Z"
    v = json.loads(run("fleet", "run", log, "--no-store", "--format", "json", "-q", "-j", "1").output)
    g = v["groups"][0]          # host-oom (Slurm's oom_kill event) since issue 40; unexplained before
    assert g["primary"] == "host-oom" and g["jobs"] == ["424242"] and g["first_seen"] == g["last_seen"] == "2026-11-02T10:06:12Z"
    # the stored record: its job_time, and the fleet report's per-day chart, are the log's day
    db = str(tmp_path / "t.db")
    assert run("analyze", log, "--db", db, "--format", "json").exit_code == 1
    rep = json.loads(run("fleet", "report", "--since", "all", "--db", db, "--format", "json").output)
    assert rep["daily"]["days"] == ["2026-11-02"]
    from triage.fleet.store import Store
    with Store(db, existing=True) as st:
        (r,) = list(st.records())
    assert time.strftime("%Y-%m-%d", time.gmtime(r.job_time)) == "2026-11-02"
    assert r.hosts == "node-2 node-1" and r.log_start is not None and r.log_end == r.job_time


def test_year_less_timestamps_take_the_year_of_a_dated_line():
    # glog lines (W1203 14:57:16) come first; the ISO lines after them say the year
    j = json.loads(run("analyze", TORCHRUN, "--format", "json").output)["job"]
    assert j["log_start"] == "2026-12-03T14:57:16Z" and j["log_end"] == "2026-12-03T14:57:46Z"
    assert j["hosts"] == ["vm", "localhost"] and j["id_source"] == "path"
    f = facts_of(b"I1105 08:00:00.000000 1 x.cc:1] start\n", b"E1105 09:30:00.000000 1 x.cc:2] end\n", 2024, True)
    assert time.strftime("%Y-%m-%d %H:%M", time.gmtime(f.start)) == "2024-11-05 08:00"


def test_stdin_and_compressed_inputs_have_their_span_too(tmp_path):
    gz = tmp_path / "job.log.gz"
    with open(SRUN_OOM, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    for args, stdin in (([str(gz)], None), ([], open(SRUN_OOM, encoding="utf-8").read())):
        r = CliRunner().invoke(cli, ["analyze", *args, "--format", "json"], input=stdin,
                               env={"TRIAGE_DB": "", "SLURM_JOB_ID": "", "TRIAGE_JOB_ID": ""})
        j = json.loads(r.output)["job"]
        assert (j["log_start"], j["log_end"]) == ("2026-12-03T10:01:00Z", "2026-12-03T10:06:12Z"), args
        assert j["hosts"] == ["node-2", "node-1"]


def test_unknown_parts_are_left_out_not_printed_as_none(tmp_path):
    p = tmp_path / "plain.log"
    p.write_text("starting\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                 "ValueError: boom\n", encoding="utf-8")
    d = json.loads(run("analyze", str(p), "--format", "json").output)
    assert d["job"]["log_start"] is None and d["job"]["hosts"] == []
    text = run("analyze", str(p)).output
    line = [ln for ln in text.splitlines() if ln.startswith("job ")][0]
    assert "None" not in line and " · log " not in line and "hosts" not in line
    assert line.endswith(f"triage {__version__}")


def test_a_slurm_epilog_names_the_jobs_node_list():
    r = run("analyze", IMA, "--format", "json", env={"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "node-[001-017]",
                                                     "SLURM_RESTART_COUNT": "2"})
    j = json.loads(r.output)["job"]
    assert j["id"] == "77" and j["attempt"] == 2 and j["id_source"] == "env:SLURM_JOB_ID"
    assert j["hosts"] == ["node-[001-017]", "node-017.cluster"]
    bad = run("analyze", IMA, "--format", "json", env={"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "a b<c>"})
    assert json.loads(bad.output)["job"]["hosts"] == ["node-017.cluster"]


def test_hosts_are_read_from_the_lines_that_name_them_and_bounded():
    lines = ["[1,1]<stderr>:node-1:77:77 [1] NCCL INFO comm 0x5574a2c0 rank 1 nranks 2 - Init COMPLETE",
             "3: node-3:9013:9013 [3] transport/p2p.cc:272 NCCL WARN Cuda failure",
             "[2026-12-04 06:03:49] vm:708:739 [0] misc/socket.cc:72 NCCL WARN socketProgress",
             "  host      : node-017.cluster", "the host  : not-a-summary-line",
             "srun: error: gpu-node-017: task 3: Exited with exit code 2",
             "slurmstepd: error: *** STEP 4242.0 ON node-9 CANCELLED AT 2026-12-03T10:06:12 ***",
             "evil<script>:1:2 [0] NCCL INFO x"]
    assert hosts_in(lines) == ["node-1", "node-3", "vm", "node-017.cluster", "gpu-node-017", "node-9"]
    many = "\n".join(f"srun: error: n{i}: task {i}: Exited with exit code 1" for i in range(50)).encode()
    f = facts_of(many, many, None, True)
    assert f.hosts == [f"n{i}" for i in range(8)] and f.hosts_more == 42


def _fleet(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for src, name in ((SRUN_OOM, "slurm-1001.out"), (IMA, "job-b.log"), (TORCHRUN, "job c.log"), (HEALTHY, "ok.log")):
        shutil.copy(src, logs / name)
    return str(logs)


def test_fleet_run_reports_writes_one_report_per_job_and_links_them(tmp_path):
    logs = _fleet(tmp_path)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=ROOT, TRIAGE_DB="")
    r = subprocess.run([sys.executable, "-m", "triage", "fleet", "run", "--jobs-in", logs, "--no-store", "-q",
                        "-j", "2", "--reports", str(out / "my reports"), "-o", str(out / "fleet.html")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    written = sorted(os.listdir(out / "my reports"))
    assert len(written) == 4 and all(n.endswith(".html") for n in written)       # the healthy job's too
    assert report_name("1001", 0, os.path.join(logs, "slurm-1001.out")) in written
    hrefs = [h for h in html_parts((out / "fleet.html").read_text(encoding="utf-8")).hrefs
             if not h.startswith(("#", "http"))]
    assert len(hrefs) == 3 and all(h.startswith("my%20reports/") for h in hrefs)    # the failing jobs', URL-quoted
    from urllib.parse import unquote
    for h in hrefs:
        page = (out / unquote(h)).read_text(encoding="utf-8")
        assert GENERATOR in page and "triage " + __version__ in html_parts(page).job
    assert any("job_c.log" in h for h in hrefs)                      # a safe name made of the file's
    oom = [h for h in hrefs if "1001" in h][0]
    assert html_parts((out / unquote(oom)).read_text(encoding="utf-8")).job.startswith("job 1001")
    # JSON: each group's `reports`, relative to the view's file (or the current directory)
    v = json.loads(run("fleet", "run", "--jobs-in", logs, "--no-store", "-q", "-j", "1", "--reports",
                       str(out / "my reports"), "-o", str(out / "fleet.json")).exit_code == 0 and
                   (out / "fleet.json").read_text(encoding="utf-8"))
    reps = {k: h for g in v["groups"] + v["unexplained"] for k, h in g["reports"].items()}
    assert reps["1001"] == "my%20reports/" + report_name("1001", 0, os.path.join(logs, "slurm-1001.out"))
    assert all((out / unquote(h)).is_file() for h in reps.values())


def test_reports_dir_never_overwrites_a_file_that_is_not_a_triage_report(tmp_path):
    logs = _fleet(tmp_path)
    rd = tmp_path / "reports"
    args = ["fleet", "run", "--jobs-in", logs, "--no-store", "-q", "-j", "1", "--reports", str(rd), "--format", "json"]
    assert run(*args).exit_code == 0
    assert run(*args).exit_code == 0                  # a triage report there (the last run's) is replaced
    name = report_name("1001", 0, os.path.join(logs, "slurm-1001.out"))
    (rd / name).write_text("my notes\n", encoding="utf-8")
    os.unlink(rd / report_name("job-b.log", 0, os.path.join(logs, "job-b.log")))
    r = CliRunner().invoke(cli, args, env={"TRIAGE_DB": ""})
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "exists and is not a triage report; pass --force" in r.stderr
    assert (rd / name).read_text(encoding="utf-8") == "my notes\n"
    assert not (rd / report_name("job-b.log", 0, os.path.join(logs, "job-b.log"))).exists()   # nothing ran
    assert run(*args, "--force").exit_code == 0
    assert GENERATOR in (rd / name).read_text(encoding="utf-8")
    (tmp_path / "file").write_text("x", encoding="utf-8")
    r = CliRunner().invoke(cli, args[:-3] + [str(tmp_path / "file")], env={"TRIAGE_DB": ""})
    assert r.exit_code == 2 and "is a file" in r.stderr


def test_fleet_report_links_the_stored_jobs_whose_reports_are_there(tmp_path):
    logs = _fleet(tmp_path)
    db, rd = str(tmp_path / "t.db"), tmp_path / "reports"
    assert run("fleet", "run", "--jobs-in", logs, "--db", db, "-q", "-j", "1", "--reports", str(rd),
               "--format", "json").exit_code == 0
    os.unlink(rd / report_name("job-b.log", 0, os.path.join(logs, "job-b.log")))
    out = tmp_path / "fleet.html"
    assert run("fleet", "report", "--since", "all", "--db", db, "--reports", str(rd), "-o", str(out)).exit_code == 0
    hrefs = [h for h in html_parts(out.read_text(encoding="utf-8")).hrefs if h.startswith("reports/")]
    assert len(hrefs) == 2 and all((tmp_path / h).is_file() for h in hrefs)


def test_the_fleet_html_links_only_relative_paths():
    from triage.fleet.html import render_html
    g = {"signature": "s", "count": 3, "jobs": ["a", "b", "c"],
         "reports": {"a": "javascript:alert(1)", "b": "//evil.example/x.html", "c": "r/c%20d.html"}}
    hrefs = html_parts(render_html({"jobs": 3, "groups": [g]})).hrefs
    assert [h for h in hrefs if not h.startswith("#")] == ["r/c%20d.html"]
