"""`triage watch`: a sidecar that follows growing logs and reports a root cause as soon as it shows."""
from __future__ import annotations

import os
import sys
from typing import Any, List, Optional, Sequence

import click

from ..cliutil import (
    DB_HELP,
    FAIL_ON,
    PATTERNS_HELP,
    _no_contradiction,
    _store_verdict,
    fail,
    load_patterns,
)

WATCH_FORMATS = ("text", "jsonl")


class _Seconds(click.FloatRange):
    """A FloatRange of seconds that refuses nan (a FloatRange lets it through: every
    comparison with it is false; found by fuzzing: --stall nan alerted at once, --idle nan never ended)."""
    name = "seconds"

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        v = super().convert(value, param, ctx)
        if v != v:
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return v


@click.command()
@click.argument("logs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(WATCH_FORMATS), default="text", show_default=True,
              help="text: one alert line per event; jsonl: one JSON object per event (`triage schema watch-event`).")
@click.option("--settle", type=_Seconds(min=0), default=3.0, show_default=True, metavar="SECONDS",
              help="A root cause is emitted once it has stood this long (later lines could overturn it); "
                   "an unexplained failure waits 3x as long.")
@click.option("--stall", type=_Seconds(min=0.1), default=None, metavar="SECONDS",
              help="No rank's step advancing for this long, with no error logged, is a suspected hang "
                   "(default: 10x the median step time, at least 60 s; 10x longer during a checkpoint save "
                   "or an evaluation).")
@click.option("--heartbeat", type=_Seconds(min=0), default=60.0, show_default=True, metavar="SECONDS",
              help="Emit healthy-progress (the last step per rank) this often while no root cause is known; 0: never.")
@click.option("--idle", type=_Seconds(min=0), default=3600.0, show_default=True, metavar="SECONDS",
              help="End after this long without new bytes; 0: never (the launcher's end lines, or stdin "
                   "closing, end it too).")
@click.option("--on-failure", "on_failure", metavar="CMD", default=None,
              help="Run CMD (a shell command) once, when the root cause is emitted: TRIAGE_PRIMARY, TRIAGE_RANK, "
                   "TRIAGE_SIGNATURE, TRIAGE_OUTCOME, TRIAGE_SUMMARY, TRIAGE_REPORT (the JSON report written then) "
                   "in its environment, the root-cause event's JSON on its stdin.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write DIR/triage-report.json and .html when the verdict is reached and again when the job ends.")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(), help=PATTERNS_HELP)
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="As for analyze: which verdicts exit non-zero.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever the verdict (= --fail-on never).")
@click.option("--record", is_flag=True,
              help="Store the verdict (as analyze --record) when it is reached and when the job ends.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP + " Giving it records the verdict.")
@click.option("--job-id", metavar="ID", default=None, help="The job's id in the store (as for analyze).")
@click.option("--attempt", type=click.IntRange(min=0, max=999999), default=None, metavar="N",
              help="The job's attempt in the store (as for analyze).")
@click.option("--poll", type=_Seconds(min=0.01, max=10), default=0.25, show_default=True, metavar="SECONDS",
              help="Seconds between looks at the inputs.", hidden=True)
def watch(logs: List[str], fmt: str, settle: float, stall: Optional[float], heartbeat: float, idle: float,
          on_failure: Optional[str], report_dir: Optional[str], pattern_dirs: List[str], fail_on: str,
          exit_zero: bool, record: bool, db: Optional[str], job_id: Optional[str], attempt: Optional[int],
          poll: float) -> None:
    """Follow a running job's LOGS (files that grow, a directory where per-rank
    files appear, stdin when none) and name the root cause while it still hangs.

    Only new bytes are read, through the same engine and catalog as analyze.
    Events (--format jsonl: one JSON object a line): waiting (no line read yet),
    root-cause, cascade, hang-suspected, healthy-progress, ended.  See
    docs/watch.md.

    \b
    It ends by itself when the launcher reports the job's end (torchrun's
    summary, srun's exit lines, Slurm cancelling it), when stdin closes, or
    after --idle seconds without new bytes.  Its own stop is SIGUSR1 (`kill
    -USR1 PID`): it ends then with the verdict so far and that verdict's exit
    code.  Ctrl-C and SIGTERM interrupt it as any triage command: the verdict
    so far, a "triage: interrupted" line, exit 130 (Ctrl-C) or 143 (SIGTERM).
    Exit codes otherwise analyze's (0 healthy, 1 pitfall, 3 unexplained
    failure; 2 usage or input error).

    \b
    Examples:
      triage watch slurm-1234.out --on-failure 'scancel "$SLURM_JOB_ID"' &
      triage watch logs/ --format jsonl --report out/
      kubectl logs -f job/train | triage watch --format jsonl
      triage watch train.log --stall 600 --settle 5"""
    _no_contradiction(exit_zero, fail_on)
    if exit_zero:
        fail_on = "never"
    paths = _watch_paths(logs)
    for p in paths:
        if p != "-" and not os.path.exists(p):
            click.echo(f"triage: watch: waiting for {p!r} to appear (no such file yet){_near_name(p)}", err=True)
    pats = load_patterns(pattern_dirs)
    from ..watch.events import to_json, to_text
    from ..watch.live import Watch, WatchOptions

    def emit(ev: dict) -> None:
        click.echo(to_json(ev) if fmt == "jsonl" else to_text(ev))
        sys.stdout.flush()

    holder: List[Any] = []
    store_cb = _watch_store(paths, record or bool(db), db, job_id, attempt, holder)
    opts = WatchOptions(settle=settle, stall=stall, heartbeat=heartbeat, idle=idle, fail_on=fail_on,
                        on_failure=on_failure, report_dir=report_dir, poll=poll)
    w = Watch(paths, pats, opts, emit, store=store_cb)
    holder.append(w)
    code = _run_stoppable(w)
    if w.interrupted is not None:       # the verdict so far was written; then the signal's exit (130 / 143)
        raise w.interrupted
    if code:
        raise click.exceptions.Exit(code)


def _run_stoppable(w: Any) -> int:
    """Run W with SIGUSR1 as watch's own stop: end now, the verdict so far and its exit code."""
    import signal

    from ..errors import StopWatch
    sig = getattr(signal, "SIGUSR1", None)

    def stop(signum: int, frame: Any) -> None:  # noqa: ARG001
        raise StopWatch

    try:
        before = signal.signal(sig, stop) if sig is not None else None
    except (ValueError, OSError):        # not the main thread: no signal of its own
        return int(w.run())
    try:
        return int(w.run())
    finally:
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL if before is None else before)


