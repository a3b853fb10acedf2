"""Every command of the CLI but `analyze`: imported when one of them is run, or listed (`triage --help`),
never for `triage analyze` (its start-up, issue 27); cli.py's command table loads it (_LazyCommands)."""
from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, List, Mapping, Optional, Sequence

import click

from .cli import (
    DB_HELP,
    EXIT_USAGE,
    FAIL_ON,
    PATTERNS_HELP,
    REQUIRE_STORE_HELP,
    _no_contradiction,
    _stdout_dash,
    _store_failed,
    _store_verdict,
    cli,
    fail,
    format_for,
    load_patterns,
    write_new,
    write_output,
)
from .report.names import FLEET_FORMATS, SUFFIX_FORMAT
from .schemas import NAMES as SCHEMA_NAMES

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


@cli.command()
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
    Events (--format jsonl: one JSON object a line): root-cause, cascade,
    hang-suspected, healthy-progress, ended.  See docs/watch.md.

    \b
    It ends by itself when the launcher reports the job's end (torchrun's
    summary, srun's exit lines, Slurm cancelling it), when stdin closes, or
    after --idle seconds without new bytes; SIGTERM / Ctrl-C end it too (with
    the verdict so far).  Exit codes: analyze's (0 healthy, 1 pitfall, 3
    unexplained failure; 2 usage or input error).

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
    pats = load_patterns(pattern_dirs)
    from .watch.events import to_json, to_text
    from .watch.live import Watch, WatchOptions

    def emit(ev: dict) -> None:
        click.echo(to_json(ev) if fmt == "jsonl" else to_text(ev))
        sys.stdout.flush()

    holder: List[Any] = []
    store_cb = _watch_store(paths, record or bool(db), db, job_id, attempt, holder)
    opts = WatchOptions(settle=settle, stall=stall, heartbeat=heartbeat, idle=idle, fail_on=fail_on,
                        on_failure=on_failure, report_dir=report_dir, poll=poll)
    w = Watch(paths, pats, opts, emit, store=store_cb)
    holder.append(w)
    code = w.run()
    if code:
        raise click.exceptions.Exit(code)


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
            raise fail(f"{p!r} is neither a file nor a directory")
    return paths


def _watch_store(paths: List[str], record: bool, db: Optional[str], job_id: Optional[str], attempt: Optional[int],
                 holder: List[Any]) -> Any:
    """watch's store callback (None: no store asked for): records the verdict as analyze --record does;
    a store that fails is a warning line on stderr, never watch's failure.  HOLDER[0] is the Watch."""
    from .store import store_given
    if not store_given(db, record):
        return None
    from .jobid import JobIdError, identify
    try:
        identity = identify(paths, job_id, attempt, stdin_digest=None)
    except JobIdError as e:
        raise fail(str(e)) from None

    def store_cb(a: Any) -> None:
        stdin = holder[0].follower.stdin if holder else None
        digest = [stdin.sha.hexdigest() if stdin is not None else None]
        warning = _store_verdict(a, paths, db, record, identity, digest)
        if warning:
            click.echo(warning, err=True)
    return store_cb


CHECK_FORMATS = ("text", "json", "markdown", "html")


def _check_config_out(fmt: str, vs: list, cfg: Mapping[str, Any], unknown: list, open_rules: list, typos: list,
                      sources: Sequence[str]) -> str:
    """check-config's result in FMT (text, json, markdown, html)."""
    from .redact import redact_obj
    if fmt == "json":
        return json.dumps(redact_obj({"violations": [vars(v) for v in vs], "config": cfg, "unknown": unknown,
                                      "undecided": [vars(u) for u in open_rules],
                                      "unknown_keys": [vars(t) for t in typos]}), indent=2, default=str) + "\n"
    if fmt == "markdown":
        from .report import render_check_config_markdown
        return render_check_config_markdown(vs, dict(cfg), unknown=unknown, undecided=open_rules)
    if fmt == "html":
        from .report.check_config import render_check_config_html
        return render_check_config_html(vs, dict(cfg), unknown=unknown, undecided=open_rules, typos=typos,
                                        sources=sources)
    lines = []
    if not vs:
        lines.append("check-config: no CUDA-graph pitfall in this config" if not typos else
                     f"check-config: no CUDA-graph pitfall in this config, but {len(typos)} key(s) are no known "
                     "setting (a typo is never checked): see the warning(s) above")
    for v in vs:
        lines.append(f"{v.pitfall}: {v.message}\n  keys: {', '.join(v.keys)}\n  fix: {v.fix}")
    for u in unknown:
        lines.append(f"unknown value: {u['key']}: {u['value']}")
    if open_rules:
        keys = sorted({k for r in open_rules for k in r.keys})
        lines.append(f"undecided: {len(open_rules)} rule(s) of {', '.join(sorted({r.pitfall for r in open_rules}))}: "
                     f"the config does not show {', '.join(keys)} (--format json lists them)")
    return "\n".join(lines) + "\n"


