"""The view of a report, the one thing every rendering (text, markdown, jira, junit, HTML and its
charts) is made from.  `build_view(analysis)` makes the report's JSON contract dict once
(contract.report_json: bounded, redacted) and the view of it, taking what the verdict decided
(outcome, primary, first failing rank, hang, action, blamed setting) from the verdict itself;
`load_view(dict)` reads a stored or saved report dict, old ones too: the fallbacks for a dict
that lacks a field live there and only there.  The view carries the dict it was made from
(`data`, and `json`, its JSON text), so the JSON is never made twice.

It is typed: frozen dataclasses (ReportView and the parts below) whose fields hold text already
clipped, lists already capped (triage/caps.py) and numbers already checked.  The view never trusts
a value's type, so an odd, partial or old dict renders instead of raising.  A new report field is
a Part (parts.py): its section reaches every rendering through `sections`."""
from __future__ import annotations

import re
from dataclasses import field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..caps import (
    BLOCK_TAIL,
    EVIDENCE_MAX,
    LINE_CLIP,
    MAX_BECAUSE,
    MAX_BLOCK_LINES,
    MAX_CONTEXT,
    MAX_FINDINGS,
    MAX_ITEMS,
    MAX_NOTES,
    MAX_REFERENCES,
    MAX_ROWS,
    MAX_UNMATCHED,
    MAX_VERSIONS,
)
from ..kinds import HEALTHY, PITFALL, UNEXPLAINED
from ..lazyre import lazy_re
from ..record import record
from .parts import SectionView, registered
from .util import (
    as_dict,
    as_list,
    clip,
    dicts,
    finite_int,
    finite_num,
    int_or_none,
    is_number,
    loc,
    rank_text,
    ranks_text,
    shown_value,
    value_text,
)

if TYPE_CHECKING:
    from ..verdict.analysis import Analysis

VERSION_LABELS = (("torch_version", "PyTorch"), ("te_version", "Transformer Engine"),
                  ("mcore_version", "megatron-core"), ("nccl_version", "NCCL"),
                  ("cuda_version", "CUDA"), ("driver_version", "NVIDIA driver"))
Number = float     # an int or a float as the JSON has it (PEP 484: an int is a float)


@record(frozen=True)
class EvidenceRow:
    """One log line of an evidence block: `text` in full (HTML, JUnit; wrapped), `short` clipped for a
    comment; `n` its line number (None: unknown), `hit` the evidence line itself (not context)."""
    n: Optional[int]
    text: str
    short: str
    hit: bool


@record(frozen=True)
class EvidenceView:
    """An evidence line (`text`, clipped) at `loc` (source:line) of `rank`, with its context rows."""
    loc: str
    rank: str
    text: str
    rows: Tuple[EvidenceRow, ...]


@record(frozen=True)
class ReferenceView:
    """A pattern's source reference: `source` (its file and what it prints, clipped), `short` (the
    file or tool alone: what a ticket reader is shown), `version`."""
    source: str
    version: str
    short: str = ""
    url: str = ""          # the upstream file at that release (https:// only), where the pattern names one


@record(frozen=True)
class FindingView:
    """One finding: its first EVIDENCE_MAX evidence lines (`more_evidence` counts the rest)."""
    pitfall: str
    title: str
    severity: str
    role: str                  # root-cause, cascade or info (anything else as it is)
    rank: str                  # "?" when unknown
    ranks: str                 # "0-3,7"; "" when none
    count: int
    loc: str
    evidence: Tuple[EvidenceView, ...]
    more_evidence: int
    fingerprint: str
    pattern_file: str
    regex: str
    explanation: str
    fix: str
    references: Tuple[ReferenceView, ...]
    implicates: Tuple[str, ...]
    settings: Tuple[str, ...] = ()     # the settings the fix names, as the log's engine spells them


@record(frozen=True)
class BlockView:
    """An error block's lines: `lines` in full (HTML), `short` clipped for a comment (markdown, jira),
    `more` how many were not shown, `tail` its last lines (the text report), `n` how many it has."""
    lines: Tuple[str, ...]
    short: Tuple[str, ...]
    more: int
    tail: Tuple[str, ...]
    n: int


@record(frozen=True)
class FirstFailureView:
    """The first failure: `rank` the failing rank (its own, else the first failing rank), `own_rank`
    the one its error block showed ("?" when none)."""
    rank: str
    own_rank: str
    loc: str
    message: str
    kind: str
    block: BlockView


@record(frozen=True)
class UnmatchedView:
    """An error block no pattern explains."""
    loc: str
    rank: str
    ranks: str
    count: int
    fingerprint: str
    block: BlockView


@record(frozen=True)
class HangSuspect:
    who: str                   # "rank 3" or "peer HOST"
    because: str


@record(frozen=True)
class FlightRecorderView:
    ranks: str
    dumps: str
    analyse: str
    evidence: Tuple[EvidenceView, ...]     # without context rows


@record(frozen=True)
class HangView:
    """The hang's wavefront (issue 43): one sentence and its evidence lines."""
    sentence: str
    evidence: Tuple[EvidenceView, ...]     # without context rows


@record(frozen=True)
class KnownView:
    """The known issue of the verdict: `href` only for an http(s) URL."""
    url: str
    href: Optional[str]
    title: Optional[str]
    seen: int
    since: Optional[str]


@record(frozen=True)
class SuspectRow:
    """A config change and its blame: values as text (`old`, `new`) and as Python writes them
    (`old_repr`, `new_repr`: the text report); `score` as text ("" when none)."""
    key: str
    old: str
    new: str
    old_repr: str
    new_repr: str
    score: str
    because: Tuple[str, ...]
    unrelated: bool


@record(frozen=True)
class DiffRow:
    """A row of the config diff: `cls` "suspect", "unrelated" or "" (no blame)."""
    key: str
    old: str
    new: str
    cls: str
    score: str
    because: Tuple[str, ...]


