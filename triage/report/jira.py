"""Jira wiki markup: the markdown comment's content, for Jira tickets."""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Dict, List, Optional

from .. import __version__
from .markdown import evidence_lines
from .util import MD_LIMIT, clip, fit_blocks
from .view import build_view

JIRA_ESCAPE = frozenset("*_-+^~?!{}[]#")     # markup characters: backslash-escaped
# backslash and pipe as character references: `\\` is a line break and `\\|` is unreliable in tables
JIRA_ENTITY = MappingProxyType({"\\": "&#92;", "|": "&#124;"})


def jira_text(t: Any, n: int = 4000) -> str:
    """Text outside {noformat}: one line, Jira markup neutralised (markup characters escaped, backslash
    and pipe as character references, an `&` that would start a character reference escaped too)."""
    t = re.sub(r"&(?=#?\w+;)", "&amp;", clip(t, n).replace("\n", " "))
    return "".join(JIRA_ENTITY.get(ch) or ("\\" + ch if ch in JIRA_ESCAPE else ch) for ch in t)


def _mono(t: Any, n: int = 400) -> str:
    """Inline monospace ({{...}}), its text escaped like any other."""
    t = jira_text(t, n)
    return "{{" + t + "}}" if t.strip() else "(none)"


def noformat(lines: List[str]) -> str:
    """A {noformat} block: literal text, except that a `{noformat` inside would end it."""
    body = "\n".join(re.sub(r"(?i)\{(noformat)", r"{ \1", x) for x in lines)
    return "{noformat}\n" + body + "\n{noformat}"


