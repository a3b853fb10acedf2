"""The text report (the terminal's): rendered from the same view as markdown and HTML."""
from __future__ import annotations

from types import MappingProxyType
from typing import List, Optional

from ..caps import TEXT_MAX_ITEMS
from ..kinds import UNEXPLAINED
from .view import FindingView, FlightRecorderView, HangView, KnownView, ReportView, RunView, StepsView

COMPARISON_LABELS = MappingProxyType({"run_vs_run": "current vs baseline",
                                      "before_vs_after_capture": "replay vs eager before capture"})


def _clip(s: str, n: int = 300) -> str:
    return s if len(s) <= n else s[:n] + "…"


def known_line(k: Optional[KnownView]) -> Optional[str]:
    """'known issue: URL (seen N times since DATE)' for a verdict the store knows (the view's `known`)."""
    if not k:
        return None
    seen = k.seen or 0
    when = f" since {k.since}" if k.since else ""
    title = f" {k.title}" if k.title else ""
    return f"known issue: {k.url}{title} (seen {seen} time{'s' if seen != 1 else ''}{when})"


def _unexplained(v: ReportView) -> List[str]:
    out = ["", "UNEXPLAINED FAILURE  the job failed and no known pitfall explains it"]
    ff = v.first_failure
    if ff is not None:
        rk = f"rank {ff.rank}" if ff.rank != "?" else "rank unknown"
        out.append(f"  first failing: {rk}  at {ff.loc}  ({ff.kind})")
        out.append(f"  error: {_clip(ff.message)}")
        if ff.block.n:
            out.append("  error block:")
            shown = ff.block.lines if ff.block.n <= 12 else (*ff.block.lines[:1], "...", *ff.block.tail)
            out += [f"    | {_clip(x, 200)}" for x in shown]
    elif v.first_rank is not None:
        out.append(f"  first failing: rank {v.first_rank} (the launcher reports it; its own output is not here)")
    lr = v.launcher_root_rank
    if lr is not None and (ff is None or ff.own_rank != lr):
        out.append(f"  launcher (torchrun) root-cause rank: {lr}")
    return out


def _primary(v: ReportView, p: FindingView) -> List[str]:
    out = ["", f"PRIMARY  {p.pitfall}  [{p.severity}]  {p.title}",
           f"  first seen: {p.loc}" + (f" (rank {p.rank})" if p.rank != "?" else "")]
    lr = v.launcher_root_rank
    if lr is not None:
        agree = ("agrees" if lr == p.rank and not v.hang else
                 "the first process to exit: in a hang, only the first rank to time out" if v.hang else
                 "differs: it reports the first process to exit")
        out.append(f"  launcher (torchrun) root-cause rank: {lr} ({agree})")
    if p.ranks:
        out.append(f"  ranks: {p.ranks}  count: {p.count}")
    out.append("  evidence:")
    out += [f"    {e.loc}: {_clip(e.text)}" for e in p.evidence]
    out += ["  why: " + p.explanation, "  fix: " + p.fix]
    if p.settings:
        out.append("  settings involved: " + ", ".join(p.settings))
    out.append(f"  pattern: {p.pattern_file}   fingerprint: {p.fingerprint}")
    return out


def _hang(v: ReportView) -> List[str]:
    out = ["", "HANG  no rank failed first: the ranks above waited for one that did not come"]
    for x in v.hang_suspects[:TEXT_MAX_ITEMS]:
        out.append(f"  suspect: {x.who}: {_clip(x.because, 200)}")
    if not v.hang_suspects:
        out.append("  suspects: none in this log (every rank that printed anything timed out); look at the "
                   "missing ranks' output")
    return out


def _wavefront(h: HangView) -> List[str]:
    out = ["", "WHO NEVER ARRIVED  " + h.sentence]
    out += [f"    {e.loc}: {_clip(e.text)}" for e in h.evidence]
    return out


def _hang_parts(v: ReportView) -> List[str]:
    """Who never arrived, the hang suspects and the Flight Recorder, each when there is one."""
    out = _wavefront(v.wavefront) if v.wavefront is not None else []
    if v.hang:
        out += _hang(v)
    if v.flight_recorder is not None:
        out += _flight_recorder(v.flight_recorder)
    return out


def _flight_recorder(fr: FlightRecorderView) -> List[str]:
    ranks = f" (ranks {fr.ranks})" if fr.ranks else ""
    return ["", "FLIGHT RECORDER  PyTorch dumped its collective trace" + ranks,
            f"  dumps: {fr.dumps}", f"  analyse: {fr.analyse}"]


def _attempts(v: ReportView) -> List[str]:
    n = len(v.attempts) + v.more_attempts
    if n <= 1:
        return []
    out = ["", f"ATTEMPTS (the job restarted; attempt {n} is the headline)"]
    out += [f"  attempt {d.attempt}: {d.summary}" for d in v.attempts[:TEXT_MAX_ITEMS]]
    if n > TEXT_MAX_ITEMS:
        out.append(f"  ... {n - TEXT_MAX_ITEMS} more attempt(s) in the JSON report")
    return out


