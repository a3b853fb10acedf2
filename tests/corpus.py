"""Fixture corpus: every log under tests/fixtures/logs/ has its expected result beside it.

    python tests/corpus.py            # list the cases and fields that differ from their expectation (exit 1)
    python tests/corpus.py --update   # rewrite the expectations on purpose, printing what changed (review the diff!)

A case is a log file (any name, .gz too) or a directory of per-rank logs; its expectation is
`<name>.expected.json` next to it.

Each case's result is what a user sees: it is made by the CLI itself (click's CliRunner on
`triage.cli.cli`), exactly as

    cd tests/fixtures/logs && triage analyze <case> --format json

(no verdict store: TRIAGE_DB unset), so the corpus cannot disagree with the CLI.  From that JSON
the stable, user-visible part is pinned (PINNED): the exit code, outcome, primary, summary,
signature, first failing rank, the launcher's root-cause rank, the first failure (kind, rank,
where), the hang suspects, every finding (pitfall, role, rank, ranks, count, fingerprint, where,
in report order) and every unmatched block (where, rank, count, fingerprint).  Paths are relative
to tests/fixtures/logs, so nothing varies from one machine to another; keys are sorted.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "fixtures", "logs")
SKIP = {"README.md", "versions.txt", "MANIFEST.tsv"}

# top-level fields of an expectation, in the order a difference is reported
PINNED = ("exit_code", "outcome", "primary", "summary", "signature", "first_failing_rank", "launcher_root_rank",
          "first_failure", "hang_suspects", "findings", "unmatched")
FINDING_FIELDS = ("pitfall", "role", "rank", "ranks", "count", "fingerprint", "at")
UNMATCHED_FIELDS = ("at", "rank", "count", "fingerprint")


def cases() -> List[str]:
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


def expected_path(case: str) -> str:
    return case + ".expected.json"


def orphan_expectations() -> List[str]:
    """Expectation files whose case is gone (a renamed or deleted log)."""
    have = {expected_path(c) for c in cases()}
    out = []
    for root, _dirs, files in os.walk(LOGS):
        out.extend(os.path.join(root, f) for f in files
                   if f.endswith(".expected.json") and os.path.join(root, f) not in have)
    return sorted(out)


@contextlib.contextmanager
def _cwd(path: str):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def analyze_json(case: str) -> Tuple[int, Dict[str, Any]]:
    """(exit code, JSON report) of `triage analyze <case> --format json` run in tests/fixtures/logs."""
    from click.testing import CliRunner

    from triage.cli import cli

    rel = os.path.relpath(case, LOGS)
    with _cwd(LOGS):
        r = CliRunner().invoke(cli, ["analyze", rel, "--format", "json"], env={"TRIAGE_DB": None})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        raise AssertionError(f"{rel}: triage analyze exited {r.exit_code} without a JSON report: {r.output[-2000:]!r}")
    return r.exit_code, doc


def pinned(code: int, d: Dict[str, Any]) -> Dict[str, Any]:
    """The part of an analyze JSON report (and its exit code) a case's expectation pins."""
    ff = d.get("first_failure")
    return {
        "exit_code": code,
        "outcome": d["outcome"],
        "primary": d["primary"],
        "summary": d["summary"],
        "signature": d.get("signature"),
        "first_failing_rank": d["first_failing_rank"],
        "launcher_root_rank": d.get("launcher_root_rank"),
        "first_failure": None if ff is None else {
            "kind": ff["kind"], "rank": ff["rank"], "at": f"{ff['source']}:{ff['line']}", "explained": ff["explained"]},
        "hang_suspects": None if "hang_suspects" not in d else [
            {"rank": x["rank"], "peer": x["peer"]} for x in d["hang_suspects"]],
        "findings": [{"pitfall": f["pitfall"], "role": f["role"], "rank": f["rank"], "ranks": f["ranks"],
                      "count": f["count"], "fingerprint": f["fingerprint"], "at": f"{f['source']}:{f['line']}"}
                     for f in d["findings"]],
        "unmatched": [{"at": f"{u['source']}:{u['line']}", "rank": u["rank"], "count": u["count"],
                       "fingerprint": u["fingerprint"]} for u in d["unmatched"]],
    }


def summarise(case: str) -> Dict[str, Any]:
    """What a case's expectation pins, from the CLI's own output."""
    return pinned(*analyze_json(case))


