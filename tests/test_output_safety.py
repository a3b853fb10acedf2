"""-o never follows a symlink without --force, writes atomically, concurrent writers and interrupted
runs never leave a half report (issue 13)."""
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, cwd=ROOT, **kw)


def test_a_symlink_is_not_followed_onto_another_file(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    link = tmp_path / "report.json"
    os.symlink(victim, link)
    r = run("analyze", SAMPLE, "-o", str(link))
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert victim.read_text() == "keep me"
    r = run("analyze", SAMPLE, "-o", str(link), "--force")
    assert r.returncode == 1
    assert victim.read_text() == "keep me" and not os.path.islink(link) and '"primary"' in link.read_text()
    dangling = tmp_path / "dangling.json"
    os.symlink(tmp_path / "nowhere" / "x.json", dangling)
    assert run("analyze", SAMPLE, "-o", str(dangling)).returncode == 2


def test_concurrent_writers_leave_one_whole_report(tmp_path):
    out = tmp_path / "r.json"
    procs = [subprocess.Popen([sys.executable, "-m", "triage", "analyze", SAMPLE, "-o", str(out), "--force"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(6)]
    for p in procs:
        p.wait(timeout=60)
    import json
    assert json.loads(out.read_text())["primary"] == "moe-scope-conflict"
    assert [f for f in os.listdir(tmp_path) if f.startswith(".triage-")] == []


def test_an_interrupted_run_leaves_no_report_and_no_temp_file(tmp_path):
    fifo = tmp_path / "live.log"
    os.mkfifo(fifo)
    out = tmp_path / "r.html"
    p = subprocess.Popen([sys.executable, "-m", "triage", "analyze", str(fifo), "-o", str(out)], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(fifo, "w") as w:                       # a log still being written: triage waits for more
        w.write("[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
        w.flush()
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 143             # issue 46: 128 + SIGTERM (Ctrl-C's is 130)
    assert not out.exists()
    assert [f for f in os.listdir(tmp_path) if f.startswith(".triage-")] == []


def test_a_file_name_and_job_id_of_bytes_that_are_no_utf8(tmp_path):
    """Found by fuzzing: a rank file named with a byte that is no UTF-8 (Linux allows any bytes), or
    such a --job-id, reached the reports as a lone surrogate (os.fsdecode) and every format but text
    was an internal error, as was --record.  Reports and the store now show it as U+FFFD; the text
    report prints the name's own bytes, as ls does."""
    import json
    src = os.path.join(ROOT, "tests", "fixtures", "logs", "real", "cpu-outcome", "uncaught_torch_error.log")
    name = os.path.join(os.fsencode(str(tmp_path)), b"rank_0_\xff.log")
    with open(src, "rb") as f, open(name, "wb") as g:
        g.write(f.read())
    path, job = os.fsdecode(name), os.fsdecode(b"job-\xff")
    db = str(tmp_path / "verdicts.db")
    p = run("analyze", path, "--format", "json", "--job-id", job, "--record", "--db", db)
    assert p.returncode == 3 and p.stderr == "", p.stderr
    d = json.loads(p.stdout)
    assert "rank_0_\ufffd.log" in p.stdout and d["outcome"] == "unexplained-failure"
    for fmt in ("markdown", "html", "junit", "jira"):
        q = run("analyze", path, "--format", fmt)
        assert q.returncode == 3 and q.stderr == "", (fmt, q.stderr)
        assert fmt == "jira" or "rank_0_\ufffd.log" in q.stdout, fmt       # (jira's comment names no file)
    r = run("fleet", "report", "--db", db, "--since", "all", "--format", "json")
    assert r.returncode == 0 and "job-\ufffd" in r.stdout, r.stderr


def test_a_file_behind_a_directory_this_user_may_not_enter_is_not_called_missing(tmp_path):
    """Found by fuzzing: os.path.exists() is False for a file this user cannot reach, and the error
    said "no such file or directory"; the OS's reason is said now (analyze and fleet)."""
    import shutil
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "job.log").write_text("hello\n")
    locked.chmod(0o600)                 # no x: nobody but root gets to job.log
    prefix = []
    if os.geteuid() == 0:               # root passes permission checks: drop the capabilities that do it
        if not shutil.which("setpriv"):
            locked.chmod(0o700)
            pytest.skip("running as root without setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                  "--inh-caps=-dac_override,-dac_read_search"]
    try:
        for args in (["analyze", str(locked / "job.log")], ["fleet", "run", str(locked / "job.log"), "--no-store"]):
            p = subprocess.run(prefix + [sys.executable, "-m", "triage", *args], capture_output=True, text=True,
                               cwd=ROOT)
            assert p.returncode == 2 and p.stderr == f"triage: error: cannot read {str(locked / 'job.log')!r}: " \
                                                     "Permission denied\n", (args, p.stderr)
        missing = run("analyze", str(tmp_path / "nope.log"))
        assert missing.stderr == f"triage: error: no such file or directory: {str(tmp_path / 'nope.log')!r}\n"
    finally:
        locked.chmod(0o700)


def test_a_run_in_process_gives_the_callers_sigterm_handler_back(tmp_path):
    """main() turns SIGTERM into a clean stop (KeyboardInterrupt: no half report) while it runs; called
    in-process (a job wrapper, a notebook) it then gives the caller's handler back: it left its own
    installed, so the caller's next SIGTERM (Slurm's, at the end of its time) raised KeyboardInterrupt
    wherever the caller happened to be instead of what the caller had set up."""
    import contextlib
    import io

    from triage.cli import cli
    seen = []

    def callers(signum, frame):
        seen.append(signum)
    before = signal.signal(signal.SIGTERM, callers)
    try:
        for args in (["analyze", SAMPLE, "-o", str(tmp_path / "r.html")], ["patterns", "list"],
                     ["analyze", "--no-such-option"], ["analyze", str(tmp_path / "missing.log")]):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                with pytest.raises(SystemExit):
                    cli.main(args=args, prog_name="triage")
            assert signal.getsignal(signal.SIGTERM) is callers, args
        os.kill(os.getpid(), signal.SIGTERM)        # the caller's handler runs (no KeyboardInterrupt)
        for _ in range(100):
            if seen:
                break
            time.sleep(0.01)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_sigterm_while_main_runs_is_a_clean_stop():
    """The handler main() installs is its clean stop: a SIGTERM during a command unwinds it as Ctrl-C
    does (exit 143: 128 + SIGTERM, issue 46)."""
    import contextlib
    import io

    from triage import cli as cli_module
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        orig = cli_module.cli.commands["analyze"].callback

        def term(*a, **k):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)                           # (the handler raises before this ends)
            return orig(*a, **k)
        cli_module.cli.commands["analyze"].callback = term
        try:
            with pytest.raises(SystemExit) as e:
                cli_module.cli.main(args=["analyze", SAMPLE], prog_name="triage")
        finally:
            cli_module.cli.commands["analyze"].callback = orig
    assert e.value.code == 143
