"""Coverage-guided fuzz target (atheris) over the scanners, the verdict, the renderers and the
config loaders.  Any exception other than a clear user-facing error is a crash.

    pip install atheris
    python fuzz/fuzz_triage.py -atheris_runs=100000 [corpus_dir]

Seeds: every fixture log under tests/fixtures/logs/ makes a good corpus directory.
Shapes: raw bytes through the block scanner, text through the line scanner and every renderer,
config documents, a long line of control bytes, and error spam (issue 23).
"""
import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this checkout's triage

with atheris.instrument_imports():
    from triage.config import ConfigError, parse_config_text
    from triage.inputs.sources import InputError
    from triage.patterns import load_all
    from triage.report import render
    from triage.scan.engine import Engine
    from triage.selftest import lines_of
    from triage.verdict.analyse import analyse

PATS = load_all()
ENGINE = Engine(PATS)
TMP = tempfile.mkdtemp(prefix="triage-fuzz-")
PATH = os.path.join(TMP, "rank_0.log")

# issue 23's shapes: a long line of control bytes, and error lines repeated (with and without times)
CTRL = bytes(list(range(0x00, 0x09)) + [0x0b, 0x0c] + list(range(0x0e, 0x20)) + [0x7f, 0x1b])
SPAM = [b"ERROR: retrying", b"RuntimeError: the data loader worker raised an error",
        b"[W1203 07:12:01.123456789 ProcessGroupNCCL.cpp:1250] Warning: WARNING: destroy_process_group() was not "
        b"called before program exit, which can leak resources. (function operator())",
        b"  - Tensor mismatch at args[0]:" * 40, b"Traceback (most recent call last):",
        b"INFO:megatron.core.transformer.cuda_graphs:Time spent in CUDA Graphs capture on rank 0: 6.93s"]


def _scan_file(data: bytes, block_size: int) -> None:
    """The block scanner and the JSON report on DATA written to a file."""
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        scan = ENGINE.scan_paths([PATH], block_size=block_size)
    except InputError:
        return
    render(analyse(scan), "json")


def control_line(fdp: "atheris.FuzzedDataProvider", blob: bytes) -> bytes:
    """A line of up to 1 MiB of control bytes (picked by the fuzzer) between ordinary lines."""
    picks = bytes(CTRL[b % len(CTRL)] for b in blob[:64]) or b"\x01"
    n = fdp.ConsumeIntInRange(1, 1 << 20)
    line = (picks * (n // len(picks) + 1))[:n]
    return b"[rank0]: starting\n" + line + b"\n" + blob[64:] + b"\n[rank0]: RuntimeError: boom\n"


def error_spam(fdp: "atheris.FuzzedDataProvider", blob: bytes) -> bytes:
    """Up to 20,000 error lines of a few kinds (and the fuzzer's own line), rank-prefixed or not,
    some with a time, in an order the fuzzer picks."""
    kinds = SPAM + [blob[:200].replace(b"\n", b" ")]
    order = blob[200:] or b"\x00"
    out = []
    for i in range(fdp.ConsumeIntInRange(1, 20_000)):
        b = order[i % len(order)]
        line = kinds[b % len(kinds)]
        if b & 0x40:
            line = b"[rank%d]: " % (b & 7) + line
        if b & 0x80:
            line = b"[2026-12-03 06:42:%02d] " % (i % 60) + line
        out.append(line)
    return b"\n".join(out) + b"\n"


def truncated_archive(fdp: "atheris.FuzzedDataProvider", blob: bytes) -> bytes:
    """The fuzzer's bytes compressed (gzip, bzip2, xz or zstd) and cut where it picks: a crashed node's log."""
    import bz2
    import gzip
    import lzma
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 3:
        try:
            import zstandard
        except ImportError:
            kind = 0
    data = (gzip.compress, bz2.compress, lzma.compress,
            lambda b: zstandard.ZstdCompressor().compress(b))[kind](blob * fdp.ConsumeIntInRange(1, 64))
    return data[:fdp.ConsumeIntInRange(1, len(data))]


def through_a_fifo(data: bytes) -> None:
    """DATA written into a FIFO in a job directory (skipped with a note) and named on the command
    line (read as a pipe): neither may block or crash."""
    import threading
    d = tempfile.mkdtemp(dir=TMP)
    fifo = os.path.join(d, "rank_1.log")
    os.mkfifo(fifo)
    with open(os.path.join(d, "rank_0.log"), "wb") as f:
        f.write(data[:4096])
    ENGINE.scan_paths([d])                        # the FIFO is skipped, never opened

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(data)
    t = threading.Thread(target=feed)
    t.start()
    try:
        ENGINE.scan_paths([fifo])
    except InputError:
        pass
    t.join()
    os.unlink(fifo)


def one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    what = fdp.ConsumeIntInRange(0, 7)
    blob = fdp.ConsumeBytes(1 << 14)
    if what == 0:                                   # the block scanner on raw bytes (any encoding)
        _scan_file(blob, fdp.ConsumeIntInRange(64, 1 << 16))
    elif what == 4:                                 # a long line of control bytes
        _scan_file(control_line(fdp, blob), fdp.ConsumeIntInRange(64, 1 << 22))
    elif what == 5:                                 # error spam
        _scan_file(error_spam(fdp, blob), fdp.ConsumeIntInRange(64, 1 << 22))
    elif what == 6:                                 # a truncated archive (triaged up to its break)
        _scan_file(truncated_archive(fdp, blob), fdp.ConsumeIntInRange(64, 1 << 22))
    elif what == 7:                                 # a FIFO in a directory and named as an input
        through_a_fifo(blob)
    elif what == 1:                                 # the line scanner, the text and markdown reports
        a = analyse(ENGINE.scan(lines_of(blob.decode("utf-8", "replace"))))
        render(a, "text")
        render(a, "markdown")
    elif what == 2:                                 # config loaders
        for kind in ("YAML", "JSON"):
            try:
                parse_config_text(blob.decode("utf-8", "replace"), kind, "fuzz")
            except ConfigError:
                pass
    else:                                           # the HTML report of whatever the scan found
        a = analyse(ENGINE.scan(lines_of(blob.decode("utf-8", "replace"))))
        render(a, "html")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
