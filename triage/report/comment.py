"""The ticket comment, written once: verdict first, then the head table, the failure, config and run
sections, each finding; a Dialect says how each piece is written (markdown.MARKDOWN, jira.JIRA).

Every piece of report text goes through the dialect: `text` (escaped prose), `mono` (inline code),
`plain` and `plain_mono` (text where markdown writes it as it is: a collapsed block's summary, which
`details` escapes as a whole, a step-time run name, the footnote; Jira escapes it like any text)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Sequence, Tuple

from .. import __version__
from .util import fit_blocks
from .view import FindingView, FirstFailureView, JobView, KnownView, PatternView, ReportView, StepsView

Fn = Callable[[Any], str]


@dataclass(frozen=True)
class Dialect:
    """How a comment is written: the markup of each piece, the structure is the same."""
    text: Fn                                    # prose outside code, one line, markup neutralised
    plain: Fn                                   # text markdown writes as it is (see the module doc)
    mono: Fn                                    # inline monospace
    plain_mono: Fn                              # monospace in a summary (markdown: as it is)
    command: Fn                                 # a command line in monospace (Jira keeps more of it)
    bold: Callable[[str], str]
    small: Callable[[str], str]                 # the footnote
    heading: Callable[[int, str], str]
    row: Callable[[str, str], str]              # a row of the head table: label, value
    header_row: Callable[[Sequence[str]], str]  # a table's heading row(s)
    table_row: Callable[[Sequence[str]], str]
    code_block: Callable[[List[str]], str]      # literal lines that nothing inside can end
    link: Callable[[Any, Any], str]             # label, href (none: the label only)
    details: Callable[[str, str], str]          # summary, body: collapsed where the dialect can
    head_table: Tuple[str, ...]                 # the lines that open the head table
    para: str                                   # between paragraphs of one block
    bullet: str                                 # a list item's mark


def evidence_lines(f: FindingView, brief: bool = False) -> List[str]:
    """A finding's evidence as the lines of a code block (`# where`, then `> n | hit` and the context
    lines); BRIEF (cascades): two evidence lines, no context.  Markdown and jira show them."""
    lines: List[str] = []
    evs = f.evidence[:2] if brief else f.evidence
    for e in evs:
        lines.append(f"# {e.loc} (rank {e.rank})")
        for r in e.rows:
            if brief and not r.hit:
                continue
            lines.append(f"{'>' if r.hit else ' '} {r.n:>6} | {r.short}" if r.n is not None else
                         f"{'>' if r.hit else ' '} {r.short}")
    more = f.more_evidence + len(f.evidence) - len(evs)
    if more:
        lines.append(f"# … {more} more evidence line(s) in the HTML/JSON report")
    return lines


def _finding(D: Dialect, f: FindingView) -> str:
    head = (f"{D.plain(f.role)}: {D.plain_mono(f.pitfall)} x{f.count}"
            + (f" ranks {D.plain(f.ranks)}" if f.ranks else "") + f" at {D.plain(f.loc)}")
    body = [f"{D.bold(D.text(f.title))} ({D.text(f.severity)}), fingerprint {D.mono(f.fingerprint)}",
            D.code_block(evidence_lines(f, brief=f.role == "cascade"))]
    if f.role != "cascade" and f.fix:
        body.append(f"{D.bold('Fix:')} {D.text(f.fix)}")
    return D.details(head, D.para.join(body))


def _title(D: Dialect, v: ReportView) -> str:
    p = v.primary
    if p:
        return D.heading(3, f"triage: {D.mono(p.pitfall)} — {D.text(p.title)}")
    if v.failed:
        return D.heading(3, "triage: a failure no known pitfall explains")
    return D.heading(3, "triage: no known pitfall found")


def _rank_row(D: Dialect, v: ReportView) -> str:
    lr = v.launcher_root_rank
    if v.hang:
        sus = ", ".join(D.text(x.who) for x in v.hang_suspects[:10]) or "none in this log"
        return D.row("First failing rank", f"none: a hang (suspects: {sus})"
                     + (f" (launcher: rank {D.text(lr)}, the first to exit)" if lr is not None else ""))
    return D.row("First failing rank", (D.text(v.first_rank) if v.first_rank is not None else "unknown")
                 + (f" (launcher: rank {D.text(lr)})" if lr is not None else ""))


def _known_row(D: Dialect, kv: KnownView) -> str:
    since = f" since {D.text(kv.since)}" if kv.since else ""
    link = D.link(kv.title or kv.url, kv.href)
    return D.row("Known issue", f"{link} (seen {kv.seen} time{'s' if kv.seen != 1 else ''}{since})")


def _job_row(D: Dialect, j: JobView) -> str:
    """The job header as one row: id (attempt) · hosts · log span · analysed · triage version."""
    parts = []
    for k, val in j.parts():
        if k == "job":
            parts.append(D.mono(val) + (f" (attempt {D.text(j.attempt)})" if j.attempt else ""))
        elif k != "attempt":
            parts.append(f"{D.plain(k)} {D.text(val)}")
    if not j.id and j.attempt:
        parts.insert(0, f"attempt {D.text(j.attempt)}")
    return D.row("Job", " · ".join(parts))


def _head(D: Dialect, v: ReportView) -> List[str]:
    p = v.primary
    head = [_title(D, v), "", f"{D.bold('Verdict:')} {D.text(v.summary)}", "", *D.head_table]
    if v.job is not None and v.job.parts():
        head.append(_job_row(D, v.job))
    if p:
        head.append(D.row("Pitfall", f"{D.mono(p.pitfall)} ({D.text(p.severity)})"))
    head.append(D.row("Outcome", D.mono(v.outcome)))
    if v.action_line:
        head.append(D.row("Action", D.text(v.action_line)))
    head.append(_rank_row(D, v))
    b = v.blamed
    head.append(D.row("Blamed setting", f"{D.mono(b.key)}: {D.mono(b.old)} → {D.mono(b.new)}"
                      if b else "none"))
    if p:
        head.append(D.row("First seen", D.mono(p.loc)))
        head.append(D.row("Fingerprint", D.mono(p.fingerprint)))
        head.append(D.row("Pattern", D.mono(p.pattern_file)))
    if v.signature:
        sid = f" (id {D.mono(v.signature_id)})" if v.signature_id else ""
        head.append(D.row("Signature", D.mono(v.signature) + sid))
    if v.message_signature:
        head.append(D.row("Message signature", D.mono(v.message_signature)))
    if v.known:
        head.append(_known_row(D, v.known))
    return head


def _first_failure_block(D: Dialect, ffv: FirstFailureView) -> str:
    """The first error, when no pitfall explains it."""
    more = [f"… {ffv.block.more} more line(s)"] if ffv.block.more else []
    body = D.code_block([*ffv.block.short, *more]) if ffv.block.short else ""
    rk = f", rank {D.text(ffv.rank)}" if ffv.rank != "?" else ""
    return (f"{D.bold('Error')} ({D.text(ffv.kind)}{rk}, {D.mono(ffv.loc)}): {D.mono(ffv.message)}"
            + (D.para + body if body else ""))


def _failure_blocks(D: Dialect, v: ReportView) -> List[str]:
    """The error (no pitfall), hang suspects, Flight Recorder, fix and evidence, and the findings."""
    p = v.primary
    blocks: List[str] = []
    if not p and v.first_failure is not None:
        blocks.append(_first_failure_block(D, v.first_failure))
    if v.wavefront is not None:
        blocks.append(D.bold("Who never arrived:") + " " + D.text(v.wavefront.sentence)
                      + (D.para + D.code_block([f"{e.loc}: {e.text}" for e in v.wavefront.evidence])
                         if v.wavefront.evidence else ""))
    if v.hang and v.hang_suspects:
        blocks.append(D.bold("Hang suspects:") + D.para + "\n".join(
            f"{D.bullet}{D.text(x.who)}: {D.text(x.because)}" for x in v.hang_suspects[:20]))
    if v.flight_recorder:
        frv = v.flight_recorder
        blocks.append(D.bold("Flight Recorder:") + " PyTorch dumped its collective trace"
                      + (f" (ranks {D.text(frv.ranks)})" if frv.ranks else "")
                      + f". Dumps: {D.text(frv.dumps)} Analyse them with {D.command(frv.analyse)}.")
    if p:
        involved = (f"\n\n{D.bold('Settings involved:')} " + ", ".join(D.mono(x) for x in p.settings)
                    if p.settings else "")
        blocks.append(f"{D.bold('Fix:')} {D.text(p.fix)}{involved}\n\n{D.bold('Why:')} {D.text(p.explanation)}")
        blocks.append(D.details(f"Evidence ({D.plain(p.loc)}, x{p.count}"
                                + (f", ranks {D.plain(p.ranks)}" if p.ranks else "") + ")",
                                D.code_block(evidence_lines(p))))
    blocks += [_finding(D, f) for f in v.roots + v.infos]
    if v.cascades:
        blocks.append(D.details(f"{len(v.cascades)} cascade finding(s) (consequences of the root cause)",
                                D.para.join(_finding(D, f) for f in v.cascades)))
    return blocks


def _config_blocks(D: Dialect, v: ReportView) -> List[str]:
    blocks: List[str] = []
    if v.violations:
        blocks.append(D.bold("Config checks:") + D.para + "\n".join(
            f"{D.bullet}{D.mono(x.pitfall)}: {D.text(x.message)} Fix: {D.text(x.fix)}"
            for x in v.violations))
    if v.diff:
        rows = [D.header_row(("setting", "good", "failed", "blame"))]
        for r in v.diff:
            tag = (D.bold("suspect") + " " + D.text(", ".join(r.because)) if r.cls == "suspect"
                   else "unrelated" if r.cls == "unrelated" else "")
            rows.append(D.table_row((D.mono(r.key), D.mono(r.old), D.mono(r.new), tag)))
        blocks.append(D.details(f"Config diff ({len(v.diff)} change(s))", "\n".join(rows)))
    return blocks


def _steps_block(D: Dialect, st: StepsView) -> str:
    rows = [D.header_row(("run", "steady median", "steady iterations", "warmup", "capture iterations",
                          "capture time"))]
    for r in st.runs:
        rows.append(D.table_row((D.plain(r.name), D.text(r.median), f"{r.steady}", D.text(r.warmup),
                                 D.text(r.captures), D.text(r.capture_seconds))))
    items = [f"{D.bullet}{D.text(c.label)}: {D.text(c.cur)} vs {D.text(c.base)} ({D.text(c.delta)}, "
             f"95% CI {D.text(c.ci)}): {D.bold(D.text(c.verdict))}" for c in st.comparisons]
    return D.details("Step times", D.para.join(["\n".join(rows)] + items))


def _patterns_block(D: Dialect, patterns: Tuple[PatternView, ...]) -> str:
    rows = [D.header_row(("pattern file", "id", "fingerprints", "references"))]
    for pt in patterns:
        refs = "; ".join(D.link(r.short or r.source, r.url or None) + (f" ({D.text(r.version)})" if r.version else "")
                         for r in pt.references[:3])
        rows.append(D.table_row((D.mono(pt.file), D.mono(pt.id),
                                 ", ".join(D.mono(x) for x in pt.fingerprints[:3]), refs)))
    return D.details("Patterns that fired", "\n".join(rows))


def _run_blocks(D: Dialect, v: ReportView) -> List[str]:
    """Step times, unmatched blocks, versions, patterns and notes."""
    blocks: List[str] = []
    if v.steps:
        blocks.append(_steps_block(D, v.steps))
    for u in v.unmatched:
        body = D.code_block([*u.block.short, *([f"… {u.block.more} more line(s)"] if u.block.more else [])])
        blocks.append(D.details(f"Unmatched error block at {D.plain(u.loc)} (rank {D.plain(u.rank)}, "
                                f"x{u.count}, fingerprint {D.plain(u.fingerprint)})", body))
    if v.versions_found:
        blocks.append(D.bold("Versions:") + " " + ", ".join(f"{D.text(x.name)} {D.mono(x.value)}"
                                                             for x in v.versions if x.value))
    if v.patterns:
        blocks.append(_patterns_block(D, v.patterns))
    if v.bisect:
        blocks.append(D.bold("Bisect plan") + " (blame is not settled: run these, one change each, in order):\n"
                      + "\n".join(f"{D.bullet}{b.step}. {D.mono(' '.join(b.overrides))}: {D.text(b.why)}"
                                   for b in v.bisect))
    if v.novel:
        blocks.append(D.bold("New since the last good log") + " (lines the good run never printed, rarest first):\n"
                      + "\n".join(f"{D.bullet}{D.plain(n.loc)} (x{n.count}): {D.mono(n.text)}" for n in v.novel))
    for s in v.sections:            # the parts declared in parts.py
        blocks.append(D.bold(D.text(s.title) + ":") + D.para + "\n".join(f"{D.bullet}{D.text(x)}" for x in s.lines))
    if v.notes:
        blocks.append("\n".join(f"{D.bullet}note: {D.text(n)}" for n in v.notes))
    return blocks


def render_comment(D: Dialect, v: ReportView, limit: int) -> str:
    """The comment on report view V, written in dialect D, under LIMIT characters: whole sections are
    left out (with a note) to fit."""
    foot = D.small(f"triage {D.plain(__version__)}: {D.text(v.stats.lines)} lines from "
                   f"{len(v.stats.sources) + v.stats.more_sources} source(s). Secrets are redacted "
                   f"unless {D.plain('--no-redact')}.")
    return fit_blocks("\n".join(_head(D, v)), _failure_blocks(D, v) + _config_blocks(D, v) + _run_blocks(D, v), foot,
                      limit, lambda n: (f"_{n} section(s) left out to stay under the {D.plain(f'{limit}-character')} "
                                        f"comment limit; attach the HTML report ({D.mono('-o report.html')}) for "
                                        f"everything._"))
