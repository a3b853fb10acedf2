"""Issue 46: a decompression bomb is stopped on its ratio early, not after 1 GiB of output (each cost
~25-50 s of CPU: a 147 KB .zst).  Synthetic bombs, made here (no fixture file): 1,024 copies of one
compressed member of 2 MiB of Megatron-like iteration lines (200 distinct lines repeated: no run of
copies the scan could skip), 2 GiB out of 6 KiB (zstd) to 16 MB (gzip); concatenated members are a
valid gzip / bzip2 / xz / zstd stream.  Each file is stopped with the bomb note in <= 5 s of CPU beside the
decompression of the bytes it decides on, and little memory (before: 25-27 s for the xz and zstd ones).  Piped on stdin (no size to project from) a bomb
is stopped at 1 GiB: before, never (a pipe has no tell(): the ratio was never measured).  A log that
is only repetitive is read whole."""
import bz2
import gzip
import lzma
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ENV = {**os.environ, "TRIAGE_DB": "", "PYTHONPATH": ROOT}
IMA = b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _zstd(data):
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor(level=19).compress(data)


KINDS = {"gz": lambda d: gzip.compress(d, 9), "bz2": lambda d: bz2.compress(d, 9),
         "xz": lambda d: lzma.compress(d, preset=6), "zst": _zstd}


_BLOCK = b"".join(b"[rank%d]: iteration %6d/1000000 | consumed samples: %9d | elapsed time per iteration (ms): "
                 b"812.3 | lm loss: 2.1E+00\n" % (i % 8, i, i * 512) for i in range(200))


def _bomb(tmp_path, kind, member=None, copies=1024):
    member = KINDS[kind](member or _BLOCK * ((2 << 20) // len(_BLOCK)))
    p = tmp_path / f"bomb.log.{kind}"
    p.write_bytes(member * copies)
    return p


# (the time is the child's CPU, not wall time: what a bomb cost -- 25-50 s of CPU -- and what the test suite's own
# load on a shared host does not stretch: 5.4 and 14.5 s of wall time for a 2.2 s run in two loaded CI runs)
_RUSAGE = ("import resource, subprocess, sys\n"
           "src = open(sys.argv[1], 'rb') if sys.argv[2] == 'stdin' else None\n"
           "args = [sys.executable, '-m', 'triage', 'analyze', '--format', 'json']"
           " + (['-'] if src else [sys.argv[1]])\n"
           "r = subprocess.run(args, stdin=src, capture_output=True, text=True)\n"
           "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(u.ru_utime + u.ru_stime, u.ru_maxrss)\n"
           "sys.stdout.write(r.stdout)\n")


def _analyze(path, how):
    r = subprocess.run([sys.executable, "-c", _RUSAGE, str(path), how], capture_output=True, text=True,
                       env=ENV, cwd=ROOT, timeout=120)
    first, _, rest = r.stdout.partition("\n")
    took, rss_kb = first.split()
    return float(took), int(rss_kb) >> 10, rest


def _decompress_cpu(p, kind, n):
    """CPU seconds to decompress N bytes of P in this process (what deciding on the ratio cannot avoid)."""
    opener = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}.get(kind)
    if opener is None:
        zstandard = pytest.importorskip("zstandard")
        f = zstandard.ZstdDecompressor().stream_reader(open(p, "rb"))
    else:
        f = opener(p, "rb")
    t = time.process_time()
    with f:
        got = 0
        while got < n:
            b = f.read(1 << 20)
            if not b:
                break
            got += len(b)
    return time.process_time() - t


EARLY = 32 << 20     # the bytes a bomb's run decides on (sources.EARLY_AFTER when this was written): its references


@pytest.fixture(scope="module")
def plain_cpu(tmp_path_factory):
    """The CPU of the run on EARLY bytes of the bombs' lines, uncompressed, in one process: what this machine's speed
    makes of the scan a bomb's run cannot avoid, at this moment (a 2-core machine here ran Python 1.7-2.6 times
    slower within one session)."""
    member = _BLOCK * ((2 << 20) // len(_BLOCK))
    p = tmp_path_factory.mktemp("plain") / "plain.log"
    p.write_bytes(member * (EARLY // len(member) + 1))
    env = dict(ENV, TRIAGE_JOBS="1")
    r = subprocess.run([sys.executable, "-c", _RUSAGE, str(p), "file"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=120)
    return float(r.stdout.partition("\n")[0].split()[0])


@pytest.mark.timing        # a CPU budget: bz2's 3.7 s here rose to 6.6 s beside the whole suite (tests/conftest.py)
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_bomb_file_is_stopped_on_its_ratio_in_seconds(tmp_path, kind, plain_cpu):
    import json
    p = _bomb(tmp_path, kind)
    took, rss_mb, out = _analyze(p, "file")
    notes = json.loads(out).get("notes", [])
    assert any("decompression bomb" in n for n in notes), notes
    # 5 s for the run (or twice the plain run's CPU and the decompression's, on a machine slow enough), beside the
    # decompression of the EARLY bytes it decides on (bz2's 1.4-2.8 s on a slow 2-core machine, where its run took
    # 3.7 s alone and 5.5-7.8 s beside the suite); was 25-27 s (xz, zstd: stopped at 1 GiB)
    # (twice both, measured at other moments than the run: a CI run here took 8.3 s against 1.5 times the plain run
    # and once the decompression, 8.2 s)
    unpack = _decompress_cpu(p, kind, EARLY)
    budget = max(5.0 + unpack, 2 * (plain_cpu + unpack))
    assert took <= budget, (kind, took, budget, plain_cpu)
    assert rss_mb <= 300, (kind, rss_mb)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_piped_bomb_is_stopped(tmp_path, kind):
    import json
    p = _bomb(tmp_path, kind, member=b"\n" * (32 << 20), copies=64)        # 2 GiB of empty lines
    took, rss_mb, out = _analyze(p, "stdin")
    notes = json.loads(out).get("notes", [])
    assert any("decompression bomb" in n for n in notes), notes         # was never stopped (4 GiB: 155 s)
    assert took <= 60 and rss_mb <= 300, (took, rss_mb)


def test_a_repetitive_log_is_read_whole(tmp_path):
    """A log of one line repeated (ratio ~100-200 compressed) ends with its crash: read whole, no note."""
    import json
    data = b"".join(b"[rank0]: [2026-12-03 %02d:%02d:%02d] data loader: waiting for shard 17 of 64 (prefetch queue "
                    b"empty)\n" % (i // 3600 % 24, i // 60 % 60, i % 60) for i in range(400_000)) + IMA
    for kind in ("xz", "zst"):
        p = tmp_path / f"rep.log.{kind}"
        p.write_bytes(KINDS[kind](data))
        assert len(data) > 500 * p.stat().st_size          # 38 MB at a ratio of 700-1,500: no bomb for all that
        took, _, out = _analyze(p, "file")
        d = json.loads(out)
        assert not any("decompression bomb" in n for n in d.get("notes", [])), d["notes"]
        assert d["outcome"] == "pitfall", d["outcome"]         # its last line read
