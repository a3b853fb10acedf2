"""Whether a run uses the verdict store, told without loading it (store.py, SQLAlchemy's front: ~1.3 ms of every
`triage analyze`'s start-up here, where most runs store nothing)."""
from __future__ import annotations

import os
from typing import Optional


def store_given(db: Optional[str], record: bool = False) -> bool:
    """Whether the user asked for a store (--db, --record, or TRIAGE_DB in the environment)."""
    return bool(db or record or os.environ.get("TRIAGE_DB"))
