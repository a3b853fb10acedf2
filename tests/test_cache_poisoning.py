"""Issue 46: cache poisoning.  Where the cache directory could be written by someone else, swapping the
victim's own two `anchors-*.hsdb` files made an illegal-memory-access log `no known pitfall found`.  A
cache file now holds the digest of its name and content (a swapped one is compiled again, never used),
and a cache directory another user owns or anyone else may write is not used (one warning line).
Each run is a process of its own (an in-process run keeps its database in memory)."""
import os
import shutil
import stat
import subprocess
import sys

import pytest

from triage.match import anchors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
IMA = os.path.join(HERE, "fixtures", "logs", "real", "gpu", "illegal_memory_access.log")


def _env(xdg):
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CACHE_DIR", "TRIAGE_DB")}
    env.update(XDG_CACHE_HOME=str(xdg), PYTHONPATH=ROOT)
    return env


def _analyze(xdg):
    return subprocess.run([sys.executable, "-m", "triage", "analyze", IMA, "-q"], capture_output=True, text=True,
                          env=_env(xdg), cwd=ROOT, timeout=120)


@pytest.mark.skipif(not anchors.hyperscan_available(), reason="the hyperscan wheel")
def test_two_anchor_databases_swapped_are_compiled_again(tmp_path):
    r = _analyze(tmp_path)
    assert r.returncode == 1 and "illegal" in r.stdout.lower(), (r.stdout, r.stderr)
    d = tmp_path / "triage"
    dbs = sorted(d.glob("anchors-*.hsdb"), key=lambda p: p.stat().st_size)
    assert len(dbs) >= 2, os.listdir(d)
    small, big = dbs[0], dbs[-1]             # the redactor's hints and the catalog's anchors
    tmp = d / "swap"
    os.rename(small, tmp)
    os.rename(big, small)
    os.rename(tmp, big)
    r = _analyze(tmp_path)
    assert r.returncode == 1 and "illegal" in r.stdout.lower(), (r.stdout, r.stderr)   # was: no known pitfall
    assert r.stderr == ""
    r = _analyze(tmp_path)                   # written again, right: read back
    assert r.returncode == 1 and r.stderr == ""


@pytest.mark.parametrize("mode", [0o770, 0o775, 0o777, 0o1777])
def test_a_cache_directory_others_may_write_is_not_used(tmp_path, mode):
    r = _analyze(tmp_path)
    d = tmp_path / "triage"
    before = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}
    os.chmod(d, mode)
    r = _analyze(tmp_path)
    assert r.returncode == 1 and "illegal" in r.stdout.lower()
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("triage: warning: cache directory ") and "not used" in lines[0], \
        r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == before      # nothing read, nothing written


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="a directory of another user needs root")
def test_a_link_to_another_users_sticky_directory_is_not_used(tmp_path):
    """`~/.cache/triage` a symlink to a /tmp-like 1777 directory owned by someone else: its owner may
    rename the victim's files in it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 65534, 65534)
    os.chmod(shared, 0o1777)
    xdg = tmp_path / "home-cache"
    xdg.mkdir()
    (xdg / "triage").symlink_to(shared)
    r = _analyze(xdg)
    assert r.returncode == 1 and "illegal" in r.stdout.lower()
    assert "owned by another user" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert os.listdir(shared) == []
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777
    shutil.rmtree(shared)
