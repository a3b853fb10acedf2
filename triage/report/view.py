"""The view of a report: built from the (already redacted) report dict, and rendered by the text,
markdown, jira, junit and HTML reports.  The view clips every piece of log text, caps every list
and never trusts a value's type, so an odd or partial dict renders instead of raising."""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from .util import (
    LINE_CLIP,
    MAX_ROWS,
    as_dict,
    as_list,
    clip,
    dicts,
    int_or_none,
    is_number,
    loc,
    rank_text,
    ranks_text,
    value_text,
)

MAX_FINDINGS = 60          # findings shown in full; the rest are counted
MAX_EVIDENCE = 8           # evidence lines per finding
MAX_CONTEXT = 6            # context lines before/after an evidence line
MAX_UNMATCHED = 20         # unmatched blocks
MAX_BLOCK_LINES = 40       # lines per unmatched block
BLOCK_TAIL = 10            # last lines of a block (the exception), for the text report
VERSION_LABELS = (("torch_version", "PyTorch"), ("te_version", "Transformer Engine"),
                  ("mcore_version", "megatron-core"), ("nccl_version", "NCCL"),
                  ("cuda_version", "CUDA"), ("driver_version", "NVIDIA driver"))


def _row(n: Any, text: Any, hit: bool) -> Dict[str, Any]:
    """One log line of an evidence block: `text` in full (HTML, wrapped), `short` for a comment."""
    return {"n": n if n is not None else "", "text": clip(text, LINE_CLIP), "short": clip(text), "hit": hit}


def _num_text(x: Any, unit: str = "") -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return clip(x, 60) if x is not None else ""
    return f"{x:g}{unit}"


def _known_view(k: Any) -> Optional[Dict[str, Any]]:
    """The known issue, with a link only for an http(s) URL."""
    if not isinstance(k, dict) or not k.get("url"):
        return None
    url = clip(k.get("url"), 2000)
    return {"url": url, "href": url if url.startswith(("https://", "http://")) else None,
            "title": clip(k.get("title"), 200) if k.get("title") else None,
            "seen": int_or_none(k.get("seen")) or 0, "since": clip(k.get("since"), 20) if k.get("since") else None}


def _cuda_text(v: str) -> str:
    """A CUDA version as people write it: torch's build tag `+cu130` reads 13.0, a CUDA API version
    number (NCCL's `cudaDriverVersion 12080`, 1000 * major + 10 * minor) 12.8; `13.0` stays."""
    if re.fullmatch(r"\d{3}", v):
        return f"{v[:-1]}.{v[-1]}"
    if re.fullmatch(r"\d{4,6}", v):
        return f"{int(v) // 1000}.{int(v) % 1000 // 10}"
    return v


def _versions_view(vers: Any) -> List[Dict[str, str]]:
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
        out.append({"name": label, "value": vals[k]})
        if k == "cuda_version" and driver_cuda:
            out.append({"name": "CUDA (driver supports)", "value": driver_cuda})
    known = {k for k, _ in VERSION_LABELS}
    out += [{"name": clip(k, 60), "value": clip(v, 120)} for k, v in list(vers.items())[:20] if k not in known]
    return out


def _blame_note(d: Dict[str, Any], notes: List[str]) -> str:
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



def _block_view(lines: List[Any]) -> Dict[str, Any]:
    """An error block's lines: `lines` in full (HTML), `short` for a comment (markdown, jira), `tail`
    its last lines (the text report) and `n` how many it has."""
    return {"lines": [clip(x, LINE_CLIP) for x in lines[:MAX_BLOCK_LINES]],
            "short": [clip(x) for x in lines[:MAX_BLOCK_LINES]], "more": max(0, len(lines) - MAX_BLOCK_LINES),
            "tail": [clip(x, LINE_CLIP) for x in lines[-BLOCK_TAIL:]], "n": len(lines)}


