"""`triage check-config` and `triage diff`: what a config will hit before launch, what changed between two."""
from __future__ import annotations

import json
import os
from typing import Any, List, Mapping, Optional, Sequence, Set

import click

from ..cliutil import (
    PATTERNS_HELP,
    fail,
    format_for,
    load_patterns,
    output_options,
    write_output,
)
from ..report.names import SUFFIX_FORMAT

CHECK_FORMATS = ("text", "json", "markdown", "html")


def _check_config_out(fmt: str, vs: list, cfg: Mapping[str, Any], unknown: list, open_rules: list, typos: list,
                      sources: Sequence[str]) -> str:
    """check-config's result in FMT (text, json, markdown, html)."""
    from ..config.rules import give_hint
    from ..redact import redact_obj
    if fmt == "json":
        return json.dumps(redact_obj({"violations": [vars(v) for v in vs], "config": cfg, "unknown": unknown,
                                      "undecided": [vars(u) for u in open_rules],
                                      "unknown_keys": [vars(t) for t in typos]}), indent=2, default=str) + "\n"
    if fmt == "markdown":
        from ..report import render_check_config_markdown
        return render_check_config_markdown(vs, dict(cfg), unknown=unknown, undecided=open_rules)
    if fmt == "html":
        from ..report.check_config import render_check_config_html
        return render_check_config_html(vs, dict(cfg), unknown=unknown, undecided=open_rules, typos=typos,
                                        sources=sources)
    lines = []
    if not vs:
        lines.append("check-config: no CUDA-graph pitfall in this config" if not typos else
                     f"check-config: no CUDA-graph pitfall in this config, but {len(typos)} key(s) are no known "
                     "setting (a typo is never checked): see the warning(s) above")
    for v in vs:
        lines.append(f"{v.pitfall}: {v.message}\n  keys: {', '.join(v.keys)}"
                     + "".join(f"\n  {d}" for d in v.defaults) + f"\n  fix: {v.fix}")
    for u in unknown:
        lines.append(f"unknown value: {u['key']}: {u['value']}")
    if open_rules:
        keys = sorted({k for r in open_rules for k in r.keys})
        lines.append(f"undecided: {len(open_rules)} rule(s) of {', '.join(sorted({r.pitfall for r in open_rules}))}: "
                     f"the config does not show {', '.join(keys)} (--format json lists them); to decide them, "
                     f"give {give_hint(keys)}")
    return "\n".join(lines) + "\n"


@click.command("check-config")
@click.argument("configs", nargs=-1, type=click.Path())
@click.option("--set", "overrides", multiple=True, metavar="KEY=VAL",
              help="Dotted override, e.g. model.cuda_graph_impl=local.")
