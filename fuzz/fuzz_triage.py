"""Coverage-guided fuzz target (atheris) over the scanners, the verdict, the renderers and the
config loaders.  Any exception other than a clear user-facing error is a crash.

    pip install atheris
    python fuzz/fuzz_triage.py -atheris_runs=100000 [corpus_dir]

Seeds: every fixture log under tests/fixtures/logs/ makes a good corpus directory.
"""
import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this checkout's triage

with atheris.instrument_imports():
    from triage.config import ConfigError, parse_config_text
    from triage.engine import Engine
    from triage.findings import analyse
    from triage.patterns import load_all
    from triage.report import render
    from triage.selftest import lines_of
    from triage.sources import InputError

PATS = load_all()
ENGINE = Engine(PATS)
TMP = tempfile.mkdtemp(prefix="triage-fuzz-")
PATH = os.path.join(TMP, "rank_0.log")


def one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    what = fdp.ConsumeIntInRange(0, 3)
    blob = fdp.ConsumeBytes(1 << 14)
    if what == 0:                                   # the block scanner on raw bytes (any encoding)
        with open(PATH, "wb") as f:
            f.write(blob)
        try:
            scan = ENGINE.scan_paths([PATH], block_size=fdp.ConsumeIntInRange(64, 1 << 16))
        except InputError:
            return
        a = analyse(scan)
        render(a, "json")
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
