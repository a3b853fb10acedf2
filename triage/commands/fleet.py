"""`triage fleet run|report|recheck`: many jobs, stored and grouped by signature."""
from __future__ import annotations

import json
from typing import List, Optional, Sequence

import click

from ..cliutil import (
    DB_HELP,
    EXIT_USAGE,
    PATTERNS_HELP,
    WORKERS_HELP,
    _store_failed,
    deprecated,
    format_for,
    load_patterns,
    output_options,
    write_output,
)
from ..report.names import FLEET_FORMATS, SUFFIX_FORMAT


class _DefaultRun(click.Group):
    """`triage fleet PATH...` runs `triage fleet run PATH...`; `triage fleet report` is the report."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run"] + list(args)
        elif not args:
            args = ["run"]
        return super().parse_args(ctx, args)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """`triage fleet --help` shows the options of `fleet run` (what `triage fleet PATH...` runs)."""
        super().format_options(ctx, formatter)
        run = self.commands.get("run")
        if run is None:
            return
        rows = [r for r in (p.get_help_record(ctx) for p in run.get_params(ctx)
                            if isinstance(p, click.Option) and "--help" not in p.opts) if r is not None]
        with formatter.section("Options of `fleet run` (= triage fleet PATH...)"):
            formatter.write_dl(rows)


def _fleet_output(view: dict, fmt: Optional[str], output: Optional[str], force: bool) -> None:
    from ..fleet.render import render as render_fleet
    if fmt is None:
        fmt = format_for(output, {k: v for k, v in SUFFIX_FORMAT.items() if v in FLEET_FORMATS})
    out = render_fleet(view, fmt)
    write_output(output, out, force, f"triage: {view['jobs']} job(s), {len(view['groups'])} group(s); {fmt} fleet "
                                     f"report written to {output}")


@click.group(cls=_DefaultRun)
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
@click.option("-j", "--workers", "workers", type=click.IntRange(min=0), default=0, metavar="N",
              help=WORKERS_HELP.format(what="each analyses one job at a time, so N jobs at once",
                                       default="default 0:", cap=""))
@click.option("--jobs", "workers_old", type=click.IntRange(min=0), default=None, hidden=True,
              help="Old spelling of --workers.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--no-store", is_flag=True,
              help="Do not store the verdicts (first/last seen then come from these jobs only).")
@click.option("--format", "fmt", type=click.Choice(FLEET_FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@output_options("the grouped view")
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(),
              help=PATTERNS_HELP)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--require-store", is_flag=True,
              help="Exit 2 (after the view) when the verdicts cannot be stored; without it a store that fails is "
                   "a warning on stderr and the exit code is the view's own (0, or 1 for --fail-when).")
@click.option("--fail-when", "fail_on", multiple=True, type=click.Choice(["new", "unexplained"]),
              help="Exit 1 after the view when a failing job's signature was never seen before in the store "
                   "(new; needs the store) or a job failed with no pattern explaining why (unexplained). "
                   "Repeatable. (--fail-on is a severity on analyze and watch.)")
@click.option("--fail-on", "fail_on_old", multiple=True, type=click.Choice(["new", "unexplained"]), hidden=True,
              help="Old spelling of --fail-when.")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write each job's HTML report into DIR (made if missing) and link each job of the view to it. "
                   "A file there that is not a triage report is not overwritten without --force.")
def fleet_run(paths: List[str], jobs_in: List[str], workers: int, db: Optional[str], no_store: bool,
              fmt: Optional[str], output: Optional[str], force: bool, pattern_dirs: List[str], quiet: bool,
              require_store: bool, fail_on: List[str], reports_dir: Optional[str], workers_old: Optional[int],
              fail_on_old: List[str]) -> None:
    """Analyse many jobs: each PATH is one job (a log file or a per-rank directory); with
    --jobs-in DIR each child of DIR is one job.  Jobs run in parallel (-j), every verdict is
    stored (--db; idempotent: a job analysed again is one record), and the grouped view is
    printed: per signature the count, first and last seen, the jobs and the known issue;
    unexplained failures; healthy jobs counted.  Exits 0 unless the arguments are wrong (a store
    that fails is a warning after the view, as with --no-store; exit 2 with --require-store), or
    1 when a --fail-when condition holds (2 when `new` cannot be decided: the store failed).

    \b
    Examples:
      triage fleet run --jobs-in /logs/2026-12-03 -j 8 -o fleet.html
      triage fleet run job-1.log job-2/ --no-store --format json
      triage fleet run --jobs-in /logs/today --fail-when new     # CI: a kind of failure never seen"""
    from ..fleet.run import analyse_jobs, failed_gates, store_verdicts, stored_signatures, view
    from ..progress import for_jobs
    workers = _old_workers(workers, workers_old)
    if fail_on_old:
        deprecated("fleet run --fail-on", "--fail-when")
        fail_on = list(fail_on) + [x for x in fail_on_old if x not in fail_on]
    _fleet_options_agree(no_store, require_store, db, fail_on)
    load_patterns(pattern_dirs)          # a bad --patterns is one error, before any job runs
    jobs = _find_jobs(paths, jobs_in)
    if reports_dir is not None:
        from ..fleet.job_reports import plan
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
        from ..fleet.job_reports import base_of
        from ..fleet.job_reports import links as report_links
        from ..redact import redact
        links = report_links(((r.record.label, r.job.report) for r in results
                              if r.record is not None and not r.report_error), base_of(output))
        for r in [r for r in results if r.report_error][:20]:
            click.echo(f"triage: warning: {redact(r.report_error or '')}", err=True)
    from ..fleet.run import stop_no_progress
    _fleet_output(view(records, seen, known, errors, reports=links, stop=stop_no_progress(results)), fmt, output,
                  force)
    _store_failed(warning, require_store)
    gates = failed_gates(records, fail_on, before)
    for g in gates:
        click.echo(f"triage: {g}", err=True)
    if unread is not None:
        click.echo(f"triage: --fail-when new cannot be decided: {unread}", err=True)
        raise click.exceptions.Exit(EXIT_USAGE)
    if gates:
        raise click.exceptions.Exit(1)


