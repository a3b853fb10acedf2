"""Config rules of the pattern catalog: conditions on canonical keys, evaluated declaratively
(nothing is eval'ed).  Every operator a condition may use is in OPERATORS."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Sequence

from ..record import record
from .enums import Unknown
from .keys import Config
from .operators import OPERATORS

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..patterns import ConfigRule, Pattern


def _known(v: Any) -> Any:
    """The value with what triage cannot name left out: an Unknown, or Unknown items of a list."""
    if isinstance(v, list):
        return [x for x in v if not isinstance(x, Unknown)]
    return v


def decidable(cfg: Config, key: str) -> bool:
    """Whether `key`'s value is known: an Unknown value never is; an absent key is not in a config
    read from part of a log (config_complete is False: absent means unknown, not off)."""
    if isinstance(cfg.get(key), Unknown):
        return False
    return key in cfg or cfg.get("config_complete") is not False


def cond_holds(cfg: Config, cond: Dict[str, Any]) -> bool:
    """One condition of a rule; an operator that is not in OPERATORS never holds, nor does any
    condition on a key whose value is not known (decidable)."""
    key = cond["key"]
    op, arg = next((k, v) for k, v in cond.items() if k != "key")
    fn = OPERATORS.get(op)
    return fn is not None and decidable(cfg, key) and fn(_known(cfg.get(key)), arg)


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


def check(cfg: Config, patterns: Sequence[Pattern]) -> List[Violation]:
    out = []
    for p in patterns:
        for r in p.config_rules:
            if rule_holds(cfg, r):
                out.append(Violation(p.id, list(r.keys), r.message, r.fix or p.fix))
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
            unknown = sorted({c["key"] for c in r.when if not decidable(cfg, c["key"])})
            known = [c for c in r.when if decidable(cfg, c["key"])]
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
