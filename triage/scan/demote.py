"""A user pattern whose literal is on most lines is demoted before the scan (issue 46).

Every line holding a match rule's literal is a candidate line: the scanner's process decodes it, finds
its rank and time and tries the rule on it.  A literal on every line (`literal: "INFO"`, `"rank"`) makes
the whole log candidates: 64 MiB of such lines took 9 s where the log alone takes 0.2 s.  So, before the
scan, the rules of the user's own pattern files (never the shipped catalog's, whose literals are chosen
and measured) are tried against a sample: the first SAMPLE_BYTES of the first input that can be read
without consuming it (a local, uncompressed file); a rule whose literals are on more than MAX_SHARE of
the sample's lines (at least MIN_LINES of them) while its regex matches few of them (under MIN_PRECISION
of the first PRECISION_LINES it selects) is left out of this run, with a note that says why and what to
do.  A rule whose regex matches the lines its literal selects keeps them: they are its findings.
The decision is the sample's alone: the same for every `-j` and every block size."""
from __future__ import annotations

import os
import stat
from typing import List, Sequence, Tuple

from ..inputs.names import COMPRESSED
from ..match.rx import TIMEOUT
from ..patterns import MatchRule, Pattern, builtin_dir

SAMPLE_BYTES = 1 << 20
MIN_LINES = 1000
MAX_SHARE = 0.5
PRECISION_LINES = 200
MIN_PRECISION = 0.1


def _sample(paths: Sequence[str]) -> Tuple[str, bytes]:
    for p in paths:
        if p == "-" or "://" in p or p.lower().endswith(tuple(COMPRESSED)):
            continue
        try:
            if not stat.S_ISREG(os.stat(p).st_mode):
                continue
            with open(p, "rb") as f:
                data = f.read(SAMPLE_BYTES)
        except OSError:
            continue
        if len(data) == SAMPLE_BYTES:            # a cut last line is no line of the sample
            data = data[:data.rfind(b"\n") + 1]
        return p, data
    return "", b""


def _selected(rule: MatchRule, lines: List[bytes]) -> List[bytes]:
    """The LINES that hold one of RULE's literals."""
    lits = [x.encode("utf-8") for x in rule.literals]
    if rule.ignore_case:
        lits = [x.lower() for x in lits]
        return [ln for ln in lines if any(x in ln.lower() for x in lits)]
    return [ln for ln in lines if any(x in ln for x in lits)]


def _precision(rule: MatchRule, chosen: List[bytes]) -> float:
    """The share of the first PRECISION_LINES of CHOSEN that RULE's regex matches."""
    some = chosen[:PRECISION_LINES]
    hits = 0
    for ln in some:
        try:
            hits += rule.rx.search(ln.decode("utf-8", "replace"), timeout=TIMEOUT) is not None
        except TimeoutError:
            pass
    return hits / len(some) if some else 1.0


def _user(p: Pattern) -> bool:
    home = os.path.realpath(builtin_dir())
    return bool(p.path) and not os.path.realpath(p.path).startswith(home + os.sep)


def demote_common(pats: Sequence[Pattern], paths: Sequence[str]) -> Tuple[List[Pattern], List[str]]:
    """PATS less the user rules whose literals select most lines of the inputs' sample, and a note for
    each rule left out."""
    if not any(_user(p) for p in pats):
        return list(pats), []
    where, data = _sample(paths)
    lines = data.split(b"\n")[:-1] if data else []
    if len(lines) < MIN_LINES:
        return list(pats), []
    out: List[Pattern] = []
    notes: List[str] = []
    for p in pats:
        if not _user(p):
            out.append(p)
            continue
        keep = []
        for i, r in enumerate(p.match):
            chosen = _selected(r, lines) if r.literals else []
            share = len(chosen) / len(lines)
            if share > MAX_SHARE and _precision(r, chosen) < MIN_PRECISION:
                lits = ", ".join(repr(x) for x in r.literals[:3])
                notes.append(f"pattern {p.id} ({os.path.basename(p.path)} match[{i}]) left out of this run: its "
                             f"literal {lits} is on {share:.0%} of the first {len(lines):,} lines of "
                             f"{os.path.basename(where)} and its regex matches almost none of them: every such line "
                             f"would be a candidate (a scan many times slower); give the rule a literal that only "
                             f"its lines hold")
            else:
                keep.append(r)
        if keep:
            out.append(p if len(keep) == len(p.match) else _with_rules(p, keep))
    return out, notes


def _with_rules(p: Pattern, rules: List[MatchRule]) -> Pattern:
    from dataclasses import replace
    return replace(p, match=rules)
