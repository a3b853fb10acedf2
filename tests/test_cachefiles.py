"""triage's cache directory (triage/cachefiles.py): files written whole with mode 0600, pruned to the
newest, read back only when they are this user's regular files that nobody else can write; and the
caches built on it (the anchor database, the regex sources known to compile) ignore any other file."""
import os
import stat

import pytest

from triage import cachefiles
from triage.match import anchors, rx


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(d))
    return d


def test_written_whole_private_and_read_back(cache):
    assert cachefiles.write("thing-1.bin", b"payload")
    assert stat.S_IMODE(os.stat(cache / "thing-1.bin").st_mode) == 0o600
    assert cachefiles.read_own("thing-1.bin") == b"payload"
    assert [p.name for p in cache.iterdir()] == ["thing-1.bin"]        # no temporary file left
    assert cachefiles.read_own("missing.bin") is None


@pytest.mark.parametrize("spoil", ["others-can-write", "group-can-write", "link", "hard-link", "hard-linked-here",
                                   "directory", "too-big"])
def test_a_file_not_ours_alone_is_not_read(cache, tmp_path, spoil):
    cachefiles.write("thing-1.bin", b"payload")
    f = cache / "thing-1.bin"
    if spoil == "others-can-write":
        os.chmod(f, 0o602)
    elif spoil == "group-can-write":
        os.chmod(f, 0o620)
    elif spoil == "link":
        (tmp_path / "real.bin").write_bytes(b"payload")
        f.unlink()
        f.symlink_to(tmp_path / "real.bin")
    elif spoil == "hard-link":          # one of this user's files (a report, say) linked in under a cache name
        (tmp_path / "report.txt").write_bytes(b"payload")
        f.unlink()
        os.link(tmp_path / "report.txt", f)
    elif spoil == "hard-linked-here":   # the cache file itself has another name elsewhere
        os.link(f, tmp_path / "elsewhere.bin")
    elif spoil == "directory":
        f.unlink()
        f.mkdir()
    elif spoil == "too-big":
        assert cachefiles.read_own("thing-1.bin", max_bytes=6) is None
        return
    assert cachefiles.read_own("thing-1.bin") is None


def test_nothing_is_read_from_a_directory_anyone_else_may_write_into(cache, capsys, monkeypatch):
    """Anyone who may write into it may rename files in it (one of this user's over another, under a
    cache name): issue 46 refuses a group-writable directory and a sticky one too (its owner, another
    user for a link to a /tmp-like directory, may still rename), with one warning line."""
    monkeypatch.setattr(cachefiles, "_WARNED", set())
    cachefiles.write("thing-1.bin", b"payload")
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700               # made this user's only
    assert cachefiles.read_own("thing-1.bin") == b"payload"
    for mode in (0o777, 0o1777, 0o775, 0o770, 0o1770):
        os.chmod(cache, mode)
        assert cachefiles.read_own("thing-1.bin") is None, oct(mode)
        assert cachefiles.write("thing-2.bin", b"x") is False          # nothing written where nothing is read
        assert not (cache / "thing-2.bin").exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "triage: warning: cache directory" in err and "not used" in err, err
    os.chmod(cache, 0o700)
    assert cachefiles.read_own("thing-1.bin") == b"payload"


def test_a_cache_file_is_what_its_name_says(cache):
    """Two of this user's own cache files swapped (renamed over each other) are not read: each holds the
    digest of its name and content; and a file of the format before it (no digest) is not read."""
    cachefiles.write("thing-1.bin", b"one")
    cachefiles.write("thing-2.bin", b"two")
    os.rename(cache / "thing-1.bin", cache / "tmp")
    os.rename(cache / "thing-2.bin", cache / "thing-1.bin")
    os.rename(cache / "tmp", cache / "thing-2.bin")
    assert cachefiles.read_own("thing-1.bin") is None and cachefiles.read_own("thing-2.bin") is None
    f = cache / "thing-3.bin"
    f.write_bytes(b"payload")                 # as triage wrote it before
    os.chmod(f, 0o600)
    assert cachefiles.read_own("thing-3.bin") is None
    cachefiles.write("thing-3.bin", b"payload")
    data = bytearray(f.read_bytes())
    data[-1] ^= 1                             # one bit of the content changed
    f.write_bytes(bytes(data))
    assert cachefiles.read_own("thing-3.bin") is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_another_users_file_is_not_read(cache):
    cachefiles.write("thing-1.bin", b"payload")
    os.chown(cache / "thing-1.bin", 65534, 65534)
    assert cachefiles.read_own("thing-1.bin") is None


