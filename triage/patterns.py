"""Pattern catalog: one YAML file per pitfall id, validated on load.

The schema is documented in PATTERNS.md.  Loading never executes anything from a
pattern file: regexes are compiled with the `regex` package and config rules are
declarative (see config/rules.py for the operators).  Two conveniences keep a pattern short:
`{{name}}` macros in a regex are expanded at load time (MACROS), and a match or context
entry without a `literal` gets the prefilter derived from its regex (derive_literals).
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, TypeVar, Union

from . import __version__, cachefiles
from . import hashing as hashlib
from .caps import MAX_WINDOW
from .config.operators import OPERATORS
from .errors import TriageError
from .kinds import KINDS, ROLES, SEVERITIES, Kind, Role, Severity
from .match.literals import _sre, derive_literals
from .match.rx import LazyRx, compile_rx, regex, regex_origin, remember_valid, risky
from .record import record

try:
    from _pickle import dumps, loads  # the C pickler (the catalog cache), without pickle.py's pure-Python one
except ImportError:  # pragma: no cover - a Python without the accelerator
    from pickle import dumps, loads

DEFAULT_PRIORITY: Dict[Kind, int] = {"config": 90, "capture": 70, "perf": 40, "runtime": 50}
RULE_OPS = tuple(OPERATORS)      # the operators a config rule's condition may use


# Regex macros: `{{name}}` in any regex of a pattern file (match, context, not) is replaced by
# the text below before compiling; the finding's `rule` shows the expanded regex.
MACROS = {
    # not inside a quoted string or an identifier: the message, not the source line that prints it
    "not_quoted": r"""(?<![\w'"])""",
    # a C++ stack frame line of a c10::Error ("frame #3: ", "#3 ", "  #3: ")
    "cpp_frame": r"^\s*(?:frame )?#\d+:? ",
    # an NCCL WARN line: optional [launcher] prefix, host:pid:tid, optional [time], [device], file:line
    "nccl_warn": r"^(?:\[[^\]]*\] )?\S+:\d+:\d+ (?:\[[^\]]*\] )?\[\d+\] (?:\S+:\d+ )?(?:\([^)]*\) )?NCCL WARN ",
}
_MACRO_RX = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")     # (stdlib: the same on this regex)


class PatternError(TriageError):
    """A pattern file is malformed; the message names the file and the problem."""


@record
class ContextReq:
    rx: LazyRx
    literals: List[str]
    window: int


@record
class MatchRule:
    rx: LazyRx
    literals: List[str]
    ignore_case: bool
    role: Role
    context: List[ContextReq]
    negative: List[LazyRx]
    source_text: str
    generic: Optional[bool] = None     # overrides the pattern's `generic` for this rule
    # the line counts only when its `part` size is at least this share of its `whole` size (two
    # named groups of the regex, "21.71 MiB" / "22.05 GiB"): a material share, not any mention
    min_share: Optional[float] = None


@record
class ConfigRule:
    when: List[Dict[str, Any]]
    message: str
    keys: List[str]
    fix: str
    violates: List[Dict[str, Any]] = field(default_factory=list)   # canonical configs the rule must flag
    ok: List[Dict[str, Any]] = field(default_factory=list)         # ... and configs it must not flag


@record
class PatternNote:
    when_any: List[Dict[str, Any]]
    text: str


@record
class Pattern:
    id: str
    title: str
    severity: Severity
    kind: Kind
    generic: bool
    priority: int
    match: List[MatchRule]
    implicates: List[str]
    explanation: str
    fix: str
    references: List[Dict[str, str]]
    examples_match: List[str]
    examples_no_match: List[str]
    config_rules: List[ConfigRule] = field(default_factory=list)
    path: str = ""
    # settings the message itself proves (canonical key: value): a run that died of this pitfall
    # before printing its config still had them, so a partial config gets them for blame
    implies: Dict[str, Any] = field(default_factory=dict)
    overlaps: List[str] = field(default_factory=list)   # ids that may win this pattern's examples (deliberate)
    # What the verdict needs to know of this pitfall (issue 21: data, never an id in Python):
    # `waits`: a line of it shows a rank WAITING for others (a timeout, a hung watchdog, a lost peer),
    # not failing -- True for every line, or a regex a waiting line matches (None: never);
    waits: Union[bool, LazyRx, None] = None
    cascade_verb: str = ""         # "timed out": "...; 2 ranks (0,2) then timed out (<id>)"
    hang_summary: str = ""         # the head of a hang's summary ({who}, {whose}, {its}, {id})
    hang_silent: str = ""          # what the ranks that logged nothing did ("never joined it")
    # notes the report adds when this pitfall is the primary and any condition of `when_any` holds on
    # the run's facts (its canonical config, plus graphs_captured: the log shows a graph capture)
    notes: List["PatternNote"] = field(default_factory=list)
    # advice for the stack the log shows (issue 40): engine -> its own fix text and the settings it
    # names, used instead of `fix` / `implicates` when the log is that engine's (ENGINES)
    advice: Dict[str, "EngineAdvice"] = field(default_factory=dict)
    # what a scheduler or a platform team does when this pitfall is the root cause (issue 43): stop
    # (deterministic: a retry burns GPU hours), drain-node (then retry elsewhere), retry (transient),
    # change-config; "" for a user's pattern that says none
    action: str = ""


ACTIONS = ("stop", "drain-node", "retry", "change-config")
# the stacks a log can show, for per-engine advice (triage/scan/jobfacts.py says which one a log is)
ENGINES = ("megatron", "vllm", "sglang", "trtllm", "jax", "pytorch")


@record(frozen=True)
class EngineAdvice:
    fix: str
    settings: Tuple[str, ...] = ()


def _req(d: Dict[str, Any], key: str, typ: Any, where: str) -> Any:
    if key not in d:
        raise PatternError(f"{where}: missing required field '{key}'")
    v = d[key]
    if not isinstance(v, typ):
        tn = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise PatternError(f"{where}: field '{key}' must be {tn}")
    return v


_T = TypeVar("_T", bound=str)


def _one_of(v: Any, allowed: Tuple[_T, ...], what: str, where: str) -> _T:
    """V when it is one of ALLOWED (the names of a Literal type, see kinds.py), else a PatternError."""
    for a in allowed:
        if v == a:
            return a
    raise PatternError(f"{where}: {what} must be one of {allowed}")


def _str_list(v: Any, where: str, key: str) -> List[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise PatternError(f"{where}: '{key}' must be a string or a list of strings")


def expand_macros(src: str, where: str) -> str:
    """`{{name}}` -> MACROS[name]; an unknown name is an error (a typo must not become literal text)."""
    def sub(m: Any) -> str:
        name = m.group(1)
        if name not in MACROS:
            raise PatternError(f"{where}: unknown macro {{{{{name}}}}} (known: {', '.join(sorted(MACROS))})")
        return MACROS[name]
    return _MACRO_RX.sub(sub, src)


def _compile(src: str, where: str, ignore_case: bool = False, user: bool = False) -> LazyRx:
    if user:                      # a user's pattern is refused when it risks a runaway search
        why = risky(src)
        if why:
            raise PatternError(f"{where}: regex {src[:80]!r}: {why}; rewrite it (an atomic group (?>...) or a "
                               "possessive quantifier such as \\w++ cannot backtrack)")
    try:
        return compile_rx(src, ignore_case)
    except (regex.error, ValueError) as e:     # (ValueError: flags that contradict, e.g. (?a)(?u))
        raise PatternError(f"{where}: bad regex {src!r}: {e}") from None


MIN_USER_LITERAL = 4      # characters of a user pattern's literal (a derived one has 4+ too: literals.py)


def _literals(d: Dict[str, Any], src: str, where: str, ignore_case: bool = False, context: bool = False,
              user: bool = False) -> List[str]:
    """The entry's `literal` list, or the one derived from its (expanded) regex SRC when absent.  A user's
    literal shorter than MIN_USER_LITERAL is refused, as a regex that backtracks is: every line holding it
    is tried with the regex, and a short one is in nearly every line of some logs (issue 46: `literal: "a"`
    on 64 MiB of a's, 33 s and 740 MB)."""
    lits = _given_literals(d, src, where, ignore_case, context)
    short = [lit for lit in lits if len(lit.strip()) < MIN_USER_LITERAL] if user else []
    if short:
        raise PatternError(f"{where}: literal {short[0]!r} is too short to select lines (at least "
                           f"{MIN_USER_LITERAL} characters): every line holding it is searched with the regex; "
                           "give a longer plain substring every matching line contains")
    return lits


def _given_literals(d: Dict[str, Any], src: str, where: str, ignore_case: bool, context: bool) -> List[str]:
    if "literal" not in d:
        if context and ignore_case:     # a context literal is looked for case-sensitively (engine._ctx_hit)
            lits: List[str] = []
            why: Optional[str] = "a context of an ignore_case rule"
        else:
            lits, why = derive_literals(src, ignore_case)
        if lits:
            return lits
        raise PatternError(f"{where}: no 'literal' prefilter given and none can be derived from the regex ({why}); "
                           "add a literal: a plain substring every matching line contains")
    lits = _str_list(d.get("literal"), where, "literal")
    if not lits or any(not lit.strip() for lit in lits):
        raise PatternError(f"{where}: each match needs a non-empty 'literal' prefilter "
                           "(a plain substring every matching line contains)")
    return lits


def _parse_match(m: Any, where: str, user: bool = False) -> MatchRule:
    if isinstance(m, str):
        raise PatternError(f"{where}: a match entry must be a mapping with 'regex' and 'literal'")
    if not isinstance(m, dict):
        raise PatternError(f"{where}: a match entry must be a mapping")
    unknown = set(m) - {"regex", "literal", "ignore_case", "role", "context", "not", "generic", "min_share"}
    if unknown:
        raise PatternError(f"{where}: unknown match field(s) {sorted(unknown)}")
    src = _req(m, "regex", str, where)
    ic = bool(m.get("ignore_case", False))
    role = _one_of(m.get("role", "root-cause"), ROLES, "role", where)
    ctx = []
    for i, c in enumerate(m.get("context") or []):
        cw = f"{where} context[{i}]"
        if not isinstance(c, dict):
            raise PatternError(f"{cw}: must be a mapping")
        window = c.get("window", 50)
        if not isinstance(window, int) or window < 1 or window > MAX_WINDOW:
            raise PatternError(f"{cw}: window must be an integer 1..{MAX_WINDOW}")
        csrc = expand_macros(_req(c, "regex", str, cw), cw + " regex")
        ctx.append(ContextReq(_compile(csrc, cw + " regex", ic, user),
                              _literals(c, csrc, cw, ic, context=True, user=user), window))
    neg = [_compile(expand_macros(n, where + " not"), where + " not", ic, user)
           for n in _str_list(m.get("not"), where, "not")]
    gen = m.get("generic")
    if gen is not None and not isinstance(gen, bool):
        raise PatternError(f"{where}: generic must be true or false")
    src = expand_macros(src, where + " regex")
    rx = _compile(src, where + " regex", ic, user)
    return MatchRule(rx, _literals(m, src, where, ic, user=user), ic, role, ctx, neg, src, gen,
                     _min_share(m, rx, where))


def _min_share(m: Dict[str, Any], rx: LazyRx, where: str) -> Optional[float]:
    v = m.get("min_share")
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise PatternError(f"{where}: min_share must be a number in (0, 1]")
    if not {"part", "whole"} <= _group_names(rx):
        raise PatternError(f"{where}: min_share needs the named groups (?P<part>...) and (?P<whole>...) in the regex")
    return float(v)


def _group_names(rx: LazyRx) -> Set[str]:
    """The named groups of RX, read by the stdlib parser (compiling it with `regex` only to ask
    costs a start-up its import); by `regex` itself where the stdlib cannot read it."""
    try:
        return set(_sre()[0].parse(rx.pattern).state.groupdict)
    except Exception:  # noqa: BLE001 - regex-only syntax: ask regex
        return set(rx.groupindex)


def _parse_cond(cond: Any, cw: str) -> Dict[str, Any]:
    if not isinstance(cond, dict) or "key" not in cond:
        raise PatternError(f"{cw}: a condition is a mapping with 'key' and one operator")
    ops = set(cond) - {"key"}
    if len(ops) != 1 or not ops <= set(RULE_OPS):
        raise PatternError(f"{cw}: exactly one operator of {RULE_OPS} is required")
    if not isinstance(cond["key"], str):
        raise PatternError(f"{cw}: 'key' must be a string")
    return dict(cond)


def _parse_rule(r: Any, where: str) -> ConfigRule:
    if not isinstance(r, dict):
        raise PatternError(f"{where}: a config rule must be a mapping")
    when = _req(r, "when", list, where)
    if not when:
        raise PatternError(f"{where}: 'when' must not be empty")
    keys: List[str] = [_parse_cond(cond, f"{where} when[{i}]")["key"] for i, cond in enumerate(when)]
    message = _req(r, "message", str, where)
    keys = list(dict.fromkeys(keys))
    unknown = set(r) - {"when", "message", "keys", "fix", "violates", "ok"}
    if unknown:
        raise PatternError(f"{where}: unknown field(s) {sorted(unknown)}")
    examples = {}
    for name in ("violates", "ok"):
        v = r.get(name) or []
        if not isinstance(v, list) or not all(isinstance(x, dict) and all(isinstance(k, str) for k in x) for x in v):
            raise PatternError(f"{where}: '{name}' must be a list of configs (mappings of canonical key: value)")
        examples[name] = [dict(x) for x in v]
    return ConfigRule(when=when, message=message, keys=_str_list(r.get("keys"), where, "keys") or keys,
                      fix=str(r.get("fix", "")), violates=examples["violates"], ok=examples["ok"])


_ID_RX = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_TOP_FIELDS = {"id", "title", "severity", "kind", "generic", "priority", "match", "implicates", "explanation",
               "fix", "references", "examples", "config_rules", "note", "overlaps", "implies",
               "waits", "cascade_verb", "hang", "notes", "advice", "action"}


def _parse_id(data: Dict[str, Any], where: str, known_ids: Optional[Sequence[str]]) -> str:
    pid: str = _req(data, "id", str, where)
    if not re.fullmatch(_ID_RX, pid):
        raise PatternError(f"{where}: id {pid!r} must be lower-case-with-dashes")
    if known_ids is not None and pid not in known_ids:
        raise PatternError(f"{where}: id {pid!r} is not in the taxonomy")
    return pid


def _priority(data: Dict[str, Any], kind: Kind, where: str) -> int:
    prio = data.get("priority", DEFAULT_PRIORITY[kind])
    if not isinstance(prio, int):
        raise PatternError(f"{where}: priority must be an integer")
    return prio


def _list_field(data: Dict[str, Any], key: str, where: str) -> List[Any]:
    v = data.get(key) or []
    if not isinstance(v, list):
        raise PatternError(f"{where}: '{key}' must be a list")
    return v


def _references(data: Dict[str, Any], where: str) -> List[Dict[str, str]]:
    refs = data.get("references") or []
    if not isinstance(refs, list) or not refs or not all(isinstance(r, dict) and "source" in r for r in refs):
        raise PatternError(f"{where}: 'references' must be a non-empty list of mappings with 'source' (and 'version')")
    # what a report shows: the upstream `source`, `version` and `url`; `provenance` (how it was read: our
    # runs, fixtures, tools) stays in the pattern file, never in a finding or a report (issue 45)
    return [{k: str(v) for k, v in r.items() if k != "provenance"} for r in refs]


def _examples(data: Dict[str, Any], where: str, log_pattern: bool) -> Tuple[List[str], List[str]]:
    """examples.match and examples.no_match; a LOG_PATTERN (one with match rules) needs both."""
    ex = data.get("examples") or {}
    if not isinstance(ex, dict):
        raise PatternError(f"{where}: 'examples' must be a mapping with 'match' and 'no_match'")
    ex_m = _str_list(ex.get("match"), where, "examples.match")
    ex_n = _str_list(ex.get("no_match"), where, "examples.no_match")
    if log_pattern and (not ex_m or not ex_n):
        raise PatternError(f"{where}: log patterns need examples.match and examples.no_match")
    return ex_m, ex_n


def _overlaps(data: Dict[str, Any], where: str, pid: str) -> List[str]:
    overlaps = _str_list(data.get("overlaps"), where, "overlaps")
    for o in overlaps:
        if not re.fullmatch(_ID_RX, o) or o == pid:
            raise PatternError(f"{where}: overlaps: {o!r} must be the id of another pattern")
    return list(dict.fromkeys(overlaps))


def parse_pattern(data: Any, path: str, known_ids: Optional[Sequence[str]] = None, user: bool = False) -> Pattern:
    """One pattern file's data; `user`: a user's file (risky regexes are refused, see rx.risky)."""
    where = os.path.basename(path)
    if not isinstance(data, dict):
        raise PatternError(f"{where}: top level must be a mapping")
    unknown = set(data) - _TOP_FIELDS
    if unknown:
        raise PatternError(f"{where}: unknown field(s) {sorted(unknown)}")
    pid = _parse_id(data, where, known_ids)
    _req(data, "title", str, where)
    sev = _one_of(_req(data, "severity", str, where), SEVERITIES, "severity", where)
    kind = _one_of(_req(data, "kind", str, where), KINDS, "kind", where)
    prio = _priority(data, kind, where)
    matches = _list_field(data, "match", where)
    rules = _list_field(data, "config_rules", where)
    if not matches and not rules:
        raise PatternError(f"{where}: needs at least one 'match' entry or 'config_rules' entry")
    refs = _references(data, where)
    ex_m, ex_n = _examples(data, where, bool(matches))
    overlaps = _overlaps(data, where, pid)
    return Pattern(
        id=pid,
        title=_req(data, "title", str, where),
        severity=sev,
        kind=kind,
        generic=bool(data.get("generic", False)),
        priority=prio,
        match=[_parse_match(m, f"{where} match[{i}]", user) for i, m in enumerate(matches)],
        implicates=_str_list(data.get("implicates"), where, "implicates"),
        explanation=_req(data, "explanation", str, where).strip(),
        fix=_req(data, "fix", str, where).strip(),
        references=refs,
        examples_match=ex_m,
        examples_no_match=ex_n,
        config_rules=[_parse_rule(r, f"{where} config_rules[{i}]") for i, r in enumerate(rules)],
        path=path,
        overlaps=overlaps,
        implies=_implies(data, where),
        waits=_waits(data, where, user),
        cascade_verb=_opt_str(data, "cascade_verb", where),
        hang_summary=_hang(data, where, "summary"),
        hang_silent=_hang(data, where, "silent"),
        notes=_notes(data, where),
        advice=_advice(data, where),
        action=_one_of(data["action"], ACTIONS, "action", where) if "action" in data else "",
    )


def _advice(data: Dict[str, Any], where: str) -> Dict[str, EngineAdvice]:
    v = data.get("advice") or {}
    if not isinstance(v, dict):
        raise PatternError(f"{where}: 'advice' must be a mapping of engine ({', '.join(ENGINES)}) to "
                           "{fix, settings}")
    out: Dict[str, EngineAdvice] = {}
    for eng, a in v.items():
        w = f"{where} advice.{eng}"
        if eng not in ENGINES:
            raise PatternError(f"{w}: unknown engine (one of {', '.join(ENGINES)})")
        if not isinstance(a, dict) or set(a) - {"fix", "settings"} or not isinstance(a.get("fix"), str) \
                or not a["fix"].strip():
            raise PatternError(f"{w}: a mapping with 'fix' (text) and 'settings' (a list of the settings it names)")
        out[eng] = EngineAdvice(" ".join(a["fix"].split()), tuple(_str_list(a.get("settings"), w, "settings")))
    return out


def _waits(data: Dict[str, Any], where: str, user: bool) -> Union[bool, LazyRx, None]:
    v = data.get("waits")
    if v is None or v is False:
        return None
    if v is True:
        return True
    if isinstance(v, str) and v:
        return _compile(v, f"{where} waits", user=user)
    raise PatternError(f"{where}: 'waits' must be true or a regex that a waiting line matches")


def _notes(data: Dict[str, Any], where: str) -> List[PatternNote]:
    out = []
    for i, n in enumerate(data.get("notes") or []):
        w = f"{where} notes[{i}]"
        if not isinstance(n, dict) or not isinstance(n.get("text"), str) or not isinstance(n.get("when_any"), list):
            raise PatternError(f"{w}: a note is a mapping with 'when_any' (a list of conditions) and 'text'")
        conds = [_parse_cond(c, f"{w} when_any[{j}]") for j, c in enumerate(n["when_any"])]
        out.append(PatternNote(conds, " ".join(n["text"].split())))
    return out


def _opt_str(data: Dict[str, Any], key: str, where: str) -> str:
    v = data.get(key, "")
    if not isinstance(v, str):
        raise PatternError(f"{where}: '{key}' must be a string")
    return v


_HANG_FIELDS = ("summary", "silent")
_HANG_VARS = ("who", "whose", "its", "id")


def _hang(data: Dict[str, Any], where: str, key: str) -> str:
    v = data.get("hang") or {}
    if not isinstance(v, dict) or set(v) - set(_HANG_FIELDS) or not all(isinstance(x, str) for x in v.values()):
        raise PatternError(f"{where}: 'hang' must be a mapping with 'summary' and 'silent' strings")
    text: str = v.get(key, "")
    try:
        text.format(**{k: "" for k in _HANG_VARS})
    except (KeyError, IndexError, ValueError) as e:
        raise PatternError(f"{where}: hang.{key}: unknown placeholder {e} "
                           "(use {who}, {whose}, {its}, {id})") from None
    return text


def _implies(data: Dict[str, Any], where: str) -> Dict[str, Any]:
    v = data.get("implies") or {}
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        raise PatternError(f"{where}: 'implies' must be a mapping of canonical key: value")
    return dict(v)


def builtin_dir() -> str:
    """Directory of the bundled pattern files: triage/patterns/ when installed, ./patterns in a checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "patterns"), os.path.join(os.path.dirname(here), "patterns")):
        if os.path.isdir(d) and any(f.endswith(".yaml") for f in os.listdir(d)):
            return d
    return os.path.join(os.path.dirname(here), "patterns")


PATTERN_MAX_BYTES = 1 << 20     # a pattern file bigger than this is refused (the largest shipped one is 16 KB)


def _safe_loader() -> Any:
    """PyYAML's C loader reads the catalog ~10x faster than the pure-Python one (same safe schema).
    PyYAML is imported here, not at start-up: a run whose catalog comes from the cache never loads it."""
    import yaml
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _no_aliases(text: str, where: str) -> None:
    """Refuse YAML anchors and aliases: a few lines of them ("billion laughs") expand to gigabytes
    once read as data, and a pattern file never needs them.  (An alias needs an anchor, `&name`:
    a file without '&' is not parsed twice.)"""
    if "&" not in text:
        return
    import yaml
    for ev in yaml.parse(text, Loader=_safe_loader()):
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
            at = f" line {ev.start_mark.line + 1}:" if ev.start_mark is not None else ""
            raise PatternError(f"{where}:{at} YAML anchors and aliases (&name, *name) are not allowed in a pattern "
                               "file: write the value out")


def _read(path: str) -> bytes:
    """A pattern file's bytes: a regular file of at most PATTERN_MAX_BYTES."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):      # a FIFO would block the run forever
            raise PatternError(f"{path}: not a regular file (a FIFO, a socket or a device): not a pattern file")
        with open(path, "rb") as f:
            raw = f.read(PATTERN_MAX_BYTES + 1)
    except OSError as e:
        raise PatternError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) > PATTERN_MAX_BYTES:
        raise PatternError(f"{os.path.basename(path)}: more than {PATTERN_MAX_BYTES >> 20} MiB: not a pattern file")
    return raw


def _document(raw: bytes, where: str) -> Any:
    """The YAML document of a pattern file's bytes (UTF-8, no anchors or aliases, PyYAML's safe schema)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PatternError(f"{where}: not UTF-8 text (byte {e.start}: {raw[e.start:e.start + 1]!r}): "
                           "save the pattern file as UTF-8") from None
    import yaml
    try:
        _no_aliases(text, where)
        return yaml.load(text, Loader=_safe_loader())  # noqa: S506 - a safe loader (libyaml's when present)
    except yaml.YAMLError as e:
        raise PatternError(f"{where}: invalid YAML: {str(e).splitlines()[0]}") from None
    except (ValueError, OverflowError) as e:     # a date out of range (0000-00-00), an int of 5,000 digits
        raise PatternError(f"{where}: a value PyYAML cannot read: {str(e).splitlines()[0]}") from None


def load_file(path: str, known_ids: Optional[Sequence[str]] = None, user: bool = False) -> Pattern:
    return parse_pattern(_document(_read(path), os.path.basename(path)), path, known_ids, user)


def _yaml_files(directory: str) -> List[str]:
    if not os.path.isdir(directory):
        raise PatternError(f"pattern directory {directory!r} does not exist")
    files = sorted(f for f in os.listdir(directory) if f.endswith((".yaml", ".yml")))
    if not files:
        raise PatternError(f"pattern directory {directory!r} holds no .yaml files")
    return files


def load_dir(directory: str, known_ids: Optional[Sequence[str]] = None, user: bool = False,
             cache: bool = False) -> List[Pattern]:
    """The patterns of DIRECTORY's .yaml/.yml files, in name order, parsed and validated
    (parse_pattern).  CACHE: the patterns are kept in the cache directory (CatalogCache), found again
    by the files' names, sizes and times (as Python finds a module's .pyc), so a run that finds them
    reads no pattern file.  The same files loaded the same way again in this process give the
    patterns loaded the first time (_LOADED): patterns are read-only values."""
    files = _yaml_files(directory)
    how = (os.path.abspath(directory), tuple(known_ids) if known_ids is not None else None, user)
    state = CatalogCache.files_state(directory, files) if cache else None
    name = CatalogCache.name(directory, state, known_ids, user) if state is not None else None
    memo: Optional[_Memo] = (name,) + how if name else None
    pats = _LOADED.get(memo) if memo else None
    if pats is None and name:
        pats = CatalogCache.load(name, len(files))
    if pats is None:
        raws = [(f, _read(os.path.join(directory, f))) for f in files]
        if memo is None:
            memo = (CatalogCache.key(raws),) + how
            pats = _LOADED.get(memo)
        if pats is None:
            pats = tuple(parse_pattern(_document(raw, f), os.path.join(directory, f), known_ids, user)
                         for f, raw in raws)
            if name and state is not None and CatalogCache.settled(state):
                CatalogCache.store(name, pats)
    if _LOADED_MAX > 0 and memo is not None and memo not in _LOADED:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.pop(next(iter(_LOADED)))      # the oldest
        _LOADED[memo] = pats
    return list(pats)


# The pattern lists load_dir made in this process, by the files (their state: CatalogCache.name; or
# their bytes: CatalogCache.key), directory and how they were loaded.  A process that analyses many
# logs (`triage fleet`, `watch`, a library user) parses and validates the catalog once, and its regexes
# (LazyRx) are compiled once; a file edited in between is another key.  A few catalogs at most (the
# shipped one, a user's directories); 0 keeps none.
_Memo = Tuple[str, str, Optional[Tuple[str, ...]], bool]
_LOADED: Dict[_Memo, Tuple[Pattern, ...]] = {}
_LOADED_MAX = 8


class CatalogCache:
    """The shipped catalog as parsed and validated (~40 ms of PyYAML and ~6 ms of validation a run),
    kept as one pickle in the cache directory (triage/cachefiles.py).  Its name is a SHA-256 of triage's
    version, this Python's cache tag, the directory, how it was loaded and each pattern file's name,
    size, mtime and inode change time (which any write changes, and which no one can set: an edit that
    keeps the size and restores the mtime is seen), so the files are not read when it is found; inside,
    the size and mtime of each of triage's modules that made it (as a .pyc keeps its source's): triage's
    code changed since, and it is not read.  A pickle runs code as it is read, as a .pyc does: it is
    read only as Python reads __pycache__, when it is this user's file that nobody else can write
    (cachefiles.read_own); anything else there (another user's, a link, a file writable by others,
    bytes that are not this format) is ignored and made again from the YAML."""
    FORMAT = 2
    KEEP = 8                        # catalogs kept (the most recently written): one per triage version
    MAX_BYTES = 16 << 20
    MAGIC = "triage-catalog-pickle"
    RACY_S = 2.0                    # see settled()
    # what made the patterns besides the files: triage's modules, and the parser and the regex engine
    # that validated them (their files' sizes and mtimes, kept in the cache: an upgrade is a change)
    MADE_BY = ("triage", "yaml", "regex")

    @staticmethod
    def key(raws: Sequence[Tuple[str, bytes]]) -> str:
        """The files' content key (names and bytes): the memo's, for a directory loaded without the cache."""
        h = hashlib.sha256(f"triage-catalog\0{CatalogCache.FORMAT}\0{__version__}\0".encode())
        for name, raw in raws:
            h.update(f"{name}\0{len(raw)}\0".encode("utf-8", "surrogatepass"))
            h.update(raw)
        return h.hexdigest()

    @staticmethod
    def files_state(directory: str, files: Sequence[str]) -> Optional[List[Tuple[str, int, int, int, int, int]]]:
        """(name, size, mtime, inode change time, inode, device) of each of DIRECTORY's FILES; None
        when one of them is not a regular file (reading it says what is wrong)."""
        state = []
        for f in files:
            try:
                st = os.stat(os.path.join(directory, f))
            except OSError:
                return None
            if not stat.S_ISREG(st.st_mode):
                return None
            state.append((f, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev))
        return state

    @staticmethod
    def name(directory: str, state: Sequence[Tuple[Any, ...]], known_ids: Optional[Sequence[str]], user: bool) -> str:
        """The cache file of DIRECTORY's files in STATE (files_state), loaded so."""
        import sys
        how = repr((CatalogCache.FORMAT, __version__, sys.implementation.cache_tag, os.path.abspath(directory),
                    None if known_ids is None else sorted(known_ids), user, list(state)))
        return f"catalog-{hashlib.sha256(how.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}.pickle"

    @staticmethod
    def settled(state: Sequence[Tuple[Any, ...]]) -> bool:
        """No file changed in the last RACY_S seconds: a file written twice within one tick of the
        inode clock (milliseconds on some kernels), the same size, would keep its state, and the
        patterns of the first write would be read back for the second (git's "racy clean" rule).
        Until then the patterns are not kept."""
        import time
        now = time.time_ns()
        return all(now - ctime_ns > CatalogCache.RACY_S * 1e9 for _, _, _, ctime_ns, _, _ in state)

    @staticmethod
    def _stamps() -> List[Tuple[str, int, int]]:
        """(file, mtime_ns, size) of each module of MADE_BY imported in this process, and of the
        `regex` package's (the sources may have been known valid without importing it)."""
        import sys
        paths = [getattr(mod, "__file__", None) for mod_name, mod in list(sys.modules.items())
                 if mod_name.split(".", 1)[0] in CatalogCache.MADE_BY]
        paths.append(regex_origin())
        out = []
        for path in set(paths):
            if path:
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                out.append((path, st.st_mtime_ns, st.st_size))
        return sorted(out)

    @staticmethod
    def load(name: str, n: int) -> Optional[Tuple[Pattern, ...]]:
        """The N patterns kept under NAME, or None (no cache, or one not to be read)."""
        raw = cachefiles.read_own(name, CatalogCache.MAX_BYTES)
        if raw is None:
            return None
        try:
            magic, fmt, stamps, payload = loads(raw)
            if magic != CatalogCache.MAGIC or fmt != CatalogCache.FORMAT:
                return None
            for path, mtime_ns, size in stamps:
                st = os.stat(path)
                if st.st_mtime_ns != mtime_ns or st.st_size != size:
                    return None
            pats = loads(payload)
        except Exception:  # noqa: BLE001 - not ours, truncated, of other code: made again
            return None
        if not isinstance(pats, tuple) or len(pats) != n or not all(type(p) is Pattern for p in pats):
            return None
        return pats

    @staticmethod
    def store(name: str, pats: Tuple[Pattern, ...]) -> None:
        """Keep PATS under NAME (best effort: a read-only home just means no cache)."""
        try:
            payload = dumps(pats, 4)
            data = dumps((CatalogCache.MAGIC, CatalogCache.FORMAT, CatalogCache._stamps(), payload), 4)
        except Exception:  # noqa: BLE001 - a value pickle cannot keep: no cache
            return
        if cachefiles.write(name, data, keep=("catalog-", ".pickle", CatalogCache.KEEP)):
            cachefiles.prune(os.path.dirname(cachefiles.path_of(name)), "catalog-", ".json", 0)   # earlier versions'


