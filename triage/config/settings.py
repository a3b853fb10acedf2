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


def _near(name: str, pool: Iterable[str]) -> Optional[str]:
    got = difflib.get_close_matches(name, sorted(pool), n=1, cutoff=CUTOFF)
    return got[0] if got else None


def unknown_keys(keys: Iterable[str], given: Iterable[str] = ()) -> List[UnknownKey]:
    """The keys (dotted, as read) that are no known setting: of KEYS (a config file's) only the near
    misses of a known setting; of GIVEN (KEY=VALUE on the command line) every one.  Environment keys
    (`env.X`) are checked against the variables triage reads, near misses only."""
    table = known_settings()
    out: Dict[str, UnknownKey] = {}
    explicit = set(given)
    for k in list(keys) + [g for g in explicit if g not in keys]:
        if k in out:
            continue
        if k.startswith("env."):
            var = k[4:]
            if var not in ENV_KEYS:
                near = _near(var, ENV_KEYS)
                if near:
                    out[k] = UnknownKey(k, "env." + near)
            continue
        last = _last(k)
        if last in table or last in _STRUCTURAL or not last.isidentifier():
            continue
        near = _near(last, table)
        if near or k in explicit:
            out[k] = UnknownKey(k, near)
    return sorted(out.values(), key=lambda u: u.key)
