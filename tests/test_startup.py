"""Issue 27, start-up: a text `triage analyze` of a small log imports only what it uses (the lazy
imports of cli.py, report/, config/), and the shipped catalog's parsed YAML comes from a cache
(patterns.CatalogCache) that a changed pattern file invalidates and that is never trusted blindly."""
import json
import operator
import os
import shutil
import stat
import subprocess
import sys
import time
from typing import Optional

import pytest

from triage import patterns as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# modules a text report of a small log never needs
HEAVY = ("sqlalchemy", "jinja2", "psycopg", "fsspec", "hypothesis", "yaml", "s3fs", "zstandard")
# stdlib modules a text analyze of a small log does without (each cost milliseconds to import)
STDLIB_NOT_NEEDED = ("statistics", "fractions", "decimal", "_strptime", "hashlib", "_hashlib", "calendar", "tempfile", "gzip",
                     "lzma", "shlex", "queue", "zlib", "pickle")
NOT_FOR_TEXT = ("triage.report.markdown", "triage.report.html", "triage.report.junit", "triage.report.jira",
                "triage.report.check_config", "triage.report.comment", "triage.fleet.run", "triage.fleet.render",
                "triage.fleet.html", "triage.report.svg", "triage.fleet.recheck", "triage.suggest", "triage.selftest",
                "triage.watch", "triage.config.settings", "triage.commands")

# a fresh interpreter runs `triage ARGS`, then the probe's own lines print what it left behind (the
# modules: those that triage imported, not those the interpreter's start-up (site, a .pth file) had)
RUN = """
import sys
_before = set(sys.modules)
import json
import operator
sys.argv = ["triage"] + json.loads(sys.argv[1])
import triage.cli
try:
    triage.cli.main()
except SystemExit:
    pass
"""
PROBE = RUN + """print("\\nMODULES " + json.dumps(sorted(set(sys.modules) - _before)))
"""


def _probe(probe, args, tmp_path, tag):
    """(what the probe printed after TAG, the process) of PROBE run in a fresh interpreter."""
    # without `site` (-S: a .pth file of this machine's, e.g. one importing certifi, loads tempfile, shutil,
    # lzma, ... before triage starts), the site-packages on PYTHONPATH instead
    import site
    path = [ROOT] + site.getsitepackages() + [site.getusersitepackages()]
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(path))
    env.pop("TRIAGE_DB", None)
    r = subprocess.run([sys.executable, "-S", "-c", probe, json.dumps(args)], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=120)
    line = [x for x in r.stdout.splitlines() if x.startswith(tag + " ")]
    assert line, r.stdout + r.stderr
    return json.loads(line[-1][len(tag) + 1:]), r


def _modules(args, tmp_path):
    mods, r = _probe(PROBE, args, tmp_path, "MODULES")
    return set(mods), r


def _loaded(mods, names):
    return sorted(m for m in mods for n in names if m == n or m.startswith(n + "."))


def test_text_analyze_of_a_tiny_log_imports_no_heavy_module(tmp_path):
    log = tmp_path / "tiny.log"
    log.write_text("hello\n")
    _modules(["analyze", str(log), "-q"], tmp_path)          # the first run fills the cache
    mods, r = _modules(["analyze", str(log), "-q"], tmp_path)
    assert "no known pitfall found" in r.stdout, r.stderr
    assert "triage.cli" in mods and "triage.report.text" in mods
    assert _loaded(mods, HEAVY) == []
    assert _loaded(mods, NOT_FOR_TEXT) == []
    assert _loaded(mods, STDLIB_NOT_NEEDED) == []
    assert "regex" not in mods          # no rule regex met: the `regex` engine is never imported (scan/rx.py)



@pytest.mark.parametrize("log, primary", [
    ("examples/sample_job.log", "moe-scope-conflict"),
    ("tests/fixtures/logs/real/mcore-0.19.2/args_healthy_te_rng_tracker.log", None),      # megatron's arguments
    ("tests/fixtures/configs/real/bridge-0.6.2/pair-nan-check/summary-good.log", None),   # Bridge's summary
])
def test_a_logs_rule_regexes_are_made_from_the_cache_without_the_regex_packages_parser(tmp_path, log, primary):
    """A log whose lines meet rule regexes (the sample: a dozen of them, the verdict's and the report's) or whose
    config is read (a real arguments block, a real Configuration Summary: the config's values, its launch lines)
    compiles them with `regex` the first time; the next run makes each from the cache by regex's C engine alone: the
    package's Python parser (~90 M instructions of a ~450 M tiny run) is not imported, and the report is the same.
    (The config's helpers called regex.fullmatch(PATTERN, ...) and the like, which imported it: module-level
    lazy patterns now.)"""
    args = ["analyze", os.path.join(ROOT, log), "--format", "json"]
    first, r1 = _modules(args, tmp_path)
    assert "regex._regex_core" in first and "regex" in first, r1.stderr       # (a cold cache: regex compiles)
    again, r2 = _modules(args, tmp_path)
    assert "regex._regex" in again, r2.stderr                                  # the C engine, by itself
    assert _loaded(again, ["regex._regex_core", "regex._main"]) == [] and "regex" not in again

    def report(r):
        out = json.loads(r.stdout[:r.stdout.rindex("\nMODULES ")])
        out["job"].pop("analysed_at", None)         # (the run's own time)
        return out
    assert report(r1) == report(r2)
    assert report(r2)["primary"] == primary
    if primary is None:
        assert report(r2)["config"]


