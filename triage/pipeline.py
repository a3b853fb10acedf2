"""One assembly (issue 41): `triage(logs, options) -> Analysis` for analyze, fleet, recheck and watch.
One streaming pass feeds the engine, the config collector and the step-time parser (scan_logs); then
findings, config/blame and step-time verdicts are put together and the verdict decided once (assemble)."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .config import Config, LogConfigCollector, build_config, canonical, check, cond_holds, diff, with_log_env
from .inputs.frdump import find_dumps, read_dumps
from .inputs.sources import InputError, Line
from .kinds import UNEXPLAINED
from .patterns import Pattern, load_all
from .progress import for_inputs, slow_search_note
from .record import record
from .scan.engine import Engine
from .scan.observer import Feeder
from .scan.results import ScanResult
from .verdict import Analysis, ConfigAnalysis, Evidence, StepLog, assess, blame, gather, make_finding
from .verdict.action import PriorAttempt


@record
class Seen:
    """What the single pass over a log collected besides pattern matches."""
    config: LogConfigCollector = field(default_factory=LogConfigCollector)
    steps: StepLog = field(default_factory=StepLog)
    dumps: List[Any] = field(default_factory=list)    # inputs.frdump.FRDump: the Flight Recorder dumps beside the logs

    def observers(self) -> List[Feeder]:
        """The config collector and the step-time parser as line observers of a block scan."""
        return [Feeder(self.config, LogConfigCollector.ANCHORS, self.config.following, records=True),
                Feeder(self.steps, StepLog.ANCHORS, batch=True)]


def _tee(lines: Iterable[Line], seen: Seen) -> Iterator[Line]:
    for ln in lines:
        seen.config.feed(ln)
        seen.steps.feed(ln)
        yield ln


def _logs(logs: Sequence[str]) -> Sequence[str]:
    if logs:
        return logs
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("no log given: pass LOG files/directories or pipe a log on stdin")
    return ["-"]


@record(frozen=True)
class Options:
    """What an analysis is asked for besides its logs (`triage`, `assemble`)."""
    pattern_dirs: Tuple[str, ...] = ()
    pats: Optional[Tuple[Pattern, ...]] = None      # the catalog already loaded (else from pattern_dirs)
    config_files: Tuple[str, ...] = ()
    baseline_files: Tuple[str, ...] = ()
    baseline_logs: Tuple[str, ...] = ()
    env: Tuple[str, ...] = ()
    progress: bool = False              # a progress bar on a terminal for big inputs (progress.for_inputs)
    max_bytes: int = 0                  # read at most that many bytes of each input (0: all)
    content_hash: bool = False          # hash the inputs' bytes in the same read (the store's key)
    prior: Optional[PriorAttempt] = None  # the job's attempt before, from its own files (issue 43: stop on no progress)
    spool: bool = False                 # a big pipe on stdin copied to a file first, read as one (inputs/spool.py)

    def patterns(self) -> List[Pattern]:
        return list(self.pats) if self.pats is not None else load_all(self.pattern_dirs)


def triage(logs: Sequence[str], options: Optional[Options] = None) -> Analysis:
    """THE analysis of LOGS, as `analyze`, `fleet`, `recheck` and `watch` (a snapshot: `assemble`) make
    it: one scan, then everything it showed put together and the verdict decided, once."""
    options = options if options is not None else Options()
    pats = options.patterns()
    scan, seen = scan_logs(logs, pats, options)
    a = assemble(scan, seen, pats, options)
    if options.baseline_logs and a.verdict.outcome == UNEXPLAINED:
        _add_novelty(a, _logs(logs), options.baseline_logs)
    return a


def _add_novelty(a: Analysis, paths: Sequence[str], baseline_logs: Sequence[str]) -> None:
    """An unexplained failure with its last good log: the lines only the failed run printed (novelty.py)."""
    if "-" in paths:
        a.notes.append("novelty: the failed run's log came on stdin, which cannot be read again: give it as a "
                       "file to see the lines it printed and the last good run did not")
        return
    from .novelty import novel_lines
    a.novel_lines, notes = novel_lines(paths, baseline_logs)
    a.notes.extend(notes)


def reached_in(paths: Sequence[str]) -> "Optional[int] | bool":
    """Issue 43: the highest iteration the last run of iterations in PATHS reached (None: no step line);
    False when they cannot be read (gone, unreadable) -- an earlier attempt's logs, read for its steps only."""
    from .inputs.sources import expand_paths, read_lines
    steps = StepLog()
    import os
    import stat
    try:
        for p in expand_paths(paths):
            if p == "-" or not stat.S_ISREG(os.stat(p).st_mode):
                return False            # (a FIFO now where a log was: reading it would wait for a writer)
            for ln in read_lines(p):
                steps.feed(ln)
    except (InputError, OSError):
        return False
    return steps.reached()


