"""Command-line interface: a thin click layer over sources -> engine -> findings -> report."""
from __future__ import annotations

import gc

# Start-up (click, triage's modules, the catalog) allocates tens of thousands of objects and frees
# almost none: the cyclic collector's passes over them are ~5% of a tiny log's run.  Collection is off
# while this module is imported (on again at its end: importing it changes nothing for a library user)
# and while a command starts (_Group.main: on again once `analyze` has its catalog, at once for every
# other command, and when the command ends), never during a scan.
_GC_AT_IMPORT = gc.isenabled()
gc.disable()
# re's compiled patterns are read from triage's cache while this module is imported, and for a command (main)
from . import recache as _recache  # noqa: E402

_recache.install()
try:
    import errno
    import os
    import signal
    import sys
    import threading
    from typing import TYPE_CHECKING, Any, List, NoReturn, Optional, Sequence

    import click

    from . import __version__
    from .cliutil import (  # the helpers every command shares (commands/ reads them there)
        DB_HELP,
        EXIT_INTERNAL,
        EXIT_USAGE,
        FAIL_ON,
        PATTERNS_HELP,
        REQUIRE_STORE_HELP,
        USER_ERRORS,
        WORKERS_HELP,
        _no_contradiction,
        _prior_attempt,
        _store_failed,
        _store_verdict,
        deprecated,
        fail,
        format_for,
        load_patterns,
        output_options,
        stdin_hashing,
        write_output,
    )
    from .errors import EXIT_SIGINT, EXIT_SIGTERM, Terminated
    from .report.names import FORMATS, SUFFIX_FORMAT
    from .term import COLOR_CHOICES
except BaseException:        # (no click, say): the collector as it was, and the error as it is
    if _GC_AT_IMPORT:
        gc.enable()
    _recache.uninstall()
    raise

if TYPE_CHECKING:
    pass

# Everything else is imported where it is used: `triage --help` and a text `analyze` of a small log
# never load SQLAlchemy, jinja2, the markdown/HTML/JUnit renderings or the config-file parsers
# (tests/test_startup.py guards this).

def _on_term(signum, frame):  # noqa: ARG001
    raise Terminated           # unwinds like Ctrl-C: a report being written is removed, never left half


class _Interrupted(BaseException):
    """Ctrl-C or SIGTERM carried past click (whose own handling of KeyboardInterrupt prints a bare newline)."""

    def __init__(self, cause: KeyboardInterrupt) -> None:
        super().__init__()
        self.cause = cause


def _interrupted(cause: BaseException) -> NoReturn:
    """One convention for every command: a line on stderr; exit 130 for Ctrl-C, 143 for SIGTERM.
    CAUSE: the KeyboardInterrupt (Terminated for SIGTERM), or what carried it (_Interrupted, click's Abort)."""
    inner = cause.cause if isinstance(cause, _Interrupted) else cause.__context__ \
        if isinstance(cause, click.exceptions.Abort) else cause
    term = isinstance(inner, Terminated)
    try:
        click.echo("triage: interrupted" + (" (SIGTERM)" if term else ""), err=True)
    except Exception:  # noqa: S110 - stderr closed: the exit code still says it
        pass
    sys.exit(EXIT_SIGTERM if term else EXIT_SIGINT)


def startup_over() -> None:
    """The command has what it needs to start (its modules, the catalog): its pause of the
    collector (_Group.main) ends; the collector is on again once no command is starting (commands
    may run in several threads: each resumes its own pause, once, and the last one turns it on, if
    it was on when the first began)."""
    n = getattr(_gc_mine, "n", 0)
    if not n:
        return
    _gc_mine.n = n - 1
    with _gc_lock:
        _gc_pauses[0] -= 1
        if _gc_pauses[0] == 0 and _gc_pauses[1]:
            if _freeze_at_start:
                gc.freeze()     # what start-up made is kept for the process's life: never scanned again
            gc.enable()


def _pause_gc() -> None:
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
        _gc_pauses[0] += 1
        gc.disable()
    _gc_mine.n = getattr(_gc_mine, "n", 0) + 1


_gc_lock = threading.Lock()
_gc_pauses = [0, False]           # commands starting (their pauses not resumed), whether it was on before them
_gc_mine = threading.local()      # .n: this thread's pauses not resumed yet
_freeze_at_start = False          # main(): this process is the command (not a library user's or a test's)


