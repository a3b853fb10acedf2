"""Compatibility face: the regex helpers live in triage.scan.rx (this module re-exports them for
code that imports triage.rx; patch settings on triage.scan.rx, not here)."""
from .scan.rx import (
    MAX_REPEAT_COUNT,
    TIMEOUT,
    VALIDATED,
    LazyRx,
    Timeouts,
    ValidatedCache,
    compile_rx,
    lazy,
    remember_valid,
    risky,
    search,
)

__all__ = ["MAX_REPEAT_COUNT", "TIMEOUT", "VALIDATED", "LazyRx", "Timeouts", "ValidatedCache", "compile_rx", "lazy",
           "remember_valid", "risky", "search"]