def _others(v: ReportView) -> List[str]:
    others = v.others
    if not others:
        return []
    out = ["", "OTHER FINDINGS"]
    for f in others[:TEXT_MAX_ITEMS]:
        rk = f" ranks {_clip(f.ranks, 200)}" if f.ranks else ""
        out.append(f"  {f.role:<10} {f.pitfall:<32} x{f.count}{rk}  {f.loc}  {f.fingerprint}")
        out.append(f"             {_clip(f.evidence[0].text if f.evidence else '', 200)}")
    n = len(others) + v.hidden_findings
    if n > TEXT_MAX_ITEMS:
        out.append(f"  ... {n - TEXT_MAX_ITEMS} more finding(s) in the JSON report")
    return out


def _config(v: ReportView) -> List[str]:
    out: List[str] = []
    if v.suspects:
        out += ["", "CONFIG CHANGES SINCE THE BASELINE (>> = suspect, ranked; the rest is unrelated)"]
        for s in v.suspects:
            mark = ">>" if not s.unrelated else "  "
            because = ", ".join(s.because) or "unrelated"
            out.append(f"  {mark} {s.score:>4}  {s.key}: {s.old_repr} -> {s.new_repr}   ({because})")
    elif v.diff_given and not v.diff:
        out += ["", "CONFIG CHANGES SINCE THE BASELINE: none (nothing to blame on the config)"]
    if v.violations:
        out += ["", "CONFIG CHECK (rules the run's config breaks)"]
        for x in v.violations:
            out.append(f"  {x.pitfall}: {x.message}")
            if x.fix:
                out.append(f"      fix: {x.fix}")
    return out


def _run_line(r: RunView) -> str:
    extra = []
    if r.capture_list:
        more = r.captures_total - len(r.capture_list)
        extra.append(f"capture in iteration {','.join(r.capture_list)}" + (f" (+{more} more)" if more > 0 else ""))
    if r.capture_s is not None:
        extra.append(f"capture {r.capture_s} s")
    if r.graph_memory:
        extra.append(f"graph memory {r.graph_memory}")
    med = r.median_ms
    head = (f"  {r.name:<9} median {med} ms over {r.steady} steady iterations" if med is not None and r.steady else
            f"  {r.name:<9} no steady-state iterations in the log (warm-up and capture only)")
    return head + (f"; {'; '.join(extra)}" if extra else "")


def _steps(st: StepsView) -> List[str]:
    out = ["", "STEP TIMES (steady state: warmup and capture iterations excluded)"]
    out += [_run_line(r) for r in st.runs]
    for c in st.comparisons:
        ci = f" (95% CI {c.ci95[0]:+.2f}% .. {c.ci95[1]:+.2f}%)" if c.ci95 else ""
        out.append(f"  {COMPARISON_LABELS[c.key]}: {c.delta}{ci}: {c.verdict}")
    return out


def _unmatched(v: ReportView) -> List[str]:
    if not v.unmatched:
        return []
    out = ["", "UNMATCHED ERRORS (no pattern explains these)"]
    for u in v.unmatched[:5]:
        rk = f" rank {u.rank}" if u.rank != "?" else ""
        out.append(f"  {u.loc}{rk} (x{u.count})")
        out += [f"    | {_clip(x, 200)}" for x in u.block.tail[-4:]]
    return out


def render_text(v: ReportView) -> str:
    """The text report of view V (view.build_view / load_view)."""
    out = [f"triage: {v.summary}"]
    kl = known_line(v.known)
    if kl:
        out.append(kl)        # right under the verdict line (--quiet keeps only the verdict line)
    if v.signature_id:
        out.append(f"signature {v.signature_id}  (a ticket for every job like this one: "
                   f"triage known add {v.signature_id} URL)")
    if v.job is not None and v.job.line:
        out.append(v.job.line)      # which job: id, attempt, hosts, the log's time span, analysed, triage
    if v.action_line and v.failed:
        out.append(f"action: {v.action_line}")
    if v.primary is not None:
        out += _primary(v, v.primary)
    elif v.outcome == UNEXPLAINED:
        out += _unexplained(v)
    out += _hang_parts(v)
    out += _attempts(v) + _others(v) + _config(v)
    if v.steps:
        out += _steps(v.steps)
    out += _bisect(v)
    out += _novel(v)
    out += _sections(v)
    out += [f"note: {n}" for n in v.notes]
    out += _unmatched(v)
    return "\n".join(out) + "\n"


def _sections(v: ReportView) -> List[str]:
    """The parts declared in parts.py: each a titled block."""
    out: List[str] = []
    for s in v.sections:
        out += ["", s.title.upper()] + [f"  {x}" for x in s.lines]
    return out


def _novel(v: ReportView) -> List[str]:
    """The lines only the failed run printed, against its last good log (rarest first)."""
    if not v.novel:
        return []
    out = ["", "NEW SINCE THE LAST GOOD LOG (lines the good run never printed, rarest first)"]
    out += [f"  {n.loc} (x{n.count}): {_clip(n.text, 200)}" for n in v.novel]
    return out


def _bisect(v: ReportView) -> List[str]:
    """Blame not settled: the single-variable runs that separate the candidates, in order."""
    if not v.bisect:
        return []
    out = ["", "BISECT PLAN (blame is not settled: run these, one change each, in order)"]
    for b in v.bisect:
        out.append(f"  {b.step}. {' '.join(b.overrides)}")
        out.append(f"     {b.why}")
    return out
