"""Config rules of the pattern catalog: conditions on canonical keys, evaluated declaratively
(nothing is eval'ed).  Every operator a condition may use is in OPERATORS."""
from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..record import record
from .defaults import default_of
from .enums import Unknown
from .keys import DERIVED, Config
from .operators import OPERATORS

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..patterns import ConfigRule, Pattern


def _known(v: Any) -> Any:
    """The value with what triage cannot name left out: an Unknown, or Unknown items of a list."""
    if isinstance(v, list):
        return [x for x in v if not isinstance(x, Unknown)]
    return v


# Operators that read an absent boolean setting of a whole config file as its release's default
# (defaults.default_of): "unset: defaults to False in megatron-core 0.14-0.19", or undecided where
# the table does not know it.  Both sides alike: an absent key is neither on nor off by itself.
BY_DEFAULT = ("truthy", "falsy")


def _op(cond: Dict[str, Any]) -> Tuple[str, Any]:
    return next((k, v) for k, v in cond.items() if k != "key")


def _by_default(cfg: Config, cond: Dict[str, Any]) -> bool:
    """Whether COND tests a setting that the (whole) config leaves out, read as its release's default."""
    key = cond["key"]
    return (_op(cond)[0] in BY_DEFAULT and key not in cfg and key not in DERIVED
            and cfg.get("config_complete") is not False)


def resolve(cfg: Config, cond: Dict[str, Any]) -> Tuple[bool, Any, str]:
    """(decidable, the value COND sees, a note when that value is a default: "KEY unset: defaults to
    False in megatron-core 0.14-0.19").  An Unknown value is never decidable; an absent key is not
    in a config read from part of a log (config_complete is False: absent means unknown, not off)."""
    key = cond["key"]
    v = cfg.get(key)
    if isinstance(v, Unknown):
        return False, None, ""
    if _by_default(cfg, cond):
        d = default_of(cfg, key)
        if d is None:
            return False, None, ""
        return True, d[0], f"{key} unset: defaults to {d[1]}"
    return key in cfg or cfg.get("config_complete") is not False, v, ""


def decidable(cfg: Config, key: str, cond: Optional[Dict[str, Any]] = None) -> bool:
    """Whether `key`'s value is known to COND (resolve)."""
    return resolve(cfg, cond or {"key": key, "eq": None})[0]


def cond_holds(cfg: Config, cond: Dict[str, Any]) -> bool:
    """One condition of a rule; an operator that is not in OPERATORS never holds, nor does any
    condition on a key whose value is not known (resolve)."""
    op, arg = _op(cond)
    fn = OPERATORS.get(op)
    if fn is None:
        return False
    known, v, _ = resolve(cfg, cond)
    return known and fn(_known(v), arg)


def defaulted(cfg: Config, when: Sequence[Dict[str, Any]]) -> List[str]:
    """The notes of the conditions of WHEN decided by a release default ("KEY unset: defaults to ...")."""
    return [n for n in (resolve(cfg, c)[2] for c in when) if n]


def rule_holds(cfg: Config, rule: ConfigRule) -> bool:
    return rule_holds_when(cfg, rule.when)


def rule_holds_when(cfg: Config, when: Sequence[Dict[str, Any]]) -> bool:
    return all(cond_holds(cfg, c) for c in when)


@record
class Violation:
    pitfall: str
    keys: List[str]
    message: str
    fix: str
    defaults: List[str] = field(default_factory=list)   # "KEY unset: defaults to False in ..." (add-only)


def check(cfg: Config, patterns: Sequence[Pattern]) -> List[Violation]:
    out = []
    for p in patterns:
        for r in p.config_rules:
            if rule_holds(cfg, r):
                out.append(Violation(p.id, list(r.keys), r.message, r.fix or p.fix, defaulted(cfg, r.when)))
    return out


@record
class Undecided:
    """A rule that could not be decided: the config does not say what its keys are."""
    pitfall: str
    keys: List[str]
    message: str
    how: str = ""        # how to give the missing keys (issue 42): --set KEY=VALUE / --env NAME=VALUE


def give_hint(keys: Sequence[str]) -> str:
    """How a user gives KEYS a rule needs (issue 42): each as an override, or the config that holds them."""
    sets = [f"--env {k[4:]}=VALUE" if k.startswith("env.") else f"--set {k}=VALUE" for k in keys]
    return (" ".join(sets) + " (or pass the run's whole config: Bridge's run_config.yaml of the recipe, "
            "Megatron-LM's arguments block in the log)")


def undecided(cfg: Config, patterns: Sequence[Pattern]) -> List[Undecided]:
    """Rules whose decidable conditions all hold but that name a key whose value is unknown."""
    out = []
    for p in patterns:
        for r in p.config_rules:
            unknown = sorted({c["key"] for c in r.when if not resolve(cfg, c)[0]})
            known = [c for c in r.when if resolve(cfg, c)[0]]
            if unknown and known and all(cond_holds(cfg, c) for c in known):
                out.append(Undecided(p.id, unknown, r.message, give_hint(unknown)))
    return out


def unknown_values(cfg: Config) -> List[Dict[str, str]]:
    """Every value triage could not name (an enum value no known release defines), as text."""
    out = []
    for k, v in sorted(cfg.items()):
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, Unknown):
                out.append({"key": k, "value": str(x)})
    return out