def _near_name(path: str) -> str:
    """"; did you mean 'train.log'?" for a file beside PATH whose name is close to it ("" when none is)."""
    import difflib
    d = os.path.dirname(path) or "."
    try:
        names = [n for n in os.listdir(d)[:10_000] if not n.startswith(".")]
    except OSError:
        return ""
    near = difflib.get_close_matches(os.path.basename(path), names, n=1, cutoff=0.75)
    return f"; did you mean {os.path.join(os.path.dirname(path), near[0])!r}?" if near else ""


def _watch_paths(logs: Sequence[str]) -> List[str]:
    """watch's inputs: LOGS, or stdin when none is given and stdin is no terminal."""
    paths = list(logs)
    if not paths:
        if sys.stdin is None or sys.stdin.isatty():
            raise fail("no log given: pass LOG files/directories or pipe a log on stdin")
        paths = ["-"]
    if paths.count("-") > 1:
        raise fail("stdin (-) given more than once")
    for p in paths:
        if p != "-" and os.path.exists(p) and not (os.path.isfile(p) or os.path.isdir(p)):
            raise fail("{} is neither a file nor a directory", repr(p))
    return paths


def _watch_store(paths: List[str], record: bool, db: Optional[str], job_id: Optional[str], attempt: Optional[int],
                 holder: List[Any]) -> Any:
    """watch's store callback (None: no store asked for): records the verdict as analyze --record does;
    a store that fails is a warning line on stderr, never watch's failure.  HOLDER[0] is the Watch."""
    from ..fleet.given import store_given
    if not store_given(db, record):
        return None
    from ..jobid import JobIdError, identify
    try:
        identity = identify(paths, job_id, attempt, stdin_digest=None)
    except JobIdError as e:
        raise fail("{}", e) from None

    def store_cb(a: Any) -> None:
        stdin = holder[0].follower.stdin if holder else None
        digest = [stdin.sha.hexdigest() if stdin is not None else None]
        warning = _store_verdict(a, paths, db, record, identity, digest)
        if warning:
            click.echo(warning, err=True)
    return store_cb