def scan_logs(logs: Sequence[str], pats: List[Pattern], options: Optional[Options] = None) -> Tuple[ScanResult, Seen]:
    """One pass over LOGS: the scan, and what else it saw (config, step times)."""
    options = options if options is not None else Options()
    seen = Seen()
    paths, dumps = find_dumps(_logs(logs))     # issue 43: Flight Recorder dumps are read apart, never scanned
    if dumps and not paths:
        raise InputError("only Flight Recorder dumps were given: pass the job's logs with them (or the directory "
                         "that holds both)")
    seen.dumps = read_dumps(dumps)
    paths = _spooled(paths, options)
    if options.progress:
        slow_search_note(paths, max_bytes=options.max_bytes)
    bar = for_inputs(paths, max_bytes=options.max_bytes) if options.progress else None
    from .scan.demote import demote_common
    pats, demoted = demote_common(pats, paths)     # issue 46: a user literal on most lines is left out
    try:
        scan = Engine(pats).scan_paths(paths, extra=seen.observers(), progress=bar, max_bytes=options.max_bytes,
                                       content_hash=options.content_hash)
    finally:
        if bar is not None:
            bar.close()
    scan.notes.extend(demoted)
    if scan.lines == 0 and not scan.notes:      # no verdict of nothing: "healthy" would be a lie
        raise InputError(f"the input is empty: nothing to triage ({', '.join(paths)[:200]})")
    _one_job_by_summaries(paths, scan.launcher_summaries)
    return scan, seen


def _spooled(paths: List[str], options: Options) -> List[str]:
    """PATHS with a big pipe on stdin ("-") copied to a file first, where OPTIONS ask (inputs/spool.py; not when
    the inputs' bytes are hashed: a stored verdict's digest is the pipe's)."""
    if not options.spool or "-" not in paths or options.content_hash:
        return paths
    from .inputs.spool import spooled_stdin
    copy = spooled_stdin(options.max_bytes)
    return paths if copy is None else [copy if p == "-" else p for p in paths]


def assemble(scan: ScanResult, seen: Seen, pats: List[Pattern], options: Optional[Options] = None) -> Analysis:
    """What a scan showed, put together: findings and crashes (verdict.gather), the config, its rules,
    step times and blame (add_config_analysis, which decides the verdict once every analyser ran)."""
    options = options if options is not None else Options()
    a = gather(scan)
    a.notes.extend(scan.notes)          # unreadable inputs, a --max-bytes cap, a decompression bomb
    a.content_hash = scan.content_hash
    add_config_analysis(a, pats, seen, options.config_files, options.baseline_files, options.baseline_logs,
                        options.env, options.prior)
    return a