def _line_numbers(e: Dict[str, Any], line: Optional[int], before: List[Any],
                  after: List[Any]) -> Tuple[List[Any], List[Any]]:
    """Line numbers of the context lines: the real ones when given (an interleaved multi-rank log's
    neighbours are not line +/- 1), else counted from the evidence line."""
    bn = [int_or_none(x) for x in as_list(e.get("before_lines"))][-MAX_CONTEXT:]
    an = [int_or_none(x) for x in as_list(e.get("after_lines"))][:MAX_CONTEXT]
    if len(bn) != len(before):
        bn = [line - len(before) + i if line is not None else None for i in range(len(before))]
    if len(an) != len(after):
        an = [line + 1 + i if line is not None else None for i in range(len(after))]
    return bn, an


def _evidence_view(e: Dict[str, Any]) -> Dict[str, Any]:
    line = int_or_none(e.get("line"))
    before = as_list(e.get("before"))[-MAX_CONTEXT:]
    after = as_list(e.get("after"))[:MAX_CONTEXT]
    bn, an = _line_numbers(e, line, before, after)
    rows = ([_row(n, t, False) for n, t in zip(bn, before)] + [_row(line, e.get("text"), True)]
            + [_row(n, t, False) for n, t in zip(an, after)])
    return {"loc": loc(e.get("source"), line), "rank": rank_text(e.get("rank")), "text": clip(e.get("text")),
            "rows": rows}


def finding_view(f: Dict[str, Any]) -> Dict[str, Any]:
    """One finding of the report dict as the reports show it."""
    ev = dicts(f.get("evidence_detail")) or dicts(f.get("evidence"))
    rule = as_dict(f.get("rule"))
    refs = [{"source": clip(r.get("source"), 300), "version": clip(r.get("version"), 120)}
            for r in dicts(f.get("references"))]
    return {
        "pitfall": clip(f.get("pitfall"), 120) or "?", "title": clip(f.get("title"), 300),
        "severity": clip(f.get("severity"), 20), "role": clip(f.get("role"), 20) or "info",
        "rank": rank_text(f.get("rank")), "ranks": ranks_text(f.get("ranks")),
        "count": int_or_none(f.get("count")) or len(ev) or 1,
        "loc": loc(f.get("source"), f.get("line")),
        "evidence": [_evidence_view(e) for e in ev[:MAX_EVIDENCE]], "more_evidence": max(0, len(ev) - MAX_EVIDENCE),
        "fingerprint": clip(f.get("fingerprint"), 64),
        "pattern_file": clip(rule.get("pattern"), 200), "regex": clip(rule.get("regex"), 300),
        "explanation": clip(f.get("explanation"), 4000), "fix": clip(f.get("fix"), 4000), "references": refs[:12],
        "implicates": [clip(x, 120) for x in as_list(f.get("implicates"))][:20],
    }


def _suspect_view(s: Dict[str, Any]) -> Dict[str, Any]:
    """A config change and its blame: values as text (`old`, `new`) and as Python writes them
    (`old_repr`, `new_repr`: the text report)."""
    score = s.get("score")
    return {"key": clip(s.get("key"), 200), "old": value_text(s.get("old")), "new": value_text(s.get("new")),
            "old_repr": clip(repr(s.get("old")), 4000), "new_repr": clip(repr(s.get("new")), 4000),
            "score": f"{score:.2f}" if is_number(score) else "",
            "because": [clip(b, 300) for b in as_list(s.get("because"))][:10], "unrelated": bool(s.get("unrelated"))}


def _run_view(name: str, r: Dict[str, Any], omitted: Dict[str, Any]) -> Dict[str, Any]:
    """One run's step times: as text (`median`, `captures`, ...) and as numbers (`median_ms`,
    `capture_list`, `capture_s`: the text report)."""
    caps = [c for c in as_list(r.get("capture_iterations")) if isinstance(c, (int, float))]
    more_caps = int_or_none(omitted.get(f"step_times.{name}.capture_iterations")) or 0
    return {
        "name": name, "iterations": _num_text(r.get("iterations", len(as_list(r.get("series"))))),
        "steady": len(as_list(r.get("steady_iterations")))
        + (int_or_none(omitted.get(f"step_times.{name}.steady_iterations")) or 0),
        "median": _num_text(r.get("steady_median_ms"), " ms"),
        "warmup": _num_text(r.get("warmup_steps")), "captures": ", ".join(str(c) for c in caps[:20]),
        "capture_seconds": _num_text(r.get("capture_seconds"), " s"), "graph_memory": clip(r.get("graph_memory"), 120),
        "tflops": _num_text(r.get("steady_median_tflops")),
        "median_ms": r.get("steady_median_ms") if is_number(r.get("steady_median_ms")) else None,
        "capture_list": [str(c) for c in caps[:20]], "captures_total": len(caps) + more_caps,
        "capture_s": r.get("capture_seconds") if is_number(r.get("capture_seconds")) else None,
    }


