"""Which stack a log is of -- Megatron / PyTorch training, vLLM, SGLang, TensorRT-LLM, JAX -- and the
advice that fits it (issue 40): a finding's fix and the settings it names come from its pattern's
`advice` for that engine (patterns/*.yaml), else the pattern's own `fix`.  Decided once per analysis,
before the verdict (verdict/analyse.py)."""
from __future__ import annotations

from typing import Dict, Iterable, Optional

from ..scan.jobfacts import LogFacts, engines_in
from .types import Finding


def log_engine(facts: LogFacts, findings: Iterable[Finding]) -> Optional[str]:
    """The engine of the log: the one the failing findings' own evidence names most (a vLLM frame under
    a Megatron-trained RL job's error), else the one its first and last lines name most; None when no
    line names one."""
    fs = list(findings)
    named: Dict[str, int] = engines_in(e.text for f in fs if f.role != "info" for e in f.evidence)
    counts = named or facts.engines
    if not counts:
        return None
    return max(sorted(counts), key=lambda k: counts[k])


def fit_advice(findings: Iterable[Finding], engine: Optional[str]) -> None:
    """Each finding's fix and settings as its pattern advises for ENGINE (unchanged without advice)."""
    if engine is None:
        return
    for f in findings:
        adv = f.advice.get(engine)
        if adv is not None:
            f.fix = adv.fix
            f.settings = list(adv.settings)