def _one_job_by_summaries(paths: Sequence[str], summaries: Sequence[Tuple[str, int]]) -> None:
    """Directories given as one job whose files hold launcher summaries of several jobs -- two
    inputs whose torchrun summary names the same global rank as the root cause, which one job's
    node agents never do (each names one of its own ranks) -- would get one mixed verdict: an
    InputError pointing at triage fleet.  Per-attempt directories (TorchElastic's attempt_N) are
    one job's restarts, not jobs."""
    dirs = [p for p in paths if p != "-" and os.path.isdir(p)]
    if not dirs:
        return
    by_rank: Dict[int, set] = {}
    for src, rank in summaries:
        if not re.search(r"(?:^|/)attempt_\d+/", src):
            by_rank.setdefault(rank, set()).add(src)
    clash = sorted((r, sorted(s)) for r, s in by_rank.items() if len(s) > 1)
    if clash:
        rank, files = clash[0]
        shown = ", ".join(os.path.basename(f) for f in files[:4]) + (", ..." if len(files) > 4 else "")
        top = dirs[0]
        raise InputError(f"directory {top!r} holds the launcher summaries of {len(files)} jobs ({shown} each name "
                         f"rank {rank} as the first failure): one verdict would mix them; triage each job's files, "
                         f"or all of them with `triage fleet --jobs-in {top}`")


def scan_baseline(paths: Sequence[str]) -> Seen:
    seen = Seen()
    Engine([]).scan_paths(paths, extra=seen.observers())
    return seen


def _configs(seen: Seen, config_files: Sequence[str], baseline_files: Sequence[str], baseline_logs: Sequence[str],
             env: Sequence[str]) -> Tuple[Config, Config, Optional[Seen]]:
    """The run's config and the last good run's: files win over what the logs show, except for the
    environment, which only a log shows; --env wins over both."""
    from_log: Config = dict(seen.config.config())
    current: Config = with_log_env(build_config(config_files), from_log) if config_files else from_log
    if env:
        current = build_config(env=env, base=current)
    baseline: Config = {}
    base_seen: Optional[Seen] = None
    if baseline_logs:
        base_seen = scan_baseline(baseline_logs)
    if baseline_files:
        baseline = build_config(baseline_files)
        if base_seen is not None:
            baseline = with_log_env(baseline, base_seen.config.config())
    elif base_seen is not None:
        baseline = base_seen.config.config()
    return current, baseline, base_seen


_PRERELEASE = re.compile(r"\.?dev\d|\.?post\d|(?:a|b|rc)\d+(?:\+|$)|\+git|nightly", re.I)
_PINNED = {"torch_version": "torch", "te_version": "Transformer Engine", "mcore_version": "megatron-core",
           "nccl_version": "NCCL"}


# issue 43: a hang with no Flight Recorder dump says how to get one next time (PyTorch's Flight Recorder docs)
FR_HOWTO = ("no Flight Recorder dump in this log: to see next time which rank never reached which collective, "
            "run with TORCH_NCCL_DUMP_ON_TIMEOUT=1 and TORCH_FR_BUFFER_SIZE=2000 (older releases: "
            "TORCH_NCCL_TRACE_BUFFER_SIZE); each rank then writes its dump to $TORCH_FR_DUMP_TEMP_FILE<rank> "
            "(older: TORCH_NCCL_DEBUG_INFO_TEMP_FILE) on a timeout, and `triage analyze` of the logs with the dumps "
            "beside them, or torchfrtrace, reads them")


def version_notes(versions: Dict[str, str], baseline: Dict[str, str]) -> List[str]:
    """Issue 40: a failed run on a nightly / pre-release build, or on other versions than the last good
    run's: pin the last good version to tell whether the build caused it."""
    out = []
    for key, name in _PINNED.items():
        v, b = versions.get(key), baseline.get(key)
        if v and b and v != b:
            out.append(f"{name} changed since the last good run ({b} -> {v}): pin the last good version ({b}) "
                       "to tell whether the new build caused this failure")
        elif v and _PRERELEASE.search(v):
            out.append(f"{name} {v} is a nightly / pre-release build: if a release (or the last good run's "
                       "build) did not fail, pin the last good version and report the regression upstream")
    return out


def pattern_notes(p: Optional[Pattern], facts: Config) -> List[str]:
    """The primary pattern's `notes` whose conditions hold on the run's facts."""
    if p is None:
        return []
    return [n.text for n in p.notes if any(cond_holds(facts, c) for c in n.when_any)]