def load_all(extra_dirs: Sequence[str] = ()) -> List[Pattern]:
    """Built-in patterns plus the user's (directories or single files, from --patterns).  A user
    pattern never replaces a shipped one: reusing a shipped id is an error."""
    pats = load_dir(builtin_dir(), cache=True)
    shipped = {p.id: p.path for p in pats}
    for d in extra_dirs:
        if os.path.isfile(d):
            user = [load_file(d, None, user=True)]
        elif os.path.isdir(d):
            user = load_dir(d, None, user=True)
        else:
            raise PatternError(f"--patterns {d!r}: no such file or directory")
        for p in user:
            if p.id in shipped:
                raise PatternError(f"{os.path.basename(p.path)}: id {p.id!r} is the id of a shipped pattern "
                                   f"({os.path.basename(shipped[p.id])}); a user pattern cannot replace or extend it: "
                                   "give it an id of its own")
        pats.extend(user)
    seen: Dict[str, str] = {}
    for p in pats:
        if p.id in seen and os.path.dirname(seen[p.id]) == os.path.dirname(p.path):
            raise PatternError(f"{os.path.basename(p.path)}: duplicate id {p.id!r} "
                               f"(also in {os.path.basename(seen[p.id])})")
        seen.setdefault(p.id, p.path)
    remember_valid()
    return pats
