"""triage/recache.py: re's compiled patterns kept in the cache directory between runs (issue 44: ~11 ms of a
tiny log's start-up, ~5 ms more before a big input's workers fork).  What is read back gives the very pattern
re compiles (a pattern's equality compares its source, flags and code), a file that is not the cache's is
ignored, and importing triage as a library leaves re as it was."""
import json
import marshal
import os
import re
import subprocess
import sys

import pytest

from triage import cachefiles, recache

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
IMA = os.path.join(HERE, "fixtures", "logs", "real", "gpu", "illegal_memory_access.log")

# patterns of every kind re's code has: groups named and not, look-arounds, classes, repeats, flags, bytes
PATTERNS = [
    (r"^\[rank(?P<rank>\d+)\]:\s*(?:(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)\s+)?", 0),
    (r"(?<=NCCL WARN )\S+(?!x)", re.IGNORECASE),
    (r"[A-Za-z_][\w.]*Error(?:: (.*))?$", re.MULTILINE),
    (r"a{2,5}?b*c+|[^\n]{0,200}", re.ASCII | re.DOTALL),
    (r"(?x) foo \s+ (bar)  # comment", 0),
    (r"(a)(b)?\2\1", 0),
    (rb"\n(?!\[rank\d+\])", 0),
    (rb"(?P<pid>\d+)\s+\[(\d+)\] NCCL INFO", 0),
    ("ünïcode\\s+ẞ", re.IGNORECASE),
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory and recache's state as a new process has it, installed (restored after)."""
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(recache, "_entries", None)
    monkeypatch.setattr(recache, "_changed", False)
    monkeypatch.setattr(recache, "_off", False)
    re.purge()
    with recache.installed():
        yield tmp_path
    re.purge()


def _fresh():
    """recache's state as the next process finds it: nothing in memory, the file to read."""
    recache._entries = None
    recache._changed = False
    re.purge()


def test_patterns_read_back_are_the_ones_re_compiles(cache):
    first = [re.compile(p, f) for p, f in PATTERNS]
    assert recache._changed and len(recache._entries) >= len(PATTERNS)
    assert recache.save() and len(list(cache.glob("re-code-*.marshal"))) == 1
    _fresh()
    again = [re.compile(p, f) for p, f in PATTERNS]
    assert not recache._changed                      # every one read from the file: nothing new to write
    uninstalled = []
    recache.uninstall()
    try:
        re.purge()
        uninstalled = [re.compile(p, f) for p, f in PATTERNS]
    finally:
        recache.install()
    for a, b, c in zip(first, again, uninstalled):
        assert a == b == c and a is not b            # (equality: source, flags and code)
        assert (b.groups, b.groupindex, b.flags) == (c.groups, c.groupindex, c.flags)
    m = again[0].match("[rank12]: 2026-12-03 06:46:32 x")
    assert m and m.group("rank") == "12" and m.group("ts") == "2026-12-03 06:46:32"
    assert again[6].sub(b"|", b"a\n[rank1]b\nc") == b"a\n[rank1]b|c"


def test_code_that_the_engine_refuses_is_compiled_again(cache):
    rx = re.compile(r"(ab|cd)+e")
    recache.save()
    _fresh()
    entries = recache._load()
    key = (r"(ab|cd)+e", 0)
    flags, code, groups, gi, ig = entries[key]
    entries[key] = (flags, [99999] + code[1:], groups, gi, ig)       # not SRE code: _sre.compile raises
    cachefiles.write(recache._name(), marshal.dumps(entries))
    _fresh()
    got = re.compile(r"(ab|cd)+e")
    assert got == rx and got.match("abcde")
    assert recache._entries[key][1] == code                           # the bad entry replaced by the right one


@pytest.mark.parametrize("content", [b"", b"not marshal", marshal.dumps([1, 2]),
                                     marshal.dumps({("a", 0): (0, "x", 0, {}, ())}),
                                     marshal.dumps({"a": 1})])
def test_a_file_that_is_not_the_cache_is_ignored(cache, content):
    assert cachefiles.write(recache._name(), content)
    _fresh()
    assert re.compile("x(y)z").match("xyz").group(1) == "y"
    assert recache._entries == {("x(y)z", 0): recache._entries[("x(y)z", 0)]}


def test_patterns_past_the_bounds_are_not_kept(cache, monkeypatch):
    monkeypatch.setattr(recache, "MAX_ENTRIES", 3)
    for i in range(6):
        assert re.compile(f"p{i}(q)").match(f"p{i}q")
    long = "a" * (recache.MAX_PATTERN + 1)
    assert re.compile(long).match(long)
    assert len(recache._entries) == 3 and all(len(k[0]) < 10 for k in recache._entries)


def test_a_compile_error_is_res_own(cache):
    with pytest.raises(re.error) as e:
        re.compile(r"(unbalanced")
    assert "missing )" in str(e.value)


def test_importing_triage_leaves_re_as_it_was():
    code = ("import re, re._compiler as c; before = c.compile; import triage.cli, triage.pipeline; "
            "assert c.compile is before, c.compile; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.stdout.strip() == "ok", r.stderr


def test_a_run_writes_the_cache_and_the_next_reads_it(tmp_path):
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    # (the second run counts what it compiled itself: none of the first run's patterns)
    probe = ("import sys, runpy, re._compiler as c; import triage.recache as R; sys.argv = ['triage', 'analyze', "
             f"{IMA!r}, '-q']\ntry:\n    runpy.run_module('triage', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('entries', len(R._entries or {}), 'changed', R._changed, file=sys.stderr)")
    out = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120,
                           env=env)
        assert r.returncode == 0 and "illegal" in r.stdout.lower(), r.stderr    # (its exit caught)
        out.append(r.stderr.strip().splitlines()[-1].split())
    assert len(list(tmp_path.glob("re-code-*.marshal"))) == 1
    assert out[0][3] == "True" and int(out[0][1]) >= 50           # the first run compiled and kept them
    assert out[1][1] == out[0][1] and out[1][3] == "False"         # the second read them all: nothing written


# -- the `regex` package's patterns --------------------------------------------------------------------------------

regex = pytest.importorskip("regex")

RX_PATTERNS = [
    (r"(?P<rank>\d+)\]:\s*(?P<msg>.*?)\s*$", regex.V0),
    (r"CUDA error: an illegal memory access was encountered", regex.V0 | regex.IGNORECASE),
    (r"(?<=NCCL WARN )\S+(?!x)|\bwatchdog\b", regex.V0),
    (r"^\s*File \"(.+)\", line (\d+)", regex.V1 | regex.MULTILINE),
    (rb"NCCL (WARN|INFO) \d+", regex.V0 | regex.IGNORECASE),
    (r"(?i)straße\s+(\p{Lu}+)", regex.V1),
    (r"a{2,5}?b*c+|[^\n]{0,200}", regex.V0 | regex.DOTALL),
]
RX_TEXTS = ["[rank12]: NCCL WARN Timeout  ", "cuda ERROR: An Illegal Memory Access was encountered",
            '  File "/opt/x.py", line 42\n', "STRASSE ÄB", "aaabbbccc", "xx\nwatchdog"]


@pytest.fixture
def rx_cache(cache, monkeypatch):
    """cache, with regex's hook installed and its state as a new process has it."""
    monkeypatch.setattr(recache, "_rx_entries", None)
    monkeypatch.setattr(recache, "_rx_changed", False)
    recache._rx_live.clear()
    recache._rx_added.clear()
    regex.purge()
    recache.regex_imported()
    assert recache._rx_main is not None
    yield cache
    regex.purge()


def _rx_fresh():
    recache._rx_entries = None
    recache._rx_changed = False
    recache._rx_live.clear()
    recache._rx_added.clear()
    regex.purge()


def _behaviour(rx):
    out = [rx.pattern, rx.flags, rx.groups, dict(rx.groupindex)]
    for t in RX_TEXTS:
        t = t.encode() if isinstance(rx.pattern, bytes) else t
        m = rx.search(t)
        out.append(None if m is None else (m.span(), m.groups()))
        out.append(rx.findall(t))
    return out


def test_regex_patterns_read_back_behave_as_regex_compiles_them(rx_cache):
    first = [regex.compile(p, f) for p, f in RX_PATTERNS]
    assert recache._rx_changed and len(recache._rx_entries) == len(RX_PATTERNS)
    assert recache._rx_save() and len(list(rx_cache.glob("regex-code-*.marshal"))) == 1
    _rx_fresh()
    again = [regex.compile(p, f) for p, f in RX_PATTERNS]
    assert not recache._rx_changed and len(recache._rx_live) == len(RX_PATTERNS)      # all made from the file
    assert regex.compile(*RX_PATTERNS[0]) is again[0]                                   # (one object per pattern)
    recache._rx_uninstall()
    regex.purge()
    own = [regex.compile(p, f) for p, f in RX_PATTERNS]
    recache.regex_imported()
    for a, b, c in zip(first, again, own):
        assert _behaviour(a) == _behaviour(b) == _behaviour(c)


def test_regex_named_lists_and_locale_are_not_kept(rx_cache):
    assert regex.compile(r"\L<words>", regex.V0, words=["nccl", "cuda"]).search("a cuda b")
    assert regex.compile(rb"\w+", regex.V0 | regex.LOCALE).search(b"ab")
    assert regex.compile(r"(?L)\w+".encode(), regex.V0).search(b"ab")
    assert not recache._rx_entries


def test_regex_entries_that_are_not_the_caches_are_ignored(rx_cache):
    """The file is read whole and an entry is checked when a compile takes it (a run takes a few of ~260): one
    that is not the cache's is dropped and its pattern compiled as regex does (and kept again, right)."""
    rx = regex.compile(r"(ab|cd)+e", regex.V0)
    recache._rx_save()
    _rx_fresh()
    entries = recache._rx_load()
    (key, e), = entries.items()
    assert recache._rx_valid(key, e) and type(e[1]) is bytes
    bad = {key: e[:4] + ({"x": ["y"]},) + e[5:],                          # named lists: never kept
           (key[0] + "x", key[1], key[2]): e[:1] + ([1, 2],) + e[2:],      # code that is not its words' bytes
           (key[0] + "y", key[1], key[2]): e[:1] + (e[1][:-1],) + e[2:],   # code cut inside a word
           (key[0] + "z", key[1], key[2]): e[:1] + (b"",) + e[2:],         # no code
           ("y", 0, 0): "not a tuple"}
    assert not any(recache._rx_valid(k, v) for k, v in bad.items())
    cachefiles.write(recache._rx_name(), marshal.dumps(bad))
    _rx_fresh()
    pats = [r"(ab|cd)+e", r"(ab|cd)+ex", r"(ab|cd)+ey", r"(ab|cd)+ez"]
    got = [regex.compile(p, regex.V0) for p in pats]
    assert not recache._rx_live                                            # none made from the file
    kept = {k[0]: v for k, v in recache._rx_entries.items() if recache._rx_valid(k, v)}
    assert sorted(kept) == sorted(pats)                                    # each kept again, right
    recache._rx_uninstall()
    regex.purge()
    own = [regex.compile(p, regex.V0) for p in pats]
    recache.regex_imported()
    assert [_behaviour(g) for g in got] == [_behaviour(o) for o in own]
    assert _behaviour(got[0]) == _behaviour(rx)


def test_regex_patterns_are_made_from_the_cache_by_the_c_engine_before_the_package_is_imported(cache):
    """rx_cached (match/rx.py's LazyRx) makes a kept pattern with regex's C engine loaded by itself, as the import
    system loads it: the package imported afterwards takes that module, and its compile the same pattern."""
    probe = r"""
import sys
import triage.recache as R
R.install()
from triage.match import rx
pats = [(r"(?P<kind>CUDA|NCCL) error: (\w+) at (\d+)", rx.V0), (r"watchdog (?:caught|thread)", rx.V0 | rx.IGNORECASE)]
if sys.argv[1] == "keep":
    for p, f in pats:
        rx.LazyRx(p, f).compiled()
    R._rx_save()
    print("kept", len(R._rx_entries))
else:
    got = [rx.LazyRx(p, f).compiled() for p, f in pats]
    before = sorted(m for m in sys.modules if m.split(".")[0] == "regex")
    m = got[0].search("x NCCL error: unhandled at 12", timeout=0.05)
    out = [before, m.groups(), m.group("kind"), m.span(3), bool(got[1].search("WATCHDOG Thread"))]
    import regex
    out += [rx.regex.compile(*pats[0]) is got[0], sys.modules["regex._main"]._regex is sys.modules["regex._regex"],
            got[0].sub(r"<\1>", "CUDA error: a at 1 q")]
    print(repr(out))
"""
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    run = [subprocess.run([sys.executable, "-c", probe, a], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120) for a in ("keep", "use")]
    assert run[0].stdout.strip() == "kept 2", run[0].stderr
    assert run[1].stdout.strip() == repr([["regex._regex"], ("NCCL", "unhandled", "12"), "NCCL", (27, 29), True,
                                          True, True, "<CUDA> q"]), run[1].stderr


def test_a_pool_workers_compiles_are_kept_by_the_scanner(rx_cache):
    """A worker exits without writing the cache: what it compiled (rx_taken, sent with its results) the scanner keeps
    (rx_merge) and writes at exit, so the next run's workers make those patterns from the file."""
    got = [regex.compile(p, f) for p, f in RX_PATTERNS[:3]]
    sent = recache.rx_taken()
    assert len(sent) == 3 and recache.rx_taken() == {}          # (taken once)
    _rx_fresh()                                                  # the scanner's process: none of them
    recache.rx_merge(sent)
    bad = {("x", 0, 0): "not an entry", **{(k[0] + "zz", k[1], k[2]): v[:1] + (b"",) + v[2:] for k, v in sent.items()}}
    recache.rx_merge(bad)
    assert recache._rx_changed and all(recache._rx_entries[k] == v for k, v in sent.items())
    assert not set(bad) & set(recache._rx_entries)                     # (entries that are not the cache's: refused)
    assert recache._rx_save()
    _rx_fresh()
    again = [regex.compile(p, f) for p, f in RX_PATTERNS[:3]]
    assert len(recache._rx_live) == 3 and not recache._rx_changed     # made from the file
    assert [_behaviour(a) for a in again] == [_behaviour(g) for g in got]


def test_a_scanner_that_never_imports_regex_writes_its_workers_compiles(cache):
    """rx_merge's entries are written at exit by a scanner whose own patterns all came from the file (the package
    never imported there), and the next run makes them from the file; the warmer's compile of a pattern the file
    lacks goes through the cache's hook (the package imported by the stand-in), so it is kept too."""
    keep = r"""
import pickle, sys
import triage.recache as R
R.install()
from triage.match import rx
rx.LazyRx(r"worker-only (\d+) rule", rx.V0).compiled()
with open(sys.argv[2], "wb") as f:
    pickle.dump(R.rx_taken(), f)
import os
os._exit(0)          # (as a pool worker ends: the cache not written)
"""
    merge = r"""
import pickle, sys
import triage.recache as R
R.install()
R.rx_merge(pickle.load(open(sys.argv[2], "rb")))
print("merged", R._rx_changed, "regex._main" in sys.modules)
"""
    use = r"""
import sys
import triage.recache as R
R.install()
got = R.rx_cached(r"worker-only (\d+) rule", 0x2000)
from triage import regexwarm
regexwarm._regex_compile(r"warmed (\w+)", 0x2000)
print("made", got is not None and got.match("worker-only 12 rule").group(1), "hooked", R._rx_main is not None,
      "kept", (r"warmed (\w+)", 0x2000, 0x2000) in (R._rx_entries or {}))
"""
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(cache / "c"), PYTHONPATH=ROOT)
    side = str(cache / "entries.pickle")
    out = []
    for probe in (keep, merge, use):
        r = subprocess.run([sys.executable, "-c", probe, "x", side], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        out.append(r.stdout.strip())
    assert out[1] == "merged True False"
    assert out[2] == "made 12 hooked True kept True"


def test_the_regex_default_version_is_the_packages(cache):
    assert recache.RX_DEFAULT_VERSION == regex.DEFAULT_VERSION == regex.V0


def test_a_run_writes_the_regex_cache_and_the_next_compiles_none(tmp_path):
    env = dict(os.environ, TRIAGE_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    probe = ("import sys, runpy; import triage.recache as R; sys.argv = ['triage', 'analyze', "
             f"{IMA!r}, '-q']\ntry:\n    runpy.run_module('triage', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('entries', len(R._rx_entries or {}), 'changed', R._rx_changed, 'made', len(R._rx_live), "
             "file=sys.stderr)")
    out = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120,
                           env=env)
        assert r.returncode == 0 and "illegal" in r.stdout.lower(), r.stderr
        out.append(r.stderr.strip().splitlines()[-1].split())
    assert len(list(tmp_path.glob("regex-code-*.marshal"))) == 1
    assert out[0][3] == "True" and int(out[0][1]) >= 100        # (the catalog's rules validated: a first run's)
    assert out[1][3] == "False" and int(out[1][5]) >= 10         # the second made from the file: none new


def test_a_regex_pattern_pickled_while_installed_is_regexs_own_pickle(rx_cache):
    """regex pickles a pattern as its C engine's compile and arguments: the stand-in that captures them is there
    only while a miss compiles (it was there all along: a pattern could not be pickled -- "cannot pickle 'module'
    object" -- and then named triage's function), so a pickle made while installed is regex's own."""
    import pickle
    p = regex.compile(r"(?P<rank>\d+)\]: (.*)", regex.V0)
    data = pickle.dumps(p)
    assert b"triage" not in data and b"regex._regex" in data
    recache._rx_save()
    _rx_fresh()
    q = regex.compile(r"(?P<rank>\d+)\]: (.*)", regex.V0)
    assert recache._rx_live and pickle.dumps(q) == data       # (made from the file: the same pickle)
    assert _behaviour(pickle.loads(data)) == _behaviour(p)
    r = subprocess.run([sys.executable, "-c", "import pickle, sys; p = pickle.loads(sys.stdin.buffer.read()); "
                        "print(p.match('12]: x').group('rank'))"], input=data, capture_output=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert r.stdout.strip() == b"12", r.stderr


def test_threads_compiling_at_once_keep_each_their_own(rx_cache):
    """The warmer compiles in a thread while the scanner compiles (regexwarm.py): each thread's capture is its
    own, so every entry kept is its own pattern's."""
    import threading
    pats = [(rf"thread{i}-(\d+)-{'x' * i}", regex.V0) for i in range(60)]
    errors = []

    def work(part):
        try:
            for p, f in part:
                assert regex.compile(p, f).pattern == p
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(pats[i::3],)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    recache._rx_save()
    _rx_fresh()
    for p, f in pats:
        rx = regex.compile(p, f)
        n = pats.index((p, f))
        assert rx.match(f"thread{n}-42-{'x' * n}").group(1) == "42"
    assert len(recache._rx_live) == len(pats)



def test_patterns_re_may_warn_of_are_compiled_by_re_each_time(cache):
    """re's parser warns of a nested set or a set operation to come (FutureWarning): such a pattern is not kept
    (from the cache it would warn never, compiled here twice), so it warns once, every run."""
    import warnings
    for p in (r"[[a]", r"[a-z--b]", r"[a&&b]", r"x[a~~]", r"[a||]"):
        for _ in range(2):
            re.purge()
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                re.compile(p)
            assert [w.category for w in got] == [FutureWarning], (p, got)
            recache.save()
            _fresh()
    assert not recache._entries


def test_an_engine_that_takes_other_arguments_turns_the_cache_off(cache, monkeypatch):
    """Where _sre.compile is not what recache reads (another Python's), re compiles as it does, and the cache is
    off for the process: a miss's compile fails, re's own pattern is returned (a bad pattern is re's own error)."""
    parts = recache._internals()

    class OtherSre:
        @staticmethod
        def compile(*a):
            raise TypeError("compile() takes 7 arguments")
    monkeypatch.setattr(recache, "_parts", (parts[0], parts[1], OtherSre))
    assert re.compile(r"ab(c)").match("abc").group(1) == "c"
    assert recache._off and not recache._entries
    with pytest.raises(re.error):
        re.compile(r"(bad")


def test_triage_regex_cache_0_compiles_on_every_run(tmp_path):
    """TRIAGE_REGEX_CACHE=0: nothing installed, no file written, the same report (as TRIAGE_TEMPLATE_CACHE=0 does
    for the templates)."""
    outs = []
    for value, d in (("0", tmp_path / "off"), ("1", tmp_path / "on")):
        env = dict(os.environ, TRIAGE_CACHE_DIR=str(d), TRIAGE_REGEX_CACHE=value, PYTHONPATH=ROOT)
        r = subprocess.run([sys.executable, "-m", "triage", "analyze", IMA, "--format", "json"], capture_output=True,
                           text=True, cwd=ROOT, timeout=120, env=env)
        assert r.returncode == 1, r.stderr
        report = json.loads(r.stdout)
        report.get("job", {}).pop("analysed_at", None)
        outs.append(report)
        names = {p.name.split("-cpython")[0] for p in d.iterdir()} if d.exists() else set()
        assert ({"re-code", "regex-code"} & names) == (set() if value == "0" else {"re-code", "regex-code"}), names
    assert outs[0] == outs[1]


def test_an_escaped_bracket_before_a_set_is_kept_and_what_re_warns_of_never_is(cache):
    """_may_warn reads the sets (issue 44): "\\[[0-9]" -- an escaped bracket, then a set -- holds "[[" but warns of
    nothing, and is kept (the launcher rows' rank matchers were compiled anew every run); on random patterns of
    brackets, escapes and set operators, every pattern re warns of is one _may_warn says may warn."""
    import random
    import warnings
    for p in (r"\[[0-9]{1,10}\]:", r"x\[[VIWEF]\]", r"a--b", r"(?:x||y)"):
        re.compile(p)
        assert (p, 0) in recache._entries, p
    alpha = ["[", "]", "^", "-", "&", "~", "|", "\\", "a", "\\[", "\\]", "(", ")"]
    rnd = random.Random(44)
    warned = 0
    for _ in range(20000):
        p = "".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 8)))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            try:
                recache._original(p)
            except re.error:
                continue
        if got:
            warned += 1
            assert recache._may_warn(p), p
    assert warned > 20


