"""The closed vocabularies of the pattern catalog, as types: a match rule's role, a pattern's
severity and kind.  The pattern loader validates against the same tuples (typing.get_args), so
the types and the accepted names cannot drift apart (PATTERNS.md documents them)."""
from __future__ import annotations

from typing import Literal, Tuple, get_args

# what a matched line is to the verdict: the failure itself, a consequence of one, or context
Role = Literal["root-cause", "cascade", "info"]
# how bad the pitfall is
Severity = Literal["critical", "error", "warning", "info"]
# where the pitfall shows: a configuration rule, a CUDA graph capture, the run itself, step times
Kind = Literal["config", "capture", "runtime", "perf"]

ROLES: Tuple[Role, ...] = get_args(Role)
SEVERITIES: Tuple[Severity, ...] = get_args(Severity)
KINDS: Tuple[Kind, ...] = get_args(Kind)

# a verdict's outcome (README "Exit codes"), named once: every comparison reads these names
HEALTHY, PITFALL, UNEXPLAINED = "healthy", "pitfall", "unexplained-failure"
OUTCOMES: Tuple[str, ...] = (HEALTHY, PITFALL, UNEXPLAINED)