def _link(label: str, href: Optional[str]) -> str:
    if not href:
        return jira_text(label)
    url = "".join(c if c.isascii() and c.isprintable() and c not in " |[]{}<>\"'\\^`" else
                  "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in href)
    return f"[{jira_text(label)}|{url}]"


def _finding(f: Dict[str, Any]) -> str:
    head = (f"h4. {jira_text(f['role'])}: {_mono(f['pitfall'])} x{f['count']}"
            + (f" ranks {jira_text(f['ranks'])}" if f["ranks"] else "") + f" at {jira_text(f['loc'])}")
    body = [head, f"*{jira_text(f['title'])}* ({jira_text(f['severity'])}), fingerprint {_mono(f['fingerprint'])}",
            noformat(evidence_lines(f, brief=f["role"] == "cascade"))]
    if f["role"] != "cascade" and f["fix"]:
        body.append(f"*Fix:* {jira_text(f['fix'])}")
    return "\n".join(body)


def _row(*cells: str) -> str:
    return "|" + "|".join(c if c.strip() else " " for c in cells) + "|"


def _title(v: Dict[str, Any]) -> str:
    p = v["primary"]
    if p:
        return f"h3. triage: {_mono(p['pitfall'])} — {jira_text(p['title'])}"
    if v.get("failed"):
        return "h3. triage: a failure no known pitfall explains"
    return "h3. triage: no known pitfall found"


def _rank_row(v: Dict[str, Any]) -> str:
    lr = v["launcher_root_rank"]
    if v["hang"]:
        sus = ", ".join(jira_text(x["who"]) for x in v["hang_suspects"][:10]) or "none in this log"
        return (f"||First failing rank|none: a hang (suspects: {sus})"
                + (f" (launcher: rank {jira_text(lr)}, the first to exit)" if lr is not None else "") + "|")
    return (f"||First failing rank|{jira_text(v['first_rank']) if v['first_rank'] is not None else 'unknown'}"
            + (f" (launcher: rank {jira_text(lr)})" if lr is not None else "") + "|")


def _head(v: Dict[str, Any]) -> List[str]:
    p = v["primary"]
    head = [_title(v), "", f"*Verdict:* {jira_text(v['summary'])}", ""]
    if p:
        head.append(f"||Pitfall|{_mono(p['pitfall'])} ({jira_text(p['severity'])})|")
    head.append(f"||Outcome|{_mono(v['outcome'])}|")
    head.append(_rank_row(v))
    b = v["blamed"]
    head.append("||Blamed setting|" + (f"{_mono(b['key'])}: {_mono(b['old'])} → {_mono(b['new'])}" if b
                                       else "none") + "|")
    if p:
        head.append(f"||First seen|{_mono(p['loc'])}|")
        head.append(f"||Fingerprint|{_mono(p['fingerprint'])}|")
        head.append(f"||Pattern|{_mono(p['pattern_file'])}|")
    if v["signature"]:
        head.append(f"||Signature|{_mono(v['signature'])}|")
    kv = v["known"]
    if kv:
        since = f" since {jira_text(kv['since'])}" if kv["since"] else ""
        link = _link(kv["title"] or kv["url"], kv["href"])
        head.append(f"||Known issue|{link} (seen {kv['seen']} time{'s' if kv['seen'] != 1 else ''}{since})|")
    return head


def _failure_blocks(v: Dict[str, Any]) -> List[str]:
    p = v["primary"]
    blocks: List[str] = []
    ffv = v["first_failure"]
    if not p and ffv is not None:
        more = [f"… {ffv['more']} more line(s)"] if ffv["more"] else []
        body = noformat(ffv["short"] + more) if ffv["short"] else ""
        rk = f", rank {jira_text(ffv['rank'])}" if ffv["rank"] != "?" else ""
        blocks.append(f"*Error* ({jira_text(ffv['kind'])}{rk}, {_mono(ffv['loc'])}): {_mono(ffv['message'])}"
                      + (f"\n{body}" if body else ""))
    if v["hang"] and v["hang_suspects"]:
        blocks.append("*Hang suspects:*\n" + "\n".join(f"* {jira_text(x['who'])}: {jira_text(x['because'])}"
                                                      for x in v["hang_suspects"][:20]))
    if v["flight_recorder"]:
        frv = v["flight_recorder"]
        blocks.append("*Flight Recorder:* PyTorch dumped its collective trace"
                      + (f" (ranks {jira_text(frv['ranks'])})" if frv["ranks"] else "")
                      + f". Dumps: {jira_text(frv['dumps'])} Analyse them with {_mono(frv['analyse'], 1000)}.")
    if p:
        blocks.append(f"*Fix:* {jira_text(p['fix'])}\n\n*Why:* {jira_text(p['explanation'])}")
        blocks.append(f"h4. Evidence ({jira_text(p['loc'])}, x{p['count']}"
                      + (f", ranks {jira_text(p['ranks'])}" if p["ranks"] else "") + ")\n"
                      + noformat(evidence_lines(p)))
    blocks += [_finding(f) for f in v["roots"] + v["infos"]]
    if v["cascades"]:
        blocks.append(f"h4. {len(v['cascades'])} cascade finding(s) (consequences of the root cause)\n"
                      + "\n".join(_finding(f) for f in v["cascades"]))
    return blocks


def _config_blocks(v: Dict[str, Any]) -> List[str]:
    blocks: List[str] = []
    if v["violations"]:
        blocks.append("*Config checks:*\n" + "\n".join(
            f"* {_mono(x['pitfall'])}: {jira_text(x['message'])} Fix: {jira_text(x['fix'])}"
            for x in v["violations"]))
    if v["diff"]:
        rows = [f"h4. Config diff ({len(v['diff'])} change(s))", "||setting||good||failed||blame||"]
        for r in v["diff"]:
            tag = ("*suspect* " + jira_text(", ".join(r["because"])) if r["cls"] == "suspect"
                   else "unrelated" if r["cls"] == "unrelated" else "")
            rows.append(_row(_mono(r["key"]), _mono(r["old"]), _mono(r["new"]), tag))
        blocks.append("\n".join(rows))
    return blocks


def _steps_block(st: Dict[str, Any]) -> str:
    rows = ["h4. Step times", "||run||steady median||steady iterations||warmup||capture iterations||capture time||"]
    for r in st["runs"]:
        rows.append(_row(jira_text(r["name"]), jira_text(r["median"]), str(r["steady"]), jira_text(r["warmup"]),
                         jira_text(r["captures"]), jira_text(r["capture_seconds"])))
    for c in st["comparisons"]:
        rows.append(f"* {jira_text(c['label'])}: {jira_text(c['cur'])} vs {jira_text(c['base'])} "
                    f"({jira_text(c['delta'])}, 95% CI {jira_text(c['ci'])}): *{jira_text(c['verdict'])}*")
    return "\n".join(rows)


def _patterns_block(patterns: List[Dict[str, Any]]) -> str:
    rows = ["h4. Patterns that fired", "||pattern file||id||fingerprints||references||"]
    for pt in patterns:
        refs = "; ".join(jira_text(r["source"]) + (f" ({jira_text(r['version'])})" if r["version"] else "")
                         for r in pt["references"][:3])
        rows.append(_row(_mono(pt["file"]), _mono(pt["id"]), ", ".join(_mono(x) for x in pt["fingerprints"][:3]),
                         refs))
    return "\n".join(rows)


def _run_blocks(v: Dict[str, Any]) -> List[str]:
    blocks: List[str] = []
    if v["steps"]:
        blocks.append(_steps_block(v["steps"]))
    for u in v["unmatched"]:
        body = noformat(u["short"] + ([f"… {u['more']} more line(s)"] if u["more"] else []))
        blocks.append(f"h4. Unmatched error block at {jira_text(u['loc'])} (rank {jira_text(u['rank'])}, "
                      f"x{u['count']}, fingerprint {jira_text(u['fingerprint'])})\n{body}")
    if v["versions_found"]:
        blocks.append("*Versions:* " + ", ".join(f"{jira_text(x['name'])} {_mono(x['value'])}"
                                                 for x in v["versions"] if x["value"]))
    if v["patterns"]:
        blocks.append(_patterns_block(v["patterns"]))
    if v["notes"]:
        blocks.append("\n".join(f"* note: {jira_text(n)}" for n in v["notes"]))
    return blocks


def render_jira(d: Dict[str, Any], limit: int = MD_LIMIT) -> str:
    """The markdown ticket comment (render_markdown) in Jira wiki markup: h3./h4. headings, ||heading||
    tables, {noformat} log blocks, [title|url] links; every piece of log text is escaped or inside
    {noformat}.  Jira has no collapsed blocks: what markdown folds into <details> gets an h4. heading.
    Stays under LIMIT characters (Jira's comment limit), leaving out whole sections with a note."""
    v = build_view(d)
    foot = (f"_triage {jira_text(__version__)}: {jira_text(v['stats']['lines'])} lines from "
            f"{len(v['stats']['sources']) + v['stats']['more_sources']} source(s). Secrets are redacted unless "
            f"{jira_text('--no-redact')}._")
    return fit_blocks("\n".join(_head(v)), _failure_blocks(v) + _config_blocks(v) + _run_blocks(v), foot, limit,
                      lambda n: (f"_{n} section(s) left out to stay under the {limit}\\-character comment limit; "
                                 f"attach the HTML report ({{{{\\-o report.html}}}}) for everything._"))
