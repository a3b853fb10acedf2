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
         "triage.files", "triage.tables", "triage.regexwarm", "triage.recache")),
    (1, ("triage.match",)),
    (2, ("triage.inputs", "triage.redact")),
    (3, ("triage.patterns", "triage.taxonomy", "triage.config.operators", "triage.config.enums", "triage.config.keys",
         "triage.config.engines")),
    (4, ("triage.config",)),
    (5, ("triage.scan",)),
    (6, ("triage.verdict", "triage.pipeline", "triage.novelty", "triage.progress", "triage.selftest", "triage.suggest",
         "triage.patterntests")),
    (7, ("triage.report", "triage.templates", "triage.schemas")),
    (8, ("triage.fleet", "triage.watch")),
    (9, ("triage.cli", "triage.cliutil", "triage.commands", "triage.__main__")),
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
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    st = _Tarjan(graph)
    for v in sorted(graph):
        if v not in st.index:
            st.visit(v)
    return st.out


class _Tarjan:
    def __init__(self, graph: Dict[str, Set[str]]):
        self.graph = graph
        self.index: Dict[str, int] = {}
        self.low: Dict[str, int] = {}
        self.stack: List[str] = []
        self.on: Set[str] = set()
        self.out: List[List[str]] = []
        sys.setrecursionlimit(10000)

    def visit(self, v: str) -> None:
        self.index[v] = self.low[v] = len(self.index)
        self.stack.append(v)
        self.on.add(v)
        for w in self.graph.get(v, ()):
            if w not in self.index:
                self.visit(w)
                self.low[v] = min(self.low[v], self.low[w])
            elif w in self.on:
                self.low[v] = min(self.low[v], self.index[w])
        if self.low[v] == self.index[v]:
            self._pop(v)

    def _pop(self, v: str) -> None:
        comp = []
        while True:
            w = self.stack.pop()
            self.on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            self.out.append(sorted(comp))


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