def _comparison_view(key: str, label: str, c: Dict[str, Any]) -> Dict[str, Any]:
    """A step-time comparison: as text and as numbers (`delta_pct`, `ci95`: the text report)."""
    ci = as_list(c.get("ci95_pct"))
    ci95 = (ci[0], ci[1]) if len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci) else None
    delta = c.get("delta_pct") if isinstance(c.get("delta_pct"), (int, float)) else None
    return {"key": key, "label": label, "base": _num_text(c.get("baseline_median_ms"), " ms"),
            "cur": _num_text(c.get("current_median_ms"), " ms"),
            "delta": f"{delta:+.2f}%" if delta is not None else "",
            "ci": f"[{ci95[0]:+.2f}%, {ci95[1]:+.2f}%]" if ci95 else "",
            "verdict": clip(c.get("verdict"), 60), "delta_pct": delta, "ci95": ci95}


def _steps_view(st: Any, omitted: Any = None) -> Optional[Dict[str, Any]]:
    if not isinstance(st, dict):
        return None
    omitted = as_dict(omitted)
    runs = [_run_view(name, st[name], omitted) for name in ("current", "baseline") if isinstance(st.get(name), dict)]
    comps = [_comparison_view(key, label, st[key]) for key, label in (
        ("run_vs_run", "current vs baseline (steady state)"),
        ("before_vs_after_capture", "after vs before capture (same run)")) if isinstance(st.get(key), dict)]
    if not runs and not comps:
        return None
    return {"runs": runs, "comparisons": comps}


def _primary_index(raw: List[Dict[str, Any]], prim_id: Any) -> Optional[int]:
    """The primary finding: the root cause of the primary pitfall, else its first finding (a dict
    without a primary: the first root cause without a pitfall, as ever)."""
    roots = [i for i, f in enumerate(raw) if f.get("pitfall") == prim_id and f.get("role") == "root-cause"]
    any_role = [i for i, f in enumerate(raw) if prim_id is not None and f.get("pitfall") == prim_id]
    first = roots or any_role
    return first[0] if first else None


