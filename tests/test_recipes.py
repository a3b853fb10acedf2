"""The cluster recipes (issue 24): recipes/slurm/triage-epilog.sh run by bash with the environment Slurm
gives an Epilog (SLURM_JOB_ID, SLURM_JOB_RESTART_COUNT, SLURM_JOB_STDOUT as submitted, the work dir,
the node list), recording into the real PostgreSQL server of the test run (tests/pgserver.py); and
recipes/kubernetes/: the manifest parses, embeds triage-collect.sh verbatim, and that script, run with
kubectl's output (`--prefix` lines) on a real log, records one verdict per pod."""
import os
import shutil
import socket
import stat
import subprocess
import sys
import time

import pytest
import yaml

from triage.fleet.store import Store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPILOG = os.path.join(ROOT, "recipes", "slurm", "triage-epilog.sh")
K8S = os.path.join(ROOT, "recipes", "kubernetes")
SEGV = os.path.join(ROOT, "tests", "fixtures", "logs", "real", "cpu-outcome", "torchrun_rank_segfault.log")
IMA = os.path.join(ROOT, "tests", "fixtures", "logs", "real", "gpu", "illegal_memory_access.log")
KUBECTL_LOG = os.path.join(ROOT, "tests", "fixtures", "launchers", "kubectl_prefix.log")