GC_PROBE = """
import gc
import json
import sys
seen = {"after import": None}
gc.disable() if sys.argv[2] == "off" else gc.enable()
import triage.cli
import triage.pipeline
seen["after import"] = gc.isenabled()
real = triage.pipeline.triage
def spy(*a, **k):
    seen["scan"] = gc.isenabled()
    return real(*a, **k)
triage.pipeline.triage = spy
import click
echo = click.echo
def spy_echo(*a, **k):
    seen.setdefault("output", gc.isenabled())
click.echo = spy_echo
sys.argv = ["triage"] + json.loads(sys.argv[1])
try:
    triage.cli.main() if sys.argv[3] == "main" else triage.cli.cli.main(sys.argv[1:], prog_name="triage")
except SystemExit:
    pass
seen["after"] = gc.isenabled()
seen["frozen"] = gc.get_freeze_count() > 0
print("GC " + json.dumps(seen))
"""


@pytest.mark.parametrize("args", [["analyze", "LOG", "-q"], ["schema", "analyze"]])
@pytest.mark.parametrize("entry", ["main", "in-process"])
def test_the_collector_pauses_only_while_a_command_starts(tmp_path, args, entry):
    """Start-up makes tens of thousands of objects and no garbage: the cyclic collector is off while
    triage.cli is imported and a command starts, on for the scan and for every other command, as it
    was afterwards; only the command's own process (main) keeps start-up's objects out of later
    collections (gc.freeze), not a library's or a test's caller; a collector turned off stays off."""
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    args = [str(log) if a == "LOG" else a for a in args]
    for state in ("on", "off"):
        seen, r = _probe(GC_PROBE.replace("sys.argv[2]", repr(state)).replace("sys.argv[3]", repr(entry)),
                         args, tmp_path, "GC")
        on = state == "on"
        assert seen["after import"] is on and seen["after"] is on and seen["output"] is on, (state, seen, r.stderr)
        if args[0] == "analyze":
            assert seen["scan"] is on
        assert seen["frozen"] is (on and entry == "main")


def test_commands_started_in_threads_leave_the_collector_on(tmp_path, monkeypatch):
    """A command starting in one thread while another is still starting (a library user's threads):
    each resumes its own pause, and the collector is on once neither is starting (a flag of one
    command's pause, overwritten by the second's, left it off for good)."""
    import gc
    import threading

    import triage.cli as C
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    gate, entered = threading.Event(), threading.Event()
    real = C.load_patterns

    def slow(dirs):
        entered.set()
        gate.wait(30)            # the first command is inside analyze's start-up (the collector paused)
        return real(dirs)
    monkeypatch.setattr(C, "load_patterns", slow)
    seen = []

    def run(args):
        try:
            C.cli.main(args, prog_name="triage")
        except SystemExit:
            pass
        seen.append(gc.isenabled())
    assert gc.isenabled()
    a = threading.Thread(target=run, args=(["analyze", str(log), "-q"],))
    a.start()
    assert entered.wait(30)
    assert not gc.isenabled()
    b = threading.Thread(target=run, args=(["schema", "analyze"],))
    b.start()
    b.join(30)
    assert not gc.isenabled()            # the first is still starting
    gate.set()
    a.join(30)
    assert gc.isenabled() and seen == [False, True]
    assert C._gc_pauses[0] == 0


