"""Write triage/config/settings.txt: every setting name the released Megatron-LM / megatron-core and
Megatron Bridge sources define, so that `check-config` and `diff` can tell a typo
(`model.cuda_graph_scpoe`) from a real setting triage does not check (`optimizer.lr`).

Read from git mirrors of the two repositories (the `fetch` tool's copies), at each release tag below:
- dataclass fields (annotated class attributes) of every `@dataclass` class and every class whose
  name ends in `Config` or `Provider` in megatron/core/**, megatron/training/** and src/megatron/bridge/**;
- Megatron-LM's argparse options: `add_argument('--x-y', ...)` is `x_y`, a `dest=` wins; and the
  arguments validate_args derives (`args.x = ...`).

Usage: python scripts/gen_settings_table.py MEGATRON_LM_GIT_DIR MEGATRON_BRIDGE_GIT_DIR
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from typing import Iterable, List, Set, Tuple

LM_TAGS = ("core_r0.8.0", "core_r0.10.0", "core_v0.12.0", "core_v0.14.0", "core_v0.16.0", "core_v0.18.0",
           "core_v0.19.0", "HEAD")
BRIDGE_TAGS = ("v0.3.0", "v0.4.0", "v0.5.0", "v0.6.0", "HEAD")
LM_DIRS = ("megatron/core/", "megatron/training/")
BRIDGE_DIRS = ("src/megatron/bridge/",)
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "triage", "config", "settings.txt")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def files(repo: str, tag: str, dirs: Tuple[str, ...]) -> List[str]:
    try:
        names = git(repo, "ls-tree", "-r", "--name-only", tag).splitlines()
    except subprocess.CalledProcessError:
        return []
    return [n for n in names if n.endswith(".py") and n.startswith(dirs) and "/tests/" not in n]


def blobs(repo: str, tag: str, names: List[str]) -> Iterable[str]:
    """The files' texts at TAG, through one `git cat-file --batch`."""
    want = "".join(f"{tag}:{n}\n" for n in names).encode()
    p = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input=want, capture_output=True, check=True)
    data, i = p.stdout, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        head = data[i:nl].split()
        if len(head) < 3 or head[1] == b"missing":
            i = nl + 1
            continue
        size = int(head[2])
        yield data[nl + 1:nl + 1 + size].decode("utf-8", "replace")
        i = nl + 1 + size + 1


def _fields(node: ast.ClassDef) -> Iterable[str]:
    dc = any("dataclass" in ast.unparse(d) for d in node.decorator_list)
    if dc or node.name.endswith(("Config", "Provider")):
        for item in node.body:
            target = item.target if isinstance(item, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and not target.id.startswith("_"):
                yield target.id


def _options(node: ast.Call) -> Iterable[str]:
    dest = [k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)]
    if dest and isinstance(dest[0], str):
        yield dest[0]
    for a in node.args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
            yield a.value[2:].replace("-", "_")


def names_of(src: str) -> Iterable[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield from _fields(node)
        elif isinstance(node, ast.Assign):       # validate_args: args.X = ... (a derived argument)
            yield from (t.attr for t in node.targets
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "args")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            yield from _options(node)


def collect(repo: str, tags: Tuple[str, ...], dirs: Tuple[str, ...]) -> Tuple[Set[str], List[str]]:
    out: Set[str] = set()
    read: List[str] = []
    for tag in tags:
        fs = files(repo, tag, dirs)
        if not fs:
            continue
        read.append(tag if tag != "HEAD" else "main@" + git(repo, "rev-parse", "--short", "HEAD").strip())
        for text in blobs(repo, tag, fs):
            if "Config" in text or "dataclass" in text or "add_argument" in text or "args." in text:
                out.update(names_of(text))
    return out, read


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    lm, lm_read = collect(argv[1], LM_TAGS, LM_DIRS)
    br, br_read = collect(argv[2], BRIDGE_TAGS, BRIDGE_DIRS)
    names = sorted(n for n in lm | br if n.isidentifier())
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("# Setting names of the released sources (scripts/gen_settings_table.py): dataclass fields of\n"
                "# the *Config classes and Megatron-LM's argparse options.\n"
                f"# Megatron-LM / megatron-core: {' '.join(lm_read)}\n"
                f"# Megatron Bridge: {' '.join(br_read)}\n")
        f.write("\n".join(names) + "\n")
    print(f"{len(names)} names ({len(lm)} Megatron-LM, {len(br)} Bridge) -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
