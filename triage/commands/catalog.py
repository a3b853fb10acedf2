"""`triage patterns list|check|suggest` and `triage schema`: the pattern catalog and the JSON contracts."""
from __future__ import annotations

import os
from typing import List, Optional

import click

from ..cliutil import (
    PATTERNS_HELP,
    _stdout_dash,
    fail,
    load_patterns,
    write_new,
)
from ..schemas import NAMES as SCHEMA_NAMES


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMA_NAMES), metavar="NAME")
def schema_cmd(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of a --format json output.

    \b
    NAME is one of: analyze, check-config, diff, fleet, recheck, known, watch-event.
    Example:  triage schema analyze > analyze.schema.json"""
    from ..schemas import text as schema_text
    click.echo(schema_text(name), nl=False)


@click.group()
def patterns() -> None:
    """Inspect and check pattern files.

    \b
    Examples:
      triage patterns list
      triage patterns check my_patterns/ --winners
      triage patterns suggest job.log -o my_patterns/new-pitfall.yaml"""


@patterns.command("list")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help=PATTERNS_HELP)
def patterns_list(pattern_dirs: List[str]) -> None:
    """List the loaded patterns (id, severity, kind, file).

    \b
    Example:  triage patterns list --patterns my_patterns/"""
    pats = load_patterns(pattern_dirs)
    for p in pats:
        click.echo(f"{p.id:<38} {p.severity:<8} {p.kind:<8} {os.path.basename(p.path)}")


@patterns.command("check")
@click.argument("directory", type=click.Path(), metavar="DIRECTORY|FILE")
@click.option("--strict-ids", is_flag=True, help="Require ids to be taxonomy ids.")
@click.option("--winners", is_flag=True,
              help="Also print, for every example line, which pattern of the whole catalog wins it.")
def patterns_check(directory: str, strict_ids: bool, winners: bool) -> None:
    """Validate the pattern files in DIRECTORY (or one FILE) and run their own examples; every
    problem of every file is reported, one line each.

    \b
    Fails (exit 1) on: a file that cannot be loaded (each one says why), a draft of
    `triage patterns suggest` that still holds a TODO placeholder, an example that
    does not behave as labelled, a match rule that fires on none of its file's
    examples, a `when`/`implicates` key that is not a canonical config key, a config
    rule without `violates`/`ok` configs, and an example that another pattern wins
    unless the file lists it in `overlaps`.
    Example:  triage patterns check patterns/ --winners"""
    from ..selftest import check_examples, example_winners, format_winners, load_problems
    from ..taxonomy import IDS
    pats, load_errors = load_problems(directory, IDS if strict_ids else None)
    if winners:
        for line in format_winners(example_winners(pats)):
            click.echo(line)
    problems = load_errors + check_examples(pats)
    for pr in problems:
        click.echo(pr, err=True)
    n = (len([f for f in os.listdir(directory) if f.endswith((".yaml", ".yml"))]) if os.path.isdir(directory)
         else 1)                          # the files tried (a file with two problems is one file)
    click.echo(f"{n} pattern file(s), {len(problems)} problem(s)")
    if problems:
        raise click.exceptions.Exit(1)


@patterns.command("test")
@click.argument("directory", type=click.Path(), metavar="DIRECTORY", required=False)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help="Extra pattern directories loaded beside the shipped catalog (their tests/ are run too).")
def patterns_test(directory: Optional[str], pattern_dirs: List[str]) -> None:
    """Run the annotated test logs of a pattern directory (DIRECTORY/tests/*.log; default: the shipped
    catalog's): the line after `# ruleid: ID` must fire ID, after `# ok: ID` must not; `# todoruleid:` /
    `# todook:` mark known misses and false positives (reported, never a failure, until fixed).

    \b
    Exit 1 on a failing annotation or one that no test log holds.
    Example:  triage patterns test patterns/"""
    from ..patterns import builtin_dir
    from ..patterntests import run_tests, summary
    dirs = [directory] if directory else [builtin_dir()]
    extra = [d for d in pattern_dirs if d not in dirs]
    pats = load_patterns(extra + ([d for d in dirs if d != builtin_dir()]))
    results = [r for d in dirs + extra for r in run_tests(pats, d)]
    if not results:
        raise fail("no annotated test log under {}", ", ".join(os.path.join(d, "tests") for d in dirs))
    click.echo(summary(results))
    if any(r.verdict == "FAIL" for r in results):
        raise click.exceptions.Exit(1)


@patterns.command("suggest")
@click.argument("logs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--index", default=1, show_default=True, help="Which unmatched block (1 = first).")
@click.option("-o", "--output", type=click.Path(), callback=_stdout_dash,
              help="Write the draft here (never overwrites); - is standard output.")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help=PATTERNS_HELP)
def patterns_suggest(logs: List[str], index: int, output: Optional[str], pattern_dirs: List[str]) -> None:
    """Draft a pattern YAML from an error block of LOGS that no pattern explains.

    \b
    Example:  triage patterns suggest job.log --index 2 -o my_patterns/draft.yaml"""
    from ..pipeline import Options, triage
    from ..suggest import draft
    a = triage(logs, Options(pats=tuple(load_patterns(pattern_dirs))))
    if not a.unmatched:
        raise fail("no unmatched error block in the input: every error is explained (or there is none)") from None
    if not 1 <= index <= len(a.unmatched):
        raise fail(f"--index must be between 1 and {len(a.unmatched)}") from None
    u = a.unmatched[index - 1]
    text = draft(u.lines, f"{u.source}:{u.line}")
    if output:
        write_new(output, text)
        click.echo(f"wrote draft pattern to {output!r}", err=True)
    else:
        click.echo(text, nl=False)
