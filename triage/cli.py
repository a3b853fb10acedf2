"""Command-line interface: a thin click layer over sources -> engine -> findings -> report."""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

import click

from . import __version__
from .engine import Engine
from .findings import analyse
from .patterns import PatternError, load_all, load_dir
from .report import render_json, render_text
from .sources import InputError, iter_inputs
from .taxonomy import IDS

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


def fail(msg: str) -> "click.exceptions.Exit":
    click.echo(f"triage: error: {msg}", err=True)
    return click.exceptions.Exit(EXIT_USAGE)


class _Group(click.Group):
    def main(self, *args, **kwargs):  # type: ignore[override]
        # usage errors exit 2 (click's default); anything unexpected becomes one line, not a traceback
        try:
            return super().main(*args, standalone_mode=True, **kwargs)
        except (KeyboardInterrupt, BrokenPipeError):
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="triage")
def cli() -> None:
    """Diagnose failed GPU training logs (Megatron-LM, Megatron Bridge, Transformer Engine, PyTorch)."""


def run_analysis(logs: Sequence[str], pattern_dirs: Sequence[str]):
    pats = load_all(pattern_dirs)
    engine = Engine(pats)
    if not logs:
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("no log given: pass LOG files/directories or pipe a log on stdin")
        logs = ["-"]
    return analyse(engine.scan(iter_inputs(logs)))


@cli.command()
@click.argument("logs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(), help="Extra pattern directory (repeatable).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when a pitfall is found.")
def analyze(logs: List[str], fmt: str, pattern_dirs: List[str], exit_zero: bool) -> None:
    """Analyse LOGS (files, directories, .gz; stdin when none) and name the pitfall hit."""
    try:
        a = run_analysis(logs, pattern_dirs)
    except (InputError, PatternError) as e:
        raise fail(str(e))
    out = render_json(a) if fmt == "json" else render_text(a)
    click.echo(out, nl=not out.endswith("\n"))
    if a.primary is not None and not exit_zero:
        raise click.exceptions.Exit(EXIT_FOUND)


@cli.group()
def patterns() -> None:
    """Inspect and check pattern files."""


@patterns.command("list")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path())
def patterns_list(pattern_dirs: List[str]) -> None:
    """List the loaded patterns."""
    try:
        pats = load_all(pattern_dirs)
    except PatternError as e:
        raise fail(str(e))
    for p in pats:
        click.echo(f"{p.id:<38} {p.severity:<8} {p.kind:<8} {os.path.basename(p.path)}")


@patterns.command("check")
@click.argument("directory", type=click.Path())
@click.option("--strict-ids", is_flag=True, help="Require ids to be taxonomy ids.")
def patterns_check(directory: str, strict_ids: bool) -> None:
    """Validate pattern files in DIRECTORY and run their own examples."""
    from .selftest import check_examples
    try:
        pats = load_dir(directory, IDS if strict_ids else None)
    except PatternError as e:
        raise fail(str(e))
    problems = check_examples(pats)
    for pr in problems:
        click.echo(pr, err=True)
    click.echo(f"{len(pats)} pattern file(s), {len(problems)} problem(s)")
    if problems:
        raise click.exceptions.Exit(1)


@patterns.command("suggest")
@click.argument("logs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--index", default=1, show_default=True, help="Which unmatched block (1 = first).")
@click.option("-o", "--output", type=click.Path(), help="Write the draft here (never overwrites).")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path())
def patterns_suggest(logs: List[str], index: int, output: Optional[str], pattern_dirs: List[str]) -> None:
    """Draft a pattern YAML from an error block of LOGS that no pattern explains."""
    from .suggest import draft
    try:
        a = run_analysis(logs, pattern_dirs)
    except (InputError, PatternError) as e:
        raise fail(str(e))
    if not a.unmatched:
        raise fail("no unmatched error block in the input: every error is explained (or there is none)")
    if not 1 <= index <= len(a.unmatched):
        raise fail(f"--index must be between 1 and {len(a.unmatched)}")
    u = a.unmatched[index - 1]
    text = draft(u.lines, f"{u.source}:{u.line}")
    if output:
        if os.path.exists(output):
            raise fail(f"{output!r} exists; not overwriting it")
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        click.echo(f"wrote draft pattern to {output}", err=True)
    else:
        click.echo(text, nl=False)


def main() -> None:
    cli(prog_name="triage")


if __name__ == "__main__":
    main()