def _exe(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def triage_bin(tmp_path):
    """`triage` as an installed one is: an executable (the Epilog has no PATH of its own)."""
    (tmp_path / "bin").mkdir()
    return _exe(tmp_path / "bin" / "triage", f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m triage "$@"\n')


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def epilog(tmp_path, triage_bin, db, job="4242", restart=None, log=SEGV, stdout="slurm-%j.out",
           nodelist="gpu[07-08]", node="gpu07", extra=None, conf_extra=""):
    """Run the Epilog as slurmd would (an empty environment but Slurm's variables); (rc, stderr, s)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if log:
        out = work / stdout.replace("%j", job)
        if not out.exists():
            shutil.copy(log, out)
    conf = tmp_path / "epilog.env"
    conf.write_text(f"# triage epilog\nTRIAGE_DB={db}\nTRIAGE_BIN={triage_bin}\nTRIAGE_EPILOG_SYSLOG=0\n"
                    f"TRIAGE_DB_TIMEOUT=3\n{conf_extra}")
    env = {"TRIAGE_EPILOG_CONF": str(conf), "SLURM_JOB_ID": job, "SLURM_JOBID": job,
           "SLURM_JOB_WORK_DIR": str(work), "SLURM_JOB_STDOUT": stdout, "SLURM_JOB_NODELIST": nodelist,
           "SLURMD_NODENAME": node, "SLURM_JOB_UID": str(os.getuid()), "SLURM_JOB_GID": str(os.getgid()),
           "SLURM_JOB_USER": "alice", "SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURM_JOB_EXIT_CODE": "256",
           "SLURM_JOB_DERIVED_EC": "256", "TMPDIR": str(tmp_path)}
    if restart is not None:
        env["SLURM_JOB_RESTART_COUNT"] = str(restart)
    env.update(extra or {})
    t = time.monotonic()
    r = subprocess.run(["bash", EPILOG], env=env, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stderr, time.monotonic() - t


def _records(db):
    with Store(db) as st:
        return sorted(st.records(), key=lambda r: (r.job_id, r.attempt))


def test_epilog_records_the_job_in_postgresql_and_writes_its_report(tmp_path, triage_bin, pg_url):
    rc, err, _ = epilog(tmp_path, triage_bin, pg_url, restart=0)
    assert rc == 0
    report = tmp_path / "work" / "slurm-4242.out.triage.html"
    assert err.startswith("triage-epilog: job 4242: attempt 0: triage: rank 1 failed first") and str(report) in err
    [r] = _records(pg_url)
    assert (r.job_id, r.attempt, r.outcome, r.first_failing_rank) == ("4242", 0, "unexplained-failure", 1)
    assert r.paths == f'["{tmp_path / "work" / "slurm-4242.out"}"]'
    assert report.read_text().startswith("<!doctype html>") and '<meta name="generator" content="triage ' \
        in report.read_text()
    assert not [p for p in os.listdir(tmp_path) if p.startswith("triage-epilog.")]   # its temp dir removed


def test_epilog_requeue_is_a_second_record_and_a_rerun_keeps_one(tmp_path, triage_bin, pg_url):
    for restart in (0, 0, 1, 1):          # the Epilog run twice for each attempt
        rc, err, _ = epilog(tmp_path, triage_bin, pg_url, restart=restart)
        assert rc == 0 and "report " in err, err
    assert [(r.job_id, r.attempt) for r in _records(pg_url)] == [("4242", 0), ("4242", 1)]
    assert sorted(os.listdir(tmp_path / "work")) == ["slurm-4242.out", "slurm-4242.out.triage.1.html",
                                                     "slurm-4242.out.triage.html"]


def test_epilog_exits_zero_within_its_bound_whatever_fails(tmp_path, triage_bin, pg_url):
    # a missing output file
    rc, err, _ = epilog(tmp_path, triage_bin, pg_url, job="1", log=None)
    assert rc == 0 and "no readable output file" in err
    # the store down (a closed port): the report is still written, the warning logged
    down = f"postgresql://triage@127.0.0.1:{_closed_port()}/triage"
    rc, err, took = epilog(tmp_path, triage_bin, down, job="2", log=IMA)
    assert rc == 0 and "illegal" in err.lower() and "warning" in err and took < 60, err
    assert (tmp_path / "work" / "slurm-2.out.triage.html").exists()
    # triage hanging past TRIAGE_EPILOG_TIMEOUT is stopped
    hung = _exe(tmp_path / "hung", "#!/bin/sh\nexec sleep 60\n")
    rc, err, took = epilog(tmp_path, hung, pg_url, job="3", conf_extra="TRIAGE_EPILOG_TIMEOUT=1\n")
    assert rc == 0 and "ran past 1s and was stopped" in err and took < 15
    # a triage that is not there
    rc, err, _ = epilog(tmp_path, str(tmp_path / "nowhere"), pg_url, job="4")
    assert rc == 0 and "job 4" in err
    # not run by Slurm at all
    r = subprocess.run(["bash", EPILOG], env={"TRIAGE_EPILOG_CONF": "/nonexistent"}, capture_output=True, text=True)
    assert r.returncode == 0 and "no SLURM_JOB_ID" in r.stderr
    assert _records(pg_url) == []


def test_epilog_runs_on_the_first_node_only(tmp_path, triage_bin):
    db = str(tmp_path / "t.db")
    rc, err, _ = epilog(tmp_path, triage_bin, db, nodelist="gpu[07-08,11],cpu1", node="gpu08")
    assert rc == 0 and err == "" and not os.path.exists(db)
    rc, err, _ = epilog(tmp_path, triage_bin, db, nodelist="gpu[07-08,11],cpu1", node="gpu07")
    assert rc == 0 and len(_records(db)) == 1
    # EpilogSlurmctld: no SLURMD_NODENAME, runs once on the controller
    rc, err, _ = epilog(tmp_path, triage_bin, db, job="77", node="", extra={"SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"})
    assert rc == 0 and [r.job_id for r in _records(db)] == ["4242", "77"]


def test_epilog_expands_the_output_pattern_as_slurm_does(tmp_path, triage_bin):
    db = str(tmp_path / "t.db")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(SEGV, work / "train-00042-alice.log")
    rc, err, _ = epilog(tmp_path, triage_bin, db, job="42", log=None, stdout="%x-%5j-%u.log", node="",
                        extra={"SLURM_JOB_NAME": "train"})
    assert rc == 0 and (work / "train-00042-alice.log.triage.html").exists(), err
    # %x is not known to a node's Epilog (SLURM_JOB_NAME is EpilogSlurmctld's): said, nothing done
    rc, err, _ = epilog(tmp_path, triage_bin, db, job="43", log=None, stdout="%x-%j.log")
    assert rc == 0 and "cannot expand the output name %x-%j.log" in err
    # an absolute --output, and an array task's default name in EpilogSlurmctld
    shutil.copy(SEGV, work / "slurm-100_3.out")
    rc, err, _ = epilog(tmp_path, triage_bin, db, job="103", log=None, stdout="", node="",
                        extra={"SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "3"})
    assert rc == 0 and (work / "slurm-100_3.out.triage.html").exists(), err
    assert [r.job_id for r in _records(db)] == ["103", "42"]


def test_epilog_never_overwrites_a_file_triage_did_not_write(tmp_path, triage_bin):
    db = str(tmp_path / "t.db")
    (tmp_path / "work").mkdir()
    mine = tmp_path / "work" / "slurm-4242.out.triage.html"
    mine.write_text("the user's own notes\n")
    rc, err, _ = epilog(tmp_path, triage_bin, db)
    assert rc == 0 and "report not written" in err and mine.read_text() == "the user's own notes\n"
    assert len(_records(db)) == 1                          # recorded all the same
    mine.unlink()
    os.symlink(tmp_path / "elsewhere", mine)
    rc, err, _ = epilog(tmp_path, triage_bin, db)
    assert rc == 0 and "report not written" in err and not (tmp_path / "elsewhere").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the Epilog drops to the job's user only as root")
def test_epilog_as_root_reads_and_writes_as_the_jobs_user(tmp_path, triage_bin, request):
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody'")
    db = str(tmp_path / "t.db")
    import tempfile
    top = tempfile.mkdtemp(prefix="triage-epilog-test-")    # pytest's own base is 0700: not the user's way in
    os.chmod(top, 0o755)
    request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    work = type(tmp_path)(top) / "work"
    work.mkdir()
    shutil.copy(IMA, work / "slurm-9.out")
    os.chown(work, nobody.pw_uid, nobody.pw_gid)
    os.chown(work / "slurm-9.out", nobody.pw_uid, nobody.pw_gid)
    (work / "slurm-9.out").chmod(0o640)
    os.symlink("/etc/shadow", work / "slurm-10.out")       # a job's user's link: never followed
    ids = {"SLURM_JOB_UID": str(nobody.pw_uid), "SLURM_JOB_GID": str(nobody.pw_gid)}
    rc, err, _ = epilog(tmp_path, triage_bin, db, job="9", log=None, extra=ids, stdout=str(work / "slurm-%j.out"))
    report = work / "slurm-9.out.triage.html"
    assert rc == 0 and report.exists(), err
    st = report.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (nobody.pw_uid, 0o640)   # the user's, the log's mode
    rc, err, _ = epilog(tmp_path, triage_bin, db, job="10", log=None, extra=ids, stdout=str(work / "slurm-%j.out"))
    assert rc == 0 and "no readable output file" in err
    [r] = _records(db)
    assert (r.job_id, r.outcome, r.primary) == ("9", "pitfall", "illegal-memory-access")


# --- Kubernetes ------------------------------------------------------------------------------------

def test_k8s_manifest_parses_and_carries_the_tested_script():
    with open(os.path.join(K8S, "triage-job.yaml"), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    kinds = {d["kind"]: d for d in docs}
    assert [d["kind"] for d in docs] == ["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Job", "Job"]
    with open(os.path.join(K8S, "triage-collect.sh"), encoding="utf-8") as f:
        assert kinds["ConfigMap"]["data"]["triage-collect.sh"] == f.read()
    rules = {(r["apiGroups"][0], res): set(r["verbs"]) for r in kinds["Role"]["rules"] for res in r["resources"]}
    assert rules == {("batch", "jobs"): {"get"}, ("", "pods"): {"get", "list"}, ("", "pods/log"): {"get"}}
    train, collect = [d for d in docs if d["kind"] == "Job"]
    assert train["spec"]["template"]["spec"]["restartPolicy"] == "Never"      # a retry is a new pod
    pod = collect["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "triage-collector"
    c = pod["containers"][0]
    assert c["command"][-1] == train["metadata"]["name"]
    env = {e["name"]: e["valueFrom"] for e in c["env"]}
    assert env["TRIAGE_DB"] == {"secretKeyRef": {"name": "triage-db", "key": "TRIAGE_DB"}}


def _fake_kubectl(tmp_path, pods):
    """kubectl as the collector calls it, answering with what the API server would (the Job Failed,
    its pods oldest first) and `kubectl logs --prefix` lines: a stand-in for a cluster."""
    d = tmp_path / "kbin"
    d.mkdir()
    cases = "\n".join(f'    *"pod/{p} --all-containers --prefix"*) sed "s|^|[pod/{p}/trainer] |" "{log}" ;;'
                      for p, log in pods)
    names = "\\n".join(p for p, _ in pods)
    _exe(d / "kubectl", f"""#!/bin/sh
printf '%s\\n' "$*" >> "{tmp_path}/kubectl.calls"
case "$*" in
    "get job "*) printf 'Failed ' ;;
    "get pods "*) printf '{names}\\n' ;;
{cases}
    *) echo "unexpected kubectl $*" >&2; exit 1 ;;
