"""Issue 27: the content hash (`analyze --record`, fleet) folded into the block reader: the same
value as store.content_hash for every kind of input, and the input read once."""
import builtins
import bz2
import gzip
import hashlib
import io
import lzma
import os
import sys

import pytest
from click.testing import CliRunner

from triage.cli import cli
from triage.fleet.run import Job, analyse_job
from triage.patterns import load_all
from triage.pipeline import Options, triage
from triage.fleet.store import Store, content_hash

LOG = b"".join(b"[rank0]: step %d INFO all good\n" % i for i in range(30000)) + \
    b"[rank0]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


@pytest.fixture(scope="module")
def pats():
    return load_all()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Every kind of input, made once for the module (compressing LOG three ways takes ~0.3 s): the
    tests only read them; what a test writes goes to its own tmp_path."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "a.log").write_bytes(LOG)
    (d / "a.log.gz").write_bytes(gzip.compress(LOG))
    (d / "a.log.bz2").write_bytes(bz2.compress(LOG))
    (d / "a.log.xz").write_bytes(lzma.compress(LOG))
    (d / "u16.log").write_bytes(LOG.decode().encode("utf-16"))
    (d / "cr.log").write_bytes(LOG.replace(b"\n", b"\r"))
    job = d / "job"
    (job / "sub").mkdir(parents=True)
    (job / "rank0.log").write_bytes(LOG)
    (job / "sub" / "rank1.log.gz").write_bytes(gzip.compress(LOG[:5000]))
    (job / "rank2.log").write_bytes(b"no newline at the end")
    return d


CASES = [["a.log"], ["a.log.gz"], ["a.log.bz2"], ["a.log.xz"], ["u16.log"], ["cr.log"], ["job"],
         ["a.log", "a.log.gz"], ["job", "a.log"]]


@pytest.mark.parametrize("names", CASES, ids=["+".join(c) for c in CASES])
def test_folded_hash_is_content_hash(inputs, pats, names):
    paths = [str(inputs / n) for n in names]
    a = triage(paths, Options(pats=tuple(pats), content_hash=True))
    assert a.content_hash is not None
    assert a.content_hash == content_hash(paths)


def test_folded_hash_of_a_bigger_input_than_a_block(inputs, pats):
    from triage.scan.engine import Engine
    p = str(inputs / "a.log.gz")
    scan = Engine(pats).scan_paths([p], block_size=4096, content_hash=True)
    assert scan.content_hash == content_hash([p])
    p = str(inputs / "a.log")
    assert Engine(pats).scan_paths([p], block_size=4096, content_hash=True).content_hash == content_hash([p])


def _stdin(monkeypatch, data):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


@pytest.mark.parametrize("data", [LOG, gzip.compress(LOG)], ids=["plain", "gz"])
def test_folded_hash_of_stdin(monkeypatch, pats, data):
    _stdin(monkeypatch, data)
    a = triage(["-"], Options(pats=tuple(pats), content_hash=True))
    digest = hashlib.sha256(data).hexdigest()           # what store.hashing_stdin gives for it
    assert a.content_hash == content_hash(["-"], digest) == digest


def test_folded_hash_of_stdin_among_files(monkeypatch, inputs, pats):
    _stdin(monkeypatch, LOG)
    paths = ["-", str(inputs / "a.log.gz")]
    a = triage(paths, Options(pats=tuple(pats), content_hash=True))
    assert a.content_hash == content_hash(paths, hashlib.sha256(LOG).hexdigest())


def test_no_folded_hash_when_an_input_is_not_read_whole(inputs, pats, tmp_path):
    p = str(inputs / "a.log")
    assert triage([p], Options(pats=tuple(pats), content_hash=True, max_bytes=1000)).content_hash is None
    assert triage([p], Options(pats=tuple(pats))).content_hash is None              # not asked for
    bad = tmp_path / "bin.log"
    bad.write_bytes(b"\x7fELF" + b"\x00" * 5000)                             # unreadable: a note
    assert triage([p, str(bad)], Options(pats=tuple(pats), content_hash=True)).content_hash is None


def _count_reads(monkeypatch, path):
    """Opens of PATH (builtins.open and os.open) and the bytes read through them."""
    seen = {"opens": 0, "bytes": 0}
    from triage.inputs import ourreports
    ourreports._SEEN.clear()               # the report peek of an earlier test in this process
    real_open, real_os_open = builtins.open, os.open

    class Counting(io.BufferedReader):
        def read(self, n=-1):
            data = super().read(n)
            seen["bytes"] += len(data)
            return data

        def readinto(self, b):
            n = super().readinto(b)
            seen["bytes"] += n or 0
            return n

    def counting_open(file, mode="r", *a, **k):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) == path:
            seen["opens"] += 1
            if mode == "rb" and not a and not k:
                return Counting(io.FileIO(file, "rb"))
        return real_open(file, mode, *a, **k)

    def counting_os_open(file, *a, **k):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) == path:
            seen["opens"] += 1
        return real_os_open(file, *a, **k)
    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(os, "open", counting_os_open)
    return seen


@pytest.mark.parametrize("name", ["a.log", "a.log.gz"])
def test_analyze_record_reads_the_input_once(inputs, tmp_path, monkeypatch, name):
    path = str(inputs / name)
    db = str(tmp_path / "store.db")
    monkeypatch.delenv("TRIAGE_DB", raising=False)
    monkeypatch.setenv("TRIAGE_JOB_ID", "job-1")
    seen = _count_reads(monkeypatch, path)
    r = CliRunner().invoke(cli, ["analyze", path, "--record", "--db", db, "-q"])
    monkeypatch.undo()
    assert r.exit_code == 1, r.output
    size = os.path.getsize(path)
    # one read of the whole input, and one peek at its first 4 KiB (issue 45: is it a triage report? once a
    # process, not again when the store expands the inputs for the job's time)
    assert seen["opens"] == (2 if name == "a.log" else 1) and size <= seen["bytes"] < 2 * size, seen
    with Store(db) as st:
        (rec,) = st.records()
    assert rec.content_hash == content_hash([path])          # the same record as before the fold


def test_analyze_record_with_max_bytes_falls_back_to_reading_again(inputs, tmp_path, monkeypatch):
    path = str(inputs / "a.log")
    db = str(tmp_path / "store.db")
    monkeypatch.delenv("TRIAGE_DB", raising=False)
    r = CliRunner().invoke(cli, ["analyze", path, "--record", "--db", db, "-q", "--max-bytes", "1000"])
    assert r.exit_code == 0, r.output
    with Store(db) as st:
        (rec,) = st.records()
    assert rec.content_hash == content_hash([path])


def test_fleet_record_uses_the_folded_hash(inputs, pats, monkeypatch):
    path = str(inputs / "job")
    seen = _count_reads(monkeypatch, os.path.join(path, "rank0.log"))
    res = analyse_job(Job("job", path), pats)
    monkeypatch.undo()
    assert res.record is not None and res.record.content_hash == content_hash([path])
    assert seen["opens"] == 2            # the read, and one peek at the first 4 KiB (issue 45's report check)