def test_a_verbose_patterns_comments_are_skipped_as_re_skips_them(cache):
    """A VERBOSE pattern is read for what re may warn of with its comments skipped (redact's secret names: "--" in
    the pattern, not in a set, was compiled by re every run); on random verbose patterns of brackets, escapes, set
    operators, comments, newlines and blanks, every one re warns of is one _may_warn says may warn, and some that
    hold a warning's characters only in a comment or outside a set are kept."""
    import random
    import warnings
    p = "(?P<flag>--?[a-z]+)  # a flag, --x or -x [[ in a comment\n  | [ab]"
    re.compile(p, re.X)
    assert not recache._may_warn(p, re.X) and (p, re.X) in recache._entries
    assert recache._may_warn("a # comment \n [[b]", re.X)
    assert not recache._may_warn("a # comment \\\n [[b]", re.X)    # (an escaped newline: the comment goes on)
    for p, flags in (("(?#c)[[a]", re.X), ("(?-x:#)[[a]", re.X), ("(?ix)#[\n[[a]", 0), ("(?#[)[[a]", 0),
                     ("(?i-x:#)[[a]", re.X)):     # (a comment group; verbose set or cleared inline)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            recache._original(p, flags)
        assert got and recache._may_warn(p, flags), p
    alpha = ["[", "]", "^", "-", "&", "~", "|", "\\", "a", "\\[", "\\#", "#", "\n", " ", "(", ")", "\\\n",
             "(?#", "(?-x:", "(?ix)", "(?x:", "(?i:"]
    rnd = random.Random(4444)
    warned = kept = 0
    for _ in range(20000):
        p = "".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 10)))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            try:
                recache._original(p, re.X)
            except re.error:
                continue
        if got:
            warned += 1
            assert recache._may_warn(p, re.X), p
        elif any(w in p for w in recache._WARNS) and not recache._may_warn(p, re.X):
            kept += 1
    assert warned > 3 and kept > 3