@click.option("--env", "env", multiple=True, metavar="KEY=VAL", help="Environment variable of the run.")
@click.option("--format", "fmt", type=click.Choice(CHECK_FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@output_options("the result")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help=PATTERNS_HELP)
@click.option("--strict", is_flag=True, help="A key that is no known setting (a typo) is an error (exit 2), "
                                            "not a warning.")
def check_config(configs: List[str], overrides: List[str], env: List[str], fmt: Optional[str],
                 output: Optional[str], force: bool, pattern_dirs: List[str], strict: bool) -> None:
    """Predict CUDA-graph crashes from a config before the job is launched.

    CONFIGS are YAML/JSON files (Bridge run_config.yaml, plain), logs holding a config, or
    KEY=VALUE dotted overrides.  Exit 0: no pitfall; 1: a pitfall; 2: a bad argument.

    \b
    Examples:
      triage check-config run_config.yaml
      triage check-config run_config.yaml model.cuda_graph_scope=[attn,moe] --env NCCL_GRAPH_REGISTER=0
      triage check-config run_config.yaml --format markdown >> summary.md
      triage check-config run_config.yaml -o check.html       # format from the suffix"""
    files = [c for c in configs if "=" not in c or os.path.exists(c)]
    over = list(overrides) + [c for c in configs if c not in files]
    if not files and not over:
        raise fail("give a config file or KEY=VALUE overrides") from None
    pats = load_patterns(pattern_dirs)
    from ..config import build_config, check, undecided, unknown_values
    from ..verdict import EXIT_FOUND
    cfg = build_config(files, over, env)
    typos = _typos(cfg, over, env, strict)
    vs = check(cfg, pats)
    unknown, open_rules = unknown_values(cfg), undecided(cfg, pats)
    fmt = fmt or format_for(output, {k: v for k, v in SUFFIX_FORMAT.items() if v in CHECK_FORMATS})
    out = _check_config_out(fmt, vs, cfg, unknown, open_rules, typos, files + over)
    write_output(output, out, force, f"triage: check-config: {len(vs)} pitfall(s); {fmt} written to {output}")
    if vs:
        raise click.exceptions.Exit(EXIT_FOUND)


def _typos(cfg: Mapping[str, Any], overrides: Sequence[str], env: Sequence[str], strict: bool,
           said: Optional[Set[str]] = None) -> list:
    """The config's keys that are no known setting (config.settings): a warning line each on stderr,
    or, with --strict, one error (exit 2).  SAID: the warnings already printed (not said again)."""
    from ..config.load import parse_overrides
    from ..config.settings import NEAR_MAX, unknown_keys
    given = list(parse_overrides(overrides)) + [f"env.{e.split('=', 1)[0].strip()}" for e in env if "=" in e]
    lasts = {g.rsplit(".", 1)[-1] for g in given}
    unchecked: List[str] = []
    typos = unknown_keys([k for k in cfg if k.rsplit(".", 1)[-1] not in lasts], given, unchecked)
    said = set() if said is None else said
    if unchecked:
        _say(f"triage: warning: {len(unchecked):,} keys not checked for typos (past the first "
             f"{NEAR_MAX:,} names that are no known setting), from {unchecked[0]!r}", said)
    if typos and strict:
        raise fail("{}" + (f" (+{len(typos) - 5} more)" if len(typos) > 5 else "") + " (--strict)",
                   "; ".join(t.message() for t in typos[:5]))
    for t in typos:
        _say(f"triage: warning: {t.message()}", said)
    return typos


def _say(line: str, said: Set[str]) -> None:
    if line not in said:
        said.add(line)
        click.echo(line, err=True)


@click.command("diff")
@click.argument("old", type=click.Path())
@click.argument("new", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="A key that is no known setting (a typo) is an error (exit 2), "
                                            "not a warning.")
def diff_cmd(old: str, new: str, fmt: str, strict: bool) -> None:
    """Show the canonical config changes from OLD (last good) to NEW.  Exits 1 when they differ,
    0 when they are the same (as `diff` and `git diff --exit-code` do), 2 on a bad argument.

    \b
    Examples:
      triage diff last_good/run_config.yaml new/run_config.yaml
      triage diff good.log bad.log --format json     # configs read from the logs"""
    from ..config import build_config, diff
    from ..redact import redact, redact_obj
    from ..report.util import change_line
    from ..verdict import EXIT_FOUND
    a, b = build_config([old]), build_config([new])
    said: Set[str] = set()             # (a typo both sides hold, `triage diff a.log a.log`: said once)
    _typos(a, (), (), strict, said)
    _typos(b, (), (), strict, said)
    # a side read from part of a log (a launch line, a summary): a key it does not show is unknown
    ch = diff(a, b, partial=a.get("config_complete") is False or b.get("config_complete") is False)
    if fmt == "json":
        click.echo(json.dumps(redact_obj([vars(c) for c in ch]), indent=2, default=str))
    else:
        if not ch:
            click.echo("no differences")
        for c in ch:
            click.echo(change_line(c.key, c.old, c.new, redact))
    if ch:
        raise click.exceptions.Exit(EXIT_FOUND)
