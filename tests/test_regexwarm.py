"""A big input's run compiles the regexes the last such run compiled in a thread while its scanner waits on
the workers (issue 44, triage/regexwarm.py): the list is saved at the run's end, read back as any cache file,
bounded, and a hostile or stale one is ignored entry by entry; the report is the same with it or without."""
import json
import os
import subprocess
import sys

import pytest

from triage import cachefiles, regexwarm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LOG = os.path.join(HERE, "fixtures", "logs", "real", "gpu", "illegal_memory_access.log")

PROBE = (
    "import json, os, sys\n"
    "from triage.scan import pool\n"
    "pool.POOL_MIN_BYTES = 0\n"
    "os.environ['TRIAGE_JOBS'] = sys.argv[3]\n"
    "from triage import regexwarm\n"
    "from triage.cli import main\n"
    "sys.argv = ['triage', 'analyze', sys.argv[1], '--format', 'json', '-o', sys.argv[2], '--force']\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "new = set(regexwarm._noted) - set(regexwarm._loaded if regexwarm._loaded is not None else regexwarm._read())\n"
    "print(json.dumps({'loaded': len(regexwarm._loaded or []), 'noted': len(regexwarm._noted), 'new': len(new)}))\n")


def _run(tmp_path, out, jobs=4):
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", PROBE, LOG, str(out), str(jobs)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _report(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    d.get("job", {}).pop("analysed_at", None)
    return d


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")
def test_a_pooled_run_saves_what_it_compiled_and_the_next_compiles_it_ahead(tmp_path):
    first = _run(tmp_path, tmp_path / "a.json")
    assert first["loaded"] == 0 and first["noted"] > 10
    saved = json.loads(_read(tmp_path))
    assert len(saved) >= first["noted"] and all(e[0] in ("re", "regex") for e in saved)
    second = _run(tmp_path, tmp_path / "b.json")
    assert second["loaded"] == len(saved)
    assert _report(tmp_path / "a.json") == _report(tmp_path / "b.json")
    # two workers (no core to spare: the scanner is as busy as they are): nothing compiled ahead, and the list,
    # which holds what it compiled, not written again (it was at every exit: ~5 ms of such a run)
    # (the first such run may add what its own scanner compiled, which workers to spare compile themselves)
    # (which rule searches the scanner makes itself depends on time: a worker sends a search that took long enough,
    # so a loaded machine's run may compile a pattern the one before did not, and add it: seen in a CI run here; a
    # run that compiled nothing new writes nothing)
    f = tmp_path / "cache" / regexwarm.NAME
    assert _run(tmp_path, tmp_path / "c.json", jobs=3)["loaded"] == 0
    assert _report(tmp_path / "a.json") == _report(tmp_path / "c.json")
    for i in range(4):
        before = (f.stat().st_ino, f.stat().st_mtime_ns)
        run = _run(tmp_path, tmp_path / "d.json", jobs=3)
        assert run["loaded"] == 0
        if run["new"] == 0:
            assert (f.stat().st_ino, f.stat().st_mtime_ns) == before
            break
    else:
        pytest.fail("every run compiled a pattern the list did not hold")


def _read(tmp_path):
    old = os.environ.get("TRIAGE_CACHE_DIR")
    os.environ["TRIAGE_CACHE_DIR"] = str(tmp_path / "cache")
    try:
        raw = cachefiles.read_own(regexwarm.NAME, regexwarm.MAX_BYTES)
    finally:
        if old is None:
            del os.environ["TRIAGE_CACHE_DIR"]
        else:
            os.environ["TRIAGE_CACHE_DIR"] = old
    assert raw is not None
    return raw.decode("utf-8")


def test_a_hostile_or_stale_list_is_read_entry_by_entry(tmp_path, monkeypatch):
    """Entries of another shape, an engine that is none of ours, an over-long source, a source that does not
    compile (another `regex` version's): skipped; the others compiled."""
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    good = ["regex", r"warm-probe-(\d+) ok", 0, False]
    entries = [["sh", "rm -rf /", 0, False], ["re", "(", 0, False], ["regex", "x" * (regexwarm.MAX_SOURCE + 1), 0, False],
               ["re", 5, 0, False], "junk", ["re", "a", 0], ["re", rb"b".decode(), "0", False], good]
    assert cachefiles.write(regexwarm.NAME, json.dumps(entries).encode())
    got = regexwarm._read()
    assert got == [("re", "(", 0, False), tuple(good)]
    stop = regexwarm.threading.Event()
    regexwarm._compile_all(got, stop)         # ("(" does not compile: skipped, no exception)
    assert cachefiles.write(regexwarm.NAME, b"\xff not json")
    assert regexwarm._read() == []


def test_what_is_noted_is_bounded(monkeypatch):
    monkeypatch.setattr(regexwarm, "_noted", [])
    monkeypatch.setattr(regexwarm, "_seen", set())
    regexwarm.note("regex", "y" * (regexwarm.MAX_SOURCE + 1), 0)
    for i in range(regexwarm.MAX_SOURCES + 10):
        regexwarm.note("re", f"p{i}", 0)
        regexwarm.note("re", f"p{i}", 0)
    regexwarm.note("re", b"bytes\xff", 0)
    assert len(regexwarm._noted) == regexwarm.MAX_SOURCES and regexwarm._noted[0] == ("re", "p0", 0, False)


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="POSIX forks")
def test_no_process_is_forked_while_regexes_are_compiled_ahead(tmp_path, monkeypatch):
    """A fork (a fleet's worker, a second scan's pool) first stops the thread compiling ahead: a child never
    inherits the `regex` cache's lock held by it."""
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    many = [["regex", rf"(?:warm-{i}-(\d+)|x{i}y)+z", 0, False] for i in range(200)]
    assert cachefiles.write(regexwarm.NAME, json.dumps(many).encode())
    monkeypatch.setattr(regexwarm, "_loaded", None)
    w = regexwarm.Warmer().start()
    assert w.thread is not None
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert not w.thread.is_alive() and w not in regexwarm._running


def test_a_source_utf8_cannot_write_is_saved_escaped_and_flags_that_print_are_refused(tmp_path, monkeypatch):
    """A noted source with a lone surrogate (issue 44's review: the exit hook raised UnicodeEncodeError) is written
    as ASCII JSON and read back; a saved entry asking for DEBUG (which prints) or LOCALE is not compiled."""
    import re
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(regexwarm, "_noted", [])
    monkeypatch.setattr(regexwarm, "_seen", set())
    monkeypatch.setattr(regexwarm, "_loaded", None)
    regexwarm.note("re", "lone-\udc80-x", 0)
    assert regexwarm.save()
    assert regexwarm._read() == [("re", "lone-\udc80-x", 0, False)]
    assert cachefiles.write(regexwarm.NAME, json.dumps([["re", "a", re.DEBUG, False], ["re", "b", re.IGNORECASE, False],
                                                        ["regex", "c", 0x200, False], ["re", "d", True, False]]).encode())
    assert regexwarm._read() == [("re", "b", re.IGNORECASE, False)]
