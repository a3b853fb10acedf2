"""check-config as a markdown comment (a pull request that changes a run config)."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from .. import __version__
from ..caps import MAX_ITEMS, MAX_ROWS, MD_LIMIT
from ..redact import redact_obj
from .markdown import code_span, details, md_text
from .util import as_list, clip, value_text


def _setting_text(x: Dict[str, Any], cfg: Dict[str, Any], k: str) -> str:
    """A setting's value as the violation read it: "(unset: defaults to False in ...)" for a setting the
    config leaves out that was decided by its release's default."""
    for note in as_list(x.get("defaults")):
        if isinstance(note, str) and k not in cfg and note.startswith(f"{k} unset: "):
            return f"(unset: {clip(note[len(k) + 8:], 200)})"
    return value_text(cfg.get(k))


def _violation_lines(vs: List[Dict[str, Any]], cfg: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    for x in vs[:MAX_ITEMS]:
        keys = [clip(k, 200) for k in as_list(x.get("keys"))][:10]
        out.append(f"- **{code_span(x.get('pitfall'))}**: {md_text(x.get('message'))}")
        if keys:
            out.append("  - settings: " + ", ".join(f"{code_span(k)} = {code_span(_setting_text(x, cfg, k))}"
                                                    for k in keys))
        if x.get("fix"):
            out.append(f"  - **Fix:** {md_text(x.get('fix'))}")
    if len(vs) > MAX_ITEMS:
        out.append(f"- … {len(vs) - MAX_ITEMS} more violation(s) in `--format json`")
    return out


def _config_table(items: List[Tuple[Any, Any]], room: int) -> str:
    """The settings checked, as many as fit in ROOM characters."""
    rows = ["| setting | value |", "|---|---|"]
    shown = 0
    for k, val in items[:MAX_ROWS]:
        row = f"| {code_span(k)} | {code_span(value_text(val))} |"
        if sum(len(r) + 1 for r in rows) + len(row) > room:
            break
        rows.append(row)
        shown += 1
    if shown < len(items):
        rows.append("")
        rows.append(f"_… {len(items) - shown} more setting(s) in `--format json`._")
    return details(f"Config checked ({len(items)} setting{'s' if len(items) != 1 else ''})", "\n".join(rows))


def _checked(violations: Sequence[Any], config: Dict[str, Any], redact_secrets: bool
             ) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """The violations (as dicts) and the config checked, redacted as check-config's JSON is."""
    vs = [dict(x) if isinstance(x, dict) else dict(vars(x)) for x in violations]
    cfg = dict(config) if isinstance(config, dict) else {}
    if redact_secrets:
        red = redact_obj({"violations": vs, "config": cfg})
        vs, cfg = red["violations"], red["config"]
    return vs, cfg


def render_check_config_markdown(violations: Sequence[Any], config: Dict[str, Any], redact_secrets: bool = True,
                                 limit: int = MD_LIMIT, unknown: Sequence[Dict[str, str]] = (),
                                 undecided: Sequence[Any] = ()) -> str:
    """`triage check-config --format markdown`: VIOLATIONS (triage.config Violation objects, or their
    dicts: pitfall, keys, message, fix) of CONFIG (the canonical config checked) as a comment: the
    verdict heading, each violation with the settings it names and their values and the fix, then
    the whole config collapsed; secrets redacted as in check-config's JSON, under LIMIT characters."""
    vs, cfg = _checked(violations, config, redact_secrets)
    n = len(vs)
    out = [f"### triage check-config: {n} CUDA-graph pitfall{'s' if n != 1 else ''} in this config" if n else
           "### triage check-config: no CUDA-graph pitfall in this config", ""]
    if n:
        out.append("**Verdict:** launching this config would hit "
                   + ", ".join(code_span(x.get("pitfall")) for x in vs[:20]) + (" …" if n > 20 else "") + ".")
        out.append("")
    out += _violation_lines(vs, cfg)
    for u in list(unknown)[:20]:
        out.append(f"- unknown value: {code_span(u.get('key'))}: {md_text(u.get('value'))}")
    for r in list(undecided)[:20]:
        out.append(f"- undecided: {code_span(r.pitfall)}: the config does not show "
                   + ", ".join(code_span(k) for k in r.keys[:10]))
    foot = (f"<sub>triage {__version__} check-config."
            + (" Secrets are redacted." if redact_secrets else "") + "</sub>")
    text = "\n".join(out).rstrip("\n")
    items = list(cfg.items())
    if items:
        text += "\n\n" + _config_table(items, limit - len(text) - len(foot) - 300)
    text += "\n\n" + foot + "\n"
    if len(text) > limit:
        text = text[:limit - 80] + "\n\n_(truncated to the comment size limit)_\n"
    return text


def render_check_config_html(violations: Sequence[Any], config: Dict[str, Any], redact_secrets: bool = True,
                             unknown: Sequence[Dict[str, str]] = (), undecided: Sequence[Any] = (),
                             typos: Sequence[Any] = (), sources: Sequence[str] = ()) -> str:
    """`triage check-config -o report.html`: the same content as the Markdown comment, one
    self-contained page (the report's CSS, no scripts); every value escaped by the template."""
    from .html import template_env
    vs, cfg = _checked(violations, config, redact_secrets)
    n = len(vs)
    items = list(cfg.items())
    model = {
        "version": __version__, "redacted": redact_secrets,
        "headline": f"{n} CUDA-graph pitfall{'s' if n != 1 else ''} in this config" if n else
                    "no CUDA-graph pitfall in this config",
        "sources": [clip(s, 200) for s in list(sources)[:20]],
        "violations": [{"pitfall": clip(x.get("pitfall"), 200), "message": clip(x.get("message"), 2000),
                        "fix": clip(x.get("fix"), 2000) if x.get("fix") else "",
                        "settings": [(clip(k, 200), _setting_text(x, cfg, k))
                                     for k in as_list(x.get("keys"))[:10]]} for x in vs[:MAX_ITEMS]],
        "typos": [{"key": clip(getattr(t, "key", ""), 200), "suggestion": getattr(t, "suggestion", None)}
                  for t in list(typos)[:20]],
        "unknown": [{"key": clip(u.get("key"), 200), "value": clip(u.get("value"), 200)} for u in list(unknown)[:20]],
        "undecided": [{"pitfall": r.pitfall, "keys": [clip(k, 200) for k in r.keys[:10]]}
                      for r in list(undecided)[:20]],
        "settings": [(clip(k, 200), value_text(val)) for k, val in items[:MAX_ROWS]],
        "settings_more": max(0, len(items) - MAX_ROWS),
    }
    return str(template_env().get_template("check-config.html.j2").render(v=model))
