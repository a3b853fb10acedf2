"""Logs where they live (issue 24): `triage analyze` and `triage fleet run` read s3:// URLs through
fsspec + s3fs (the [s3] extra), streaming, with the same decompression and directory rules as local
files.  Every test talks to a real S3-compatible server, moto's server mode started here on a free
port of 127.0.0.1, over HTTP with real credentials in the environment: never a mock object.

Without moto / s3fs installed the module is skipped; with TRIAGE_REQUIRE_S3=1 (set by .ci/run, whose
`.[test]` install brings them) a missing one is an error instead, so CI never skips it silently."""
import gzip
import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

# installed? (found, not imported: boto3, s3fs and moto's server take ~0.7 s to import, and every
# xdist worker collects this module while one of them runs it: they are imported by the s3 fixture)
for _mod in ("boto3", "fsspec", "s3fs", "moto"):
    if importlib.util.find_spec(_mod) is None:
        if os.environ.get("TRIAGE_REQUIRE_S3"):
            raise ImportError(f"the S3 tests are required (TRIAGE_REQUIRE_S3) but {_mod} is missing: "
                              "pip install '.[test]'")
        pytest.skip(f"S3 tests need {_mod} (pip install '.[test]')", allow_module_level=True)

from click.testing import CliRunner  # noqa: E402

from triage.cli import cli  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LOGS = os.path.join(HERE, "fixtures", "logs")
PER_RANK = os.path.join(LOGS, "synthetic", "multirank", "per_rank_oom_after_capture")   # node0/, node1/, a .gz
ONE_LOG = os.path.join(LOGS, "synthetic", "multirank_ima_cascade.log")
TORCHRUN = os.path.join(LOGS, "real", "gpu-issue21", "torchrun_log_dir")    # ranks from attempt_0/<rank>/ names
HEALTHY = os.path.join(LOGS, "synthetic", "healthy_megatron_te_graphs.log")
BUCKET = "triage-logs"
KEY_ID, SECRET = "AKIATRIAGETEST0001", "triage-test-secret-do-not-print-0123456789"
VERDICT = ("exit_code", "outcome", "primary", "signature", "first_failing_rank", "launcher_root_rank")
TE_RNG = ("[rank0]: AssertionError: Transformer engine's RNG tracker is required for cudagraphs, "
          "it can be enabled with use_te_rng_tracker=True'.\n")
BIG = 64 << 20
SMALL = 16 << 20


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _put_tree(client, local, prefix):
    for root, _dirs, files in os.walk(local):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                client.put_object(Bucket=BUCKET, Key=prefix + os.path.relpath(p, local).replace(os.sep, "/"),
                                  Body=fh.read())