def test_a_failed_import_of_the_cli_leaves_the_collector_as_it_was(tmp_path):
    probe = ("import gc, sys\n"
             "sys.modules['click'] = None\n"          # click missing
             "try:\n    import triage.cli\nexcept ImportError:\n    print('GC', gc.isenabled())\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.stdout.strip() == "GC True", r.stderr


def test_the_builtin_hashes_are_hashlibs():
    import hashlib

    from triage import hashing
    for data in (b"", b"x", bytes(range(256)) * 300):
        assert hashing.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        assert hashing.sha1(data).hexdigest() == hashlib.sha1(data).hexdigest()
    h = hashing.sha256()
    h.update(b"a")
    h.update(b"b")
    assert h.hexdigest() == hashlib.sha256(b"ab").hexdigest()


def test_the_regex_flags_triage_names_are_the_regex_modules():
    import regex

    from triage.match import rx
    assert (rx.V0, rx.IGNORECASE, rx.ASCII) == (regex.V0, regex.IGNORECASE, regex.ASCII)
    assert rx.regex.compile is regex.compile and rx.regex.error is regex.error    # the stand-in is the module


def test_json_report_imports_no_rendering_either(tmp_path):
    log = tmp_path / "tiny.log"
    log.write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    mods, r = _modules(["analyze", str(log), "--format", "json"], tmp_path)
    assert json.loads(r.stdout[:r.stdout.rindex("\nMODULES ")])["outcome"] == "pitfall"
    assert _loaded(mods, ("sqlalchemy", "jinja2", "psycopg", "fsspec", "hypothesis")) == []
    assert _loaded(mods, NOT_FOR_TEXT) == []
    assert _loaded(mods, ("triage.report.view", "triage.report.text", "triage.commands")) == []   # the text's


def test_help_imports_neither_the_engine_nor_the_catalog(tmp_path):
    mods, r = _modules(["--help"], tmp_path)
    assert "Usage:" in r.stdout
    assert _loaded(mods, HEAVY + ("regex", "hyperscan", "triage.pipeline", "triage.patterns", "triage.scan",
                                  "triage.verdict", "triage.config", "triage.report.formats")) == []


def test_report_package_names_still_import():
    from triage.report import FORMATS, SUFFIX_FORMAT, render, render_html, render_markdown, to_dict  # noqa: F401
    import triage.report as R
    assert set(R.__all__) <= set(dir(R))
    with pytest.raises(AttributeError):
        R.no_such_name  # noqa: B018
    assert FORMATS[0] == "text" and SUFFIX_FORMAT[".md"] == "markdown"


# --- the catalog cache ------------------------------------------------------------------------------------
def _each_load_a_new_process(monkeypatch):
    """Each load_dir call of the test stands for a process of its own: nothing parsed earlier in this
    process is reused (load_dir's memo, patterns._LOADED), so the cache file is what is tested."""
    monkeypatch.setattr(P, "_LOADED", {})
    monkeypatch.setattr(P, "_LOADED_MAX", 0)


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    """A copy of the shipped pattern files, and a cache directory of the test's own."""
    d = tmp_path / "patterns"
    shutil.copytree(P.builtin_dir(), d)
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(P.CatalogCache, "RACY_S", 0)     # files copied just now are kept (see the racy test)
    _each_load_a_new_process(monkeypatch)
    return d


def _cache_files(tmp_path):
    c = tmp_path / "cache"
    return sorted(f for f in os.listdir(c) if f.startswith("catalog-")) if c.exists() else []


def _no_yaml(monkeypatch):
    def refuse(raw, where):
        raise AssertionError(f"{where} parsed: the cache was not used")
    monkeypatch.setattr(P, "_document", refuse)


def test_catalog_cache_is_written_then_read(catalog, tmp_path, monkeypatch):
    first = P.load_dir(str(catalog), cache=True)
    assert len(_cache_files(tmp_path)) == 1
    assert stat.S_IMODE(os.stat(_catalog_cache(tmp_path)).st_mode) == 0o600
    _no_yaml(monkeypatch)
    again = P.load_dir(str(catalog), cache=True)
    assert [(p.id, p.title, len(p.match)) for p in again] == [(p.id, p.title, len(p.match)) for p in first]
    assert [m.rx.pattern for p in again for m in p.match] == [m.rx.pattern for p in first for m in p.match]


def test_catalog_cache_is_invalidated_when_a_pattern_file_changes(catalog, tmp_path, monkeypatch):
    P.load_dir(str(catalog), cache=True)
    f = catalog / "cuda-oom.yaml"
    text = f.read_text()
    st = os.stat(f)
    f.write_text(text.replace("\ntitle: ", "\ntitle: CHANGED ", 1))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))           # the same size and mtime (not ctime)
    pats = {p.id: p for p in P.load_dir(str(catalog), cache=True)}
    assert pats["cuda-oom"].title.startswith("CHANGED ")
    assert len(_cache_files(tmp_path)) == 2                     # another key
    os.remove(catalog / "gpu-hardware-fault.yaml")              # a file removed: another key again
    assert "gpu-hardware-fault" not in {p.id for p in P.load_dir(str(catalog), cache=True)}
    assert len(_cache_files(tmp_path)) == 3


def _catalog_cache(tmp_path):
    (path,) = _cache_files(tmp_path)
    return tmp_path / "cache" / path


def _parsing(monkeypatch):
    """The pattern files parsed from then on (their YAML read and validated)."""
    called = []
    real = P._document
    monkeypatch.setattr(P, "_document", lambda raw, where: called.append(where) or real(raw, where))
    return called


def test_catalog_cache_keeps_the_validated_patterns(catalog, tmp_path, monkeypatch):
    """Read back, the cache is the patterns themselves: nothing parsed or validated, no regex compiled."""
    first = P.load_dir(str(catalog), cache=True)
    _no_yaml(monkeypatch)
    monkeypatch.setattr(P, "parse_pattern", lambda *a: pytest.fail("validated again"))
    again = P.load_dir(str(catalog), cache=True)
    assert again is not first and repr(again) == repr(first) and [p.path for p in again] == [p.path for p in first]
    rules = [(m, n) for p, q in zip(again, first) for m, n in zip(p.match, q.match)]
    assert rules and all(m.rx._rx is None for m, _ in rules)             # LazyRx: its source only
    assert all((m.rx.pattern, m.rx.flags, m.rx.groups) == (n.rx.pattern, n.rx.flags, n.rx.groups) for m, n in rules)