def _with_implied(a: Analysis, current: Config, by_id: Dict[str, Pattern], pats: List[Pattern]) -> Config:
    """A run that died before printing its config (or printed part of it) still had the settings its
    root cause's message proves (the pattern's `implies`): they join a partial config, never
    overriding what the log shows, and the report says so."""
    p = by_id.get(a.primary.pitfall) if a.primary is not None else None
    if p is None or not p.implies or (current and current.get("config_complete") is not False):
        return current
    added = {k: v for k, v in canonical(dict(p.implies)).items() if k not in current}
    if not added:
        return current
    new = dict(current)
    new.update(added)
    new["config_complete"] = False
    old = a.config
    a.config = ConfigAnalysis(config=new, violations=check(new, pats))
    if old is not None:
        a.config.diff, a.config.suspects = old.diff, old.suspects
    a.notes.append(f"the log shows no value of {', '.join(sorted(added))}: {p.id}'s message implies "
                   + ", ".join(f"{k}={v!r}" for k, v in sorted(added.items())))
    return new


def add_config_analysis(a: Analysis, pats: List[Pattern], seen: Seen, config_files: Sequence[str] = (),
                        baseline_files: Sequence[str] = (), baseline_logs: Sequence[str] = (),
                        env: Sequence[str] = (), prior: Optional[PriorAttempt] = None) -> None:
    """Attach config, rule violations, step-time verdicts and blamed changes to the analysis.

    Everything that feeds the verdict (the step-time findings) is added first; only then is the
    verdict read (and so decided, once): the notes and the blame that depend on it come last."""
    current, baseline, base_seen = _configs(seen, config_files, baseline_files, baseline_logs, env)
    a.versions = dict(seen.config.versions)
    if current:
        a.config = ConfigAnalysis(config=current, violations=check(current, pats))
    # step times (run vs run, and before vs after capture): findings of their own, before the verdict
    verdicts, perf = assess(seen.steps, current, base_seen.steps if base_seen else None, baseline)
    a.step_times = perf
    by_id = {p.id: p for p in pats}
    # every analyser has run: the verdict is decided here, once
    a.case.dumps = seen.dumps
    a.reached = seen.steps.reached()
    cap = seen.steps.capture_line
    if cap is not None:                 # issue 43: a hang after a capture may be inside a replayed graph
        a.case.capture = Evidence(cap[0], cap[1], cap[2], cap[3])
    a.decide([make_finding(by_id[v.pitfall], [Evidence(s, n, None, t) for s, n, t in v.evidence], v.message)
              for v in verdicts if v.pitfall in by_id], progressed=seen.steps.progressed(),
             prior=prior)
    current = _with_implied(a, current, by_id, pats)
    if a.verdict.hang and a.verdict.flight_recorder is None and not seen.dumps:
        a.notes.append(FR_HOWTO)
    if a.verdict.failed:
        a.notes.extend(version_notes(a.versions, base_seen.config.versions if base_seen is not None else {}))
    a.notes.extend(pattern_notes(by_id.get(a.primary.pitfall) if a.primary is not None else None,
                                 dict(current, graphs_captured=bool(seen.steps.graphs_seen))))
    if baseline and a.config is not None:
        # a config read from a log is partial, and so is one a launch script or an echoed command line
        # gives (config_complete False): a key it does not give is not given, never "changed to None"
        partial = (not (config_files and baseline_files) or current.get("config_complete") is False
                   or baseline.get("config_complete") is False)
        a.config.diff = diff(baseline, current, partial)
        rvr = perf.get("run_vs_run") if isinstance(perf, dict) else None
        faster = isinstance(rvr, dict) and rvr.get("verdict") == "faster"
        a.config.suspects = blame(baseline, current, pats, a.findings, a.primary, partial, faster=faster,
                                  after_graph_change={v.pitfall for v in verdicts if v.graph_change})
        if a.verdict.failed:
            from .verdict.bisect import bisect_plan
            a.bisect = bisect_plan(current, a.config.suspects)
    elif baseline_logs and not baseline:
        a.notes.append(
            "the baseline log shows no configuration (no arguments block or config summary): no config diff")