def _find_jobs(paths: Sequence[str], jobs_in: Sequence[str]) -> list:
    """The jobs of fleet run; triage's own reports in a --jobs-in directory are skipped, with a note."""
    from ..fleet.run import find_jobs
    skipped: List[str] = []
    jobs = find_jobs(paths, jobs_in, skipped)
    if skipped:
        shown = ", ".join(repr(p) for p in skipped[:3]) + (f" (+{len(skipped) - 3} more)" if len(skipped) > 3 else "")
        click.echo(f"triage: note: skipped {len(skipped)} triage report(s) in --jobs-in, not logs: {shown}", err=True)
    return jobs


def _old_workers(workers: int, old: Optional[int]) -> int:
    if old is None:
        return workers
    deprecated("--jobs", "-j/--workers")
    return workers or old


def _fleet_options_agree(no_store: bool, require_store: bool, db: Optional[str], fail_on: Sequence[str]) -> None:
    if no_store and (require_store or db):
        raise click.UsageError(f"--no-store and {'--require-store' if require_store else '--db'} contradict each "
                               "other: give one of them")
    if "new" in fail_on and no_store:
        raise click.UsageError("--fail-when new needs the store (a signature never seen before in it): drop --no-store")


@fleet.command("report")
@click.option("--since", default="7d", show_default=True, metavar="PERIOD",
              help="The period shown: 7d, 12h, 2w, or a date YYYY-MM-DD; 'all' for the whole store.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(FLEET_FORMATS), default=None,
              help="text (default), json, markdown or html; with -o, taken from the file suffix.")
@output_options("the report")
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

    from ..fleet.run import parse_since, view
    from ..fleet.store import Store
    t0 = None if since.strip().lower() == "all" else parse_since(since)
    with Store(db, existing=True) as store:
        records = list(store.records(since=t0))
        seen = store.seen(signatures=[r.signature for r in records if r.signature])
        known = store.known_list()
    links = None
    if reports_dir is not None:
        from ..fleet.job_reports import base_of, stored_links
        links = stored_links(records, reports_dir, base_of(output))
    _fleet_output(view(records, seen, known, since=t0, until=_time.time(), daily=True, reports=links), fmt,
                  output, force)


@fleet.command("recheck")
@click.option("--since", default="all", show_default=True, metavar="PERIOD",
              help="The stored jobs rechecked: 'all', or a period (7d, 12h, 2w) or a date (YYYY-MM-DD) "
                   "of their job time.")
@click.option("--db", "db", metavar="URL", default=None, help=DB_HELP)
@click.option("--patterns", "pattern_dirs", multiple=True, type=click.Path(), help=PATTERNS_HELP)
@click.option("-j", "--workers", "workers", type=click.IntRange(min=0), default=0, metavar="N",
              help=WORKERS_HELP.format(what="each analyses one job at a time, so N jobs at once",
                                       default="default 0:", cap=""))
@click.option("--jobs", "workers_old", type=click.IntRange(min=0), default=None, hidden=True,
              help="Old spelling of --workers.")
@click.option("--dry-run", is_flag=True, help="Say what would change; leave the store as it is.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@output_options("the result")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def fleet_recheck(since: str, db: Optional[str], pattern_dirs: List[str], workers: int, dry_run: bool, fmt: str,
                  output: Optional[str], force: bool, quiet: bool, workers_old: Optional[int]) -> None:
    """Triage the stored jobs again with today's catalog (after a pattern was added, --patterns,
    or a known issue linked) and say which unexplained groups are now explained or covered by a
    known issue and which verdicts changed.  Each job whose log is still readable (where it was
    analysed from) is analysed again and its record replaced; its old verdict is kept in the
    store's history.  Jobs piped on stdin or whose log is gone are counted as skipped.

    \b
    Examples:
      triage fleet recheck --since 30d --db postgresql://triage@db/triage
      triage fleet recheck --patterns team-patterns/ --dry-run --format json"""
    from ..fleet.recheck import recheck, render_text
    from ..fleet.run import parse_since
    workers = _old_workers(workers, workers_old)
    from ..progress import for_jobs
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
