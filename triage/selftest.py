"""Check pattern files against their own examples (used by `triage patterns check` and the tests).

`check_examples` returns one line per problem:
- an example that does not do what it says (a `match` line the pattern misses, a `no_match` line it fires on);
- a match rule that fires on none of its file's examples (an untested rule is a guess);
- a regex that risks a runaway search, or that hit the timeout on the examples;
- a `when` or `implicates` key that is not a canonical config key (`canonical_keys`): a condition on a
  key the config never holds is silently false -- or silently true for `falsy`, `unset`, `ne`, ...;
- a config rule without a `violates` config it flags and an `ok` config it does not, or whose
  examples disagree with it;
- an example line of one pattern that another pattern of the catalog wins (higher priority) or shares
  (same priority) without the file declaring it in `overlaps` -- and a declared overlap that no example
  shows or that names no pattern of the catalog.
`example_winners` is the table behind the last check: which pattern wins each example line.
"""
from __future__ import annotations

import difflib
import functools
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import regex

from .inputs.sources import Line, make_line
from .patterns import ConfigRule, Pattern
from .scan.engine import Engine

_ENV_KEY = regex.compile(r"env\.[A-Za-z_][A-Za-z0-9_]*")


def lines_of(example: str, source: str = "<example>") -> List[Line]:
    return [make_line(raw, source, i) for i, raw in enumerate(example.splitlines(), 1)]


def fired(engine: Engine, example: str) -> set:
    return {m.pattern.id for m in engine.scan(lines_of(example)).matches}