class _Group(click.Group):
    def main(self, *args, **kwargs):  # type: ignore[override]
        _pause_gc()
        try:
            self._main(*args, **kwargs)
        finally:
            startup_over()

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise _Interrupted(e) from None

    def resolve_command(self, ctx, args):  # type: ignore[no-untyped-def]
        name, cmd, rest = super().resolve_command(ctx, args)
        if name != "analyze":
            startup_over()          # only analyze is known to start without garbage
        return name, cmd, rest

    def _main(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            before = signal.signal(signal.SIGTERM, _on_term)
        except (ValueError, OSError):     # not the main thread
            return self._run(*args, **kwargs)
        try:
            return self._run(*args, **kwargs)
        finally:                          # called in-process (a wrapper, a notebook): its SIGTERM is its own again
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)   # (None: set outside Python)

    def _run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        # usage errors exit 2 (click's default); anything unexpected becomes one line, not a traceback
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
            sys.exit(rv if isinstance(rv, int) else 0)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.UsageError as e:       # one line (README), not click's usage block
            see = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            msg = " ".join(e.format_message().split())
            click.echo(f"triage: error: {msg}{see}", err=True)
            sys.exit(EXIT_USAGE)
        except click.ClickException as e:
            e.show()
            sys.exit(EXIT_USAGE)
        except USER_ERRORS as e:
            from .redact import redact
            click.echo(f"triage: error: {redact(str(e).strip()) or type(e).__name__}", err=True)
            sys.exit(EXIT_USAGE)
        except (_Interrupted, KeyboardInterrupt, click.exceptions.Abort) as e:
            _interrupted(e)
        except BrokenPipeError:
            sys.exit(EXIT_SIGINT)
        except OSError as e:
            if e.errno not in _FULL:
                raise_internal(e)
            click.echo(f"triage: error: cannot write the output: {e.strerror}", err=True)   # (stdout on a full disk)
            sys.exit(EXIT_USAGE)
        except Exception as e:  # never a traceback for a user; TRIAGE_DEBUG=1 shows it
            raise_internal(e)


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)   # a write that cannot be the user's command's fault


def raise_internal(e: BaseException) -> NoReturn:
    """An unexpected error: one line and a request to report it (exit 4); TRIAGE_DEBUG=1 re-raises it."""
    if os.environ.get("TRIAGE_DEBUG"):
        raise e
    from .redact import redact
    click.echo(f"triage: internal error: {type(e).__name__}: {redact(str(e)[:300])}\n"
               f"triage {__version__} hit a bug: please report it with the command line and, if you can, "
               "the log (TRIAGE_DEBUG=1 shows the traceback)", err=True)
    sys.exit(EXIT_INTERNAL)


class _LazyCommands(dict):
    """The command table of `cli`: `analyze` is defined here, every other command in its stage's module
    of triage/commands/, imported the first time its name is looked up or the table is listed (a
    subcommand run, `triage --help`, completion), so `triage analyze` never defines them (~4 ms)."""
    # name -> (module of triage.commands, its click command): a registry, not a list of imports
    LAZY = {"check-config": ("config", "check_config"), "diff": ("config", "diff_cmd"),
            "fleet": ("fleet", "fleet"), "known": ("known", "known"), "patterns": ("catalog", "patterns"),
            "schema": ("catalog", "schema_cmd"), "watch": ("watch", "watch")}

    def _load(self, name: Any = None) -> None:
        import importlib
        for n in ([name] if name is not None else list(self.LAZY)):
            if not dict.__contains__(self, n):
                mod, attr = self.LAZY[n]
                dict.__setitem__(self, n, getattr(importlib.import_module(f".commands.{mod}", __package__), attr))

    def get(self, name: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, name) and name in self.LAZY:
            self._load(name)
        return dict.get(self, name, default)

    def __getitem__(self, name: Any) -> Any:
        if not dict.__contains__(self, name) and name in self.LAZY:
            self._load(name)
        return dict.__getitem__(self, name)

    def __contains__(self, name: object) -> bool:
        if not dict.__contains__(self, name) and name in self.LAZY:
            self._load(name)
        return dict.__contains__(self, name)

    def __iter__(self) -> Any:
        self._load()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._load()
        return dict.__len__(self)

    def keys(self) -> Any:
        self._load()
        return dict.keys(self)

    def values(self) -> Any:
        self._load()
        return dict.values(self)

    def items(self) -> Any:
        self._load()
        return dict.items(self)


@click.group(cls=_Group, commands=_LazyCommands(), context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="triage")
def cli() -> None:
    """Diagnose failed GPU jobs from their logs: training (Megatron-LM, Megatron Bridge, Transformer
    Engine, PyTorch, JAX) and inference serving (vLLM, SGLang, TensorRT-LLM)."""


