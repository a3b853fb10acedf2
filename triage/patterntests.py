"""`triage patterns test [DIR]`: a pattern catalog's annotated test logs (issue 41, semgrep's rule tests).

DIR/tests/<id>.log holds real lines, each annotated by the comment line before it:

    # ruleid: nccl-error        the next line fires nccl-error
    # ok: nccl-error            the next line does not fire nccl-error (a true negative kept beside the positives)
    # todoruleid: nccl-error    a known miss: it should fire, does not yet (reported as TODO; FIXED once it does)
    # todook: nccl-error        a known false positive: it fires, should not

so a contributor sees a rule's true and false positives side by side.  Lines without an annotation and
other comments are ignored."""
from __future__ import annotations

import os
import re
from typing import Dict, List, Sequence, Tuple

from .patterns import Pattern
from .record import record

_ANNOTATION = re.compile(r"^#\s*(ruleid|ok|todoruleid|todook):\s*([a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*)\s*$")
MAX_TEST_BYTES = 4 << 20


@record
class Result:
    path: str
    line: int
    kind: str          # ruleid | ok | todoruleid | todook
    pitfall: str
    text: str
    fired: List[str]
    verdict: str       # pass | FAIL | TODO | FIXED


def annotated(path: str) -> List[Tuple[int, str, str, str]]:
    """(line number, kind, pitfall, the annotated line) of one test log."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read(MAX_TEST_BYTES).split("\n")
    out = []
    for i, ln in enumerate(lines[:-1]):
        m = _ANNOTATION.match(ln.strip())
        if m:
            for pid in re.split(r"\s*,\s*", m.group(2)):
                out.append((i + 2, m.group(1), pid, lines[i + 1]))
    return out


def _verdict(kind: str, hit: bool) -> str:
    if kind == "ruleid":
        return "pass" if hit else "FAIL"
    if kind == "ok":
        return "FAIL" if hit else "pass"
    if kind == "todoruleid":
        return "FIXED" if hit else "TODO"
    return "FIXED" if not hit else "TODO"       # todook


def run_tests(pats: Sequence[Pattern], directory: str) -> List[Result]:
    """Every annotation of DIRECTORY/tests/*.log checked against PATS."""
    from .scan.engine import Engine
    from .selftest import fired
    tests = os.path.join(directory, "tests")
    if not os.path.isdir(tests):
        return []
    engine = Engine(list(pats))
    memo: Dict[str, List[str]] = {}
    out = []
    for name in sorted(f for f in os.listdir(tests) if f.endswith(".log")):
        path = os.path.join(tests, name)
        for lineno, kind, pid, text in annotated(path):
            if text not in memo:
                memo[text] = sorted(fired(engine, text))
            hit = pid in memo[text]
            out.append(Result(path, lineno, kind, pid, text, memo[text], _verdict(kind, hit)))
    return out


def summary(results: Sequence[Result]) -> str:
    """One line per failure, known miss or fix, then the counts."""
    lines = []
    for r in results:
        if r.verdict != "pass":
            what = {"ruleid": "should fire", "ok": "should not fire", "todoruleid": "known miss",
                    "todook": "known false positive"}[r.kind]
            lines.append(f"{r.verdict:5} {os.path.basename(r.path)}:{r.line}: {r.pitfall} ({what}; fired: "
                         f"{', '.join(r.fired) or 'nothing'}): {r.text[:160]}")
    n = {v: sum(1 for r in results if r.verdict == v) for v in ("pass", "FAIL", "TODO", "FIXED")}
    files = len({r.path for r in results})
    lines.append(f"{len(results)} annotation(s) in {files} test log(s): {n['pass']} pass, {n['FAIL']} fail, "
                 f"{n['TODO']} known (todo), {n['FIXED']} fixed (promote them)")
    return "\n".join(lines)