def test_only_the_newest_are_kept(cache):
    for i in range(5):
        assert cachefiles.write(f"thing-{i}.bin", b"x", keep=("thing-", ".bin", 3))
        os.utime(cache / f"thing-{i}.bin", (1000 + i, 1000 + i))
    cachefiles.write("other-0.txt", b"y", keep=("thing-", ".bin", 3))
    assert sorted(p.name for p in cache.iterdir()) == ["other-0.txt", "thing-2.bin", "thing-3.bin", "thing-4.bin"]


def test_an_unwritable_cache_directory_is_no_error(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("x")
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(blocked))
    assert cachefiles.write("thing-1.bin", b"payload") is False
    assert cachefiles.read_own("thing-1.bin") is None


@pytest.mark.skipif(not anchors.hyperscan_available(), reason="the hyperscan wheel")
def test_an_anchor_database_others_can_write_is_compiled_again(cache):
    made = anchors.AnchorSet([anchors.Anchor("widget exploded", 1)])
    (f,) = [p for p in cache.iterdir() if p.name.startswith("anchors-")]
    key = f.name[len("anchors-"):-len(".hsdb")]
    assert anchors.load_cached(key) is not None
    os.chmod(f, 0o666)
    assert anchors.load_cached(key) is None
    again = anchors.AnchorSet([anchors.Anchor("widget exploded", 1)])      # compiled, and stored again
    assert again.scan(b"x\nthe widget exploded\n") == made.scan(b"x\nthe widget exploded\n") == {2: {1}}
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600


def test_regex_sources_others_can_write_are_not_trusted(cache, monkeypatch):
    monkeypatch.setattr(rx, "VALIDATED", rx.ValidatedCache())
    rx.compile_rx(r"widget (exploded|melted)")
    rx.remember_valid()
    (f,) = [p for p in cache.iterdir() if p.name.startswith("regex-ok-")]
    monkeypatch.setattr(rx, "VALIDATED", rx.ValidatedCache())
    assert rx.VALIDATED.loaded()                     # read back: this user's file
    os.chmod(f, 0o666)
    monkeypatch.setattr(rx, "VALIDATED", rx.ValidatedCache())
    assert rx.VALIDATED.loaded() == set()            # not trusted: every source is validated again


@pytest.mark.skipif(not anchors.hyperscan_available(), reason="the hyperscan wheel")
def test_each_anchor_set_has_its_own_cached_database(cache):
    """A database is named by its anchors (text, regex or literal, case): a set differing in any of
    them is compiled, never another set's database read back; the same set again is read back."""
    line = b"x\nWidget.Exploded\nwidget exploded\n"
    sets = [[anchors.Anchor("widget.exploded", 1)],
            [anchors.Anchor("widget.exploded", 1, ignore_case=True)],
            [anchors.Anchor("widget.exploded", 1, regex=True)],
            [anchors.Anchor("widget.exploded", 1, ignore_case=True, regex=True)]]
    hits = [anchors.AnchorSet(s).scan(line) for s in sets]
    assert hits == [{}, {2: {1}}, {18: {1}}, {2: {1}, 18: {1}}]
    assert len([p for p in cache.iterdir() if p.name.startswith("anchors-")]) == 4
    assert [anchors.AnchorSet(s).scan(line) for s in sets] == hits
    assert len([p for p in cache.iterdir() if p.name.startswith("anchors-")]) == 4


