"""The plain text every match of a regex holds: the prefilter literals the one multi-pattern search looks
for (a pattern rule's derived `literal`, an observer's anchor).  Read with the stdlib's regex parser;
nothing here knows what a pattern is."""
from __future__ import annotations

from typing import Any, List, Tuple

from ..cachefiles import Memo

MIN_DERIVED_LITERAL = 4     # a derived prefilter shorter than this is refused: give a `literal`


def _sre() -> Tuple[Any, Any]:
    """The stdlib regex parser and its constants (re._parser / re._constants from Python 3.11)."""
    try:
        from re import _constants, _parser  # Python >= 3.11
        return _parser, _constants
    except ImportError:                             # pragma: no cover - Python 3.9 / 3.10
        import sre_constants
        import sre_parse
        return sre_parse, sre_constants


def _runs(items: Any, out: List[str], cur: List[str]) -> List[str]:
    """Collect into OUT the runs of literal characters that every match of ITEMS (an sre sequence)
    contains contiguously; CUR is the run being built.  Returns the run still open at the end."""
    c = _sre()[1]
    for op, av in items:
        if op is c.LITERAL:
            cur.append(chr(av))
        elif op in (c.AT, c.ASSERT, c.ASSERT_NOT):  # zero-width: neighbours stay adjacent
            continue
        elif op is c.SUBPATTERN and not av[1] and not av[2] and not any(o is c.BRANCH for o, _ in av[3]):
            cur = _runs(av[3], out, cur)            # a plain group (no flags, no alternation): inline
        elif op is getattr(c, "ATOMIC_GROUP", None) and not any(o is c.BRANCH for o, _ in av):
            cur = _runs(av, out, cur)
        else:
            out.append("".join(cur))
            cur = []
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and av[0] >= 1:
                out.append("".join(_runs(av[2], out, [])))   # a repeat taken at least once: its body
    return cur


def _parse_rx(src: str, ignore_case: bool) -> Tuple[Any, str]:
    """(the stdlib parser's reading of SRC, "") or (None, why it cannot be read for a prefilter)."""
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = _sre()[0].parse(src)
    except Exception as e:  # noqa: BLE001 - regex-only syntax, or an error compile will report
        return None, f"the regex cannot be analysed ({str(e)[:60]})"
    from re import IGNORECASE
    if parsed.state.flags & IGNORECASE and not ignore_case:
        return None, "an inline (?i) needs `ignore_case: true` or an explicit literal"
    return parsed, ""


def _branch_literals(branches: Any) -> List[str]:
    """The longest run every match of each of BRANCHES contains, once each; [] when one has none of
    MIN_DERIVED_LITERAL characters."""
    lits: List[str] = []
    for b in branches:
        out: List[str] = []
        out.append("".join(_runs(b, out, [])))
        best = max(out, key=len, default="")
        if len(best.strip()) < MIN_DERIVED_LITERAL:
            return []
        if best not in lits:
            lits.append(best)
    return lits


# derive_literals' answers kept between runs, by (regex, ignore_case) (cachefiles.Memo: the failure forms' and the
# collectives' ~25 regexes read again every run, ~5 ms of a tiny log's, issue 44)
DERIVED = Memo("derived-literals-", __file__, lambda k, v: (
    type(k) is tuple and len(k) == 2 and type(k[0]) is str and type(k[1]) is bool and type(v) is tuple
    and len(v) == 2 and type(v[0]) is list and all(type(x) is str for x in v[0]) and type(v[1]) is str))


def derive_literals(src: str, ignore_case: bool = False) -> Tuple[List[str], str]:
    """The prefilter for a regex: the longest run of plain characters that every match contains
    (one per alternative when the whole regex is an alternation).  ([], why) when none of at least
    MIN_DERIVED_LITERAL characters exists or the regex is beyond the stdlib parser used to read it.
    Kept between runs (DERIVED)."""
    key = (src, bool(ignore_case))
    got = DERIVED.get(key)
    if got is None:
        got = _derive(*key)
        DERIVED.put(key, (list(got[0]), got[1]))
    return list(got[0]), got[1]


def _derive(src: str, ignore_case: bool) -> Tuple[List[str], str]:
    """derive_literals, read with the stdlib's parser."""
    parsed, why = _parse_rx(src, ignore_case)
    if parsed is None:
        return [], why
    c = _sre()[1]
    items = list(parsed)
    branches = [items]
    # an alternation (bare, or one group) with only zero-width assertions around it: one per alternative
    core = [(op, av) for op, av in items if op not in (c.AT, c.ASSERT, c.ASSERT_NOT)]
    if len(core) == 1 and core[0][0] is c.SUBPATTERN and not core[0][1][1] and not core[0][1][2]:
        core = list(core[0][1][3])
    if len(core) == 1 and core[0][0] is c.BRANCH:
        branches = core[0][1][1]
    lits = _branch_literals(branches)
    if not lits:
        return [], f"no plain text of {MIN_DERIVED_LITERAL}+ characters that every match contains"
    return lits, ""


def leading_alternatives(src: str, ignore_case: bool = False) -> List[str]:
    """For a regex that starts (after zero-width assertions) with a plain group of alternatives, one
    literal per alternative that every match through it contains, e.g. ["Error", "Exception"] for
    `(?:Error|Exception)(?::|$)`: every match holds one of them.  [] when an alternative has no run of
    MIN_DERIVED_LITERAL characters, or the regex is beyond the stdlib parser (as derive_literals)."""
    parsed, _ = _parse_rx(src, ignore_case)
    if parsed is None:
        return []
    c = _sre()[1]
    items = [(op, av) for op, av in parsed if op not in (c.AT, c.ASSERT, c.ASSERT_NOT)]
    first = items[0] if items else None
    if first is not None and first[0] is c.SUBPATTERN and not first[1][1] and not first[1][2] \
            and len(first[1][3]) == 1:
        first = list(first[1][3])[0]           # a capturing group around it (a `(?:` group is inlined)
    if first is None or first[0] is not c.BRANCH:
        return []
    return _branch_literals(first[1][1])