# --- canonical config keys -------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def canonical_keys() -> Tuple[str, ...]:
    """Every key a canonical config can hold, besides `env.NAME`: what config.canonical() makes of each
    spelling it knows (so a key it folds into another, e.g. enable_cuda_graph -> cuda_graph_impl, is not
    one).  PATTERNS.md lists them; tests/test_selftest.py keeps the two in step.  Computed once (cached)."""
    from . import config
    keys: set = set()
    for k in set(config.KNOWN) | set(config.ALIASES) | set(config.ALIASES.values()):
        keys |= set(config.canonical({k: True}))
    keys |= set(config.canonical({"env.PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))
    return tuple(sorted(k for k in keys if not k.startswith("env.")))


def is_canonical_key(key: str) -> bool:
    return key in canonical_keys() or bool(_ENV_KEY.fullmatch(key))


def _unknown_key(key: Any, where: str) -> Optional[str]:
    if isinstance(key, str) and is_canonical_key(key):
        return None
    close = difflib.get_close_matches(str(key), canonical_keys(), n=1, cutoff=0.75)
    hint = (f" (did you mean {close[0]!r}?)" if close
            else " (PATTERNS.md lists the canonical keys; env.NAME for a variable)")
    return f"{where}: {key!r} is not a canonical config key{hint}"


def _config_problems(p: Pattern) -> List[str]:
    from .config import rule_holds
    out = []
    for k in list(p.implicates) + list(p.implies):
        why = _unknown_key(k, f"{p.path}: {'implicates' if k in p.implicates else 'implies'}")
        if why:
            out.append(why)
    for i, n in enumerate(p.notes):
        for j, c in enumerate(n.when_any):
            why = _unknown_key(c["key"], f"{p.path}: notes[{i}] when_any[{j}]")
            if why:
                out.append(why)
    for i, r in enumerate(p.config_rules):
        where = f"{p.path}: config_rules[{i}]"
        for j, cond in enumerate(r.when):
            why = _unknown_key(cond["key"], f"{where} when[{j}]")
            if why:
                out.append(why)
        out += _rule_examples(r, where, rule_holds)
    return out


def _rule_examples(r: ConfigRule, where: str, rule_holds: Any) -> List[str]:
    out = []
    if not r.violates:
        out.append(f"{where}: no 'violates' example (a canonical config the rule must flag)")
    if not r.ok:
        out.append(f"{where}: no 'ok' example (a canonical config close to a violation that the rule must not flag)")
    for name, cfgs, want in (("violates", r.violates, True), ("ok", r.ok, False)):
        for j, cfg in enumerate(cfgs):
            for k in cfg:
                why = _unknown_key(k, f"{where} {name}[{j}]")
                if why:
                    out.append(why)
            if rule_holds(cfg, r) != want:
                out.append(f"{where} {name}[{j}]: the rule {'does not flag' if want else 'flags'} {cfg!r}")
    return out


# --- which pattern wins each example -----------------------------------------------------------------

@dataclass
class ExampleWinner:
    pattern: str              # the file's pattern id
    index: int                # examples.match[index]
    example: str
    winners: List[str]        # the pattern(s) of highest priority that fire on the lines the pattern fires on
    priorities: Dict[str, int]

    @property
    def others(self) -> List[str]:
        return [w for w in self.winners if w != self.pattern]


def _own_lines(own: Engine, p: Pattern, ex: str) -> List[Tuple[str, int]]:
    return sorted({(m.line.source, m.line.lineno) for m in own.scan(lines_of(ex)).matches if m.pattern.id == p.id})


def example_winners(patterns: Sequence[Pattern], catalog: Optional[Sequence[Pattern]] = None) -> List[ExampleWinner]:
    """Run every match example of PATTERNS through the whole CATALOG (default: the patterns plus the shipped
    ones they do not replace) and name the winner of each: on each line the pattern itself fires on, the
    pattern(s) of highest priority among all that fire there (a line counts for those only, verdict/grouping.py).
    An example the pattern itself misses is left out (check_examples reports it)."""
    cat = list(catalog) if catalog is not None else _catalog(patterns)
    whole = Engine(cat)
    out = []
    for p in patterns:
        own = Engine([p])
        for i, ex in enumerate(p.examples_match):
            lines = _own_lines(own, p, ex)
            if not lines:
                continue
            by_line: Dict[Tuple[str, int], Dict[str, int]] = {}
            for m in whole.scan(lines_of(ex)).matches:
                k = (m.line.source, m.line.lineno)
                if k in lines:
                    by_line.setdefault(k, {})[m.pattern.id] = m.pattern.priority
            winners: List[str] = []
            prio: Dict[str, int] = {}
            for k in lines:
                fired_here = by_line.get(k, {})
                if not fired_here:
                    continue
                top = max(fired_here.values())
                for pid, pr in fired_here.items():
                    if pr == top and pid not in winners:
                        winners.append(pid)
                        prio[pid] = pr
            prio.setdefault(p.id, p.priority)
            out.append(ExampleWinner(p.id, i, ex, winners, prio))
    return out


def format_winners(rows: Sequence[ExampleWinner]) -> List[str]:
    """One line per example: `pattern[i] -> winner(s)`, marked when another pattern wins or shares it."""
    out = []
    for w in rows:
        mark = "" if not w.others else ("  (shared)" if w.pattern in w.winners else "  (won by another)")
        first = w.example.splitlines()[0] if w.example else ""
        out.append(f"{w.pattern}[{w.index}] -> {', '.join(w.winners) or '-'}{mark}: {first[:100]!r}")
    return out


def _catalog(patterns: Sequence[Pattern]) -> List[Pattern]:
    """PATTERNS plus the shipped patterns of other ids: a user's pattern runs alongside the catalog."""
    from .patterns import PatternError, builtin_dir, load_dir
    ids = {p.id for p in patterns}
    paths = {os.path.abspath(p.path) for p in patterns}
    try:
        shipped = load_dir(builtin_dir())
    except PatternError:          # a broken shipped file is reported when that directory is checked
        shipped = []
    return list(patterns) + [q for q in shipped if q.id not in ids and os.path.abspath(q.path) not in paths]


def _overlap_problems(patterns: Sequence[Pattern], catalog: Sequence[Pattern]) -> List[str]:
    out = []
    ids = {q.id for q in catalog}
    used: Dict[str, set] = {p.id: set() for p in patterns}
    rows = example_winners(patterns, catalog)
    by_id = {p.id: p for p in patterns}
    for w in rows:
        p = by_id[w.pattern]
        for o in w.others:
            used[p.id].add(o)
            if o in p.overlaps:
                continue
            how = (f"shared with {o!r} (same priority {w.priorities[o]})" if p.id in w.winners else
                   f"won by {o!r} (priority {w.priorities[o]} > {p.priority})")
            out.append(f"{p.path}: example match[{w.index}] is {how}: {w.example.splitlines()[0][:120]!r}; "
                       f"make the rules disjoint, or declare it deliberate with `overlaps: [{o}]`")
    for p in patterns:
        for o in p.overlaps:
            if o not in ids:
                out.append(f"{p.path}: overlaps: {o!r} is not a pattern of the catalog")
            elif o not in used[p.id]:
                out.append(f"{p.path}: overlaps: {o!r} wins or shares none of the examples; "
                           "remove it, or add the example that shows the overlap")
    return out


# --- the check ---------------------------------------------------------------------------------------

def _risky_problems(p: Pattern) -> List[str]:
    """The regexes of P's match rules (with their context and `not` regexes) that risk a runaway search."""
    from .match.rx import risky
    problems = []
    for i, r in enumerate(p.match):
        for src in [r.source_text] + [c.rx.pattern for c in r.context] + [n.pattern for n in r.negative]:
            why = risky(src)
            if why:
                problems.append(f"{p.path}: match[{i}]: regex {src[:80]!r}: {why}")
    return problems


def _example_problems(p: Pattern) -> List[str]:
    """P run on its own examples: a `match` example it misses, a `no_match` one it fires on, a rule
    that fires on none, a regex that hit the timeout."""
    from .match.rx import TIMEOUT
    problems = []
    own = Engine([p])
    timeouts = 0
    hit_rules: set = set()
    for ex in p.examples_match:
        res = own.scan(lines_of(ex))
        timeouts += res.regex_timeouts
        ms = res.matches
        hit_rules |= {id(m.rule) for m in ms}
        if not ms:
            problems.append(f"{p.path}: example should match but does not: {ex[:160]!r}")
    for ex in p.examples_no_match:
        res = own.scan(lines_of(ex))
        timeouts += res.regex_timeouts
        if p.id in {m.pattern.id for m in res.matches}:
            problems.append(f"{p.path}: example should not match but does: {ex[:160]!r}")
    for i, r in enumerate(p.match):
        if id(r) not in hit_rules:
            problems.append(f"{p.path}: match[{i}] fires on none of the examples: {r.source_text[:100]!r}; "
                            "add the message it is for (as the software prints it) to examples.match")
    if timeouts:
        problems.append(f"{p.path}: a regex hit the {TIMEOUT}s timeout on its own examples "
                        "(catastrophic backtracking?); rewrite it")
    return problems


def check_examples(patterns: List[Pattern], catalog: Optional[Sequence[Pattern]] = None) -> List[str]:
    """Every problem of PATTERNS (see the module docstring), one line each; [] when there is none.
    CATALOG is what the examples are run against for the winner check (default: the patterns plus
    the shipped patterns of other ids)."""
    problems = []
    for p in patterns:
        problems += _risky_problems(p)
        problems += _example_problems(p)
        problems += _config_problems(p)
    problems += _overlap_problems(patterns, catalog if catalog is not None else _catalog(patterns))
    return problems


def _placeholders(path: str) -> List[str]:
    """The fields of a pattern file still holding a `triage patterns suggest` placeholder (TODO),
    read as text (never parsed here: the loader's guards against hostile YAML come first)."""
    import re
    if not os.path.isfile(path):        # a FIFO would block here (the loader says what it is)
        return []
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return []
    out: List[str] = []
    key = "(top)"
    for ln in text.splitlines():
        if ln.lstrip().startswith("#"):
            continue
        m = re.match(r"^\s*-?\s*([A-Za-z_][\w-]*):", ln)
        if m:
            key = m.group(1)
        if "TODO" in ln and key not in out:
            out.append(key)
    return out


def load_problems(target: str, known_ids: Optional[Sequence[str]] = None) -> Tuple[List[Pattern], List[str]]:
    """The patterns of TARGET (a directory, or one file) that load, and one problem line for each
    file that does not (why) or that still holds a draft's TODO placeholders: every file is tried."""
    from .patterns import PatternError, load_file
    if os.path.isdir(target):
        files = sorted(os.path.join(target, f) for f in os.listdir(target) if f.endswith((".yaml", ".yml")))
        if not files:
            raise PatternError(f"pattern directory {target!r} holds no .yaml files")
    elif os.path.isfile(target):
        files = [target]
    else:
        raise PatternError(f"pattern directory {target!r} does not exist")
    pats: List[Pattern] = []
    problems: List[str] = []
    for f in files:
        todo = _placeholders(f)
        if todo:
            problems.append(f"{os.path.basename(f)}: a draft: TODO placeholders left in {', '.join(todo[:8])}"
                            + (f" (+{len(todo) - 8} more)" if len(todo) > 8 else ""))
        try:
            pats.append(load_file(f, known_ids))
        except PatternError as e:
            msg = str(e)
            problems.append(msg if os.path.basename(f) in msg else f"{os.path.basename(f)}: {msg}")
    return pats, problems
