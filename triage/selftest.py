"""Run each pattern file's own examples (used by `triage patterns check` and the tests)."""
from __future__ import annotations

from typing import List

from .engine import Engine
from .patterns import Pattern
from .sources import Line, make_line


def lines_of(example: str, source: str = "<example>") -> List[Line]:
    return [make_line(raw, source, i) for i, raw in enumerate(example.splitlines(), 1)]


def fired(engine: Engine, example: str) -> set:
    return {m.pattern.id for m in engine.scan(lines_of(example)).matches}


def check_examples(patterns: List[Pattern]) -> List[str]:
    """Each match example must fire its pattern; each no_match example must not."""
    from . import rx
    from .rx import risky
    problems = []
    for p in patterns:
        for i, r in enumerate(p.match):
            for src in [r.source_text] + [c.rx.pattern for c in r.context] + [n.pattern for n in r.negative]:
                why = risky(src)
                if why:
                    problems.append(f"{p.path}: match[{i}]: regex {src[:80]!r}: {why}")
        own = Engine([p])
        before = rx.timeouts
        for ex in p.examples_match:
            if p.id not in fired(own, ex):
                problems.append(f"{p.path}: example should match but does not: {ex[:160]!r}")
        for ex in p.examples_no_match:
            if p.id in fired(own, ex):
                problems.append(f"{p.path}: example should not match but does: {ex[:160]!r}")
        if rx.timeouts > before:
            problems.append(f"{p.path}: a regex hit the {rx.TIMEOUT}s timeout on its own examples "
                            "(catastrophic backtracking?); rewrite it")
    return problems