@pytest.mark.skipif(not anchors.hyperscan_available(), reason="the hyperscan wheel")
def test_hosts_of_two_architectures_sharing_a_cache_each_keep_their_database(cache, monkeypatch):
    """A home directory shared by x86-64 and aarch64 hosts: each reads back its own database (one
    name for both made each host compile over the other's, ~0.3 s a run for the catalog)."""
    line = b"x\nthe widget exploded\n"
    here = anchors.AnchorSet([anchors.Anchor("widget exploded", 1)]).scan(line)
    monkeypatch.setattr(anchors, "_machine", lambda: "other-arch")
    assert anchors.AnchorSet([anchors.Anchor("widget exploded", 1)]).scan(line) == here == {2: {1}}
    files = sorted(p.name for p in cache.iterdir() if p.name.startswith("anchors-"))
    assert len(files) == 2
    loads = []
    real = anchors.load_cached
    monkeypatch.setattr(anchors, "load_cached", lambda key: loads.append(real(key) is not None) or real(key))
    for machine in ("other-arch", os.uname().machine):
        monkeypatch.setattr(anchors, "_machine", lambda m=machine: m)
        anchors.AnchorSet([anchors.Anchor("widget exploded", 1)])
    assert loads == [True, True]                 # each read back, none compiled again
    assert sorted(p.name for p in cache.iterdir() if p.name.startswith("anchors-")) == files


@pytest.mark.skipif(not anchors.hyperscan_available(), reason="the hyperscan wheel")
def test_how_a_database_is_made_is_pinned_to_its_format():
    """A database is named by its anchors and DB_FORMAT, not by the expressions made of them: a change
    to how they are made (_literal_rx, the flags, the facts left to C: C_FACTS) must come with another DB_FORMAT, or a
    cached database of the old expressions would be read.  When this fails: bump DB_FORMAT, then update it."""
    import hashlib

    import hyperscan
    made = [anchors._per_line(anchors._literal_rx(t.encode())) for t in ("abc", "a.b*c", "x y", "é(1)", "[rank0]:", "\\n\t")]
    flags = (hyperscan.HS_FLAG_MULTILINE, hyperscan.HS_FLAG_CASELESS)
    digest = hashlib.sha256(repr((made, flags, sorted(anchors.C_FACTS))).encode()).hexdigest()[:16]
    assert (anchors.DB_FORMAT, digest) == (5, "cdaba196219e72ee")


def _memos():
    """(module, its Memo's name, the function it keeps, the one that reads, arguments to ask) of each cachefiles.Memo."""
    from triage.inputs import ranks
    from triage.match import literals
    return [
        (rx, "BLIND", lambda p: rx.digit_blind(p), "_read_blind", lambda p: rx._read_blind(p, 0),
         [r"\[rank(\d+)\]:", r"\[1,(\d+)\]", r"[0-5]\d", r"(\w+) (?:done|failed)", r"x{2,3}\d", r"[[:digit:]]"]),
        (literals, "DERIVED", lambda p: literals.derive_literals(p), "_derive", lambda p: literals._derive(p, False),
         [r"NCCL WARN (\w+)", r"(?:Caught signal|core dumped) \d+", r"a|b", r"(?:torch|pytorch) version", r"[["]),
        (ranks, "FIRST_CHARS", lambda p: ranks._first_chars(p), "_sre_parse", lambda p: ranks._first_chars(p),
         [r"\[rank(?P<rank>\d+)\]:", r"(?P<rank>\d+): ", r"\[1,(?P<rank>\d+)\]<std(?:out|err)>:", r"x*"]),
    ]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["digit_blind", "derive_literals", "first_chars"])
def test_pattern_readings_are_kept_between_runs_and_read_back_only_when_trusted(cache, monkeypatch, which):
    """cachefiles.Memo (issue 44): what triage reads of a regex with the stdlib's parser -- rx.digit_blind,
    literals.derive_literals, ranks._first_chars -- is what the parser's reading gives, written at exit by the
    process that found it, and read back by the next one instead of parsing again; a file others can write is not
    read (parsed again)."""
    mod, name, ask, reader, direct, args = _memos()[which]
    want = {p: direct(p) for p in args}
    monkeypatch.setattr(mod, name, cachefiles.Memo(getattr(mod, name).prefix, mod.__file__, getattr(mod, name).valid))
    assert {p: ask(p) for p in args} == want
    memo = getattr(mod, name)
    assert memo.save()                              # (at exit: atexit)
    (f,) = [p for p in cache.iterdir() if p.name.startswith(memo.prefix)]
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600

    def parse(*a):
        raise AssertionError("parsed again")
    memo.reset()                                    # the next run: read back, nothing parsed
    monkeypatch.setattr(mod, reader, parse)
    kept = [p for p in args if memo.get(p if which == 2 else (p, False) if which == 1 else (p, 0)) is not None]
    assert {p: ask(p) for p in kept} == {p: want[p] for p in kept} and kept == args
    assert not memo.changed                         # (nothing new: nothing written at its exit)
    os.chmod(f, 0o666)
    memo.reset()                                    # others may write it: not trusted, parsed again
    with pytest.raises(AssertionError, match="parsed again"):
        ask(args[0])


