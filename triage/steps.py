"""Compatibility face: the step-time analysis lives in triage.verdict.steps (this module
re-exports the names code imported from triage.steps; patch settings there, not here)."""
from .verdict.steps import (
    ALPHA,
    BOOTSTRAP,
    DEFAULT_WARMUP,
    EVIDENCE_KEEP,
    GRAPH_CFG_KEYS,
    MIN_EFFECT_PCT,
    MIN_SAMPLES,
    Comparison,
    PerfVerdict,
    StepLog,
    assess,
    compare,
    mann_whitney,
    summary,
)

__all__ = ["DEFAULT_WARMUP", "MIN_EFFECT_PCT", "EVIDENCE_KEEP", "MIN_SAMPLES", "BOOTSTRAP", "StepLog", "Comparison",
           "ALPHA", "mann_whitney", "compare", "summary", "PerfVerdict", "GRAPH_CFG_KEYS", "assess"]
