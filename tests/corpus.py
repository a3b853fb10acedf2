"""Fixture corpus: every log under tests/fixtures/logs/ has its expected result beside it.

    python tests/corpus.py            # show which cases differ from their expectation
    python tests/corpus.py --update   # rewrite the expectations on purpose (review the diff!)

A case is a log file (any name, .gz too) or a directory of per-rank logs; its expectation is
`<name>.expected.json` next to it.  Only the stable, meaningful part of the result is kept.
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
SKIP = {"README.md", "versions.txt", "MANIFEST.tsv"}


def cases():
    out = []
    for root, dirs, files in os.walk(LOGS):
        dirs.sort()
        for d in list(dirs):
            p = os.path.join(root, d)
            if os.path.exists(p + ".expected.json"):
                out.append(p)
                dirs.remove(d)  # a per-rank directory is one case
        for f in sorted(files):
            if f in SKIP or f.endswith((".expected.json", ".md", ".py", ".sh")):
                continue
            out.append(os.path.join(root, f))
    return sorted(out)


def summarise(path):
    from triage.engine import Engine
    from triage.findings import analyse
    from triage.patterns import load_all
    from triage.sources import iter_inputs

    a = analyse(Engine(load_all()).scan(iter_inputs([path])))
    return {
        "primary": a.primary.pitfall if a.primary else None,
        "first_failing_rank": a.first_rank,
        "findings": sorted(
            ({"pitfall": f.pitfall, "role": f.role, "rank": f.rank, "ranks": f.ranks_text, "count": f.count} for f in a.findings),
            key=lambda d: (d["pitfall"], d["role"], str(d["rank"]), d["count"]),
        ),
        "unmatched": len(a.unmatched),
    }


def expected_path(case):
    return case + ".expected.json"


def main(argv):
    update = "--update" in argv
    bad = 0
    for c in cases():
        got = summarise(c)
        ep = expected_path(c)
        rel = os.path.relpath(c, LOGS)
        if update:
            with open(ep, "w") as f:
                json.dump(got, f, indent=2)
                f.write("\n")
            print(f"wrote {os.path.relpath(ep, LOGS)}  primary={got['primary']}")
            continue
        try:
            with open(ep) as f:
                want = json.load(f)
        except FileNotFoundError:
            print(f"MISSING expectation: {rel}")
            bad += 1
            continue
        if got != want:
            bad += 1
            print(f"DIFF {rel}: primary {want.get('primary')} -> {got['primary']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    sys.exit(main(sys.argv[1:]))
