"""Command-line interface: a thin click layer over sources -> engine -> findings -> report."""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from typing import List, Optional

import click

from . import __version__
from .config import ConfigError, build_config, check, diff
from .pipeline import add_config_analysis, run_analysis
from .redact import redact, redact_obj
from .patterns import PatternError, load_all, load_dir
from .report import FORMATS, SUFFIX_FORMAT, render
from .sources import InputError
from .taxonomy import IDS

# exit codes of `triage analyze` (README "Exit codes"; --exit-zero makes 1 and 3 exit 0)
EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_UNEXPLAINED = 0, 1, 2, 3
OUTCOME_EXIT = {"healthy": EXIT_OK, "pitfall": EXIT_FOUND, "unexplained-failure": EXIT_UNEXPLAINED}


def fail(msg: str) -> "click.exceptions.Exit":
    click.echo(f"triage: error: {msg}", err=True)
    return click.exceptions.Exit(EXIT_USAGE)


def write_atomic(path: str, text: str, force: bool) -> None:
    """Write to a temp file beside PATH, then rename: never a half-written report; concurrent
    writers each rename a whole file.  A symlink is never followed onto another file: without
    --force it is an error, with --force the link itself is replaced."""
    if os.path.islink(path) and not force:
        raise fail(f"{path!r} is a symbolic link (to {os.readlink(path)!r}); pass --force to replace the link")
    if os.path.exists(path) and not force:
        raise fail(f"{path!r} exists; pass --force to overwrite it")
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8") as f:     # a FIFO or device: write into it, never replace it
            f.write(text)
        return
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".triage-", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp makes 0600; a report is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _on_term(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt    # unwinds like Ctrl-C: a report being written is removed, never left half


class _Group(click.Group):
    def main(self, *args, **kwargs):  # type: ignore[override]
        try:
            signal.signal(signal.SIGTERM, _on_term)
        except (ValueError, OSError):     # not the main thread
            pass
        # usage errors exit 2 (click's default); anything unexpected becomes one line, not a traceback
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
            sys.exit(rv if isinstance(rv, int) else 0)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(EXIT_USAGE)
        except click.exceptions.Abort:
            sys.exit(130)
        except (KeyboardInterrupt, BrokenPipeError):
            sys.exit(130)
        except Exception as e:  # never a traceback for a user; TRIAGE_DEBUG=1 shows it
            if os.environ.get("TRIAGE_DEBUG"):
                raise
            click.echo(f"triage: internal error: {type(e).__name__}: {str(e)[:300]} "
                       "(set TRIAGE_DEBUG=1 for the traceback and please report it)", err=True)
            sys.exit(EXIT_USAGE)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="triage")
def cli() -> None:
    """Diagnose failed GPU training logs (Megatron-LM, Megatron Bridge, Transformer Engine, PyTorch)."""


@cli.command()
@click.argument("logs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the report to this file (atomically).")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
@click.option("--no-redact", is_flag=True, help="Do not redact secrets (tokens, keys, passwords) in the output.")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(), help="Extra pattern directory (repeatable).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when a pitfall or a failure is found (usage errors still exit 2).")
@click.option("--config", "config_files", multiple=True, type=click.Path(), help="Config of the failed run (YAML/JSON/log).")
@click.option("--baseline-config", "baseline_files", multiple=True, type=click.Path(), help="Config of the last good run.")
@click.option("--baseline-log", "baseline_logs", multiple=True, type=click.Path(), help="Log of the last good run (its config is read from it).")
@click.option("--env", "env", multiple=True, metavar="KEY=VAL", help="Environment of the failed run (repeatable).")
@click.option("--max-bytes", type=click.IntRange(min=0), default=0, metavar="N",
              help="Read at most N bytes of each input (0: all); a note says when the cap was hit. "
                   "For endless inputs (a FIFO, /dev/stdin of a stream).")
@click.option("-q", "--quiet", is_flag=True,
              help="Text: print only the verdict line. Never shows the progress bar (shown on a terminal "
                   "for inputs of 64 MiB or more).")