@record(frozen=True)
class ViolationView:
    pitfall: str
    settings: Tuple[str, ...]
    message: str
    fix: str


@record(frozen=True)
class VersionRow:
    name: str
    value: str                 # "" when the log does not show it


@record(frozen=True)
class AttemptView:
    attempt: str
    primary: str
    rank: str
    summary: str


@record(frozen=True)
class RunView:
    """One run's step times: as text (`median`, `captures`, ...) and as numbers (`median_ms`,
    `capture_list`, `capture_s`: the text report)."""
    name: str
    iterations: str
    steady: int
    median: str
    warmup: str
    captures: str
    capture_seconds: str
    graph_memory: str
    tflops: str
    median_ms: Optional[Number]
    capture_list: Tuple[str, ...]
    captures_total: int
    capture_s: Optional[Number]


@record(frozen=True)
class ComparisonView:
    """A step-time comparison: as text and as numbers (`delta_pct`, `ci95`: the text report)."""
    key: str
    label: str
    base: str
    cur: str
    delta: str
    ci: str
    verdict: str
    delta_pct: Optional[Number]
    ci95: Optional[Tuple[Number, Number]]


@record(frozen=True)
class StepsView:
    runs: Tuple[RunView, ...]
    comparisons: Tuple[ComparisonView, ...]


@record(frozen=True)
class StatsView:
    lines: str
    sources: Tuple[str, ...]
    more_sources: int
    attempts: str


@record(frozen=True)
class JobView:
    """Which job the report is about (the JSON's `job`): every part as text, "" when unknown;
    `span` the log's time span ("2026-11-02 10:00:03 – 12:41:17 UTC (2 h 41 min)")."""
    id: str
    attempt: str
    hosts: Tuple[str, ...]
    hosts_more: int
    start: str                 # ISO-8601 as the JSON has it
    end: str
    span: str
    analysed: str              # "2026-12-04 10:30 UTC"
    version: str

    @property
    def hosts_text(self) -> str:
        return ", ".join(self.hosts) + (f" (+{self.hosts_more} more)" if self.hosts_more else "")

    @property
    def line(self) -> str:
        """The header as one line of text (the text report's, JUnit's system-out)."""
        head = " ".join(x for x in (f"job {self.id}" if self.id else "",
                                    f"(attempt {self.attempt})" if self.attempt else "") if x)
        rest = [f"{k} {v}" for k, v in self.parts() if k not in ("job", "attempt")]
        return " · ".join([head] + rest if head else rest)

    def parts(self) -> Tuple[Tuple[str, str], ...]:
        """(label, value) of each known part, in the header's order: job, attempt, hosts, log,
        analysed, triage."""
        out = [("job", self.id), ("attempt", self.attempt), ("hosts", self.hosts_text), ("log", self.span),
               ("analysed", self.analysed), ("triage", self.version)]
        return tuple((k, v) for k, v in out if v)


@record(frozen=True)
class PatternView:
    """A pattern file that fired, once, with its regexes, fingerprints and roles."""
    file: str
    id: str
    regexes: Tuple[str, ...]
    references: Tuple[ReferenceView, ...]
    fingerprints: Tuple[str, ...]
    count: int
    roles: Tuple[str, ...]


@record(frozen=True)
class TimelineEventView:
    """A timeline event as the chart draws it: `t` (seconds) and `seq` (order in the log) as numbers
    (None: none or not a number), `rank` (None: unknown), `role` (root-cause, cascade or info) and what
    its tooltip names (`pitfall`, `source`, `line`, as text)."""
    t: Optional[Number]
    seq: Optional[Number]
    rank: Optional[int]
    role: str
    pitfall: str
    source: str
    line: str


@record(frozen=True)
class ChartRunView:
    """A run's step times as the chart draws them: its (iteration, ms) points sorted (the chart thins
    them), its steady and capture iterations, warmup steps and steady median, as numbers."""
    name: str                  # baseline or current
    series: Tuple[Tuple[Number, Number], ...]
    steady: Tuple[Number, ...]
    captures: Tuple[Number, ...]
    warmup: Optional[Number]
    median: Optional[Number]


@record(frozen=True)
class ChartsView:
    """What the HTML report's charts (svg.py) draw: the timeline's events, the first failing rank,
    the runs that have step times (baseline first)."""
    timeline: Tuple[TimelineEventView, ...] = ()
    first_rank: Optional[int] = None
    runs: Tuple[ChartRunView, ...] = ()