def _diff_rows(d: Dict[str, Any], suspects: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The config diff, each row marked suspect or unrelated by its blame (the suspects when there is
    no diff)."""
    by_key = {s["key"]: s for s in suspects}
    rows = []
    for c in dicts(d.get("diff"))[:MAX_ROWS]:
        k = clip(c.get("key"), 200)
        s = by_key.get(k)
        rows.append({"key": k, "old": value_text(c.get("old")), "new": value_text(c.get("new")),
                     "cls": ("unrelated" if s["unrelated"] else "suspect") if s else "",
                     "score": s["score"] if s else "", "because": s["because"] if s else []})
    if not rows and suspects:
        rows = [{"key": s["key"], "old": s["old"], "new": s["new"], "score": s["score"], "because": s["because"],
                 "cls": "unrelated" if s["unrelated"] else "suspect"} for s in suspects[:MAX_ROWS]]
    return rows


def _unmatched_view(u: Dict[str, Any]) -> Dict[str, Any]:
    return {"loc": loc(u.get("source"), u.get("line")), "rank": rank_text(u.get("rank")),
            "ranks": ranks_text(u.get("ranks")), "count": int_or_none(u.get("count")) or 1,
            **_block_view(as_list(u.get("lines"))), "fingerprint": clip(u.get("fingerprint"), 64)}


def _patterns_view(findings: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The pattern files that fired, each once, with its regexes, fingerprints and roles."""
    patterns: Dict[str, Dict[str, Any]] = {}
    for f in findings:
        p = patterns.setdefault(f["pattern_file"] + "\x00" + f["pitfall"], {
            "file": f["pattern_file"], "id": f["pitfall"], "regexes": [], "references": f["references"],
            "fingerprints": [], "count": 0, "roles": []})
        if f["regex"] and f["regex"] not in p["regexes"]:
            p["regexes"].append(f["regex"])
        if f["fingerprint"] and len(p["fingerprints"]) < 10:
            p["fingerprints"].append(f["fingerprint"])
        if f["role"] not in p["roles"]:
            p["roles"].append(f["role"])
        p["count"] += f["count"] if isinstance(f["count"], int) else 1
    return list(patterns.values())


def _outcome(d: Dict[str, Any], has_primary: bool) -> str:
    outcome = d.get("outcome")
    if outcome in ("healthy", "pitfall", "unexplained-failure"):
        return str(outcome)
    # a dict from before `outcome`
    failed = has_primary or any(clip(f.get("role")) in ("root-cause", "cascade") for f in dicts(d.get("findings")))
    if has_primary:
        return "pitfall"
    return "unexplained-failure" if failed or isinstance(d.get("first_failure"), dict) else "healthy"


def _first_failure_view(d: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The first failure: `rank` the failing rank (its own, else the first failing rank), `own_rank`
    the one its error block showed."""
    ff = d.get("first_failure")
    if not isinstance(ff, dict):
        return None
    rk = ff.get("rank") if int_or_none(ff.get("rank")) is not None else d.get("first_failing_rank")
    return {"rank": rank_text(rk), "own_rank": rank_text(ff.get("rank")),
            "loc": loc(ff.get("source"), ff.get("line")), "message": clip(ff.get("message")),
            "kind": clip(ff.get("kind"), 40), **_block_view(as_list(ff.get("lines")))}


def _hang_suspect_view(x: Dict[str, Any]) -> Dict[str, Any]:
    rank = int_or_none(x.get("rank"))
    who = f"rank {rank}" if rank is not None else f"peer {clip(x.get('peer'), 200)}"
    return {"who": who, "because": clip(x.get("because"), 400)}


def _flight_view(frd: Any) -> Optional[Dict[str, Any]]:
    if not isinstance(frd, dict):
        return None
    return {"ranks": ranks_text(frd.get("ranks")), "dumps": clip(frd.get("dumps"), 1000),
            "analyse": clip(frd.get("analyse"), 1000),
            "evidence": [{"loc": loc(e.get("source"), e.get("line")), "rank": rank_text(e.get("rank")),
                          "text": clip(e.get("text"))} for e in dicts(frd.get("evidence"))[:MAX_EVIDENCE]]}


def _findings_part(d: Dict[str, Any], omitted: Dict[str, Any]) -> Dict[str, Any]:
    """The primary finding and the others: `others` in report order (the first MAX_FINDINGS), also
    by role (`roots`, `cascades`, `infos`), and how many were not shown."""
    raw = dicts(d.get("findings"))
    findings_all = [finding_view(f) for f in raw]
    pi = _primary_index(raw, d.get("primary"))
    others = [f for i, f in enumerate(findings_all) if i != pi]
    left_out = int_or_none(omitted.get("findings")) or 0     # findings the bounded JSON left out
    shown = others[:MAX_FINDINGS]
    return {
        "primary": findings_all[pi] if pi is not None else None, "others": shown,
        "roots": [f for f in shown if f["role"] == "root-cause"],
        "cascades": [f for f in shown if f["role"] == "cascade"],
        "infos": [f for f in shown if f["role"] not in ("root-cause", "cascade")],
        "hidden_findings": max(0, len(others) - MAX_FINDINGS) + left_out,
        "n_findings": len(findings_all) + left_out, "patterns": _patterns_view(findings_all),
    }


def _config_part(d: Dict[str, Any]) -> Dict[str, Any]:
    """Blame, config diff, violations and versions."""
    suspects = sorted((_suspect_view(s) for s in dicts(d.get("suspects"))),
                      key=lambda s: (s["unrelated"], -float(s["score"] or 0)))
    versions = _versions_view(d.get("versions"))
    violations = [{"pitfall": clip(v.get("pitfall"), 120),
                   "settings": [clip(k, 120) for k in as_list(v.get("keys"))][:10],
                   "message": clip(v.get("message"), 1000), "fix": clip(v.get("fix"), 1000)}
                  for v in dicts(d.get("config_violations"))[:50]]
    return {
        "blamed": next((s for s in suspects if not s["unrelated"]), None),
        "suspects": suspects, "diff": _diff_rows(d, suspects),
        "diff_more": max(0, len(dicts(d.get("diff"))) - MAX_ROWS), "violations": violations,
        "versions": versions, "versions_found": any(v["value"] for v in versions),
        "diff_given": isinstance(d.get("diff"), list),
    }


def _ranks_part(d: Dict[str, Any]) -> Dict[str, Any]:
    """The first failing rank, the launcher's root-cause rank and the hang suspects."""
    first = d.get("first_failing_rank")
    launcher = d.get("launcher_root_rank")
    return {
        "first_failure": _first_failure_view(d),
        "hang": "hang_suspects" in d,
        "hang_suspects": [_hang_suspect_view(x) for x in dicts(d.get("hang_suspects"))[:50]],
        "first_rank": rank_text(first) if first is not None else None,
        "launcher_root_rank": rank_text(launcher) if int_or_none(launcher) is not None else None,
    }


def _run_part(d: Dict[str, Any], omitted: Dict[str, Any]) -> Dict[str, Any]:
    """Attempts, step times, notes, stats and unmatched blocks."""
    stats = as_dict(d.get("stats"))
    sources = [clip(x, 300) for x in as_list(stats.get("sources"))]
    attempts = dicts(d.get("attempts"))
    notes = [clip(n, 1000) for n in as_list(d.get("notes"))][:20]
    return {
        "attempts": [{"attempt": clip(a.get("attempt"), 10), "primary": clip(a.get("primary"), 120) or "none",
                      "rank": rank_text(a.get("first_failing_rank")), "summary": clip(a.get("summary"), 400)}
                     for a in attempts[:50]],
        "more_attempts": max(0, len(attempts) - 50) + (int_or_none(omitted.get("attempts")) or 0),
        "unmatched": [_unmatched_view(u) for u in dicts(d.get("unmatched"))[:MAX_UNMATCHED]],
        "unmatched_more": max(0, len(dicts(d.get("unmatched"))) - MAX_UNMATCHED)
        + (int_or_none(omitted.get("unmatched")) or 0),
        "steps": _steps_view(d.get("step_times"), d.get("omitted")),
        "stats": {"lines": clip(stats.get("lines"), 20), "sources": sources[:20],
                  "more_sources": max(0, len(sources) - 20), "attempts": clip(stats.get("attempts"), 10)},
        "notes": notes, "timeline_events": len(as_list(d.get("timeline"))), "blame_note": _blame_note(d, notes),
    }


def build_view(d: Dict[str, Any]) -> Dict[str, Any]:
    """The view of report dict D (report_dict), for the renderers; any dict renders."""
    d = as_dict(d)
    omitted = as_dict(d.get("omitted"))
    v = _findings_part(d, omitted)
    primary = v["primary"]
    prim_id = d.get("primary")
    outcome = _outcome(d, primary is not None)
    v.update(_ranks_part(d))
    v.update(_config_part(d))
    v.update(_run_part(d, omitted))
    v.update({
        "failed": outcome != "healthy", "outcome": outcome,
        "flight_recorder": _flight_view(d.get("flight_recorder")),
        "signature": clip(d.get("signature"), 300) if d.get("signature") is not None else None,
        "known": _known_view(d.get("known")),
        "summary": clip(d.get("summary"), 1000) or ("no known pitfall found" if primary is None else ""),
        "primary_id": clip(prim_id, 120) if prim_id is not None else None,
    })
    return v