def test_a_found_catalog_cache_reads_no_pattern_file(catalog, tmp_path, monkeypatch):
    """Found by the files' names, sizes and times: a run reads none of them (~2 ms of 38 files)."""
    n = len(P.load_dir(str(catalog), cache=True))
    monkeypatch.setattr(P, "_read", lambda path: pytest.fail(f"{path} read"))
    assert len(P.load_dir(str(catalog), cache=True)) == n
    f = catalog / "cuda-oom.yaml"
    os.utime(f)                                                 # touched: read (and parsed) again
    with pytest.raises(pytest.fail.Exception, match=r"\.yaml read"):
        P.load_dir(str(catalog), cache=True)


@pytest.mark.parametrize("content", [b"", b"\x00garbage{", b"\x80\x04N.", b"\x80\x04]\x94.", b"(" * 100000,
                                     b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00."])
def test_corrupt_catalog_cache_is_ignored(catalog, tmp_path, monkeypatch, content):
    good = [(p.id, p.title) for p in P.load_dir(str(catalog), cache=True)]
    full = _catalog_cache(tmp_path)
    _cache_rewrite(full, content)            # (its digest right: what the unpickling makes of it)
    parsed = _parsing(monkeypatch)
    assert [(p.id, p.title) for p in P.load_dir(str(catalog), cache=True)] == good
    assert len(parsed) == len(good)
    assert P.CatalogCache.load(full.name, len(good)) is not None                 # rewritten whole


def _cache_content(path):
    """A cache file's content (cachefiles: after its digest header)."""
    from triage import cachefiles
    return cachefiles._unwrap(path.name, path.read_bytes())


def _cache_rewrite(path, data):
    """A cache file rewritten with DATA, as triage writes one (its digest header)."""
    from triage import cachefiles
    path.write_bytes(cachefiles.MAGIC + cachefiles._digest(path.name, data) + data)


def test_a_catalog_cache_of_other_code_is_not_read(catalog, tmp_path, monkeypatch):
    """Made by triage's modules as they were then: one of them edited since (its mtime or size), or
    gone, and the cache is made again, as Python compiles a module whose source changed."""
    import pickle
    good = [(p.id, p.title) for p in P.load_dir(str(catalog), cache=True)]
    full = _catalog_cache(tmp_path)
    magic, fmt, stamps, payload = pickle.loads(_cache_content(full))
    assert any(path.endswith(os.path.join("triage", "patterns.py")) for path, _, _ in stamps)
    for change in (lambda st: (st[0], st[1] + 1, st[2]), lambda st: (st[0], st[1], st[2] + 1),
                   lambda st: (st[0] + ".gone", st[1], st[2])):
        _cache_rewrite(full, pickle.dumps((magic, fmt, [change(stamps[0])] + stamps[1:], payload)))
        parsed = _parsing(monkeypatch)
        assert [(p.id, p.title) for p in P.load_dir(str(catalog), cache=True)] == good and len(parsed) == len(good)
    _cache_rewrite(full, pickle.dumps((magic, fmt + 1, stamps, payload)))           # another format
    assert P.CatalogCache.load(full.name, len(good)) is None
    _cache_rewrite(full, pickle.dumps((magic, fmt, stamps, pickle.dumps(("not", "patterns")))))
    assert P.CatalogCache.load(full.name, 2) is None


def test_patterns_of_files_changed_within_seconds_are_not_kept(catalog, tmp_path, monkeypatch):
    """git's racy-clean rule: a file written twice within one tick of the inode clock keeps its state,
    so patterns are kept only once no file changed in the last RACY_S seconds."""
    monkeypatch.setattr(P.CatalogCache, "RACY_S", 3600)
    P.load_dir(str(catalog), cache=True)
    assert _cache_files(tmp_path) == []
    monkeypatch.setattr(P.CatalogCache, "RACY_S", 2)
    monkeypatch.setattr(time, "time_ns", lambda real=time.time_ns: real() + 10 * 10**9)     # 10 s later
    P.load_dir(str(catalog), cache=True)
    assert len(_cache_files(tmp_path)) == 1


def test_the_yaml_and_regex_installs_are_stamped_in_the_catalog_cache(catalog, tmp_path, monkeypatch):
    """The parser and the regex engine validated the patterns: their files are stamped as triage's
    are (an upgrade changes them: test_a_catalog_cache_of_other_code_is_not_read)."""
    import pickle

    import regex
    import yaml
    P.load_dir(str(catalog), cache=True)
    _, _, stamps, _ = pickle.loads(_cache_content(_catalog_cache(tmp_path)))
    made_by = {path for path, _, _ in stamps}
    assert yaml.__file__ in made_by and regex.__file__ in made_by


def test_a_catalog_cache_is_per_directory_and_load(catalog, tmp_path, monkeypatch):
    """The same files elsewhere, or loaded as a user's (risky regexes refused): another cache."""
    P.load_dir(str(catalog), cache=True)
    other = tmp_path / "elsewhere"
    shutil.copytree(catalog, other)
    pats = P.load_dir(str(other), cache=True)
    assert {os.path.dirname(p.path) for p in pats} == {str(other)} and len(_cache_files(tmp_path)) == 2


def test_catalog_caches_of_earlier_versions_are_removed(catalog, tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "catalog-0123.json").write_text("{}")
    P.load_dir(str(catalog), cache=True)
    assert [f.endswith(".pickle") for f in _cache_files(tmp_path)] == [True]


def test_catalog_cache_writable_by_others_is_not_read(catalog, tmp_path, monkeypatch):
    P.load_dir(str(catalog), cache=True)
    full = _catalog_cache(tmp_path)
    for mode in (0o666, 0o620):
        os.chmod(full, mode)
        assert os.stat(full).st_mode & (stat.S_IWOTH | stat.S_IWGRP)
        called = _parsing(monkeypatch)
        P.load_dir(str(catalog), cache=True)
        assert called                                           # read from the YAML, not from that file
    os.chmod(full, 0o600)
    real = tmp_path / "elsewhere.pickle"
    os.replace(full, real)                                      # a good cache, but reached through a link
    os.symlink(real, full)
    called = _parsing(monkeypatch)
    P.load_dir(str(catalog), cache=True)
    assert called


def test_unwritable_cache_directory_is_no_error(catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "file-not-dir"))
    (tmp_path / "file-not-dir").write_text("x")
    assert len(P.load_dir(str(catalog), cache=True)) == len([f for f in os.listdir(catalog) if f.endswith(".yaml")])


def test_load_all_uses_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    _each_load_a_new_process(monkeypatch)
    n = len(P.load_all())
    _no_yaml(monkeypatch)
    assert len(P.load_all()) == n


def test_one_process_parses_the_same_catalog_once(tmp_path, monkeypatch):
    """load_dir's memo: the same files' bytes, loaded the same way, give the patterns parsed the first
    time (their regexes compiled once); bytes edited, another directory or another way are parsed."""
    monkeypatch.setattr(P, "_LOADED", {})
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    d, other = tmp_path / "patterns", tmp_path / "other"
    shutil.copytree(P.builtin_dir(), d)
    shutil.copytree(P.builtin_dir(), other)
    first = P.load_dir(str(d), cache=True)
    parsed = []
    real = P.parse_pattern
    monkeypatch.setattr(P, "parse_pattern", lambda data, path, *a: parsed.append(path) or real(data, path, *a))
    again = P.load_dir(str(d), cache=True)
    assert parsed == [] and again is not first and len(again) == len(first) and all(map(operator.is_, again, first))
    again.pop()                                                   # the caller's list is its own
    assert len(P.load_dir(str(d), cache=True)) == len(first)
    # another directory with the same bytes: its own patterns (their paths are its files)
    elsewhere = P.load_dir(str(other), cache=True)
    assert len(parsed) == len(first) and {os.path.dirname(p.path) for p in elsewhere} == {str(other)}
    # a user's load of the same files (risky regexes refused) is another load
    P.load_dir(str(d), user=True)
    assert len(parsed) == 2 * len(first)
    # a file edited (the same size and mtime): parsed again, the edit seen
    f = d / "cuda-oom.yaml"
    st = os.stat(f)
    f.write_text(f.read_text().replace("\ntitle: C", "\ntitle: X", 1))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(f).st_size == st.st_size
    pats = {p.id: p for p in P.load_dir(str(d), cache=True)}
    assert pats["cuda-oom"].title.startswith("X") and len(parsed) == 3 * len(first)
    assert P._LOADED_MAX >= len(P._LOADED) == 4


# --- record: dataclasses whose methods are generated on first use ----------------------------------------
_ROW = """
class Row:
    x: int
    y: Optional[str] = None
    z: List[int] = dataclasses.field(default_factory=list)
    w: Tuple[int, ...] = dataclasses.field(default=(), repr=False)
    h: int = dataclasses.field(default=0, compare=False)
    n: int = dataclasses.field(default=3, init=False)
    m: List[int] = dataclasses.field(default_factory=list, init=False, compare=False)
"""


def _twins(frozen, strings=False):
    """The same class made by @dataclass and by @record; STRINGS: its module has `from __future__
    import annotations` (as triage's modules: record collects the fields itself), else its
    annotations are types (record has dataclass collect them)."""
    import dataclasses
    from typing import List, Optional, Tuple

    from triage.record import record
    out = []
    for deco in (dataclasses.dataclass(frozen=frozen), record(frozen=frozen)):
        ns = {"dataclasses": dataclasses, "List": List, "Optional": Optional, "Tuple": Tuple, "__name__": __name__}
        exec(compile(("from __future__ import annotations\n" if strings else "") + _ROW, __file__, "exec",
                     dont_inherit=True), ns)
        out.append(deco(ns["Row"]))
    return out


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("frozen", [False, True])
def test_record_behaves_as_dataclass(frozen, strings):
    import dataclasses
    import inspect
    D, R = _twins(frozen, strings)
    assert [f.type for f in dataclasses.fields(R)][:2] == (["int", "Optional[str]"] if strings else [int, Optional[str]])
    assert R.__doc__ == D.__doc__ and repr(R.__dataclass_params__) == repr(D.__dataclass_params__)
    assert dataclasses.is_dataclass(R)
    assert getattr(R, "__match_args__", None) == getattr(D, "__match_args__", None)   # (3.10+)
    assert [(f.name, f.type, f.default, f.compare, f.repr) for f in dataclasses.fields(R)] == \
        [(f.name, f.type, f.default, f.compare, f.repr) for f in dataclasses.fields(D)]
    assert (R.__hash__ is None) == (D.__hash__ is None) == (not frozen)
    for args, kw in [((1,), {}), ((1, "a", [2], (3,), 4), {}), ((), {"x": 2, "h": 9}), ((), {}), ((1,) * 6, {}),
                     ((1,), {"q": 2})]:
        assert _outcome(lambda: repr(R(*args, **kw))) == _outcome(lambda: repr(D(*args, **kw)))
    assert str(inspect.signature(R.__init__)) == str(inspect.signature(D.__init__))
    assert R.__init__.__annotations__ == D.__init__.__annotations__
    if sys.version_info >= (3, 10):      # 3.9's dataclass names it "__create_fn__.<locals>.__init__"
        assert R.__init__.__qualname__ == D.__init__.__qualname__
    assert (R(1).n, R(1).m, R(1).m is R(1).m) == (D(1).n, D(1).m, False) == (3, [], False)
    r, d = R(1, "a", (2,), (3,), 4), D(1, "a", (2,), (3,), 4)
    assert r == R(1, "a", (2,), (3,), 5) and r != R(2) and r != d and (r == 1) is False
    if frozen:
        assert hash(r) == hash(d) == hash(R(1, "a", (2,), (3,), 7))
    for change in (lambda o: setattr(o, "x", 5), lambda o: setattr(o, "new", 1), lambda o: delattr(o, "x")):
        assert _outcome(lambda: change(R(1))) == _outcome(lambda: change(D(1)))
    assert dataclasses.asdict(r) == dataclasses.asdict(d)
    assert repr(dataclasses.replace(r, x=7)) == repr(dataclasses.replace(d, x=7))


def test_record_leaves_annotations_not_in_the_class_namespace_to_dataclass():
    """Python 3.14 keeps a class's annotations (without `from __future__ import annotations`) in an
    `__annotate__` function, made when read: record's own collection reads only a namespace's
    `__annotations__` dict, so any other class is dataclass's to collect (it found no field: records
    of no field)."""
    import dataclasses

    from triage import record as rec

    class Lazy:
        x = 1
    Lazy.__annotate__ = lambda fmt: {"x": int}
    assert rec._fields(Lazy) is None

    class Strings:
        __annotations__ = {"x": "int"}
    assert [f.name for f in rec._fields(Strings).values()] == ["x"]
    assert [f.name for f in dataclasses.fields(rec.record(frozen=True)(type("E", (), {})))] == []


def test_record_collects_string_annotated_fields_without_dataclass(monkeypatch):
    """triage's modules annotate with strings: record collects their fields itself (dataclass's checks
    of each annotation for ClassVar / InitVar cost ~60 us a class); what dataclass refuses it refuses."""
    import dataclasses
    from typing import ClassVar, List

    from triage.record import record
    calls = []
    real = dataclasses.dataclass
    monkeypatch.setattr(dataclasses, "dataclass", lambda *a, **k: calls.append(a) or real(*a, **k))

    def made(deco, src):
        ns = {"dataclasses": dataclasses, "List": List, "ClassVar": ClassVar, "__name__": __name__}
        try:
            exec(compile("from __future__ import annotations\n" + src, __file__, "exec", dont_inherit=True), ns)
            cls = deco(ns["Row"])
            return ("ok", [(f.name, f.type, f.default, f.init) for f in dataclasses.fields(cls)],
                    {n: getattr(cls, n, "-") for n in ("x", "y", "z", "k")}, getattr(cls, "__match_args__", None))
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return (type(e).__name__, str(e))

    cases = ["class Row:\n x: int\n y: int = dataclasses.field(default=2, init=False)\n z: str = 'a'\n",
             "class Row:\n x: int\n y = dataclasses.field(default=2)\n",                 # a field without a type
             "class Row:\n x: List[int] = []\n",                                          # a mutable default
             "class Row:\n x: int\n k: ClassVar[int] = 3\n"]                              # a ClassVar: not a field
    for src in cases:
        want = made(real, src)
        del calls[:]
        assert made(record, src) == want, src
        assert bool(calls) == ("ClassVar" in src)       # only an annotation that could be a ClassVar needs dataclass
    assert made(record, cases[0])[0] == "ok" and made(record, cases[1])[0] == "TypeError"
    assert made(record, cases[2])[0] == "ValueError"


def test_record_of_a_class_with_a_base_takes_the_inherited_defaults_as_dataclass_does():
    """A plain base's attribute named as a field is that field's default (dataclass reads the class's
    attributes, inherited ones too): record has dataclass collect such a class's fields."""
    import dataclasses

    from triage.record import record

    class Base:
        y = 5
    out = []
    for deco in (dataclasses.dataclass, record):
        ns = {"Base": Base, "__name__": __name__}
        exec(compile("from __future__ import annotations\nclass Row(Base):\n x: int\n y: int\n", __file__, "exec",
                     dont_inherit=True), ns)
        R = deco(ns["Row"])
        out.append(([(f.name, f.default) for f in dataclasses.fields(R)], repr(R(1))))
    assert out[0] == out[1] == ([("x", dataclasses.MISSING), ("y", 5)], "Row(x=1, y=5)")


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is Python 3.13's")
def test_record_supports_copy_replace():
    import copy

    from triage.verdict.types import Evidence
    e = Evidence(*[None] * len(Evidence.__dataclass_fields__))
    assert copy.replace(e, line=7).line == 7


def test_record_refuses_what_it_does_not_support():
    import dataclasses

    from triage.record import record
    with pytest.raises(TypeError, match="__post_init__"):
        @record
        class A:
            x: int

            def __post_init__(self):
                pass

    @dataclasses.dataclass
    class Base:
        x: int
    with pytest.raises(TypeError, match="dataclass base"):
        @record
        class B(Base):
            y: int


def test_shipped_records_are_dataclasses():
    """The report view and verdict types are records: dataclasses to every reader."""
    import dataclasses

    from triage.report import view
    from triage.verdict import types
    for cls in (view.ReportView, view.StatsView, types.Verdict, types.Finding):
        assert dataclasses.is_dataclass(cls) and dataclasses.fields(cls)
    assert types.Verdict.__dataclass_params__.frozen and not types.Finding.__dataclass_params__.frozen
    assert types.Finding.__hash__ is None


# --- lazy regexes: compiled on first use -----------------------------------------------------------------
def test_lazy_re_is_the_compiled_pattern_once_used():
    import copy
    import re

    from triage.lazyre import lazy_re
    x = lazy_re(r"(?P<k>\w+)=(\d+)", re.I)
    assert x.pattern == r"(?P<k>\w+)=(\d+)" and "compiled" not in vars(x)        # .pattern compiles nothing
    ref = re.compile(r"(?P<k>\w+)=(\d+)", re.I)
    assert x.search("a A=12").groups() == ref.search("a A=12").groups()
    assert x.flags == ref.flags and x.groupindex == ref.groupindex and x.groups == 2
    assert x.sub(r"\2", "k=1 j=2") == "1 2" and x.findall("k=1") == [("k", "1")]
    assert vars(x)["compiled"] is re.compile(r"(?P<k>\w+)=(\d+)", re.I)          # re's own cache: the same object
    assert copy.copy(x).pattern == x.pattern
    b = lazy_re(rb"\n[^\n]*\x01")
    assert b.search(b"a\nb\x01").start() == 1
    with pytest.raises(AttributeError):
        x.no_such_method  # noqa: B018


LAZY_PROBE = RUN + """
from triage import redact
from triage.lazyre import LazyPattern
from triage.inputs.ranks import RANKS
built = sorted(n for n, v in vars(redact).items() if isinstance(v, LazyPattern) and "compiled" in vars(v))
print("\\nLAZY " + json.dumps({"redact": built, "ranks": sorted(vars(RANKS))}))
"""


def test_text_analyze_of_a_tiny_log_compiles_no_redaction_or_rank_regex(tmp_path):
    log = tmp_path / "tiny.log"
    log.write_text("hello\n")
    for _ in range(2):                                          # the first run fills the caches
        got, _r = _probe(LAZY_PROBE, ["analyze", str(log)], tmp_path, "LAZY")
    assert got == {"redact": [], "ranks": ["inner", "launchers"]}   # no matcher built: a line of no launcher


def test_rank_reader_builds_each_side_on_first_use():
    from triage.inputs.ranks import RankReader
    r = RankReader()
    assert r.split_prefix("[rank3]: boom") == ("boom", 3)
    assert "prefix_any" in vars(r) and "kinds" not in vars(r)
    assert "prefixes" not in vars(r)           # (each row's own regex: only when they are no one alternation)
    assert r.ranks_in(b"[rank1]: a\n[rank2]: b\n", 0, 22, None) == {1, 2}
    assert "outer_quoted_b" in vars(r)
    with pytest.raises(AttributeError):
        r.no_such_matcher  # noqa: B018


def test_every_command_but_analyze_is_defined_lazily_and_listed(tmp_path):
    mods, r = _modules(["analyze", "--help"], tmp_path)
    assert "triage.commands" not in mods and "--format" in r.stdout
    mods, r = _modules(["--help"], tmp_path)
    assert "triage.commands" in mods
    from triage.cli import _LazyCommands, cli
    help_text = r.stdout.split("\nMODULES ")[0]
    listed = [ln.split()[0] for ln in help_text.split("Commands:")[1].splitlines() if ln.strip()]
    assert listed == sorted(("analyze",) + tuple(_LazyCommands.LAZY))     # triage/commands/ defines exactly the lazy ones
    assert "fleet" in cli.commands and sorted(cli.commands) == listed
    assert cli.get_command(None, "known").name == "known"
    assert "nope" not in cli.commands and cli.commands.get("nope") is None


def test_view_reads_times_as_strptime_did():
    """report.view._when parses the JSON's ISO times without time.strptime (~1 ms of start-up), exactly as it did."""
    import calendar
    import random
    import time

    from triage.report.view import _when

    def before(x):
        import re
        m = re.fullmatch(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z?", x)
        if not m:
            return None
        try:
            t = calendar.timegm(time.strptime(m.group(1) + " " + m.group(2), "%Y-%m-%d %H:%M:%S"))
        except ValueError:
            return None
        return m.group(1), m.group(2), float(t)
    rng = random.Random(27)
    cases = ["2026-12-04T12:39:04Z", "2024-02-29T23:59:60.5Z", "2023-02-29T00:00:00", "0000-01-01T00:00:00Z",
             "9999-12-31T23:59:61Z", "2026-04-31T10:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
             "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:62Z", "x"]
    cases += [f"{rng.randint(0, 9999):04d}-{rng.randint(0, 14):02d}-{rng.randint(0, 33):02d}T"
              f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 63):02d}Z" for _ in range(3000)]
    for x in cases:
        assert _when(x) == before(x), x


def test_timegm_is_calendars():
    """scan.sources.timegm (the timestamp parser's, without importing calendar and datetime) is
    calendar.timegm on every date it is given: a day past the month's end runs on into the next."""
    import calendar
    import random

    from triage.inputs.sources import timegm
    rng = random.Random(4)
    cases = [(1970, 1, 1), (1, 1, 1), (9999, 12, 31), (2000, 2, 29), (1900, 2, 29), (2026, 4, 31), (2024, 12, 31)]
    cases += [(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 31)) for _ in range(20000)]
    for y, mo, d in cases:
        h, mi, s = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 61)
        assert timegm(y, mo, d, h, mi, s) == calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)), (y, mo, d)
    for bad in ((0, 1, 1), (10000, 1, 1), (2026, 0, 1), (2026, 13, 1)):
        with pytest.raises(ValueError):
            timegm(*bad)