@record(frozen=True)
class ReportView:
    """The view of one report, for the renderers."""
    # the verdict
    outcome: str               # healthy, pitfall or unexplained-failure
    failed: bool
    summary: str
    primary_id: Optional[str]
    signature: Optional[str]
    signature_id: Optional[str]  # its short id (triage known add ID URL)
    message_signature: Optional[str]  # an unexplained failure's message-based signature (None: no other)
    known: Optional[KnownView]
    action: str                # what to do next (issue 43): stop, drain-node, retry, change-config, none
    action_line: str           # the action, its host and why, one line ("" when the dict has none)
    not_a_crash: bool          # a primary the verdict raises no failure for (severity below error): no rank failed
    # findings: the primary, the others in report order (the first MAX_FINDINGS) and by role
    findings: Tuple[FindingView, ...]   # every finding of the dict, in report order (JUnit's)
    primary: Optional[FindingView]
    others: Tuple[FindingView, ...]
    roots: Tuple[FindingView, ...]
    cascades: Tuple[FindingView, ...]
    infos: Tuple[FindingView, ...]
    hidden_findings: int       # findings not shown (beyond MAX_FINDINGS or left out of the JSON)
    n_findings: int
    patterns: Tuple[PatternView, ...]
    # ranks
    first_failure: Optional[FirstFailureView]
    hang: bool
    hang_suspects: Tuple[HangSuspect, ...]
    first_rank: Optional[str]
    launcher_root_rank: Optional[str]
    flight_recorder: Optional[FlightRecorderView]
    wavefront: Optional[HangView]   # the hang's culprit in one sentence (issue 43), from JSON `hang`
    # config
    blamed: Optional[SuspectRow]
    suspects: Tuple[SuspectRow, ...]
    diff: Tuple[DiffRow, ...]
    diff_more: int
    diff_given: bool           # a diff was made (it may be empty)
    violations: Tuple[ViolationView, ...]
    versions: Tuple[VersionRow, ...]
    versions_found: bool
    blame_note: str            # why no setting is blamed
    # the run
    attempts: Tuple[AttemptView, ...]
    more_attempts: int
    unmatched: Tuple[UnmatchedView, ...]
    unmatched_more: int
    steps: Optional[StepsView]
    stats: StatsView
    notes: Tuple[str, ...]
    timeline_events: int
    job: Optional[JobView] = None       # the job header (None: a dict without `job`)
    # an unexplained failure with its last good log: the lines only it printed (issue 42)
    novel: Tuple["NovelView", ...] = ()
    bisect: Tuple["BisectView", ...] = ()     # blame not settled: the runs that separate the candidates
    charts: ChartsView = field(default_factory=ChartsView)
    sections: Tuple[SectionView, ...] = ()    # the parts declared in parts.py, each as a titled block
    # the report dict the view was made from (the JSON contract, bounded and redacted as `redacted` says) and
    # its JSON text ("": not made; a text report's view is of the whole dict, never cut to the JSON's size)
    data: Dict[str, Any] = field(default_factory=dict, repr=False)
    json: str = field(default="", repr=False)
    redacted: bool = True


@record(frozen=True)
class BisectView:
    step: int
    why: str
    overrides: Tuple[str, ...]


@record(frozen=True)
class NovelView:
    loc: str
    count: int
    text: str
    template: str


