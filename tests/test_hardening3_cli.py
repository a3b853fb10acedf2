"""Issue 46: a `--db` the store cannot use is never an internal error, and a plain path is the file
name as written.  Each: the report first, then one store warning line, the analysis's exit code."""
import os

import pytest

from inproc import run

LOG = "[rank0]: Traceback (most recent call last):\n[rank0]:   File \"train.py\", line 3, in <module>\n" \
      "[rank0]: RuntimeError: boom\n"


def _env():
    return {k: v for k, v in os.environ.items() if k != "TRIAGE_DB"}


@pytest.mark.parametrize("db,why", [
    ("sqlite:///%00", "NUL byte"),                   # was: internal error: ValueError: embedded null byte, exit 4
    ("sqlite:///x%00y.db", "NUL byte"),
    ("sqlite:///?mode=ro", "'mode'"),                # was: SQLAlchemy's warning over two lines, then another
])
def test_a_store_url_it_cannot_use_is_one_warning_after_the_report(tmp_path, db, why):
    r = run(["analyze", "-", "--db", db], input=LOG, env=_env(), cwd=str(tmp_path))
    assert r.returncode == 3, (r.stdout, r.stderr)                     # the analysis's own
    assert "UNEXPLAINED FAILURE" in r.stdout                            # the report first
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("triage: warning: store ") and why in lines[0], r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    r = run(["analyze", "-", "--db", db, "--require-store"], input=LOG, env=_env(), cwd=str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("name", ["my%41.db", "x%00.db", "a b+c@d?e#f.db"])
def test_a_plain_path_is_the_file_as_written(tmp_path, name):
    """`--db 'my%41.db'` wrote `myA.db`; `x%00.db` was an internal error: a plain path is never
    percent-decoded, nor read as a URL's query or fragment."""
    r = run(["analyze", "-", "--db", name], input=LOG, env=_env(), cwd=str(tmp_path))
    assert r.returncode == 3 and r.stderr == "", r.stderr
    assert os.listdir(tmp_path) == [name] or set(os.listdir(tmp_path)) - {name} <= {name + "-wal", name + "-shm"}
    r = run(["known", "list", "--db", name], env=_env(), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr


def test_diff_of_a_config_with_itself_says_a_typo_once(tmp_path):
    """Issue 46 (minor): `triage diff a a` printed the typo warning twice (once per side)."""
    c = tmp_path / "run.yaml"
    c.write_text("model:\n  num_layerz: 3\n")
    r = run(["diff", str(c), str(c)], env=_env())
    assert r.returncode == 0 and r.stdout.strip() == "no differences"
    assert r.stderr.count("num_layerz") == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    d = tmp_path / "new.yaml"
    d.write_text("model:\n  num_layerz: 4\n  hiden_size: 8\n")
    r = run(["diff", str(c), str(d)], env=_env())
    assert r.stderr.count("num_layerz") == 1 and r.stderr.count("hiden_size") == 1, r.stderr
