"""Setting names: is a config key a setting the released sources define (settings.txt, made by
scripts/gen_settings_table.py from Megatron-LM / megatron-core and Megatron Bridge), or triage's own
canonical key -- or a typo?  `check-config` and `diff` warn on a key that is neither (with the
nearest known setting: "did you mean"), so that `model.cuda_graph_scpoe=[attn,moe]` is never a
silent "no pitfall"; `--strict` makes a warning an error.

In config FILES only near misses of a known setting are warned about: a real run's config holds
settings of other tools (a launcher's, a data pipeline's) that no table lists.  A KEY=VALUE given
on the command line is the user's own intent: any key that is not a known setting is warned about.
"""
from __future__ import annotations

import difflib
import functools
import os
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional

from .keys import ALIASES, ENV_KEYS, KNOWN

_ENV_POOL = frozenset(ENV_KEYS)

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "settings.txt")
# keys triage derives (canonical.py), never written by a user
_DERIVED = {"expandable_segments"}
# wrapper keys of serialised configs (Hydra / Bridge): not settings
_STRUCTURAL = {"_target_", "_args_", "_call_", "_partial_", "_recursive_", "_convert_"}
CUTOFF = 0.82


@functools.lru_cache(maxsize=1)
def known_settings() -> FrozenSet[str]:
    with open(_TABLE, encoding="utf-8") as f:
        names = {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
    return frozenset(names | KNOWN | set(ALIASES) | _DERIVED)


@dataclass(frozen=True)
class UnknownKey:
    key: str                      # as given (dotted)
    suggestion: Optional[str]     # the nearest known setting, when one is near

    def message(self) -> str:
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion else ""
        return f"{self.key!r} is not a setting of Megatron-LM, megatron-core or Megatron Bridge{hint}"


def _last(key: str) -> str:
    return key.rsplit(".", 1)[-1].replace("-", "_")


def _near(name: str, pool: FrozenSet[str]) -> Optional[str]:
    """difflib.get_close_matches(NAME, sorted(POOL), n=1, cutoff=CUTOFF), given only the names of
    POOL whose length could reach CUTOFF (difflib's real_quick_ratio, which it tests first: the same
    answer), sorted once a length: a config of 10,000 unknown keys took 25 s."""
    got = difflib.get_close_matches(name, _of_length_near(pool, len(name)), n=1, cutoff=CUTOFF)
    return got[0] if got else None


@functools.lru_cache(maxsize=256)
def _of_length_near(pool: FrozenSet[str], la: int) -> List[str]:
    """The names of POOL, sorted, whose length LB makes real_quick_ratio 2 min(LA, LB) / (LA + LB)
    at least CUTOFF (as difflib computes it)."""
    return sorted(x for x in pool if la + len(x) and 2.0 * min(la, len(x)) / (la + len(x)) >= CUTOFF)


def _env_typo(k: str) -> Optional[UnknownKey]:
    """`env.X` where X is a near miss of a variable triage reads."""
    var = k[4:]
    near = None if var in ENV_KEYS else _near(var, _ENV_POOL)
    return UnknownKey(k, "env." + near) if near else None


NEAR_MAX = 2000       # distinct key names of config files looked up for a near miss (~0.4 ms each)


def unknown_keys(keys: Iterable[str], given: Iterable[str] = (),
                 unchecked: Optional[List[str]] = None) -> List[UnknownKey]:
    """The keys (dotted, as read) that are no known setting: of KEYS (a config file's) only the near
    misses of a known setting; of GIVEN (KEY=VALUE on the command line) every one.  Environment keys
    (`env.X`) are checked against the variables triage reads, near misses only.  Past NEAR_MAX
    distinct unknown names in KEYS the rest are not looked up: they go to UNCHECKED."""
    table = known_settings()
    out: Dict[str, UnknownKey] = {}
    explicit = set(given)
    looked: Dict[str, Optional[str]] = {}
    for k in list(keys) + [g for g in explicit if g not in keys]:
        if k in out:
            continue
        if k.startswith("env."):
            typo = _env_typo(k)
            if typo is not None:
                out[k] = typo
            continue
        last = _last(k)
        if last in table or last in _STRUCTURAL or not last.isidentifier():
            continue
        if last in looked:
            near = looked[last]
        elif len(looked) >= NEAR_MAX and k not in explicit:
            if unchecked is not None:
                unchecked.append(k)
            continue
        else:
            near = looked[last] = _near(last, table)
        if near or k in explicit:
            out[k] = UnknownKey(k, near)
    return sorted(out.values(), key=lambda u: u.key)
