"""Hostile inputs (issue 13): compressed formats, bombs, endless and unreadable inputs."""
import bz2
import gzip
import io
import lzma
import os
import threading

import pytest

import inproc  # the CLI in this process: tests/inproc.py
from triage.inputs import sources
from triage.scan.engine import Engine
from triage.patterns import load_all
from triage.inputs.sources import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMA = b"[rank5]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
PATS = load_all()


def scan(paths, **kw):
    return Engine(PATS).scan_paths(paths, **kw)


@pytest.mark.parametrize("suffix,compress", [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_compressed_inputs_by_their_magic_bytes(tmp_path, suffix, compress):
    p = tmp_path / ("job.log" + suffix)
    p.write_bytes(compress(b"[rank5]: starting\n" + IMA))
    r = scan([str(p)])
    assert [m.pattern.id for m in r.matches] == ["illegal-memory-access"] and r.lines == 2


def test_zstd_is_read_or_refused_clearly(tmp_path):
    p = tmp_path / "job.log.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    try:
        import zstandard  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match="zstandard"):
            scan([str(p)])
    else:
        with pytest.raises(InputError):
            scan([str(p)])                     # a corrupt frame: a clear error either way


@pytest.mark.parametrize("damage", ["flipped", "garbage-frame"])
def test_a_corrupt_zstd_input_is_read_up_to_its_break_never_an_internal_error(tmp_path, damage):
    """zstandard's ZstdError ("Data corruption detected", "Unknown frame descriptor", "Destination
    buffer is too small") is not an OSError: it was an internal error (found by fuzzing).  A break
    after the first bytes is noted and what came before it triaged, as a truncated archive is; a
    corrupt start is a one-line input error (exit 2)."""
    zstandard = pytest.importorskip("zstandard")
    text = b"".join(b"iteration %d ok\n" % i for i in range(3000)) + IMA + \
        b"".join(b"filler %s\n" % os.urandom(24).hex().encode() for _ in range(40000))   # ~1 MB compressed
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(text)
    if damage == "flipped":
        data = bytearray(frame)
        for i in range(len(data) * 3 // 4, len(data) * 3 // 4 + 64):
            data[i] ^= 0x5A
    else:
        data = bytearray(frame + b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4)
    p = tmp_path / "node3.log.zst"
    p.write_bytes(bytes(data))
    r = inproc.run(["analyze", str(p), "--format", "json"])
    assert r.returncode == 1 and "internal error" not in r.stderr, r.stderr
    import json
    d = json.loads(r.stdout)
    assert d["primary"] == "illegal-memory-access"
    assert any("breaks off after" in n and "triaged up to there" in n for n in d["notes"]), d["notes"]
    start = tmp_path / "start.log.zst"
    start.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4)
    r = inproc.run(["analyze", str(start)])
    assert r.returncode == 2 and r.stderr.startswith("triage: error: cannot read") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_year_9999_timestamp_on_a_long_line_is_no_internal_error(tmp_path):
    """A step line stamped 9999-12-31 23:59:59.999999 (as a float, the first second of year 10000)
    in a line long enough to be read in segments: the year of the log's dated lines was taken from it
    and its end (year 10000) was a ValueError (found by fuzzing).  Such a stamp tells no year now."""
    p = tmp_path / "y.log"
    p.write_bytes(b" [9999-12-31 23:59:59.999999] iteration        3/      30 | elapsed time per iteration "
                  b"(ms): 1000 |  File \"/w/site-packages/megatron/core/transformer/transformer_config.py\", "
                  b"line 1694, in __post_init__" + b"a" * 20000 + b"\n" + IMA)
    r = inproc.run(["analyze", str(p), "-q"])
    assert r.returncode == 1 and "illegal-memory-access" in r.stdout, r.stderr
    for stamp in (b"9999-06-01 10:00:00.000000", b"9998-12-31 23:59:59.999999"):    # a CR ending: the same
        p.write_bytes(b" [" + stamp + b"] iteration        3/      30 | elapsed time per iteration (ms): 1000 |\r\n" + IMA)
        r = inproc.run(["analyze", str(p), "-q"])
        assert r.returncode == 1 and "illegal-memory-access" in r.stdout, (stamp, r.stderr)


def test_corrupt_gzip_is_a_clear_error_a_truncated_one_is_read_up_to_its_break(tmp_path):
    p = tmp_path / "corrupt.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    with pytest.raises(InputError, match="cannot read"):
        scan([str(p)])
    # issue 22: a crashed node's truncated log is triaged up to where it breaks, with a note
    good = gzip.compress(b"".join(b"iteration %d ok\n" % i for i in range(20000)) + IMA)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(good[: len(good) // 2])
    r = scan([str(cut)])
    assert r.lines > 1000 and any("breaks off after" in n for n in r.notes)


def test_a_decompression_bomb_stops_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_EXPANDED", 1 << 20)
    p = tmp_path / "bomb.log.gz"
    p.write_bytes(gzip.compress(b"\n" * (64 << 20), 9))       # 64 MiB of empty lines in ~64 KiB
    r = scan([str(p)], block_size=1 << 20)
    assert any("decompression bomb" in n for n in r.notes)
    assert r.lines < 8 << 20


def test_a_zstd_bomb_stops_with_a_note_and_a_repetitive_zstd_log_reads_whole(tmp_path, monkeypatch):
    """Found by fuzzing: the zstd reader made all of a 64 KiB read's output at once (a bomb: GiBs)
    and cut what was left of it at every read (quadratic: a 64 MiB log of one repeated line took
    20 s, a 1.2 GB bomb never stopped).  It now decompresses 4 KiB at a time up to ~1 MiB of output
    and reads on from an offset: the bomb stops at the ratio as gzip's does, and a repetitive log
    of many frames reads back byte for byte."""
    zstandard = pytest.importorskip("zstandard")
    monkeypatch.setattr(sources, "MAX_EXPANDED", 1 << 20)
    p = tmp_path / "bomb.log.zst"
    p.write_bytes(zstandard.ZstdCompressor(level=19).compress(b"\n" * (64 << 20)))
    r = scan([str(p)], block_size=1 << 20)
    assert any("decompression bomb" in n for n in r.notes) and r.lines < 8 << 20
    text = b"".join(b"[rank%d]: hello world %d\n" % (i % 8, i // 1000) for i in range(400_000))
    c = zstandard.ZstdCompressor(level=3)
    frames = b"".join(c.compress(text[i:i + (3 << 20)]) for i in range(0, len(text), 3 << 20))
    z = sources._ZstdFrames(io.BytesIO(frames), zstandard.ZstdDecompressor(), zstandard.ZstdError)
    got, buf = [], bytearray(50_000)
    while True:
        n = z.readinto(buf)
        if not n:
            break
        got.append(bytes(buf[:n]))
        assert len(z._out) < len(text) // 3       # never a whole chunk's output (here all of it) at once
    assert b"".join(got) == text


def test_devices_are_refused_and_fifos_capped(tmp_path):
    with pytest.raises(InputError, match="not a regular file"):
        scan(["/dev/zero"])
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)

    def writer():
        try:
            with open(fifo, "wb") as f:
                while True:
                    f.write(b"[rank0]: a healthy line\n" * 1000)
        except (BrokenPipeError, OSError):
            pass
    threading.Thread(target=writer, daemon=True).start()
    r = scan([str(fifo)], max_bytes=1 << 20)
    assert r.lines < 50_000 and any("--max-bytes" in n for n in r.notes)


def test_unreadable_inputs_are_notes_and_the_rest_is_triaged(tmp_path):
    d = tmp_path / "job"
    (d / "sub").mkdir(parents=True)
    (d / "rank_5.log").write_bytes(IMA)
    os.symlink("/nonexistent/rank_1.log", d / "rank_1.log")     # dangling
    os.symlink("..", d / "sub" / "loop")                         # a directory loop
    r = scan([str(d)])
    assert [m.pattern.id for m in r.matches] == ["illegal-memory-access"]
    assert any("rank_1.log" in n for n in r.notes)
    with pytest.raises(InputError):
        scan([str(d / "rank_1.log")])                            # the only input: an error


def test_cli_max_bytes_and_empty_input(tmp_path):
    p = tmp_path / "job.log"
    p.write_bytes(b"[rank0]: fine\n" * 100 + IMA)
    r = inproc.run(["analyze", "--max-bytes", "200", str(p), "--format", "json"], cwd=ROOT)
    assert "--max-bytes" in r.stdout and "illegal-memory-access" not in r.stdout
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    r = inproc.run(["analyze", str(empty), "--format", "json"], cwd=ROOT)
    assert r.returncode == 2 and "the input is empty" in r.stderr and "Traceback" not in r.stderr
