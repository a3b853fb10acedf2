"""What every command shares: exit codes, the failure message, writing a report without losing a
user's file, the options' help texts, the catalog with --patterns, storing a verdict."""
from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Tuple

import click

from .errors import TriageError

if TYPE_CHECKING:
    from .patterns import Pattern

# exit codes of `triage analyze` (README "Exit codes"; --fail-on/--exit-zero decide 1 and 3)
EXIT_USAGE, EXIT_INTERNAL = 2, 4        # the CLI's own; the outcomes' codes are the verdict's (verdict/types.py)
FAIL_ON = ("error", "warning", "never")
# errors a user causes (every stage's error is a TriageError): one line and exit 2, handled once in _Group.main
USER_ERRORS = (TriageError,)


def fail(msg: str, *given: object) -> "click.exceptions.Exit":
    """Print `triage: error: MSG` and return the exit to raise.  MSG is triage's own text, never
    redacted (issue 45: `KEY=VALUE` came out `KEY=<redacted>`); with GIVEN it is a str.format template
    whose `{}` are the user's inputs (a path, an error about a store URL), each redacted (a token in a
    path) and escaped (a newline in a file name)."""
    if given:
        from .redact import redact
        msg = msg.format(*(shown(redact(str(g))) for g in given))
    click.echo(f"triage: error: {msg}", err=True)
    return click.exceptions.Exit(EXIT_USAGE)


def shown(text: str) -> str:
    """A user's text on one line of stderr: control characters (a newline in a file name) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def write_atomic(path: str, text: str, force: bool) -> None:
    """Write to a temp file beside PATH, then rename: never a half-written report; concurrent
    writers each rename a whole file.  A symlink is never followed onto another file: without
    --force it is an error, with --force the link itself is replaced.  A file overwritten keeps
    its permissions (a 0600 report stays 0600); a new one gets the umask's."""
    if os.path.islink(path) and not force:
        raise fail("{} is a symbolic link (to {}); pass --force to replace the link",
                   repr(path), repr(os.readlink(path))) from None
    if os.path.exists(path) and not force:
        raise fail("{} exists; pass --force to overwrite it", repr(path)) from None
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8") as f:     # a FIFO or device: write into it, never replace it
            f.write(text)
        return
    try:
        st = os.lstat(path)
        mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        mode = None
    from .files import replace_atomically
    replace_atomically(path, text, mode)


def write_output(output: Optional[str], text: str, force: bool, said: str) -> None:
    """A command's result: written to OUTPUT (atomically; SAID on stderr), or to stdout without one."""
    if not output:
        click.echo(text, nl=not text.endswith("\n"))
        return
    try:
        write_atomic(output, text, force)
    except OSError as e:
        raise fail("cannot write {}: {}", repr(output), e.strerror or e) from None
    click.echo(shown(said), err=True)          # one line: a newline in the -o name is escaped


def write_new(path: str, text: str) -> None:
    """Create PATH and write TEXT to it; never overwrites, and never follows a symbolic link (a
    link, even one to nowhere, is there: O_EXCL refuses it rather than create its target)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except FileExistsError:
        what = "is a symbolic link" if os.path.islink(path) else "exists"
        raise fail("{} " + what + "; not overwriting it", repr(path)) from None
    except OSError as e:
        raise fail("cannot write {}: {}", repr(path), e.strerror or e) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except BaseException as e:
        os.unlink(path)                 # ours: made above, never a half draft left behind
        if isinstance(e, OSError):
            raise fail("cannot write {}: {}", repr(path), e.strerror or e) from None
        raise


def _stdout_dash(ctx, param, value):  # noqa: ARG001 -- a click callback
    """`-o -` is standard output, as for most tools (not a file named '-')."""
    return None if value == "-" else value


def output_options(what: str) -> Callable[[Any], Any]:
    """`-o/--output` (written atomically; `-` is standard output) and `--force`, for a command that
    writes WHAT: one wording for every command."""
    def deco(f: Any) -> Any:
        f = click.option("--force", is_flag=True, help="Overwrite an existing --output file.")(f)
        return click.option("-o", "--output", type=click.Path(dir_okay=False), callback=_stdout_dash,
                            help=f"Write {what} to this file (atomically); - is standard output.")(f)
    return deco


PATTERNS_HELP = "Extra pattern directory or YAML file (repeatable): your own pitfalls, run beside the shipped catalog."
DB_HELP = ("Verdict store: a SQLite file path, sqlite:///PATH, or postgresql://USER@HOST/DB for a team's "
           "shared store (default: TRIAGE_DB, else ~/.local/share/triage/triage.db).")
def deprecated(old: str, new: str) -> None:
    """The one line an old spelling of an option prints (it still works)."""
    click.echo(f"triage: warning: {old} is deprecated: use {new} (same meaning); {old} will be removed",
               err=True)


WORKERS_HELP = ("Worker processes (as make -j): {what} ({default} every core this process may use: its CPU "
                "affinity, at most its cgroup's CPU quota{cap}).")
REQUIRE_STORE_HELP = ("Exit 2 (after the report) when the verdicts cannot be stored; without it a store that fails "
                      "is a warning on stderr and the exit code is the analysis's own.")


def _store_verdict(a, logs: List[str], db: Optional[str], record: bool, identity: Any,
                   stdin_hash: List[Optional[str]]) -> Optional[str]:
    """Record the verdict (--record/--db) and look up its known issue.  A store that fails is never
    the command's failure: the warning line to print after the report is returned."""
    from .fleet.store import Store, StoreError, content_hash, record_of
    done = False
    try:
        with Store(db) as st:
            if record:
                # hashed as the scan read the inputs; read again only when it could not (--max-bytes, a URL)
                digest = getattr(a, "content_hash", None) or content_hash(logs, stdin_hash[0])
                st.record(record_of(a, logs, identity, digest))
                done = True
            v = a.verdict
            block = "\n".join(v.first_failure.lines) if v.first_failure is not None else ""
            a.known = st.known_info(v.signature, v.primary.pitfall if v.primary else None, block,
                                    also=[v.message_signature] if v.message_signature else [])
    except StoreError as e:
        what = ("the verdict was recorded, its known issue not looked up" if done else
                "the verdict was not recorded" if record else "its known issue was not looked up")
        return f"triage: warning: {e}; {what}"
    return None


