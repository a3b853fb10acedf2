"""The fingerprint masks (verdict/fingerprint.py) run without a regex timeout: they are linear.  The
rank mask became possessive for it; a finding's fingerprint and a job's signature (kept in stores,
linked to tickets) must not change, so the masks are compared with the ones they replaced."""
import os
import random

import regex

from triage.verdict import fingerprint as F

HERE = os.path.dirname(os.path.abspath(__file__))
# the masks as they were (0.4.0 before this change), run as they were: with a timeout
BEFORE = [(regex.compile(p, regex.V0), rep) for p, rep in [
    (r"(?m)^(?:\[[^\]]*\] )?[\w.\-]+:\d+:\d+ \[\d+\]", "<host>:<pid>:<tid> [<dev>]"),
    (r"\b(?:host|hostname|node)\s*[:=]\s*[\w.\-]+", "host: <host>"),
    (r"(?:/[\w.\-+@]+)+/?|[A-Za-z]:\\[\w\\.\-]+", "<path>"),
    (r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b", "<hex>"),
    (r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?", "<time>"),
    (r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+", "<time>"),
    (r"\b(?:rank|Rank|RANK)\s*[:=]?\s*\d+", "rank <n>"),
    (r"\d+(?:\.\d+)?", "<n>"),
    (r"\s+", " "),
]]


def before(text):
    for rx, rep in BEFORE:
        text = rx.sub(rep, text, timeout=5)
    return text.strip()


def test_the_masks_are_the_ones_they_replaced():
    assert [rep for _, rep in F._MASKS] == [rep for _, rep in BEFORE]
    rnd = random.Random(27)
    tokens = ["rank", "Rank", "RANK", " ", "  ", "\t", ":", "=", "0", "12", "3.5", "x", "host", "node", "/", "a",
              "0xff", "deadbeef", "2026-12-04 07:12:01.5", "E1204 07:12:01.426415", "[", "]", "-", ".", "\n", "é"]
    cases = ["".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 40))) for _ in range(20000)]
    for root, _, files in os.walk(os.path.join(HERE, "fixtures", "logs")):
        for f in files:
            if f.endswith(".log"):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    cases += fh.read().splitlines()[:400]
    for x in cases:
        assert F._mask(x) == before(x), repr(x)