@cli.command("check-config")
@click.argument("configs", nargs=-1, type=click.Path())
@click.option("--set", "overrides", multiple=True, metavar="KEY=VAL",
              help="Dotted override, e.g. model.cuda_graph_impl=local.")
@click.option("--env", "env", multiple=True, metavar="KEY=VAL", help="Environment variable of the run.")
@click.option("--format", "fmt", type=click.Choice(CHECK_FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=_stdout_dash,
              help="Write the result to this file (atomically); - is standard output.")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
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
    from .config import build_config, check, undecided, unknown_values
    from .verdict import EXIT_FOUND
    cfg = build_config(files, over, env)
    typos = _typos(cfg, over, env, strict)
    vs = check(cfg, pats)
    unknown, open_rules = unknown_values(cfg), undecided(cfg, pats)
    fmt = fmt or format_for(output, {k: v for k, v in SUFFIX_FORMAT.items() if v in CHECK_FORMATS})
    out = _check_config_out(fmt, vs, cfg, unknown, open_rules, typos, files + over)
    write_output(output, out, force, f"triage: check-config: {len(vs)} pitfall(s); {fmt} written to {output}")
    if vs:
        raise click.exceptions.Exit(EXIT_FOUND)


def _typos(cfg: Mapping[str, Any], overrides: Sequence[str], env: Sequence[str], strict: bool) -> list:
    """The config's keys that are no known setting (config.settings): a warning line each on stderr,
    or, with --strict, one error (exit 2)."""
    from .config.load import parse_overrides
    from .config.settings import NEAR_MAX, unknown_keys
    given = list(parse_overrides(overrides)) + [f"env.{e.split('=', 1)[0].strip()}" for e in env if "=" in e]
    lasts = {g.rsplit(".", 1)[-1] for g in given}
    unchecked: List[str] = []
    typos = unknown_keys([k for k in cfg if k.rsplit(".", 1)[-1] not in lasts], given, unchecked)
    if unchecked:
        click.echo(f"triage: warning: {len(unchecked):,} keys not checked for typos (past the first "
                   f"{NEAR_MAX:,} names that are no known setting), from {unchecked[0]!r}", err=True)
    if typos and strict:
        raise fail("; ".join(t.message() for t in typos[:5]) + (f" (+{len(typos) - 5} more)" if len(typos) > 5 else "")
                   + " (--strict)")
    for t in typos:
        click.echo(f"triage: warning: {t.message()}", err=True)
    return typos


@cli.command("diff")
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
    from .config import build_config, diff
    from .redact import redact, redact_obj
    from .report.util import change_line
    from .verdict import EXIT_FOUND
    a, b = build_config([old]), build_config([new])
    _typos(a, (), (), strict)
    _typos(b, (), (), strict)
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


@cli.command("schema")
@click.argument("name", type=click.Choice(SCHEMA_NAMES), metavar="NAME")
def schema_cmd(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of a --format json output.

    \b
    NAME is one of: analyze, check-config, diff, fleet, recheck, known, watch-event.
    Example:  triage schema analyze > analyze.schema.json"""
    from .schemas import text as schema_text
    click.echo(schema_text(name), nl=False)


@cli.group()
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
    from .selftest import check_examples, example_winners, format_winners, load_problems
    from .taxonomy import IDS
    pats, load_errors = load_problems(directory, IDS if strict_ids else None)
    if winners:
        for line in format_winners(example_winners(pats)):
            click.echo(line)
    problems = load_errors + check_examples(pats)
    for pr in problems:
        click.echo(pr, err=True)
    click.echo(f"{len(pats) + len(load_errors)} pattern file(s), {len(problems)} problem(s)")
    if problems:
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
    from .pipeline import run_analysis
    from .suggest import draft
    a, _ = run_analysis(logs, pattern_dirs, load_patterns(pattern_dirs))
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

class _DefaultRun(click.Group):
    """`triage fleet PATH...` runs `triage fleet run PATH...`; `triage fleet report` is the report."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run"] + list(args)
        elif not args:
            args = ["run"]
        return super().parse_args(ctx, args)


def _fleet_output(view: dict, fmt: Optional[str], output: Optional[str], force: bool) -> None:
    from .fleet_report import render as render_fleet
    if fmt is None:
        fmt = format_for(output, {k: v for k, v in SUFFIX_FORMAT.items() if v in FLEET_FORMATS})
    out = render_fleet(view, fmt)
    write_output(output, out, force, f"triage: {view['jobs']} job(s), {len(view['groups'])} group(s); {fmt} fleet "
                                     f"report written to {output}")


@cli.group(cls=_DefaultRun)
def fleet() -> None:
    """Triage many jobs at once and group their verdicts by signature.

    \b
    triage fleet PATH... [--jobs-in DIR]   analyse jobs, store and group them (= fleet run)
    triage fleet report [--since 7d]       the grouped view from the store alone

    \b
    Examples:
      triage fleet --jobs-in /logs/2026-12-03 -j 8
      triage fleet job-1.log job-2/ --format json
      triage fleet report --since 7d -o fleet.html"""


@fleet.command("run")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--jobs-in", "jobs_in", multiple=True, type=click.Path(),
              help="A directory whose every child (a log file or a per-rank directory) is one job (repeatable).")
