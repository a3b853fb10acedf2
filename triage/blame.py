"""Compatibility face: the blame stage lives in triage.verdict.blame (this module re-exports the
names code imported from triage.blame; patch settings there, not here)."""
from .verdict.blame import BOOKKEEPING, Suspect, blame

__all__ = ["BOOKKEEPING", "Suspect", "blame"]