def analyze(logs: List[str], fmt: Optional[str], output: Optional[str], force: bool, no_redact: bool,
            pattern_dirs: List[str], exit_zero: bool, config_files: List[str], baseline_files: List[str],
            baseline_logs: List[str], env: List[str], max_bytes: int, quiet: bool) -> None:
    """Analyse LOGS (files, directories, .gz; stdin when none) and name the pitfall hit.

    \b
    Exit codes (the JSON's `outcome`):
      0  healthy: no failure and no known pitfall in the log
      1  pitfall: a known pitfall is the root cause (or a cascade of one)
      2  usage or input error (one line on stderr)
      3  unexplained-failure: the job failed (a traceback, Fatal Python error,
         torchrun's or srun's failure report, ...) and no pattern explains it;
         the report names the first failing rank and its error block
    --exit-zero turns 1 and 3 into 0."""
    try:
        pats = load_all(pattern_dirs)
        a, seen = run_analysis(logs, pattern_dirs, pats, progress=not quiet, max_bytes=max_bytes)
        add_config_analysis(a, pats, seen, config_files, baseline_files, baseline_logs, env)
    except (InputError, PatternError, ConfigError) as e:
        raise fail(str(e))
    if fmt is None:
        fmt = SUFFIX_FORMAT.get(os.path.splitext(output)[1].lower(), "text") if output else "text"
    if quiet and fmt == "text":
        out = render(a, fmt, redact_secrets=not no_redact).split("\n", 1)[0] + "\n"
    else:
        out = render(a, fmt, redact_secrets=not no_redact)
    if output:
        try:
            write_atomic(output, out, force)
        except OSError as e:
            raise fail(f"cannot write {output!r}: {e.strerror or e}")
        click.echo(f"triage: {a.summary}; {fmt} report written to {output}", err=True)
    else:
        click.echo(out, nl=not out.endswith("\n"))
    code = OUTCOME_EXIT.get(a.outcome, EXIT_FOUND)
    if code and not exit_zero:
        raise click.exceptions.Exit(code)


@cli.command("check-config")
@click.argument("configs", nargs=-1, type=click.Path())
@click.option("--set", "overrides", multiple=True, metavar="KEY=VAL", help="Dotted override, e.g. model.cuda_graph_impl=local.")
@click.option("--env", "env", multiple=True, metavar="KEY=VAL", help="Environment variable of the run.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path())
def check_config(configs: List[str], overrides: List[str], env: List[str], fmt: str, pattern_dirs: List[str]) -> None:
    """Predict CUDA-graph crashes from a config before the job is launched.

    CONFIGS are YAML/JSON files (Bridge run_config.yaml, plain), logs holding a config, or
    KEY=VALUE dotted overrides."""
    files = [c for c in configs if "=" not in c or os.path.exists(c)]
    over = list(overrides) + [c for c in configs if c not in files]
    if not files and not over:
        raise fail("give a config file or KEY=VALUE overrides")
    try:
        pats = load_all(pattern_dirs)
        cfg = build_config(files, over, env)
    except (ConfigError, PatternError) as e:
        raise fail(str(e))
    vs = check(cfg, pats)
    if fmt == "json":
        click.echo(json.dumps(redact_obj({"violations": [vars(v) for v in vs], "config": cfg}), indent=2, default=str))
    else:
        if not vs:
            click.echo("check-config: no CUDA-graph pitfall in this config")
        for v in vs:
            click.echo(f"{v.pitfall}: {v.message}\n  keys: {', '.join(v.keys)}\n  fix: {v.fix}")
    if vs:
        raise click.exceptions.Exit(EXIT_FOUND)


@cli.command("diff")
@click.argument("old", type=click.Path())
@click.argument("new", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def diff_cmd(old: str, new: str, fmt: str) -> None:
    """Show the canonical config changes from OLD (last good) to NEW."""
    try:
        a, b = build_config([old]), build_config([new])
    except ConfigError as e:
        raise fail(str(e))
    ch = diff(a, b)
    if fmt == "json":
        click.echo(json.dumps(redact_obj([vars(c) for c in ch]), indent=2, default=str))
        return
    if not ch:
        click.echo("no differences")
    for c in ch:
        click.echo(redact(f"{c.key}: {c.old!r} -> {c.new!r}"))


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
        a, _ = run_analysis(logs, pattern_dirs)
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