def test_a_pool_asks_what_its_workers_parse_with_before_the_fork(cache, monkeypatch):
    """prepare.warm_workers, which the pool calls before it forks workers (scan/pool.py), with workers to spare (they
    then parse hit lines): every digit_blind answer a worker's first parse asks for (the layouts' regexes,
    plain_hits') is then in rx.BLIND, which the workers inherit -- none of them reads a pattern with the stdlib's
    parser again (~5-7 ms each)."""
    from triage.inputs import sources
    from triage.scan import pool, prepare
    monkeypatch.setattr(rx, "BLIND", cachefiles.Memo(rx.BLIND.prefix, rx.__file__, rx.BLIND.valid))
    sources.templates_ok.cache_clear()
    prepare._plain_blind.cache_clear()
    calls = []
    real = rx._read_blind
    monkeypatch.setattr(rx, "_read_blind", lambda p, f: calls.append(p) or real(p, f))
    prepare.warm_workers([], spare=True)
    assert calls
    calls.clear()
    sources.templates_ok.cache_clear()             # (a worker: what the scanner had, nothing of its own)
    prepare._plain_blind.cache_clear()
    assert sources.templates_ok() and prepare._plain_blind()
    assert calls == []
    order = []

    class Stop(Exception):
        pass

    def start_tree(*a, **k):
        order.append("fork")
        raise Stop
    monkeypatch.setattr(prepare, "warm_workers", lambda batchers, spare: order.append(("warm", spare)))
    monkeypatch.setattr(pool, "_start_tree", start_tree)
    for k, spare in ((prepare.PARSE_MIN_WORKERS, True), (prepare.PARSE_MIN_WORKERS - 1, False)):
        order.clear()
        with pytest.raises(Stop):
            pool._Pool([], None, [], k, [])
        assert order == [("warm", spare), "fork"]


def test_the_records_a_pool_worker_makes_are_made_before_the_fork(cache, monkeypatch):
    """record.ready, called by prepare.warm_workers before a pool forks (issue 44): the classes a worker makes
    instances of -- the input's description, the step log's summaries -- have their __init__ made (and its code kept
    for the next run by the scanner's process); a worker made each again, ~0.5 ms a class, a cache miss every run."""
    from triage import record
    from triage.inputs.sources import Input
    from triage.scan import prepare
    from triage.scan.observer import Feeder
    from triage.verdict.steps import BlockDeltas, StepDelta, StepLog

    @record.record(frozen=True)
    class Fresh:
        a: int
        b: str = "x"
    assert getattr(Fresh.__dict__["__init__"], "make", None) is not None       # (a stand-in until made)
    record.ready(Fresh)
    assert getattr(Fresh.__dict__["__init__"], "make", None) is None
    assert Fresh(1) == Fresh(1, "x") and Fresh(2).b == "x"
    record.ready(Fresh)                                                         # (made once)
    steps = Feeder(StepLog(), StepLog.ANCHORS, batch=True)
    made = []
    real = record._init
    monkeypatch.setattr(record, "_init", lambda cls, frozen: made.append(cls) or real(cls, frozen))
    assert steps.summarises and set(StepLog.worker_records()) == {StepDelta, BlockDeltas}
    prepare.warm_workers([(steps, 0)], spare=False)
    for cls in (Input, StepDelta, BlockDeltas):
        assert getattr(cls.__dict__["__init__"], "make", None) is None
    assert set(made) <= {Input, StepDelta, BlockDeltas}