# --- record: the compiled __init__ code kept between runs ------------------------------------------------
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")
CODE_PROBE = RUN + """import triage.record as R
print("\\nCODES " + json.dumps([len(R._codes or {}), R._codes_changed]))
"""


def test_a_second_run_compiles_no_record_init(tmp_path):
    """The first run compiles the __init__ of the records it builds and writes their code to the cache
    directory at exit; a second run reads it and compiles none; what it builds is the same."""
    (n1, changed1), r1 = _probe(CODE_PROBE, ["analyze", SAMPLE, "--format", "json"], tmp_path, "CODES")
    files = [p for p in (tmp_path / "cache").iterdir() if p.name.startswith("record-init-")]
    assert n1 > 10 and changed1 and len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"
    (n2, changed2), r2 = _probe(CODE_PROBE, ["analyze", SAMPLE, "--format", "json"], tmp_path, "CODES")
    assert n2 == n1 and not changed2                     # every __init__ came from the cache
    reports = [json.loads(r.stdout.split("\nCODES ")[0]) for r in (r1, r2)]
    for rep in reports:
        rep["job"].pop("analysed_at")                    # the one field that is the clock's
    assert reports[0] == reports[1]


@pytest.mark.parametrize("content", ["empty", "not marshal", "a list", "its key with an int",
                                     "right, but writable by others"])
