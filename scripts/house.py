"""How the code is laid out, in numbers (issue 41): files, import arrows between triage's modules, the
import circles between files, the arrows that run back up a floor, and radon's C-or-worse count.

    python scripts/house.py            # the figures
    python scripts/house.py --list     # ... and every circle and back-arrow

A floor is a stage: a module may import its own floor and the floors below it. FLOORS lists each
module (by dotted name prefix, longest first) and its floor, bottom up."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from typing import Dict, List, Set, Tuple

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "triage")

# bottom up: what a floor may import is its own floor and those below
FLOORS: List[Tuple[int, Tuple[str, ...]]] = [
    (0, ("triage.__init__", "triage.record", "triage.lazyre", "triage.hashing", "triage.errors", "triage.caps",
         "triage.kinds", "triage.unicode", "triage.term", "triage.procs", "triage.cachefiles", "triage.jobid",
         "triage.progress", "triage.files", "triage.redact")),
    (1, ("triage.match", "triage.scan.rx", "triage.scan.anchors", "triage.rx", "triage.anchors")),
    (2, ("triage.inputs", "triage.scan.text", "triage.scan.sources", "triage.scan.remote", "triage.scan.digest",
         "triage.scan.paste", "triage.sources")),
    (3, ("triage.patterns", "triage.taxonomy", "triage.config.rules", "triage.config.operators")),
    (4, ("triage.config",)),
    (5, ("triage.scan", "triage.engine")),
    (6, ("triage.verdict", "triage.findings", "triage.steps", "triage.blame", "triage.pipeline", "triage.selftest",
         "triage.suggest")),
    (7, ("triage.report", "triage.svg", "triage.templates", "triage.schemas")),
    (8, ("triage.store", "triage.fleet", "triage.fleet_report", "triage.fleet_reports", "triage.fleet_html",
         "triage.recheck", "triage.watch")),
    (9, ("triage.cli", "triage.commands", "triage.__main__")),
]


def floor_of(mod: str) -> int:
    best = (-1, -1)
    for floor, prefixes in FLOORS:
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best[0]:
                best = (len(p), floor)
    return best[1]


def modules() -> Dict[str, str]:
    out = {}
    for d, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") and rel != "triage.__init__" else rel] = path
    return out


def imports(mod: str, path: str, known: Set[str]) -> Set[str]:
    """Modules of triage that MOD imports (at any depth of the file: a lazy import is an arrow too)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    pkg = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
    out: Set[str] = set()
    for node in ast.walk(tree):
        names: List[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for n in names:
            while n and n not in known:
                n = n.rsplit(".", 1)[0] if "." in n else ""
            if n and n != mod:
                out.add(n)
    return out


def sccs(graph: Dict[str, Set[str]]) -> List[List[str]]:
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    mods = modules()
    known = set(mods)
    graph = {m: imports(m, p, known) for m, p in mods.items()}
    # a package's __init__ importing its own modules is no arrow between stages
    edges = [(a, b) for a, bs in graph.items() for b in bs if not b.startswith(a + ".")]
    back = [(a, b) for a, b in edges if floor_of(b) > floor_of(a)]
    unplaced = sorted(m for m in mods if floor_of(m) < 0)
    circles = sccs({a: {b for b in bs if not b.startswith(a + ".")} for a, bs in graph.items()})
    try:
        cc = subprocess.run(["radon", "cc", "-n", "C", "-s", ROOT], capture_output=True, text=True).stdout
        radon = str(sum(1 for ln in cc.splitlines() if ln.startswith("    ")))
    except OSError:
        radon = "? (pip install radon)"
    print(f"files {len(mods)}  (at the package root: {sum(1 for m in mods if m.count('.') == 1)})")
    print(f"import arrows {len(edges)}  circles between files {len(circles)}  arrows back up a floor {len(back)}")
    print(f"radon C-or-worse blocks {radon}")
    if unplaced:
        print(f"modules on no floor: {', '.join(unplaced)}")
    if "--list" in sys.argv:
        for c in circles:
            print("circle: " + " <-> ".join(c))
        for a, b in sorted(back):
            print(f"back up: {a} ({floor_of(a)}) -> {b} ({floor_of(b)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