@cli.command()
@click.argument("logs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="text (default), json, markdown, html, junit (JUnit XML: one testcase per pitfall, for "
                   "Jenkins/GitLab) or jira (Jira wiki markup); with -o, taken from the file suffix "
                   "(.txt .json .md .html .xml .jira).")
@output_options("the report")
@click.option("--no-redact", is_flag=True, help="Do not redact secrets (tokens, keys, passwords) in the output.")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help=PATTERNS_HELP)
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="Exit non-zero for: error = a failure or an error/critical pitfall (a warning-only finding "
                   "such as graph-no-speedup exits 0); warning = any pitfall of severity warning or above; "
                   "never = always 0 (as --exit-zero).")
@click.option("--exit-zero", is_flag=True,
              help="Exit 0 even when a pitfall or a failure is found (= --fail-on never; usage errors still exit 2).")
@click.option("--color", "color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
              help="Colour the text report: auto = on a terminal unless NO_COLOR is set.")
@click.option("--config", "config_files", multiple=True, type=click.Path(),
              help="Config of the failed run (YAML/JSON/log).")
@click.option("--baseline-config", "baseline_files", multiple=True, type=click.Path(),
              help="Config of the last good run.")
@click.option("--baseline-log", "baseline_logs", multiple=True, type=click.Path(),
              help="Log of the last good run (its config is read from it).")
@click.option("--env", "env", multiple=True, metavar="KEY=VAL", help="Environment of the failed run (repeatable).")
@click.option("-j", "--workers", "jobs", type=click.IntRange(min=0, max=256), default=None, metavar="N",
              help=WORKERS_HELP.format(what="they scan one big input (32 MiB and more) in parts; 1 = this "
                                            "process only; from 12 on, a production log's N - 2 leave a core to "
                                            "this process's reader; the report is the same whatever N",
                                       default="default: TRIAGE_JOBS, else", cap=", at most 16"))
@click.option("--jobs", "jobs_old", type=click.IntRange(min=0, max=256), default=None, hidden=True,
              help="Old spelling of --workers.")
@click.option("--max-bytes", type=click.IntRange(min=0), default=0, metavar="N",
              help="Read at most N bytes of each input (0: all); a note says when the cap was hit. "
                   "For endless inputs (a FIFO, /dev/stdin of a stream).")
@click.option("-q", "--quiet", is_flag=True,
              help="Text: print only the verdict line. Never shows the progress bar (shown on a terminal "
                   "for inputs of 64 MiB or more).")
@click.option("--record", is_flag=True,
              help="Store the verdict in the verdict store (--db, else TRIAGE_DB, else the default SQLite file).")
@click.option("--db", "db", metavar="URL", default=None,
              help=DB_HELP + " Giving it records the verdict (as --record does).")
@click.option("--job-id", metavar="ID", default=None,
              help="The job's id, in the report's header and the store (default: TRIAGE_JOB_ID, SLURM_JOB_ID, "
                   "TORCHELASTIC_RUN_ID, a slurm-<id>.out file name, else the log's path).")
@click.option("--attempt", type=click.IntRange(min=0, max=999999), default=None, metavar="N",
              help="The job's attempt (requeue/restart count): a stored verdict is one (job id, attempt) "
                   "(default: TRIAGE_ATTEMPT, SLURM_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT, else 0).")