esac
""")
    _exe(d / "triage", f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m triage "$@"\n')
    return str(d)


def test_k8s_collector_records_one_verdict_per_pod(tmp_path, pg_url):
    bindir = _fake_kubectl(tmp_path, [("train-x7k2p", SEGV), ("train-q9z4m", IMA)])
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "POD_NAMESPACE": "ml", "TRIAGE_DB": pg_url, "HOME": str(tmp_path)}
    r = subprocess.run(["sh", os.path.join(K8S, "triage-collect.sh"), "train-llama"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("triage: rank 1 failed first")
    calls = (tmp_path / "kubectl.calls").read_text().splitlines()
    assert calls[1] == ("get pods -n ml -l batch.kubernetes.io/job-name=train-llama "
                        "--sort-by=.metadata.creationTimestamp -o jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}")
    assert calls[2] == "logs -n ml pod/train-x7k2p --all-containers --prefix"
    recs = _records(pg_url)
    assert [(x.job_id, x.attempt, x.outcome, x.primary) for x in recs] == [
        ("ml/train-llama", 0, "unexplained-failure", None), ("ml/train-llama", 1, "pitfall", "illegal-memory-access")]
    # kubectl's prefix is read as the launcher prefix it is: the verdict is the unprefixed log's
    plain = subprocess.run([sys.executable, "-m", "triage", "analyze", SEGV, "--format", "json"], cwd=ROOT,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    import json
    j = json.loads(plain.stdout)
    assert (recs[0].signature, recs[0].first_failing_rank) == (j["signature"], j["first_failing_rank"]) \
        and recs[0].first_failing_rank == 1


def test_k8s_pipeline_on_stdin_as_the_recipe_runs_it(tmp_path):
    """The collector's pipeline, `kubectl logs ... --prefix | triage analyze --job-id --attempt --record
    --exit-zero -q`, with the kubectl-prefixed real log on stdin."""
    with open(os.path.join(K8S, "triage-collect.sh"), encoding="utf-8") as f:
        line = next(ln.strip() for ln in f if "triage analyze" in ln and not ln.startswith("#"))
    assert line == ('timeout "$T" triage analyze --job-id "$NS/$JOB" --attempt "$attempt" --record '
                    '--exit-zero -q')
    db = str(tmp_path / "t.db")
    with open(KUBECTL_LOG, "rb") as f:
        r = subprocess.run([sys.executable, "-m", "triage", "analyze", "--job-id", "ml/train", "--attempt", "2",
                            "--record", "--db", db, "--exit-zero", "-q"], stdin=f, cwd=ROOT, capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0 and r.stdout.startswith("triage: rank 1 failed first"), r.stderr
    [rec] = _records(db)
    assert (rec.job_id, rec.attempt, rec.first_failing_rank) == ("ml/train", 2, 1)
