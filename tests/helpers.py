"""Small pattern definitions for engine/findings tests (independent of the shipped catalog)."""
from triage.patterns import parse_pattern


def pat(pid, regex_, literal, kind="runtime", generic=False, role=None, context=None, priority=None, **extra):
    """A one-rule pattern; EXTRA adds pattern fields (waits, cascade_verb, hang, ...)."""
    m = {"regex": regex_, "literal": literal}
    if role:
        m["role"] = role
    if context:
        m["context"] = context
    d = {"id": pid, "title": pid.upper(), "severity": "error", "kind": kind, "generic": generic,
         "match": [m], "explanation": "e", "fix": "f", "references": [{"source": "test"}],
         "examples": {"match": ["x"], "no_match": ["y"]}}
    if priority is not None:
        d["priority"] = priority
    d.update(extra)
    return parse_pattern(d, f"{pid}.yaml")


def analyse_path(engine, path):
    """The analysis of one log file through the line scanner."""
    from triage.verdict.analyse import analyse
    from triage.inputs.sources import iter_inputs
    return analyse(engine.scan(iter_inputs([path])))


def analyse_text(engine, text):
    """The analysis of a log given as text."""
    from triage.verdict.analyse import analyse
    from triage.selftest import lines_of
    return analyse(engine.scan(lines_of(text)))