@click.option("--require-store", is_flag=True, help=REQUIRE_STORE_HELP + " Implies --record.")
def analyze(logs: List[str], fmt: Optional[str], output: Optional[str], force: bool, no_redact: bool,
            pattern_dirs: List[str], exit_zero: bool, config_files: List[str], baseline_files: List[str],
            baseline_logs: List[str], env: List[str], max_bytes: int, quiet: bool, record: bool,
            db: Optional[str], job_id: Optional[str], attempt: Optional[int], fail_on: str, color: str,
            require_store: bool, jobs: Optional[int], jobs_old: Optional[int]) -> None:
    """Analyse LOGS (files, directories, .gz; stdin when none) and name the pitfall hit.

    \b
    Exit codes (the JSON's `outcome`):
      0  healthy: no failure and no known pitfall in the log (or, with the
         default --fail-on error, only warning-severity pitfalls)
      1  pitfall: a known pitfall is the root cause (or a cascade of one)
      2  usage or input error (one line on stderr)
      3  unexplained-failure: the job failed (a traceback, Fatal Python error,
         torchrun's or srun's failure report, ...) and no pattern explains it;
         the report names the first failing rank and its error block
      4  internal error in triage (please report it)
    --exit-zero (= --fail-on never) turns 1 and 3 into 0 (a Slurm epilog must
    never exit non-zero).  A store that fails (unreachable, locked past
    TRIAGE_DB_TIMEOUT seconds, read-only, not a triage store) never changes the
    exit code: the report is printed, then one warning line; with
    --require-store it exits 2 after the report (even with --exit-zero).

    \b
    With --record or --db the verdict is stored, and a verdict whose signature or
    pitfall is a known issue (`triage known add`) shows "known issue: URL (seen N
    times since DATE)" in every format.  When TRIAGE_DB is set the known issues are
    looked up without recording.

    \b
    Examples:
      triage analyze job.log                       # text report; exit code = outcome
      kubectl logs job/train | triage analyze -q   # stdin; only the verdict line
      triage analyze logs/ --format json           # a directory of per-rank logs
      triage analyze job.log -o report.html        # format from the suffix
      triage analyze job.log --baseline-config good.yaml --config bad.yaml
      triage analyze job.log --format junit -o triage.xml --fail-on warning"""
    if jobs_old is not None:
        deprecated("--jobs", "-j/--workers")
        jobs = jobs_old if jobs is None else jobs
    _no_contradiction(exit_zero, fail_on, jobs)
    if exit_zero:
        fail_on = "never"
    if fmt is None:
        fmt = format_for(output, SUFFIX_FORMAT)
    pats = load_patterns(pattern_dirs)
    from .fleet.given import store_given
    from .pipeline import Options, triage
    from .report.formats import render
    from .term import for_terminal, use_color
    startup_over()
    record = record or bool(db) or require_store
    prior, prior_note = _prior_attempt(list(logs), db, job_id, attempt)    # issue 43: no progress across attempts
    with stdin_hashing(record and (not logs or "-" in logs)) as stdin_hash:
        a = triage(logs, Options(pats=tuple(pats), config_files=tuple(config_files),
                                 baseline_files=tuple(baseline_files), baseline_logs=tuple(baseline_logs),
                                 env=tuple(env), progress=not quiet, max_bytes=max_bytes, content_hash=record,
                                 prior=prior, spool=True))
    if prior_note:
        a.notes.append(prior_note)
    identity = _identify(a, logs, job_id, attempt, stdin_hash[0])
    warning = None
    if store_given(db, record):
        warning = _store_verdict(a, list(logs) or ["-"], db, record, identity, stdin_hash)
    out = render(a, fmt, redact_secrets=not no_redact, pitfall_ids=[p.id for p in pats])
    if quiet and fmt == "text":
        out = _quiet(out)
    if output:
        write_output(output, out, force, f"triage: {a.summary}; {fmt} report written to {output}")
    else:
        colored = False
        if fmt == "text":
            out = for_terminal(out, sys.stdout, color)
            colored = use_color(color, sys.stdout)
        click.echo(out, nl=not out.endswith("\n"), color=colored or None)
    _store_failed(warning, require_store)
    code = exit_code(a, fail_on)
    if code:
        raise click.exceptions.Exit(code)


def _identify(a: Any, logs: Sequence[str], job_id: Optional[str], attempt: Optional[int],
              digest: Optional[str]) -> Any:
    """The job's identity, and A's job header (job id, attempt, hosts, the log's time span); inputs that
    look like several jobs get a note in every format and one warning line on stderr (issue 45)."""
    from .jobid import JobIdError, identify
    from .verdict.job import job_info
    try:
        identity = identify(list(logs) or ["-"], job_id, attempt, stdin_digest=digest)
    except JobIdError as e:
        raise fail("{}", e) from None
    a.job = job_info(a, identity, paths=list(logs))
    if a.job.several_jobs:
        a.notes.append(a.job.several_jobs["message"])
        click.echo(f"triage: warning: {a.job.several_jobs['message']}", err=True)
    return identity


def _quiet(text: str) -> str:
    """-q: the text report's verdict line, and its known issue's (an epilog's whole story)."""
    lines = text.split("\n")
    return "\n".join([lines[0]] + [x for x in lines[1:] if x.startswith("known issue: ")][:1]) + "\n"


def exit_code(a, fail_on: str) -> int:
    """The exit code of an analysis under --fail-on (README "Exit codes"): the verdict's."""
    return int(a.verdict.exit_code(fail_on))


def main() -> None:
    global _freeze_at_start
    _freeze_at_start = True
    _recache.install()           # (for the rest of the process: it ends with the command)
    cli(prog_name="triage")


if _GC_AT_IMPORT:
    gc.enable()
_recache.uninstall()

if __name__ == "__main__":
    main()
