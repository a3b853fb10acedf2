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


def test_lines_with_one_memo_key_have_one_mask():
    """mask_lines and fingerprint(..., memo) remember a mask by the line with its digits made one
    (_mask_key): every line whose key is another's must mask the same.  The digits of random and
    fixture lines are redrawn (a 0 only where the line holds no `0x`), and the memoised fingerprints of
    all the fixture lines, in one memo, are the plain ones."""
    rnd = random.Random(4096)
    tokens = ["rank", "Rank ", " ", ":", "=", "0", "10", "007", "3.5", "0x1f", "1x1f", "0xZ", "x", "host=", "/", "a",
              "deadbeef", "2026-12-04 07:12:01.5", "E1204 07:12:01.426415", "[", "]", "-", ".", "é", "٣"]
    cases = ["".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 30))) for _ in range(5000)]
    fixture = []
    for root, _, files in os.walk(os.path.join(HERE, "fixtures", "logs")):
        for f in files:
            if f.endswith(".log"):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    fixture += fh.read().splitlines()[:300]
    by_key = {}
    for x in cases + fixture:
        zero = "0x" not in x                # then every digit may be redrawn, but not into a `0x`
        y = "".join(rnd.choice("0123456789" if zero and x[i + 1:i + 2] != "x" else "123456789")
                    if c in "123456789" or (zero and c == "0") else c for i, c in enumerate(x))
        assert F._mask_key(y) == F._mask_key(x)
        assert F._mask(y) == F._mask(x), (x, y)
        for z in (x, y):                    # and no two lines of one key, whatever their origin, differ
            assert by_key.setdefault(F._mask_key(z), (F._mask(z), z))[0] == F._mask(z), (z, by_key[F._mask_key(z)])
    memo = {}
    for x in fixture:
        assert F.fingerprint("p", x, memo) == F.fingerprint("p", x)
    assert F.mask_lines(fixture[:2000], {}) == F.mask_lines(fixture[:2000])
