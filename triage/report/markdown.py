"""The markdown report: a ticket comment (GitHub / GitLab / Jira), verdict first, details collapsed."""
from __future__ import annotations

import html
import re
from typing import Any, Dict, List

from .. import __version__
from .util import MD_LIMIT, clip, fit_blocks
from .view import build_view


def md_text(t: Any) -> str:
    """Text outside code: HTML-escaped and markdown punctuation backslash-escaped, one line."""
    t = html.escape(clip(t, 4000), quote=False).replace("\n", " ")
    return "".join("\\" + ch if ch in "\\`*_[]|~" else ch for ch in t)


def code_span(t: Any) -> str:
    """Inline code span that survives backticks and table pipes."""
    t = clip(t, 400).replace("\n", " ").replace("|", "\\|")
    run = max((len(r) for r in re.findall(r"`+", t)), default=0)
    fence = "`" * (run + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or not t else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def fenced(lines: List[str]) -> str:
    """A fenced code block that no fence inside LINES can end."""
    body = "\n".join(lines)
    run = max((len(r) for r in re.findall(r"`{3,}|~{3,}", body)), default=0)
    f = "`" * max(3, run + 1)
    return f"{f}text\n{body}\n{f}"


def details(summary: str, body: str) -> str:
    """A collapsed block."""
    return f"<details><summary>{html.escape(summary)}</summary>\n\n{body}\n\n</details>"


def evidence_lines(f: Dict[str, Any], brief: bool = False) -> List[str]:
    """A finding's evidence as the lines of a code block (`# where`, then `> n | hit` and the context
    lines); BRIEF (cascades): two evidence lines, no context.  Markdown and jira show them."""
    lines: List[str] = []
    evs = f["evidence"][:2] if brief else f["evidence"]
    for e in evs:
        lines.append(f"# {e['loc']} (rank {e['rank']})")
        for r in e["rows"]:
            if brief and not r["hit"]:
                continue
            lines.append(f"{'>' if r['hit'] else ' '} {r['n']:>6} | {r['short']}" if r["n"] != "" else
                         f"{'>' if r['hit'] else ' '} {r['short']}")
    more = f["more_evidence"] + len(f["evidence"]) - len(evs)
    if more:
        lines.append(f"# … {more} more evidence line(s) in the HTML/JSON report")
    return lines


def _finding(f: Dict[str, Any]) -> str:
    head = (f"{f['role']}: {f['pitfall']} x{f['count']}" + (f" ranks {f['ranks']}" if f["ranks"] else "")
            + f" at {f['loc']}")
    body = [f"**{md_text(f['title'])}** ({md_text(f['severity'])}), fingerprint {code_span(f['fingerprint'])}", "",
            fenced(evidence_lines(f, brief=f["role"] == "cascade"))]
    if f["role"] != "cascade" and f["fix"]:
        body += ["", f"**Fix:** {md_text(f['fix'])}"]
    return details(head, "\n".join(body))


def _title(v: Dict[str, Any]) -> str:
    p = v["primary"]
    if p:
        return f"### triage: {code_span(p['pitfall'])} — {md_text(p['title'])}"
    if v.get("failed"):
        return "### triage: a failure no known pitfall explains"
    return "### triage: no known pitfall found"


def _rank_row(v: Dict[str, Any]) -> str:
    lr = v["launcher_root_rank"]
    if v["hang"]:
        sus = ", ".join(md_text(x["who"]) for x in v["hang_suspects"][:10]) or "none in this log"
        return (f"| First failing rank | none: a hang (suspects: {sus})"
                + (f" (launcher: rank {md_text(lr)}, the first to exit)" if lr is not None else "") + " |")
    return (f"| First failing rank | {md_text(v['first_rank']) if v['first_rank'] is not None else 'unknown'}"
            + (f" (launcher: rank {md_text(lr)})" if lr is not None else "") + " |")


def _known_row(kv: Dict[str, Any]) -> str:
    since = f" since {md_text(kv['since'])}" if kv["since"] else ""
    label = md_text(kv["title"]) if kv["title"] else md_text(kv["url"])
    href = (kv["href"] or "").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
    link = f"[{label}](<{href}>)" if href else label
    return f"| Known issue | {link} (seen {kv['seen']} time{'s' if kv['seen'] != 1 else ''}{since}) |"


def _head(v: Dict[str, Any]) -> List[str]:
    p = v["primary"]
    head = [_title(v), "", f"**Verdict:** {md_text(v['summary'])}", "", "| | |", "|---|---|"]
    if p:
        head.append(f"| Pitfall | {code_span(p['pitfall'])} ({md_text(p['severity'])}) |")
    head.append(f"| Outcome | {code_span(v['outcome'])} |")
    head.append(_rank_row(v))
    b = v["blamed"]
    head.append("| Blamed setting | " + (f"{code_span(b['key'])}: {code_span(b['old'])} → {code_span(b['new'])}"
                                        if b else "none") + " |")
    if p:
        head.append(f"| First seen | {code_span(p['loc'])} |")
        head.append(f"| Fingerprint | {code_span(p['fingerprint'])} |")
        head.append(f"| Pattern | {code_span(p['pattern_file'])} |")
    if v["signature"]:
        head.append(f"| Signature | {code_span(v['signature'])} |")
    if v["known"]:
        head.append(_known_row(v["known"]))
    return head


def _failure_blocks(v: Dict[str, Any]) -> List[str]:
    """The error (no pitfall), hang suspects, Flight Recorder, fix and evidence, and the findings."""
    p = v["primary"]
    blocks: List[str] = []
    ffv = v["first_failure"]
    if not p and ffv is not None:
        more = [f"… {ffv['more']} more line(s)"] if ffv["more"] else []
        body = fenced(ffv["short"] + more) if ffv["short"] else ""
        rk = f", rank {md_text(ffv['rank'])}" if ffv["rank"] != "?" else ""
        blocks.append(f"**Error** ({md_text(ffv['kind'])}{rk}, {code_span(ffv['loc'])}): "
                      f"{code_span(ffv['message'])}" + (f"\n\n{body}" if body else ""))
    if v["hang"] and v["hang_suspects"]:
        blocks.append("**Hang suspects:**\n\n" + "\n".join(f"- {md_text(x['who'])}: {md_text(x['because'])}"
                                                         for x in v["hang_suspects"][:20]))
    if v["flight_recorder"]:
        frv = v["flight_recorder"]
        blocks.append("**Flight Recorder:** PyTorch dumped its collective trace"
                      + (f" (ranks {md_text(frv['ranks'])})" if frv["ranks"] else "")
                      + f". Dumps: {md_text(frv['dumps'])} Analyse them with {code_span(frv['analyse'])}.")
    if p:
        blocks.append(f"**Fix:** {md_text(p['fix'])}\n\n**Why:** {md_text(p['explanation'])}")
        blocks.append(details(f"Evidence ({p['loc']}, x{p['count']}" + (f", ranks {p['ranks']}" if p["ranks"] else "")
                              + ")", fenced(evidence_lines(p))))
    blocks += [_finding(f) for f in v["roots"] + v["infos"]]
    if v["cascades"]:
        blocks.append(details(f"{len(v['cascades'])} cascade finding(s) (consequences of the root cause)",
                              "\n\n".join(_finding(f) for f in v["cascades"])))
    return blocks


def _config_blocks(v: Dict[str, Any]) -> List[str]:
    blocks: List[str] = []
    if v["violations"]:
        blocks.append("**Config checks:**\n\n" + "\n".join(
            f"- {code_span(x['pitfall'])}: {md_text(x['message'])} Fix: {md_text(x['fix'])}"
            for x in v["violations"]))
    if v["diff"]:
        rows = ["| setting | good | failed | blame |", "|---|---|---|---|"]
        for r in v["diff"]:
            tag = ("**suspect** " + md_text(", ".join(r["because"])) if r["cls"] == "suspect"
                   else "unrelated" if r["cls"] == "unrelated" else "")
            rows.append(f"| {code_span(r['key'])} | {code_span(r['old'])} | {code_span(r['new'])} | {tag} |")
        blocks.append(details(f"Config diff ({len(v['diff'])} change(s))", "\n".join(rows)))
    return blocks


def _steps_block(st: Dict[str, Any]) -> str:
    rows = ["| run | steady median | steady iterations | warmup | capture iterations | capture time |",
            "|---|---|---|---|---|---|"]
    for r in st["runs"]:
        rows.append(f"| {r['name']} | {md_text(r['median'])} | {r['steady']} | {md_text(r['warmup'])} | "
                    f"{md_text(r['captures'])} | {md_text(r['capture_seconds'])} |")
    for c in st["comparisons"]:
        rows.append("")
        rows.append(f"- {md_text(c['label'])}: {md_text(c['cur'])} vs {md_text(c['base'])} ({md_text(c['delta'])}, "
                    f"95% CI {md_text(c['ci'])}): **{md_text(c['verdict'])}**")
    return details("Step times", "\n".join(rows))


def _patterns_block(patterns: List[Dict[str, Any]]) -> str:
    rows = ["| pattern file | id | fingerprints | references |", "|---|---|---|---|"]
    for pt in patterns:
        refs = "; ".join(md_text(r["source"]) + (f" ({md_text(r['version'])})" if r["version"] else "")
                         for r in pt["references"][:3])
        rows.append(f"| {code_span(pt['file'])} | {code_span(pt['id'])} | "
                    f"{', '.join(code_span(x) for x in pt['fingerprints'][:3])} | {refs} |")
    return details("Patterns that fired", "\n".join(rows))


def _run_blocks(v: Dict[str, Any]) -> List[str]:
    """Step times, unmatched blocks, versions, patterns and notes."""
    blocks: List[str] = []
    if v["steps"]:
        blocks.append(_steps_block(v["steps"]))
    for u in v["unmatched"]:
        body = fenced(u["short"] + ([f"… {u['more']} more line(s)"] if u["more"] else []))
        blocks.append(details(f"Unmatched error block at {u['loc']} (rank {u['rank']}, x{u['count']}, "
                              f"fingerprint {u['fingerprint']})", body))
    if v["versions_found"]:
        blocks.append("**Versions:** " + ", ".join(f"{md_text(x['name'])} {code_span(x['value'])}"
                                                   for x in v["versions"] if x["value"]))
    if v["patterns"]:
        blocks.append(_patterns_block(v["patterns"]))
    if v["notes"]:
        blocks.append("\n".join(f"- note: {md_text(n)}" for n in v["notes"]))
    return blocks


def render_markdown(d: Dict[str, Any], limit: int = MD_LIMIT) -> str:
    """A ticket comment (GitHub / GitLab / Jira): verdict first, details collapsed, under LIMIT chars."""
    v = build_view(d)
    foot = (f"<sub>triage {__version__}: {md_text(v['stats']['lines'])} lines from "
            f"{len(v['stats']['sources']) + v['stats']['more_sources']} source(s). Secrets are redacted unless "
            f"--no-redact.</sub>")
    return fit_blocks("\n".join(_head(v)), _failure_blocks(v) + _config_blocks(v) + _run_blocks(v), foot, limit,
                      lambda n: (f"_{n} section(s) left out to stay under the {limit}-character comment limit; "
                                 f"attach the HTML report (`-o report.html`) for everything._"))