def load_expected(case: str) -> Dict[str, Any]:
    with open(expected_path(case), encoding="utf-8") as f:
        return json.load(f)


def dumps(d: Dict[str, Any]) -> str:
    """An expectation as written: sorted keys, two-space indent, UTF-8, one trailing newline."""
    return json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _item(x: Any, fields: Tuple[str, ...]) -> str:
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}={x.get(k)!r}" for k in fields if k in x) + "}"
    return repr(x)


def differences(want: Dict[str, Any], got: Dict[str, Any]) -> List[str]:
    """Field-level differences, one line each ('findings[1].role: 'cascade' -> 'info'')."""
    out: List[str] = []
    for k in list(PINNED) + sorted((set(want) | set(got)) - set(PINNED)):
        if k not in want and k not in got:
            continue
        if k not in want:
            out.append(f"{k}: (not pinned) -> {got[k]!r}")
            continue
        if k not in got:
            out.append(f"{k}: {want[k]!r} -> (not produced)")
            continue
        w, g = want[k], got[k]
        if w == g:
            continue
        if isinstance(w, list) and isinstance(g, list) and k in ("findings", "unmatched"):
            fields = FINDING_FIELDS if k == "findings" else UNMATCHED_FIELDS
            if len(w) != len(g):
                out.append(f"{k}: {len(w)} -> {len(g)} entries")
            for i in range(max(len(w), len(g))):
                if i >= len(g):
                    out.append(f"{k}[{i}]: {_item(w[i], fields)} -> (gone)")
                elif i >= len(w):
                    out.append(f"{k}[{i}]: (new) -> {_item(g[i], fields)}")
                elif w[i] != g[i]:
                    if isinstance(w[i], dict) and isinstance(g[i], dict):
                        for f in sorted(set(w[i]) | set(g[i]), key=lambda f: (f not in fields, fields.index(f) if f in fields else 0, f)):
                            if w[i].get(f, "(absent)") != g[i].get(f, "(absent)"):
                                out.append(f"{k}[{i}].{f}: {w[i].get(f, '(absent)')!r} -> {g[i].get(f, '(absent)')!r}")
                    else:
                        out.append(f"{k}[{i}]: {w[i]!r} -> {g[i]!r}")
        elif isinstance(w, dict) and isinstance(g, dict):
            for f in sorted(set(w) | set(g)):
                if w.get(f, "(absent)") != g.get(f, "(absent)"):
                    out.append(f"{k}.{f}: {w.get(f, '(absent)')!r} -> {g.get(f, '(absent)')!r}")
        else:
            out.append(f"{k}: {w!r} -> {g!r}")
    return out


def check_case(case: str) -> List[str]:
    """Differences of a case from its expectation ([] when it matches)."""
    if not os.path.exists(expected_path(case)):
        return ["no expectation beside the case (python tests/corpus.py --update, then review)"]
    return differences(load_expected(case), summarise(case))


def main(argv: List[str]) -> int:
    update = "--update" in argv
    unknown = [a for a in argv if a != "--update"]
    if unknown:
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        return 2
    bad = changed = 0
    all_cases = cases()
    for c in all_cases:
        rel = os.path.relpath(c, LOGS)
        got = summarise(c)
        ep = expected_path(c)
        if os.path.exists(ep):
            diffs = differences(load_expected(c), got)
            with open(ep, encoding="utf-8") as f:
                same_text = f.read() == dumps(got)
        else:
            diffs, same_text = ["(no expectation yet)"], False
        if not diffs and (same_text or not update):
            continue
        if update:
            with open(ep, "w", encoding="utf-8") as f:
                f.write(dumps(got))
            changed += 1
            print(f"wrote {os.path.relpath(ep, LOGS)}" + ("" if diffs else "  (format only)"))
        else:
            bad += 1
            print(f"DIFF {rel}")
        for line in diffs:
            print(f"    {line}")
    orphans = orphan_expectations()
    for o in orphans:
        print(f"ORPHAN {os.path.relpath(o, LOGS)}: no log or directory of that name beside it")
    if update:
        print(f"{len(all_cases)} cases, {changed} expectation(s) rewritten")
        return 1 if orphans else 0
    print(f"{len(all_cases)} cases, {bad} differ" + (f", {len(orphans)} orphan expectation(s)" if orphans else ""))
    return 1 if bad or orphans else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    sys.exit(main(sys.argv[1:]))
