"""Issue 24 (part): the fleet and known-issue commands a platform team relies on."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def triage(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_fleet_report_on_a_store_path_that_does_not_exist_is_an_error_not_a_new_store(tmp_path):
    missing = tmp_path / "typo" / "triage.db"
    for cmd in (["fleet", "report"], ["known", "list"], ["known", "remove", "x"]):
        r = triage(*cmd, "--db", str(missing))
        assert r.returncode == 2 and "no store there" in r.stderr and r.stderr.count("\n") == 1, (cmd, r.stderr)
        assert not missing.exists() and not missing.parent.exists()