def test_a_bad_record_code_file_is_compiled_again(tmp_path, monkeypatch, content):
    """A cache file that is not a dict of source -> code, or not one to trust (writable by others), is
    not used: the __init__ is compiled again and the record works as before."""
    import marshal

    import triage.record as R
    from triage import cachefiles
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(R, "_codes_changed", True)        # no write at exit from this test

    def make():
        @R.record
        class Probe:
            a: int
            b: str = "x"
        return repr(Probe(1))
    monkeypatch.setattr(R, "_codes", {})
    want = make()
    ((key, code),) = R._codes.items()                     # the source of Probe's __init__, compiled
    data = {"empty": b"", "not marshal": b"\x00not marshal", "a list": marshal.dumps([key]),
            "its key with an int": marshal.dumps({key: 1}),
            "right, but writable by others": marshal.dumps({key: code})}[content]
    assert cachefiles.write(R._code_name(), data)
    if content == "right, but writable by others":
        os.chmod(cachefiles.path_of(R._code_name()), 0o666)
    monkeypatch.setattr(R, "_codes", None)
    compiled = []
    real = compile
    monkeypatch.setattr("builtins.compile", lambda *a, **k: compiled.append(1) or real(*a, **k))
    assert make() == want and compiled == [1] and list(R._codes) == [key]


def test_a_record_code_cache_that_cannot_be_written_is_silent(tmp_path):
    """The code is written at exit, best effort: a cache directory that cannot be made (here a file
    stands in its way) leaves stderr as it would be, exit code and report unchanged."""
    (tmp_path / "file").write_text("")
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path / "file" / "cache"), PYTHONPATH=ROOT)
    env.pop("TRIAGE_DB", None)
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", SAMPLE, "-q"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "moe-scope-conflict" in r.stdout, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