def _big_log(size=BIG):
    line = b"data loader worker %07d: prefetched shard %03d of the corpus, queue depth 8\n"
    body = b"".join(line % (i, i % 97) for i in range(size // len(line % (0, 0)) + 1))
    return body[:size - len(TE_RNG)].rsplit(b"\n", 1)[0] + b"\n" + TE_RNG.encode()


@pytest.fixture(scope="session")
def s3():
    """moto's S3 server on 127.0.0.1, a bucket holding fixture logs (uploaded with boto3)."""
    import boto3
    from moto.server import ThreadedMotoServer
    logging.getLogger("werkzeug").setLevel(logging.WARNING)     # no line per request in a failure's log
    port = _free_port()
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    srv.start()
    url = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=url, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                          region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    _put_tree(client, PER_RANK, "jobs/per-rank/")
    _put_tree(client, TORCHRUN, "jobs/torchrun/")
    with open(ONE_LOG, "rb") as f:
        data = f.read()
    client.put_object(Bucket=BUCKET, Key="single/ima.log", Body=data)
    client.put_object(Bucket=BUCKET, Key="single/ima.log.gz", Body=gzip.compress(data))
    # a day of jobs for `triage fleet run --jobs-in`: a per-rank prefix, a log, a .gz, and a README (no job)
    _put_tree(client, PER_RANK, "2026-12-03/job-1/")
    client.put_object(Bucket=BUCKET, Key="2026-12-03/job-2.log", Body=data)
    with open(HEALTHY, "rb") as f:
        client.put_object(Bucket=BUCKET, Key="2026-12-03/job-3.log.gz", Body=gzip.compress(f.read()))
    client.put_object(Bucket=BUCKET, Key="2026-12-03/README.md", Body=b"the logs of 3 December\n")
    client.put_object(Bucket=BUCKET, Key="big/stream.log", Body=_big_log())
    client.put_object(Bucket=BUCKET, Key="big/small.log", Body=_big_log(SMALL))
    yield url
    srv.stop()


@pytest.fixture
def aws(s3, monkeypatch, tmp_path):
    """The standard AWS environment pointing at the moto server (no profile or config file read)."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    env = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": s3, "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("TRIAGE_DB", raising=False)
    return env


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def verdict(*args):
    r = invoke("analyze", "--format", "json", *args)
    assert r.exit_code in (0, 1, 3), r.output
    d = json.loads(r.output)
    return {k: d.get(k) for k in VERDICT}, d


def test_object_gives_the_local_files_verdict(aws):
    want, _ = verdict(ONE_LOG)
    got, d = verdict(f"s3://{BUCKET}/single/ima.log")
    assert got == want and want["primary"] == "illegal-memory-access" and want["first_failing_rank"] == 5
    assert d["findings"][0]["source"] == f"s3://{BUCKET}/single/ima.log"


def test_gz_object_is_decompressed(aws):
    want, _ = verdict(ONE_LOG)
    assert verdict(f"s3://{BUCKET}/single/ima.log.gz")[0] == want


def test_truncated_gz_object_reads_as_the_truncated_file(aws, s3, tmp_path):
    """A .gz cut short (a crashed node's log) is triaged up to where it breaks, with the local file's
    note: the whole report is the local one, but for the name."""
    text = "".join(f"iteration {i} ok\n" for i in range(3000)) + \
        "RuntimeError: CUDA error: an illegal memory access was encountered\n" + \
        "".join(f"filler {i} " * 8 + "\n" for i in range(20000))
    z = gzip.compress(text.encode())
    local = tmp_path / "cut.log.gz"
    local.write_bytes(z[:len(z) * 2 // 3])
    import boto3
    boto3.client("s3", endpoint_url=s3).put_object(Bucket=BUCKET, Key="cut/cut.log.gz", Body=local.read_bytes())
    url = f"s3://{BUCKET}/cut/cut.log.gz"
    want = invoke("analyze", "--format", "json", str(local))
    got = invoke("analyze", "--format", "json", url)
    assert "breaks off" in want.output and got.exit_code == want.exit_code
    w, g = json.loads(want.output), json.loads(got.output.replace(url, str(local)))
    for d in (w, g):      # the job header: its id is the path or the URL, the analysis time ticks
        d.pop("job", None)
    assert g == w


def test_prefix_of_per_rank_files_is_the_local_directory(aws):
    want, _ = verdict(PER_RANK)
    assert want["primary"] == "capture-memory-overhead" and want["first_failing_rank"] == 2
    for url in (f"s3://{BUCKET}/jobs/per-rank/", f"s3://{BUCKET}/jobs/per-rank"):   # a prefix, slash or not
        assert verdict(url)[0] == want, url


def test_prefix_keeps_rank_and_attempt_names(aws):
    """torchrun --log-dir's attempt_0/<rank>/stderr.log: the ranks come from the object names."""
    want, _ = verdict(TORCHRUN)
    assert want["outcome"] == "unexplained-failure" and want["first_failing_rank"] == 1
    assert verdict(f"s3://{BUCKET}/jobs/torchrun/")[0] == want


def test_fleet_run_jobs_in_a_prefix(aws):
    r = invoke("fleet", "run", "--jobs-in", f"s3://{BUCKET}/2026-12-03/", "--no-store", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["jobs"] == 3 and d["errors"] == [] and d["healthy"] == 1
    jobs = {g["primary"]: g["jobs"] for g in d["groups"]}
    assert jobs == {"capture-memory-overhead": [f"s3://{BUCKET}/2026-12-03/job-1"],
                    "illegal-memory-access": [f"s3://{BUCKET}/2026-12-03/job-2.log"]}


def test_fleet_run_job_urls_and_the_store(aws, tmp_path):
    """Job URLs given one by one; stored (content hash, job time from LastModified) and analysed again:
    one record per job."""
    db = str(tmp_path / "v.db")
    args = ("fleet", "run", f"s3://{BUCKET}/jobs/per-rank/", f"s3://{BUCKET}/single/ima.log.gz",
            "--db", db, "--format", "json", "-q")
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["jobs"] == 2
    r = invoke(*args)
    d = json.loads(r.output)
    assert [g["seen_total"] for g in d["groups"]] == [1, 1], r.output
    from triage.fleet.store import content_hash
    local = content_hash([PER_RANK])
    assert content_hash([f"s3://{BUCKET}/jobs/per-rank/"]) == local      # the same bytes, the same record
    assert content_hash([f"s3://{BUCKET}/single/ima.log"]) == content_hash([ONE_LOG])


def _one_error_line(r):
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and lines[0].startswith("triage: error: "), r.output
    assert "Traceback" not in r.output and SECRET not in r.output
    return lines[0]


def test_missing_key_bucket_and_prefix(aws):
    line = _one_error_line(invoke("analyze", f"s3://{BUCKET}/single/nope.log"))
    assert f"s3://{BUCKET}/single/nope.log" in line and "no such" in line
    assert "no such" in _one_error_line(invoke("analyze", "s3://no-such-bucket-here/x.log"))
    line = _one_error_line(invoke("fleet", "run", "--jobs-in", f"s3://{BUCKET}/2030-01-01/", "--no-store"))
    assert "not a directory" in line
    assert "no such" in _one_error_line(invoke("fleet", "run", f"s3://{BUCKET}/nope/", "--no-store"))


def test_unreachable_endpoint_is_one_line_in_seconds(aws, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")      # nothing listens there
    t = time.monotonic()
    line = _one_error_line(invoke("analyze", f"s3://{BUCKET}/single/ima.log"))
    assert time.monotonic() - t < 10
    assert "cannot reach the endpoint" in line, line


class _Silent:
    """A TCP endpoint that accepts every connection and never sends a byte (issue 46: 93 s of waiting
    against the documented ~33 s); counts the connections it accepted."""

    def __init__(self):
        import threading
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def test_the_documented_wait_bound():
    """docs/s3.md: 3 s to connect, 15 s without a byte, one retry (~33 s)."""
    from triage.inputs import remote
    assert (remote.CONNECT_TIMEOUT, remote.READ_TIMEOUT, remote.ATTEMPTS) == (3, 15, 2)
    assert 33 <= remote.deadline() <= 35
    with open(os.path.join(ROOT, "docs", "s3.md"), encoding="utf-8") as f:
        assert "3 s to connect, 15 s without a byte, and one retry" in f.read()


@pytest.mark.parametrize("what", ["object", "two-objects", "prefix", "fleet"])
def test_an_endpoint_that_accepts_and_never_answers_waits_what_the_docs_say(aws, monkeypatch, what):
    """Against a silent listener: one request and its one retry (2 connections), then one line; the
    second input (or the listing of a prefix) does not wait again.  The timeouts are scaled down
    (1 s to connect, 2 s without a byte) to keep the test short: the bound is the same formula."""
    from triage.inputs import remote
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 1)
    monkeypatch.setattr(remote, "READ_TIMEOUT", 2)
    srv = _Silent()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", srv.url)
        args = {"object": ["analyze", f"s3://{BUCKET}/single/ima.log"],
                "two-objects": ["analyze", f"s3://{BUCKET}/single/ima.log", f"s3://{BUCKET}/single/ima.log.gz"],
                "prefix": ["analyze", f"s3://{BUCKET}/jobs/per-rank/"],
                "fleet": ["fleet", "run", f"s3://{BUCKET}/single/ima.log", "--no-store"]}[what]
        t = time.monotonic()
        r = invoke(*args)
        took = time.monotonic() - t
    finally:
        srv.close()
    assert r.exit_code == 2 and "cannot reach the endpoint" in r.output, r.output
    assert len(srv.conns) == remote.ATTEMPTS, len(srv.conns)         # one request, one retry
    assert took <= remote.deadline() + 3, took                        # 1 + 2 * 2 + 1 (+ start-up)


def test_no_credentials(aws, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    t = time.monotonic()
    line = _one_error_line(invoke("analyze", f"s3://{BUCKET}/single/ima.log"))
    assert time.monotonic() - t < 10
    assert "no credentials" in line, line


def _auth(url, count):
    """moto's server checks credentials (count 0) or not (inf): its own /moto-api/reset-auth."""
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset-auth", data=str(count).encode(),
                                                  headers={"Content-Type": "text/plain"}, method="POST"),
                           timeout=5).read()


def test_wrong_credentials_access_denied(aws, s3, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG0")
    _auth(s3, 0)
    try:
        t = time.monotonic()
        line = _one_error_line(invoke("analyze", f"s3://{BUCKET}/single/ima.log"))
    finally:
        _auth(s3, "inf")
    assert time.monotonic() - t < 10
    assert "access denied" in line, line


def _run(code, env, timeout=60):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)


def _env(aws):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(aws, PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    return env


@pytest.mark.parametrize("blocked", ["s3fs", "fsspec"])
def test_without_the_extra(aws, blocked):
    """No s3fs (or no fsspec): one line naming the extra, exit 2."""
    code = (f"import sys; sys.modules[{blocked!r}] = None\n"
            f"from triage.cli import main; sys.argv = ['triage', 'analyze', 's3://{BUCKET}/single/ima.log']; main()")
    r = _run(code, _env(aws))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == ("triage: error: reading s3://... needs the [s3] extra: "
                                "pip install 'triage[s3]'"), r.stderr


STREAM = f"""
import json, sys, tracemalloc
from click.testing import CliRunner
from triage.cli import cli
def rss(key):
    with open("/proc/self/status") as f:
        return next((int(ln.split()[1]) << 10 for ln in f if ln.startswith(key + ":")), 0)
def measure(url):
    try:                       # Linux: the peak RSS (VmHWM) starts again from the RSS now
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = rss("VmRSS")
    except OSError:
        before = None
    tracemalloc.reset_peak()
    r = CliRunner().invoke(cli, ["analyze", "--format", "json", url])
    return {{"primary": json.loads(r.output)["primary"], "peak": tracemalloc.get_traced_memory()[1],
             "rss_grew": None if before is None else rss("VmHWM") - before}}
CliRunner().invoke(cli, ["analyze", "s3://{BUCKET}/single/ima.log"])   # imports, connection, catalog
tracemalloc.start()
print(json.dumps([measure("s3://{BUCKET}/big/small.log"), measure("s3://{BUCKET}/big/stream.log")]))
"""


def test_a_big_object_is_streamed(aws):
    """A 64 MiB object is read in blocks: the analysis's memory peak (the Python heap's, and the
    process's RSS where Linux can reset it) is below the object and no higher than a 16 MiB object's
    (the engine's own 8 MiB blocks and their copies are most of it); its last line, the failure, is
    found.  An object read whole would peak above 64 MiB."""
    r = _run(STREAM, _env(aws))
    assert r.returncode == 0, r.stderr
    small, big = json.loads(r.stdout.strip().splitlines()[-1])
    assert small["primary"] == big["primary"] == "te-rng-tracker-missing"
    assert big["peak"] < BIG * 0.75 and big["peak"] < small["peak"] + (4 << 20), (small, big)   # Python's heap
    if big["rss_grew"] is not None:                                                      # the process's RSS
        assert big["rss_grew"] < BIG * 0.75 and big["rss_grew"] < small["rss_grew"] + (8 << 20), (small, big)