_ISO = lazy_re(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z?")


def _when(x: Any) -> Optional[Tuple[str, str, float]]:
    """(date, time, epoch seconds) of an ISO-8601 UTC time of the JSON; None for anything else."""
    m = _ISO.fullmatch(x) if isinstance(x, str) and len(x) <= 40 else None
    if not m:
        return None
    y, mo, d = (int(v) for v in m.group(1).split("-"))
    h, mi, s = (int(v) for v in m.group(2).split(":"))
    # what time.strptime(..., "%Y-%m-%d %H:%M:%S") takes (it costs ~1 ms of start-up): a real date, 0-23 h,
    # 0-59 min, 0-61 s
    if h > 23 or mi > 59 or s > 61:
        return None
    if not (1 <= y <= 9999 and 1 <= mo <= 12 and 1 <= d <= _month_days(y, mo)):
        return None
    from ..inputs.sources import timegm  # (calendar.timegm's, without importing calendar and datetime)
    return m.group(1), m.group(2), float(timegm(y, mo, d, h, mi, s))


def _month_days(y: int, mo: int) -> int:
    if mo == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if mo in (4, 6, 9, 11) else 31


def duration_text(s: float) -> str:
    """A duration as people say it: 42 s, 12 min, 2 h 41 min, 3 d 4 h."""
    s = int(max(0, s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def _span_text(start: Any, end: Any) -> str:
    a, b = _when(start), _when(end)
    if a and b:
        if a[0] == b[0]:
            return f"{a[0]} {a[1]} – {b[1]} UTC ({duration_text(b[2] - a[2])})"
        return f"{a[0]} {a[1]} – {b[0]} {b[1]} UTC ({duration_text(b[2] - a[2])})"
    if a or b:
        w = a or b
        assert w is not None
        return f"{w[0]} {w[1]} UTC ({'start' if a else 'end'}; the log prints one time)"
    return ""


def _job_view(j: Any) -> Optional[JobView]:
    if not isinstance(j, dict):
        return None
    att = int_or_none(j.get("attempt"))
    analysed = _when(j.get("analysed_at"))
    hosts = [clip(h, 80) for h in as_list(j.get("hosts"))[:MAX_NOTES] if isinstance(h, str) and h]
    return JobView(id=clip(j.get("id"), 300), attempt=str(att) if att is not None else "",
                   hosts=tuple(hosts), hosts_more=max(0, int_or_none(j.get("hosts_more")) or 0),
                   start=clip(j.get("log_start"), 40), end=clip(j.get("log_end"), 40),
                   span=_span_text(j.get("log_start"), j.get("log_end")),
                   analysed=f"{analysed[0]} {analysed[1][:5]} UTC" if analysed else "",
                   version=clip(j.get("triage_version"), 40))


def _row(n: Optional[int], text: Any, hit: bool) -> EvidenceRow:
    return EvidenceRow(n, clip(text, LINE_CLIP), clip(text), hit)


def _num_text(x: Any, unit: str = "") -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return clip(x, 60) if x is not None else ""
    return f"{x:g}{unit}"


def _known_view(k: Any) -> Optional[KnownView]:
    """The known issue, with a link only for an http(s) URL."""
    if not isinstance(k, dict) or not k.get("url"):
        return None
    url = clip(k.get("url"), 2000)
    return KnownView(url=url, href=url if url.startswith(("https://", "http://")) else None,
                     title=clip(k.get("title"), 200) if k.get("title") else None,
                     seen=int_or_none(k.get("seen")) or 0,
                     since=clip(k.get("since"), 20) if k.get("since") else None)


def _cuda_text(v: str) -> str:
    """A CUDA version as people write it: torch's build tag `+cu130` reads 13.0, a CUDA API version
    number (NCCL's `cudaDriverVersion 12080`, 1000 * major + 10 * minor) 12.8; `13.0` stays."""
    if re.fullmatch(r"\d{3}", v):
        return f"{v[:-1]}.{v[-1]}"
    if re.fullmatch(r"\d{4,6}", v):
        return f"{int(v) // 1000}.{int(v) % 1000 // 10}"
    return v


def _versions_view(vers: Any) -> Tuple[VersionRow, ...]:
    """The versions rows as the log printed them.  The collector keeps the digits of torch's `+cu130`
    tag as cuda_version and NCCL's `cudaDriverVersion 12080` (the CUDA version the driver supports: no
    NVIDIA driver version has no dot) as driver_version: both are shown as CUDA versions (13.0, 12.8)."""
    vers = vers if isinstance(vers, dict) else {}
    vals = {k: clip(vers.get(k), 120) for k, _ in VERSION_LABELS}
    vals["cuda_version"] = _cuda_text(vals["cuda_version"])
    driver_cuda = ""
    if re.fullmatch(r"\d{4,6}", vals["driver_version"]):
        driver_cuda, vals["driver_version"] = _cuda_text(vals["driver_version"]), ""
    out = []
    for k, label in VERSION_LABELS:
        out.append(VersionRow(label, vals[k]))
        if k == "cuda_version" and driver_cuda:
            out.append(VersionRow("CUDA (driver supports)", driver_cuda))
    known = {k for k, _ in VERSION_LABELS}
    out += [VersionRow(clip(k, 60), clip(v, 120)) for k, v in list(vers.items())[:MAX_VERSIONS] if k not in known]
    return tuple(out)


def _blame_note(d: Dict[str, Any], notes: Tuple[str, ...]) -> str:
    """Why no setting is blamed, asking only for what was not given: a diff was made (both configs
    given or read), only the run's config is known, or none is."""
    diff = d.get("diff")
    if isinstance(diff, list):
        return "no config change from the last good run" if not diff else "no change is implicated"
    if any(n.startswith("the baseline log shows no configuration") for n in notes):
        return "the baseline log shows no configuration"
    if "config" in d:
        return "no config of a good run to compare with: pass --baseline-config or --baseline-log"
    return "no config of this run found: pass --config"


def _block_view(lines: List[Any]) -> BlockView:
    shown = lines[:MAX_BLOCK_LINES]
    return BlockView(lines=tuple(clip(x, LINE_CLIP) for x in shown), short=tuple(clip(x) for x in shown),
                     more=max(0, len(lines) - MAX_BLOCK_LINES),
                     tail=tuple(clip(x, LINE_CLIP) for x in lines[-BLOCK_TAIL:]), n=len(lines))


def _line_numbers(e: Dict[str, Any], line: Optional[int], before: List[Any],
                  after: List[Any]) -> Tuple[List[Optional[int]], List[Optional[int]]]:
    """Line numbers of the context lines: the real ones when given (an interleaved multi-rank log's
    neighbours are not line +/- 1), else counted from the evidence line."""
    bn = [int_or_none(x) for x in as_list(e.get("before_lines"))][-MAX_CONTEXT:]
    an = [int_or_none(x) for x in as_list(e.get("after_lines"))][:MAX_CONTEXT]
    if len(bn) != len(before):
        bn = [line - len(before) + i if line is not None else None for i in range(len(before))]
    if len(an) != len(after):
        an = [line + 1 + i if line is not None else None for i in range(len(after))]
    return bn, an


def _evidence_view(e: Dict[str, Any]) -> EvidenceView:
    line = int_or_none(e.get("line"))
    before = as_list(e.get("before"))[-MAX_CONTEXT:]
    after = as_list(e.get("after"))[:MAX_CONTEXT]
    bn, an = _line_numbers(e, line, before, after)
    rows = ([_row(n, t, False) for n, t in zip(bn, before)] + [_row(line, e.get("text"), True)]
            + [_row(n, t, False) for n, t in zip(an, after)])
    if e.get("source") == "<triage>":           # an analyser's own measurement, not a log line
        text = str(e.get("text") or "")
        text = text[len("triage: "):] if text.startswith("triage: ") else text
        return EvidenceView(loc="measured by triage", rank="?", text=clip(text),
                            rows=(_row(None, text, True),))
    return EvidenceView(loc=loc(e.get("source"), line), rank=rank_text(e.get("rank")), text=clip(e.get("text")),
                        rows=tuple(rows))


_REF_HEAD = lazy_re(r"^(.*?)(?::\s|\s['\"]|$)")


def short_reference(source: Any) -> str:
    """The file or tool a reference names, without the messages it quotes: 'PyTorch
    c10/cuda/CUDAException.cpp / CUDAMiscFunctions.cpp: 'CUDA error: ...'' -> its part before ': '."""
    s = " ".join(str(source or "").split())
    m = _REF_HEAD.match(s)
    head = (m.group(1) if m else s).strip(" ,;") or s
    return head if len(head) <= 90 else head[:89].rstrip() + "…"


def _references(x: Any) -> Tuple[ReferenceView, ...]:
    return tuple(ReferenceView(clip(r.get("source"), 300), clip(r.get("version"), 120),
                               clip(short_reference(r.get("source")), 100), _https(r.get("url")))
                 for r in dicts(x)[:MAX_REFERENCES])


def _https(u: Any) -> str:
    """A reference's link as the reports show it: an https:// URL without spaces or quotes, else none."""
    s = str(u or "")
    return s if s.startswith("https://") and len(s) <= 300 and not any(c in s for c in " \"'<>`\\") else ""


def finding_view(f: Dict[str, Any]) -> FindingView:
    """One finding of the report dict as the reports show it: the first EVIDENCE_MAX evidence lines,
    all the analysis keeps."""
    f = as_dict(f)
    ev = dicts(f.get("evidence_detail")) or dicts(f.get("evidence"))
    rule = as_dict(f.get("rule"))
    return FindingView(
        pitfall=clip(f.get("pitfall"), 120) or "?", title=clip(f.get("title"), 300),
        severity=clip(f.get("severity"), 20), role=clip(f.get("role"), 20) or "info",
        rank=rank_text(f.get("rank")), ranks=ranks_text(f.get("ranks")),
        count=int_or_none(f.get("count")) or len(ev) or 1, loc=loc(f.get("source"), f.get("line")),
        evidence=tuple(_evidence_view(e) for e in ev[:EVIDENCE_MAX]), more_evidence=max(0, len(ev) - EVIDENCE_MAX),
        fingerprint=clip(f.get("fingerprint"), 64),
        pattern_file=clip(rule.get("pattern"), 200), regex=clip(rule.get("regex"), 300),
        explanation=clip(f.get("explanation"), 4000), fix=clip(f.get("fix"), 4000),
        references=_references(f.get("references")),
        implicates=tuple(clip(x, 120) for x in as_list(f.get("implicates"))[:MAX_NOTES]),
        settings=tuple(clip(x, 120) for x in as_list(f.get("settings"))[:MAX_NOTES]),
    )


def _suspect_view(s: Dict[str, Any]) -> SuspectRow:
    score = s.get("score")
    return SuspectRow(key=clip(s.get("key"), 200), old=value_text(s.get("old")), new=value_text(s.get("new")),
                      old_repr=shown_value(s.get("old")), new_repr=shown_value(s.get("new")),
                      score=f"{score:.2f}" if is_number(score) else "",
                      because=tuple(clip(b, 300) for b in as_list(s.get("because"))[:MAX_BECAUSE]),
                      unrelated=bool(s.get("unrelated")))


def _run_view(name: str, r: Dict[str, Any], omitted: Dict[str, Any]) -> RunView:
    caps = [c for c in as_list(r.get("capture_iterations")) if isinstance(c, (int, float))]
    more_caps = int_or_none(omitted.get(f"step_times.{name}.capture_iterations")) or 0
    return RunView(
        name=name, iterations=_num_text(r.get("iterations", len(as_list(r.get("series"))))),
        steady=len(as_list(r.get("steady_iterations")))
        + (int_or_none(omitted.get(f"step_times.{name}.steady_iterations")) or 0),
        median=_num_text(r.get("steady_median_ms"), " ms"),
        warmup=_num_text(r.get("warmup_steps")), captures=", ".join(str(c) for c in caps[:MAX_NOTES]),
        capture_seconds=_num_text(r.get("capture_seconds"), " s"), graph_memory=clip(r.get("graph_memory"), 120),
        tflops=_num_text(r.get("steady_median_tflops")),
        median_ms=r.get("steady_median_ms") if is_number(r.get("steady_median_ms")) else None,
        capture_list=tuple(str(c) for c in caps[:MAX_NOTES]), captures_total=len(caps) + more_caps,
        capture_s=r.get("capture_seconds") if is_number(r.get("capture_seconds")) else None,
    )


def _comparison_view(key: str, label: str, c: Dict[str, Any]) -> ComparisonView:
    ci = as_list(c.get("ci95_pct"))
    ci95 = (ci[0], ci[1]) if len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci) else None
    delta = c.get("delta_pct") if isinstance(c.get("delta_pct"), (int, float)) else None
    return ComparisonView(key=key, label=label, base=_num_text(c.get("baseline_median_ms"), " ms"),
                          cur=_num_text(c.get("current_median_ms"), " ms"),
                          delta=f"{delta:+.2f}%" if delta is not None else "",
                          ci=f"[{ci95[0]:+.2f}%, {ci95[1]:+.2f}%]" if ci95 else "",
                          verdict=clip(c.get("verdict"), 60), delta_pct=delta, ci95=ci95)


def _steps_view(st: Any, omitted: Any = None) -> Optional[StepsView]:
    if not isinstance(st, dict):
        return None
    omitted = as_dict(omitted)
    runs = tuple(_run_view(name, st[name], omitted) for name in ("current", "baseline")
                 if isinstance(st.get(name), dict))
    comps = tuple(_comparison_view(key, label, st[key]) for key, label in (
        ("run_vs_run", "current vs baseline (steady state)"),
        ("before_vs_after_capture", "after vs before capture (same run)")) if isinstance(st.get(key), dict))
    if not runs and not comps:
        return None
    return StepsView(runs, comps)


def _diff_rows(d: Dict[str, Any], suspects: Tuple[SuspectRow, ...]) -> Tuple[DiffRow, ...]:
    """The config diff, each row marked suspect or unrelated by its blame (the suspects when there is
    no diff)."""
    by_key = {s.key: s for s in suspects}
    rows = []
    for c in dicts(d.get("diff"))[:MAX_ROWS]:
        k = clip(c.get("key"), 200)
        s = by_key.get(k)
        rows.append(DiffRow(key=k, old=value_text(c.get("old")), new=value_text(c.get("new")),
                            cls=("unrelated" if s.unrelated else "suspect") if s else "",
                            score=s.score if s else "", because=s.because if s else ()))
    if not rows and suspects:
        rows = [DiffRow(key=s.key, old=s.old, new=s.new, cls="unrelated" if s.unrelated else "suspect",
                        score=s.score, because=s.because) for s in suspects[:MAX_ROWS]]
    return tuple(rows)


def _unmatched_view(u: Dict[str, Any]) -> UnmatchedView:
    return UnmatchedView(loc=loc(u.get("source"), u.get("line")), rank=rank_text(u.get("rank")),
                         ranks=ranks_text(u.get("ranks")), count=int_or_none(u.get("count")) or 1,
                         fingerprint=clip(u.get("fingerprint"), 64), block=_block_view(as_list(u.get("lines"))))


def _patterns_view(findings: List[FindingView]) -> Tuple[PatternView, ...]:
    """The pattern files that fired, each once, with its regexes, fingerprints and roles."""
    patterns: Dict[str, Dict[str, Any]] = {}
    for f in findings:
        p = patterns.setdefault(f.pattern_file + "\x00" + f.pitfall, {
            "file": f.pattern_file, "id": f.pitfall, "regexes": [], "references": f.references,
            "fingerprints": [], "count": 0, "roles": []})
        if f.regex and f.regex not in p["regexes"]:
            p["regexes"].append(f.regex)
        if f.fingerprint and len(p["fingerprints"]) < MAX_BECAUSE:
            p["fingerprints"].append(f.fingerprint)
        if f.role not in p["roles"]:
            p["roles"].append(f.role)
        p["count"] += f.count
    return tuple(PatternView(file=p["file"], id=p["id"], regexes=tuple(p["regexes"]), references=p["references"],
                             fingerprints=tuple(p["fingerprints"]), count=p["count"], roles=tuple(p["roles"]))
                 for p in patterns.values())


@record(frozen=True)
class _Decided:
    """What the verdict decided, as the view takes it: from the Analysis's verdict (build_view), or
    read from a stored dict with the fallbacks an old one needs (load_view, _decided_of_dict)."""
    outcome: str
    failed: bool
    primary: Optional[int]      # the primary finding's index in the dict's findings (None: no primary)
    primary_id: Optional[str]
    first_rank: Any             # the first failing rank (an int, or None)
    first_failure_rank: Any     # the rank the first failure is of (the first failing rank)
    hang: bool
    action: str
    blamed: Optional[int]       # the blamed change's index in the dict's suspects (None: none blamed)
    not_a_crash: bool
    summary: str = ""           # the summary of a dict that has none


def _first_failure_view(d: Dict[str, Any], rank: Any) -> Optional[FirstFailureView]:
    """The first failure; RANK the first failing rank (the verdict's)."""
    ff = d.get("first_failure")
    if not isinstance(ff, dict):
        return None
    return FirstFailureView(rank=rank_text(rank), own_rank=rank_text(ff.get("rank")),
                            loc=loc(ff.get("source"), ff.get("line")), message=clip(ff.get("message")),
                            kind=clip(ff.get("kind"), 40), block=_block_view(as_list(ff.get("lines"))))


def _hang_suspect_view(x: Dict[str, Any]) -> HangSuspect:
    rank = int_or_none(x.get("rank"))
    who = f"rank {rank}" if rank is not None else f"peer {clip(x.get('peer'), 200)}"
    return HangSuspect(who=who, because=clip(x.get("because"), 400))


def _flight_view(frd: Any) -> Optional[FlightRecorderView]:
    if not isinstance(frd, dict):
        return None
    return FlightRecorderView(
        ranks=ranks_text(frd.get("ranks")), dumps=clip(frd.get("dumps"), 1000), analyse=clip(frd.get("analyse"), 1000),
        evidence=tuple(EvidenceView(loc=loc(e.get("source"), e.get("line")), rank=rank_text(e.get("rank")),
                                    text=clip(e.get("text")), rows=())
                       for e in dicts(frd.get("evidence"))[:EVIDENCE_MAX]))


def _hang_view(hd: Any) -> Optional[HangView]:
    if not isinstance(hd, dict) or not hd.get("sentence"):
        return None
    return HangView(sentence=clip(hd.get("sentence"), 1000),
                    evidence=tuple(EvidenceView(loc=loc(e.get("source"), e.get("line")), rank=rank_text(e.get("rank")),
                                                text=clip(e.get("text")), rows=())
                                   for e in dicts(hd.get("evidence"))[:EVIDENCE_MAX]))


def _findings_part(d: Dict[str, Any], omitted: Dict[str, Any], pi: Optional[int]) -> Dict[str, Any]:
    """The primary finding (PI: its index) and the others: `others` in report order (the first
    MAX_FINDINGS), also by role (`roots`, `cascades`, `infos`), and how many were not shown."""
    raw = dicts(d.get("findings"))
    findings_all = [finding_view(f) for f in raw]
    pi = pi if pi is not None and pi < len(findings_all) else None
    others = [f for i, f in enumerate(findings_all) if i != pi]
    left_out = int_or_none(omitted.get("findings")) or 0     # findings the bounded JSON left out
    shown = tuple(others[:MAX_FINDINGS])
    return dict(
        findings=tuple(findings_all), primary=findings_all[pi] if pi is not None else None, others=shown,
        roots=tuple(f for f in shown if f.role == "root-cause"),
        cascades=tuple(f for f in shown if f.role == "cascade"),
        infos=tuple(f for f in shown if f.role not in ("root-cause", "cascade")),
        hidden_findings=max(0, len(others) - MAX_FINDINGS) + left_out,
        n_findings=len(findings_all) + left_out, patterns=_patterns_view(findings_all),
    )


def _suspect_rows(d: Dict[str, Any]) -> List[SuspectRow]:
    return [_suspect_view(s) for s in dicts(d.get("suspects"))]


def _config_part(d: Dict[str, Any], blamed: Optional[int]) -> Dict[str, Any]:
    """Blame (BLAMED: the blamed change's index in the suspects), config diff, violations and versions."""
    rows = _suspect_rows(d)
    suspects = tuple(sorted(rows, key=lambda s: (s.unrelated, -float(s.score or 0))))
    versions = _versions_view(d.get("versions"))
    violations = tuple(ViolationView(pitfall=clip(v.get("pitfall"), 120),
                                     settings=tuple(clip(k, 120) for k in as_list(v.get("keys"))[:MAX_BECAUSE]),
                                     message=clip(v.get("message"), 1000), fix=clip(v.get("fix"), 1000))
                       for v in dicts(d.get("config_violations"))[:MAX_ITEMS])
    return dict(
        blamed=rows[blamed] if blamed is not None and blamed < len(rows) else None,
        suspects=suspects, diff=_diff_rows(d, suspects),
        diff_more=max(0, len(dicts(d.get("diff"))) - MAX_ROWS), violations=violations,
        versions=versions, versions_found=any(v.value for v in versions),
        diff_given=isinstance(d.get("diff"), list),
    )


def _ranks_part(d: Dict[str, Any], dec: _Decided) -> Dict[str, Any]:
    """The first failing rank, the launcher's root-cause rank, the hang suspects, the Flight Recorder."""
    first = dec.first_rank
    launcher = d.get("launcher_root_rank")
    return dict(
        first_failure=_first_failure_view(d, dec.first_failure_rank),
        hang=dec.hang,
        hang_suspects=tuple(_hang_suspect_view(x) for x in dicts(d.get("hang_suspects"))[:MAX_ITEMS]),
        first_rank=rank_text(first) if first is not None else None,
        launcher_root_rank=rank_text(launcher) if int_or_none(launcher) is not None else None,
        flight_recorder=_flight_view(d.get("flight_recorder")),
        wavefront=_hang_view(d.get("hang")),
    )


def _attempt_view(a: Dict[str, Any]) -> AttemptView:
    return AttemptView(attempt=clip(a.get("attempt"), 10), primary=clip(a.get("primary"), 120) or "none",
                       rank=rank_text(a.get("first_failing_rank")), summary=clip(a.get("summary"), 400))


def _run_part(d: Dict[str, Any], omitted: Dict[str, Any], outcome: str) -> Dict[str, Any]:
    """Attempts, step times, notes, stats and unmatched blocks."""
    stats = as_dict(d.get("stats"))
    sources = [clip(x, 300) for x in as_list(stats.get("sources"))]
    attempts = dicts(d.get("attempts"))
    unmatched = dicts(d.get("unmatched"))
    ff = as_dict(d.get("first_failure"))
    if outcome == UNEXPLAINED and ff:       # said once: in the first failure's section
        here = (ff.get("source"), int_or_none(ff.get("line")))
        unmatched = [u for u in unmatched if (u.get("source"), int_or_none(u.get("line"))) != here]
    notes = tuple(clip(n, 1000) for n in as_list(d.get("notes"))[:MAX_NOTES])
    return dict(
        attempts=tuple(_attempt_view(a) for a in attempts[:MAX_ITEMS]),
        more_attempts=max(0, len(attempts) - MAX_ITEMS) + (int_or_none(omitted.get("attempts")) or 0),
        unmatched=tuple(_unmatched_view(u) for u in unmatched[:MAX_UNMATCHED]),
        unmatched_more=max(0, len(unmatched) - MAX_UNMATCHED) + (int_or_none(omitted.get("unmatched")) or 0),
        steps=_steps_view(d.get("step_times"), d.get("omitted")),
        stats=StatsView(lines=clip(stats.get("lines"), 20), sources=tuple(sources[:MAX_NOTES]),
                        more_sources=max(0, len(sources) - MAX_NOTES), attempts=clip(stats.get("attempts"), 10)),
        notes=notes, timeline_events=len(as_list(d.get("timeline"))), blame_note=_blame_note(d, notes),
        bisect=tuple(BisectView(step=int_or_none(b.get("step")) or i + 1, why=clip(b.get("why"), 600),
                                overrides=tuple(clip(o, 300) for o in as_list(b.get("overrides"))[:8]))
                     for i, b in enumerate(dicts(d.get("bisect"))[:MAX_ITEMS])),
        novel=tuple(NovelView(loc=loc(n.get("source"), n.get("line")), count=int_or_none(n.get("count")) or 1,
                              text=clip(n.get("text"), 300), template=clip(n.get("template"), 300))
                    for n in dicts(d.get("novel_lines"))[:MAX_ITEMS]),
    )


def _action_line(a: Dict[str, Any]) -> str:
    do = clip(a.get("do"), 20)
    if not do:
        return ""
    host = clip(a.get("host"), 120)
    return f"{do}{f' (host {host})' if host else ''}: {clip(a.get('why'), 300)}"


_ROLES = ("root-cause", "cascade", "info")


def _timeline_view(events: Any) -> Tuple[TimelineEventView, ...]:
    out = []
    for e in events if isinstance(events, (list, tuple)) else []:
        if isinstance(e, dict):
            role = e.get("role") if e.get("role") in _ROLES else "info"
            out.append(TimelineEventView(t=finite_num(e.get("t")), seq=finite_num(e.get("seq")),
                                         rank=finite_int(e.get("rank")), role=str(role),
                                         pitfall=f"{e.get('pitfall', '')}", source=f"{e.get('source', '')}",
                                         line=f"{e.get('line', '')}"))
    return tuple(out)


def _points(s: Any) -> Tuple[Tuple[float, float], ...]:
    """A run's (iteration, ms) points that are two numbers, sorted."""
    out: List[Tuple[float, float]] = []
    for p in (s or []) if isinstance(s, (list, tuple)) else []:
        if isinstance(p, (list, tuple)) and len(p) >= 2:
            x, y = finite_num(p[0]), finite_num(p[1])
            if x is not None and y is not None:
                out.append((x, y))
    out.sort()
    return tuple(out)


def _numbers(v: Any) -> Tuple[float, ...]:
    if not isinstance(v, (list, tuple)):
        return ()
    return tuple(x for x in (finite_num(i) for i in v) if x is not None)


def _charts_view(d: Dict[str, Any], first_rank: Any) -> ChartsView:
    st = as_dict(d.get("step_times"))
    runs = []
    for name in ("baseline", "current"):
        r = st.get(name)
        if isinstance(r, dict):
            series = _points(r.get("series"))
            if series:
                runs.append(ChartRunView(name=name, series=series, steady=_numbers(r.get("steady_iterations")),
                                         captures=_numbers(r.get("capture_iterations")),
                                         warmup=finite_num(r.get("warmup_steps")),
                                         median=finite_num(r.get("steady_median_ms"))))
    return ChartsView(timeline=_timeline_view(d.get("timeline")), first_rank=finite_int(first_rank), runs=tuple(runs))


def _sections(d: Dict[str, Any]) -> Tuple[SectionView, ...]:
    """The parts declared in parts.py that the dict holds, each as its section."""
    out = []
    for part in registered():
        if part.key in d:
            s = part.section(d[part.key])
            if s is not None:
                out.append(s)
    return tuple(out)


def _view(d: Dict[str, Any], dec: _Decided, json: str = "", redacted: bool = True) -> ReportView:
    """The view of report dict D, with what the verdict decided (DEC)."""
    omitted = as_dict(d.get("omitted"))
    found = _findings_part(d, omitted, dec.primary)
    return ReportView(
        outcome=dec.outcome, failed=dec.failed,
        summary=clip(d.get("summary"), 1000) or dec.summary,
        primary_id=dec.primary_id,
        signature=clip(d.get("signature"), 300) if d.get("signature") is not None else None,
        signature_id=clip(d.get("signature_id"), 12) if d.get("signature_id") is not None else None,
        message_signature=(clip(d.get("message_signature"), 300) if d.get("message_signature") is not None
                           and d.get("message_signature") != d.get("signature") else None),
        known=_known_view(d.get("known")), job=_job_view(d.get("job")),
        action=clip(dec.action, 20), action_line=_action_line(as_dict(d.get("action"))),
        not_a_crash=dec.not_a_crash,
        **found, **_ranks_part(d, dec), **_config_part(d, dec.blamed), **_run_part(d, omitted, dec.outcome),
        charts=_charts_view(d, dec.first_rank), sections=_sections(d), data=d, json=json, redacted=redacted,
    )


def build_view(a: "Analysis", redact_secrets: bool = True, whole: bool = False) -> ReportView:
    """The view of analysis A, for the renderers: its report dict made once -- the JSON contract, bounded
    to MAX_JSON_BYTES and redacted unless REDACT_SECRETS is False (contract.report_json), or, WHOLE (the
    text report, not cut to the JSON's size), the dict at its first level -- and what the verdict decided
    taken from the verdict."""
    from ..redact import redact_obj
    from .contract import report_json, to_dict
    if whole:
        d, text = to_dict(a), ""
        if redact_secrets:
            d = redact_obj(d)
    else:
        d, text = report_json(a, redact_secrets)
    v = a.verdict
    cfg = a.config
    top = cfg.blamed if cfg is not None else None
    dec = _Decided(
        outcome=v.outcome, failed=v.failed, primary=0 if v.primary is not None else None,     # the primary first
        primary_id=clip(v.primary.pitfall, 120) if v.primary is not None else None,
        first_rank=v.first_rank, first_failure_rank=v.first_rank, hang=v.hang, action=v.action,
        blamed=next(i for i, s in enumerate(cfg.suspects) if s is top) if cfg is not None and top is not None else None,
        # the verdict's own gate (alert_key: no alert for a primary below severity error): no rank failed
        not_a_crash=v.primary is not None and v.alert_key() is None)
    return _view(d, dec, text, redact_secrets)


# -- a stored or saved report dict: every fallback for an old or partial dict is here -----------------

def _primary_index(raw: List[Dict[str, Any]], prim_id: Any) -> Optional[int]:
    """The primary finding: the root cause of the primary pitfall, else its first finding (a dict
    without a primary: the first root cause without a pitfall, as ever)."""
    roots = [i for i, f in enumerate(raw) if f.get("pitfall") == prim_id and f.get("role") == "root-cause"]
    any_role = [i for i, f in enumerate(raw) if prim_id is not None and f.get("pitfall") == prim_id]
    first = roots or any_role
    return first[0] if first else None


def _outcome(d: Dict[str, Any], has_primary: bool) -> str:
    outcome = d.get("outcome")
    if outcome in (HEALTHY, PITFALL, UNEXPLAINED):
        return str(outcome)
    # a dict from before `outcome`
    failed = has_primary or any(clip(f.get("role")) in ("root-cause", "cascade") for f in dicts(d.get("findings")))
    if has_primary:
        return PITFALL
    return UNEXPLAINED if failed or isinstance(d.get("first_failure"), dict) else HEALTHY


def _decided_of_dict(d: Dict[str, Any]) -> _Decided:
    """What the verdict decided, as a stored dict has it; what an old dict lacks is made up here."""
    raw = dicts(d.get("findings"))
    pi = _primary_index(raw, d.get("primary"))
    outcome = _outcome(d, pi is not None)
    ff = as_dict(d.get("first_failure"))
    # the first failure's rank is the first failing rank; a dict may give it only beside it
    first_ff = ff.get("rank") if int_or_none(ff.get("rank")) is not None else d.get("first_failing_rank")
    rows = _suspect_rows(d)
    blamed = min((i for i, s in enumerate(rows) if not s.unrelated), key=lambda i: -float(rows[i].score or 0),
                 default=None)
    sev = clip(raw[pi].get("severity"), 20) if pi is not None else ""
    prim_id = d.get("primary")
    return _Decided(outcome=outcome, failed=outcome != HEALTHY, primary=pi,
                    primary_id=clip(prim_id, 120) if prim_id is not None else None,
                    first_rank=d.get("first_failing_rank"), first_failure_rank=first_ff, hang="hang_suspects" in d,
                    action=clip(as_dict(d.get("action")).get("do"), 20), blamed=blamed,
                    not_a_crash=pi is not None and sev not in ("error", "critical"),
                    summary="no known pitfall found" if pi is None else "")


def load_view(d: Any) -> ReportView:
    """The view of a stored or saved report dict D (any dict renders: an old, partial or odd one too)."""
    d = as_dict(d)
    return _view(d, _decided_of_dict(d))