@click.option("-j", "--jobs", "workers", type=click.IntRange(min=0), default=0, metavar="N",
              help="Analyse N jobs at once (default 0: every core this process may use: its CPU affinity, "
                   "at most its cgroup's CPU quota).")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--no-store", is_flag=True,
              help="Do not store the verdicts (first/last seen then come from these jobs only).")
@click.option("--format", "fmt", type=click.Choice(FLEET_FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=_stdout_dash,
              help="Write the grouped view to this file (atomically).")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help=PATTERNS_HELP)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--require-store", is_flag=True, help=REQUIRE_STORE_HELP)
@click.option("--fail-on", "fail_on", multiple=True, type=click.Choice(["new", "unexplained"]),
              help="Exit 1 after the view when a failing job's signature was never seen before in the store "
                   "(new; needs the store) or a job failed with no pattern explaining why (unexplained). "
                   "Repeatable.")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write each job's HTML report into DIR (made if missing) and link each job of the view to it. "
                   "A file there that is not a triage report is not overwritten without --force.")
def fleet_run(paths: List[str], jobs_in: List[str], workers: int, db: Optional[str], no_store: bool,
              fmt: Optional[str], output: Optional[str], force: bool, pattern_dirs: List[str], quiet: bool,
              require_store: bool, fail_on: List[str], reports_dir: Optional[str]) -> None:
    """Analyse many jobs: each PATH is one job (a log file or a per-rank directory); with
    --jobs-in DIR each child of DIR is one job.  Jobs run in parallel (-j), every verdict is
    stored (--db; idempotent: a job analysed again is one record), and the grouped view is
    printed: per signature the count, first and last seen, the jobs and the known issue;
    unexplained failures; healthy jobs counted.  Exits 0 unless the arguments are wrong (a store
    that fails is a warning after the view, as with --no-store; exit 2 with --require-store), or
    1 when a --fail-on condition holds (2 when `new` cannot be decided: the store failed).

    \b
    Examples:
      triage fleet run --jobs-in /logs/2026-12-03 -j 8 -o fleet.html
      triage fleet run job-1.log job-2/ --no-store --format json"""
    from .fleet import analyse_jobs, failed_gates, find_jobs, store_verdicts, stored_signatures, view
    from .progress import for_jobs
    _fleet_options_agree(no_store, require_store, db, fail_on)
    load_patterns(pattern_dirs)          # a bad --patterns is one error, before any job runs
    jobs = find_jobs(paths, jobs_in)
    if reports_dir is not None:
        from .fleet_reports import plan
        jobs = plan(jobs, reports_dir, force)      # a foreign file in the way: one error, before any job runs
    bar = None if quiet else for_jobs(len(jobs))
    results = []
    try:
        for r in analyse_jobs(jobs, pattern_dirs, workers, tick=bar):
            results.append(r)
    finally:
        if bar is not None:
            bar.close()
    order = {j.path: i for i, j in enumerate(jobs)}
    results.sort(key=lambda r: order[r.job.path])
    records = [r.record for r in results if r.record is not None]
    errors = [r for r in results if r.record is None]
    before, unread = (stored_signatures(db, [r.signature or "" for r in records]) if "new" in fail_on
                      else (None, None))
    seen, known, warning = (None, None, None) if no_store else store_verdicts(db, records)
    links = None
    if reports_dir is not None:
        from .fleet_reports import base_of
        from .fleet_reports import links as report_links
        from .redact import redact
        links = report_links(((r.record.label, r.job.report) for r in results
                              if r.record is not None and not r.report_error), base_of(output))
        for r in [r for r in results if r.report_error][:20]:
            click.echo(f"triage: warning: {redact(r.report_error or '')}", err=True)
    _fleet_output(view(records, seen, known, errors, reports=links), fmt, output, force)
    _store_failed(warning, require_store)
    gates = failed_gates(records, fail_on, before)
    for g in gates:
        click.echo(f"triage: {g}", err=True)
    if unread is not None:
        click.echo(f"triage: --fail-on new cannot be decided: {unread}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE)
    if gates:
        raise click.exceptions.Exit(1)


def _fleet_options_agree(no_store: bool, require_store: bool, db: Optional[str], fail_on: Sequence[str]) -> None:
    if no_store and (require_store or db):
        raise click.UsageError(f"--no-store and {'--require-store' if require_store else '--db'} contradict each "
                               "other: give one of them")
    if "new" in fail_on and no_store:
        raise click.UsageError("--fail-on new needs the store (a signature never seen before in it): drop --no-store")


@fleet.command("report")
@click.option("--since", default="7d", show_default=True, metavar="PERIOD",
              help="The period shown: 7d, 12h, 2w, or a date YYYY-MM-DD; 'all' for the whole store.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(FLEET_FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=_stdout_dash,
              help="Write the report to this file (atomically); - is standard output.")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Link each job to its HTML report in DIR (written there by `triage fleet run --reports DIR`).")
def fleet_report(since: str, db: Optional[str], fmt: Optional[str], output: Optional[str], force: bool,
                 reports_dir: Optional[str]) -> None:
    """The grouped view of the stored verdicts of a period, with a per-day chart of failing
    jobs per signature (HTML); signatures first seen in the period are marked new.

    \b
    Examples:
      triage fleet report --since 7d -o fleet.html
      triage fleet report --since 2026-12-01 --db postgresql://triage@db/triage --format json"""
    import time as _time

    from .fleet import parse_since, view
    from .store import Store
    t0 = None if since.strip().lower() == "all" else parse_since(since)
    with Store(db, existing=True) as store:
        records = list(store.records(since=t0))
        seen = store.seen(signatures=[r.signature for r in records if r.signature])
        known = store.known_list()
    links = None
    if reports_dir is not None:
        from .fleet_reports import base_of, stored_links
        links = stored_links(records, reports_dir, base_of(output))
    _fleet_output(view(records, seen, known, since=t0, until=_time.time(), daily=True, reports=links), fmt,
                  output, force)


@fleet.command("recheck")
@click.option("--since", default="all", show_default=True, metavar="PERIOD",
              help="The stored jobs rechecked: 'all', or a period (7d, 12h, 2w) or a date (YYYY-MM-DD) "
                   "of their job time.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(), help=PATTERNS_HELP)
@click.option("-j", "--jobs", "workers", type=click.IntRange(min=0), default=0, metavar="N",
              help="Analyse N jobs at once (default 0: every core this process may use: its CPU affinity, "
                   "at most its cgroup's CPU quota).")
@click.option("--dry-run", is_flag=True, help="Say what would change; leave the store as it is.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=_stdout_dash,
              help="Write the result to this file (atomically); - is standard output.")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def fleet_recheck(since: str, db: Optional[str], pattern_dirs: List[str], workers: int, dry_run: bool, fmt: str,
                  output: Optional[str], force: bool, quiet: bool) -> None:
    """Triage the stored jobs again with today's catalog (after a pattern was added, --patterns,
    or a known issue linked) and say which unexplained groups are now explained or covered by a
    known issue and which verdicts changed.  Each job whose log is still readable (where it was
    analysed from) is analysed again and its record replaced; its old verdict is kept in the
    store's history.  Jobs piped on stdin or whose log is gone are counted as skipped.

    \b
    Examples:
      triage fleet recheck --since 30d --db postgresql://triage@db/triage
      triage fleet recheck --patterns team-patterns/ --dry-run --format json"""
    from .fleet import parse_since
    from .progress import for_jobs
    from .recheck import recheck, render_text
    load_patterns(pattern_dirs)          # a bad --patterns is one error, before any job runs
    t0 = None if since.strip().lower() == "all" else parse_since(since)
    bars: list = []

    def total(n: int) -> None:
        if not quiet and n:
            bars.append(for_jobs(n))

    def tick(done: int) -> None:
        if bars and bars[0] is not None:
            bars[0](done)
    try:
        res = recheck(db, t0, pattern_dirs, workers, dry_run, tick=tick, on_total=total)
    finally:
        for b in bars:
            if b is not None:
                b.close()
    out = json.dumps(res.as_dict(), indent=2, ensure_ascii=False) + "\n" if fmt == "json" else render_text(res)
    write_output(output, out, force, f"triage: rechecked {res.checked} job(s); {fmt} written to {output}")


@cli.group()
def known() -> None:
    """The known-issue table: link a signature or a pitfall to the ticket that tracks it.

    \b
    Examples:
      triage known add capture-memory-overhead https://jira.example.com/browse/TRAIN-123 --title "graph pools"
      triage known add "unexplained-failure: RuntimeError: <path> boom" https://github.com/org/repo/issues/7
      triage known list
      triage known remove capture-memory-overhead"""


@known.command("add")
@click.argument("key")
@click.argument("url")
@click.option("--title", default=None, help="The ticket's title.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help="Also accept the pitfall ids of these pattern files or directories (repeatable).")
def known_add(key: str, url: str, title: Optional[str], db: Optional[str], pattern_dirs: List[str]) -> None:
    """Link KEY (a pitfall id, a job signature as `triage fleet` or the JSON's `signature` shows
    it, its short id as every report shows it, or re:REGEX -- a regex found in a job's signature or
    error block) to the ticket at URL; adding the same KEY again replaces its link.

    \b
    Examples:
      triage known add capture-memory-overhead https://jira.example.com/browse/TRAIN-7 --title "graph pools"
      triage known add "nccl-error: NCCL / collective communication error (incl. a lost peer)" URL
      triage known add 're:FileNotFoundError: .*tokenizer' https://jira.example.com/browse/TRAIN-9"""
    from .store import Store, known_key_error, url_error
    extra = [p.id for p in load_patterns(pattern_dirs)] if pattern_dirs else []
    sid = re.fullmatch(r"[0-9a-f]{12}", key) is not None and key not in extra
    why = (None if sid else known_key_error(key, extra)) or url_error(url)
    if why:
        raise fail(why) from None
    with Store(db) as st:
        if sid:                 # a signature's short id, as every report shows it: the signature it stands for
            sig = st.signature_of(key)
            if sig is None:
                raise fail(f"no job in the store has signature id {key} (record the job first: "
                           "triage analyze --record, or triage fleet)") from None
            key = sig
        new = st.known_add(key, url, title)
    from .report.util import clip
    click.echo(f"{'added' if new else 'updated'}: {clip(key, 500)} -> {clip(url, 500)}")


@known.command("list")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def known_list(db: Optional[str], fmt: str) -> None:
    """List the known issues with how often the store has seen each.

    \b
    Example:  triage known list --db postgresql://triage@db/triage --format json"""
    from .store import Store, day
    with Store(db, existing=True) as st:
        rows = st.known_list()
        sigs = [r["key"] for r in rows if ": " in r["key"]]
        pits = [r["key"] for r in rows if ": " not in r["key"]]
        seen = st.seen(signatures=sigs, pitfalls=pits)
    out = []
    for r in rows:
        n, first, last = seen.get(r["key"], (0, 0.0, 0.0))
        out.append({"key": r["key"], "url": r["url"], "title": r["title"], "added": day(r["added_at"]),
                    "seen": n, "first_seen": day(first) if n else None, "last_seen": day(last) if n else None})
    if fmt == "json":
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if not out:
        click.echo("no known issues (add one with: triage known add KEY URL)")
    from .report.util import clip  # (one clipped line each: a title may hold escapes or newlines)
    for k in out:
        seen_s = f"seen {k['seen']}x, {k['first_seen']}..{k['last_seen']}" if k["seen"] else "not seen yet"
        title = f"  {clip(k['title'], 500)}" if k["title"] else ""
        click.echo(f"{clip(k['key'], 500)}\n  {clip(k['url'], 500)}{title}\n  {seen_s}")


@known.command("remove")
@click.argument("keys", nargs=-1, required=True)
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
def known_remove(keys: List[str], db: Optional[str]) -> None:
    """Remove the known issues KEYS (exit 1 when one of them was not in the table).

    \b
    Example:  triage known remove illegal-memory-access"""
    from .store import Store
    from .verdict import EXIT_FOUND
    missing = []
    with Store(db, existing=True) as st:
        for k in keys:
            if st.known_remove(k):
                click.echo(f"removed: {k}")
            else:
                missing.append(k)
    if missing:
        click.echo(f"triage: not a known issue: {', '.join(missing)} (see triage known list)", err=True)
        raise click.exceptions.Exit(EXIT_FOUND)