def stdin_hashing(on: bool) -> Any:
    """A context whose value is a one-element list: the hex digest of stdin's bytes read within it when ON (store.py's
    hashing_stdin, for a stored verdict's input), else None (store.py not loaded: most runs store nothing)."""
    if on:
        from .fleet.store import hashing_stdin
        return hashing_stdin(True)
    from contextlib import nullcontext
    return nullcontext([None])


def _prior_attempt(logs: List[str], db: Optional[str], job_id: Optional[str], attempt: Optional[int]) -> Tuple[
        Optional[Any], Optional[str]]:
    """Issue 43: the attempt before this one, from the verdict store (its signature) and its own logs (the
    highest iteration they reached), for `analyze --attempt N` (N >= 1) with a store; (prior, note).  None
    when there is no store, no earlier attempt stored, or its logs cannot be read again (then a note)."""
    import json

    from .fleet.given import store_given
    if not logs or "-" in logs or not store_given(db):
        return None, None
    from .fleet.store import Store, StoreError
    from .jobid import JobIdError, identify
    try:
        ident = identify(list(logs), job_id, attempt)
    except JobIdError:
        return None, None
    if ident.attempt < 1:
        return None, None
    try:
        with Store(db) as st:
            rec = st.verdict_of(ident.job_id, ident.attempt - 1)
    except StoreError:
        return None, None
    if rec is None or rec.outcome == "healthy":
        return None, None
    from .pipeline import reached_in
    from .verdict.action import PriorAttempt
    try:
        paths = [p for p in json.loads(rec.paths or "[]") if isinstance(p, str)]
    except ValueError:
        paths = []
    reached = reached_in(paths) if paths else False
    if reached is False:
        return None, (f"attempt {ident.attempt - 1} of this job is in the store but its logs cannot be read "
                      "again: whether this attempt got further is not known")
    return PriorAttempt(ident.attempt - 1, rec.group_signature, reached), None


def _store_failed(warning: Optional[str], require_store: bool) -> None:
    """After the report: the store's warning, and exit 2 when the store was required (--require-store)."""
    if warning:
        click.echo(warning, err=True)
        if require_store:
            raise click.exceptions.Exit(EXIT_USAGE)


def _no_contradiction(exit_zero: bool, fail_on: str, jobs: Optional[int] = None) -> None:
    """Options that contradict each other are a usage error; -j N is handed to the scan's pool."""
    if jobs:
        os.environ["TRIAGE_JOBS"] = str(jobs)      # read by the scan's worker pool (scan/pool.py)
    ctx = click.get_current_context()
    if exit_zero and fail_on != "never" and \
            ctx.get_parameter_source("fail_on") == click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError(f"--exit-zero and --fail-on {fail_on} contradict each other: --exit-zero is "
                               "--fail-on never; give one of them")


def load_patterns(pattern_dirs: List[str]) -> List[Pattern]:
    """The catalog plus --patterns; a --patterns argument that is not a pattern file or directory
    says so, naming the argument."""
    from .patterns import PatternError, load_all
    try:
        return load_all(pattern_dirs)
    except PatternError as e:
        msg = str(e)
        if not pattern_dirs or msg.startswith("--patterns"):
            raise
        raise PatternError(f"--patterns {' '.join(pattern_dirs)}: {msg} (a pattern file is YAML with id, title, "
                           "severity, kind, match, explanation, fix, references, examples: see PATTERNS.md)") from None


def format_for(output: Optional[str], suffixes: Mapping[str, str]) -> str:
    """The report format of an -o file from its suffix (text without one); an unknown suffix is
    an error, never text in a .pdf."""
    if not output:
        return "text"
    ext = os.path.splitext(output)[1].lower()
    if not ext:
        return "text"
    if ext not in suffixes:
        known = " ".join(sorted(suffixes))
        raise fail("-o {}: unknown report suffix {} (known: " + known + "); pass --format to write another name",
                   repr(output), repr(ext))
    return suffixes[ext]
