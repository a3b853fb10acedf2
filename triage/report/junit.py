"""JUnit XML: one testcase per pitfall checked, for Jenkins / GitLab test reporters."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Sequence

from .. import __version__
from ..caps import LINE_CLIP
from ..kinds import UNEXPLAINED
from .util import clip
from .view import FindingView, ReportView

# characters XML 1.0 cannot carry (C0 controls but tab and newlines, lone surrogates, U+FFFE/FFFF),
# and the C1 controls, which it can but readers choke on
XML_BAD = re.compile("[^\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
JUNIT_UNEXPLAINED = UNEXPLAINED
ROLE_ORDER = (("root-cause", 0), ("cascade", 1), ("info", 2))     # the order findings are shown in
# Only the verdict's root cause fails a testcase: a cascade is a consequence of it, so the counts agree
# with the verdict (failures + errors is 1 for a failed job: its primary, or `unexplained-failure`).


def xml_text(t: Any, n: int = LINE_CLIP) -> str:
    """Text for an XML document: clipped, with the characters XML cannot carry removed (the XML
    serializer escapes the rest: `<`, `&`, `]]>`, quotes)."""
    return XML_BAD.sub("", clip(t, n))


def _evidence(f: FindingView) -> List[str]:
    out: List[str] = []
    for e in f.evidence:
        hit = next((r for r in e.rows if r.hit), None)
        out.append(f"  {e.loc}" + (f" (rank {e.rank})" if e.rank != "?" else "")
                   + f": {hit.text if hit else e.text}")
        if f.role != "cascade" and len(e.rows) > 1:      # its context, as in the other reports
            out += [f"    {'>' if r.hit else ' '} {'' if r.n is None else r.n:>6} | {r.text}" for r in e.rows]
    return out


def _body(fs: List[FindingView]) -> str:
    """Each finding of one pitfall: role, ranks, location, fingerprint, its evidence lines
    (`source:line (rank r): text`, then the lines around it but for a cascade) and the fix."""
    out: List[str] = []
    for f in fs:
        rk = f" ranks {f.ranks}" if f.ranks else (f" rank {f.rank}" if f.rank != "?" else "")
        out.append(f"{f.role}:{rk} x{f.count} at {f.loc}, fingerprint {f.fingerprint}, "
                   f"pattern {f.pattern_file}")
        out += _evidence(f)
        if f.more_evidence:
            out.append(f"  … {f.more_evidence} more evidence line(s) in the JSON report")
        if f.fix and f.role != "cascade":
            out.append(f"fix: {f.fix}")
    return "\n".join(out)


def _message(f: FindingView) -> str:
    where = f"rank {f.rank}" if f.rank != "?" else (f"ranks {f.ranks}" if f.ranks else "rank unknown")
    return f"{f.title or f.pitfall} ({f.role}, {where})"


def _properties(suite: ET.Element, v: ReportView) -> None:
    props = ET.SubElement(suite, "properties")
    for k, val in (("outcome", v.outcome), ("primary", v.primary_id or ""), ("summary", v.summary),
                   ("signature", v.signature or ""), ("first_failing_rank", v.first_rank or ""),
                   ("known_issue", v.known.url if v.known else ""), ("action", v.action_line),
                   ("hang", v.wavefront.sentence if v.wavefront else ""),
                   ("sources", ", ".join(v.stats.sources)), ("triage_version", __version__)):
        if val:
            ET.SubElement(props, "property", name=k, value=xml_text(val, 2000))
    j = v.job
    if j is not None:       # which job (the JSON's `job`): its id, attempt, hosts, log span, analysis time
        for k, val in (("job_id", j.id), ("job_attempt", j.attempt), ("job_hosts", j.hosts_text),
                       ("log_start", j.start), ("log_end", j.end), ("analysed_at", j.analysed)):
            if val:
                ET.SubElement(props, "property", name=k, value=xml_text(val, 2000))


def _pitfall_case(suite: ET.Element, pid: str, fs: List[FindingView]) -> int:
    """The testcase of pitfall PID with its findings FS; 1 when it failed."""
    order = dict(ROLE_ORDER)
    fs = sorted(fs, key=lambda f: order.get(f.role, 2))
    tc = ET.SubElement(suite, "testcase", classname="triage.pitfalls", name=xml_text(pid, 120), time="0")
    failing = [f for f in fs if f.role == "root-cause"]
    if failing:
        el = ET.SubElement(tc, "failure", message=xml_text(_message(failing[0]), 1000), type=failing[0].role)
        el.text = xml_text(_body(fs), 200000)
        return 1
    if fs:
        what = ("a cascade of the root cause (not a failure of its own)" if any(f.role == "cascade" for f in fs)
                else "informational")
        ET.SubElement(tc, "system-out").text = xml_text(f"found ({what}):\n" + _body(fs), 200000)
    return 0


def _unexplained_case(suite: ET.Element, v: ReportView) -> int:
    """The `unexplained-failure` testcase; 1 when it is an error."""
    tc = ET.SubElement(suite, "testcase", classname="triage", name=JUNIT_UNEXPLAINED, time="0")
    if v.outcome != UNEXPLAINED:
        return 0
    ff = v.first_failure
    if ff is not None:
        rk = f"rank {ff.rank}: " if ff.rank != "?" else ""
        el = ET.SubElement(tc, "error", message=xml_text(rk + (ff.message or v.summary), 1000),
                           type=xml_text(ff.kind or "error", 40))
        el.text = xml_text("\n".join([f"{ff.loc} ({ff.kind}): no pattern explains it", *ff.block.lines]
                                     + ([f"… {ff.block.more} more line(s)"] if ff.block.more else [])), 200000)
    else:
        el = ET.SubElement(tc, "error", message=xml_text(v.summary, 1000), type="error")
        el.text = xml_text(v.summary, 4000)
    if v.novel:                     # the lines only the failed run printed (against its last good log)
        ET.SubElement(tc, "system-out").text = xml_text(
            "new since the last good log (rarest first):\n" + "\n".join(f"{n.loc} (x{n.count}): {n.text}"
                                                                         for n in v.novel), 40000)
    return 1


def _catalog_ids() -> List[str]:
    from ..patterns import load_all
    return [p.id for p in load_all()]


def render_junit(v: ReportView, pitfall_ids: Optional[Sequence[str]] = None) -> str:
    """JUnit XML (the schema Jenkins' and GitLab's test reports read) of report view V: one testcase
    per pitfall of the catalog checked (PITFALL_IDS, default the shipped patterns; a pitfall found
    that is not in it is added), passed when the log does not show it and a <failure> (message: title
    and rank; text: the evidence lines with source:line, and the fix) when the root-cause finding
    names it; a cascade or informational finding passes with its evidence in <system-out>.  One more
    testcase, `unexplained-failure`, carries an <error> when the job failed and no pattern explains
    it."""
    if pitfall_ids is None:
        pitfall_ids = _catalog_ids()
    by_id: Dict[str, List[FindingView]] = {}
    for f in v.findings:
        by_id.setdefault(f.pitfall, []).append(f)
    ids: List[str] = []
    for pid in list(pitfall_ids) + list(by_id):
        pid = clip(pid, 120)
        if pid and pid not in ids:
            ids.append(pid)
    suite = ET.Element("testsuite", name="triage", tests=str(len(ids) + 1), failures="0", errors="0",
                       skipped="0", time="0")
    _properties(suite, v)
    failures = sum(_pitfall_case(suite, pid, by_id.get(pid, [])) for pid in ids)
    errors = _unexplained_case(suite, v)
    out = [v.job.line] if v.job is not None and v.job.line else []
    if v.bisect:                    # blame not settled: the runs that separate the candidates
        out += ["bisect plan (one change each, in order):"] + [f"{b.step}. {' '.join(b.overrides)}: {b.why}"
                                                               for b in v.bisect]
    out += [f"{s.title}: {x}" for s in v.sections for x in s.lines]     # the parts declared in parts.py
    if out:
        ET.SubElement(suite, "system-out").text = xml_text("\n".join(out), 8000)
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    root = ET.Element("testsuites", name="triage", tests=suite.get("tests", "0"), failures=str(failures),
                      errors=str(errors), skipped="0", time="0")
    root.append(suite)
    if hasattr(ET, "indent"):      # Python 3.9+
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
