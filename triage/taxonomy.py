"""The pitfall ids: one per pattern file of the shipped catalog (patterns/<id>.yaml), read from the
file names -- adding a pitfall is a YAML file (and a fixture), never a Python edit (issue 41).  The
ids mirror ../shared/domain/taxonomy.md; a pattern file that adds one says why in its `note`."""
from __future__ import annotations

import functools
import os
from typing import Any, Tuple


@functools.lru_cache(maxsize=None)
def pitfall_ids() -> Tuple[str, ...]:
    """The shipped catalog's ids, sorted."""
    from .patterns import builtin_dir
    d = builtin_dir()
    return tuple(sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml") and not f.startswith(".")))


def __getattr__(name: str) -> Any:
    if name == "IDS":             # (read on first use: listing the catalog's folder is no import-time cost)
        return pitfall_ids()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
