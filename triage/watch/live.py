"""`triage watch`: the live loop.  Follow the inputs (follow.py), feed only their new bytes to the
same engine and catalog as `analyze` (scan/live.py, Engine.stream), decide the verdict the way
`analyze` does (analyse + add_config_analysis on a snapshot), and emit events (events.py).

When is a verdict reached?  A snapshot whose verdict has a primary finding of severity error or
critical, or an unexplained failure (the job failed and no pattern explains it), is a candidate.
A candidate is emitted once the same verdict (signature, pitfall, first failing rank) has stood for
--settle seconds: later lines can still overturn it (another rank's earlier error arriving late
from a slower file system, a launcher's summary naming another rank as the first failure).  An
unexplained failure waits three times as long: whether a traceback ended its process is told by
the lines that follow it (or do not).  When the job's end is seen, the candidate is emitted at once.

Snapshots cost a copy of the scan state: one is taken only when something the verdict depends on
arrived (a new match, error block, launcher exit or summary, an open traceback growing) and at
most every SNAPSHOT_EVERY seconds (more apart when a snapshot is slow: at most ~1/SNAPSHOT_BUDGET of
the time), which keeps a quiet log's cost to the anchor search of its new bytes.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..inputs.sources import rank_from_filename
from ..kinds import UNEXPLAINED
from ..pipeline import Seen, assemble
from ..scan.engine import Engine
from ..scan.live import LiveScan
from . import events as E
from .follow import Chunk, Follower
from .progress import Progress

POLL_S = 0.25              # seconds between polls of the inputs
SNAPSHOT_EVERY = 0.5       # seconds between verdict snapshots at least (before a verdict)
SNAPSHOT_AFTER = 2.0       # ... after the verdict was emitted (cascade findings, a revised verdict)
SNAPSHOT_BUDGET = 10       # a snapshot that took T seconds is followed by none for SNAPSHOT_BUDGET * T
END_DRAIN_S = 1.0          # after the launcher's end lines: wait this long without new bytes ...
END_DRAIN_MAX_S = 10.0     # ... but no longer than this
MIN_STALL_S = 60.0         # the default --stall is 10x the median step time, at least this
STALL_STEPS = 10
BUSY_FACTOR = 10           # a checkpoint save / evaluation in progress stretches the stall window this much
UNEXPLAINED_SETTLE = 3     # an unexplained failure waits this many times --settle
HOOK_WAIT_S = 60.0         # at the end, an --on-failure command still running is waited for this long


@dataclass
class WatchOptions:
    settle: float = 3.0
    stall: Optional[float] = None          # None: from the observed step time
    heartbeat: float = 60.0                # 0: none
    idle: float = 3600.0                   # 0: never
    fail_on: str = "error"
    on_failure: Optional[str] = None
    report_dir: Optional[str] = None
    poll: float = POLL_S


@dataclass
class _Pending:
    key: Tuple[Any, ...]
    since: float
    unexplained: bool


@dataclass
class WatchState:
    """What the loop knows between polls (tests read it)."""
    emitted_key: Optional[Tuple[Any, ...]] = None
    cascades: Set[str] = field(default_factory=set)
    hang_for: Optional[float] = None       # the last_advance a hang-suspected was emitted for
    hook_ran: bool = False


class Watch:
    def __init__(self, paths: List[str], pats: list, opts: WatchOptions, emit: Callable[[Dict[str, Any]], None],
                 store: Optional[Callable[[Any], None]] = None, clock: Callable[[], float] = time.monotonic):
        self.paths = paths
        self.pats = pats
        self.opts = opts
        self.emit = emit
        self.store = store
        self.clock = clock
        self.t0 = clock()
        self.follower = Follower(paths)
        self.seen = Seen()
        self.live = LiveScan(Engine(pats), self.seen.observers())
        self.progress = Progress(clock)
        self.state = WatchState()
        self.analysis: Any = None
        self.pending: Optional[_Pending] = None
        self.dirty = False
        self.last_snapshot = -1e9
        self.snapshot_cost = 0.0
        self.last_bytes = self.t0
        self.last_heartbeat = self.t0
        self.fingerprint: Tuple[Any, ...] = ()
        self.hook: Optional[subprocess.Popen] = None
        self._tmp: Optional[str] = None
        self.reports: Dict[str, str] = {}
        self.snapshots = 0
        self.file_ranks: Dict[str, Optional[int]] = {}
        self.interrupted: Optional[BaseException] = None    # Ctrl-C / SIGTERM: re-raised once finished

    # --- the loop -------------------------------------------------------------------------------
    def run(self) -> int:
        reason = "stopped"
        try:
            while True:
                now = self.clock()
                self.step(now)
                why = self._end_reason(now)
                if why:
                    reason = why
                    break
                time.sleep(self.opts.poll)
        except KeyboardInterrupt as e:   # StopWatch (SIGUSR1): stopped; Ctrl-C / SIGTERM: interrupted (cli's exit)
            from ..errors import StopWatch
            reason = "stopped" if isinstance(e, StopWatch) else "interrupted"
            self.interrupted = None if isinstance(e, StopWatch) else e
        return self.finish(reason)

    def step(self, now: float) -> None:
        chunks = self.follower.poll()
        if chunks:
            self._feed(chunks, now)
        if self.dirty and now - self.last_snapshot >= self._snapshot_gap():
            self._decide(now)
        self._settle(now, ended=False)
        if self.state.emitted_key is not None and self.analysis is not None:
            self._cascades(now)
        self._hang(now)
        self._heartbeat(now)

    def _feed(self, chunks: List[Chunk], now: float) -> None:
        for c in chunks:
            if c.kind == "data":
                self.live.feed(c.label, c.data, c.path)
                fr = self.file_ranks.get(c.label, -2)
                if fr == -2:
                    fr = self.file_ranks[c.label] = rank_from_filename(c.path) if c.path and c.path != "-" else None
                self.progress.feed(c.data, fr)
                self.last_bytes = now
            elif c.kind == "skip":                       # fallen behind a fast writer: read on from its tail
                self.live.skip(c.label, c.skipped)
                self.last_bytes = now
            else:
                self.live.end_input(c.label)
        fp = self._relevance()
        if fp != self.fingerprint or self._open_blocks():      # an open traceback that grew counts
            self.fingerprint = fp
            self.dirty = True

    def _relevance(self) -> Tuple[Any, ...]:
        """What the verdict depends on, in counts: it changed, the verdict may have."""
        core = self.live.core
        return (len(core.matches), sum(core.dropped.values()), len(core.blocks), len(core.tail_blocks or ()),
                core.blocks_dropped, len(core.exits), core.form_seen, len(core.root_summaries), core.root_rank,
                tuple(s.restarts for s in core.inputs.values()))

    def _open_blocks(self) -> bool:
        return any(st.block is not None for st in self.live.core.streams.values())

    def _snapshot_gap(self) -> float:
        base = SNAPSHOT_AFTER if self.state.emitted_key is not None else SNAPSHOT_EVERY
        return max(base, SNAPSHOT_BUDGET * self.snapshot_cost)

    # --- the verdict ----------------------------------------------------------------------------
    def analyse_now(self) -> Any:
        """The analysis of everything read so far, as `analyze` would make it."""
        res, (seen,) = self.live.snapshot((self.seen,))
        if res.lines == 0:
            return None
        return assemble(res, seen, self.pats)       # type: ignore[arg-type]

    def _decide(self, now: float) -> None:
        t = time.perf_counter()
        self.analysis = self.analyse_now()
        self.snapshot_cost = time.perf_counter() - t
        self.snapshots += 1
        self.last_snapshot = now
        self.dirty = False                        # set again by new bytes that matter (_feed)
        key = self._candidate(self.analysis)
        if key is None:
            self.pending = None
        elif self.pending is None or self.pending.key != key:
            self.pending = _Pending(key, now, self.analysis.verdict.outcome == UNEXPLAINED)

    @staticmethod
    def _candidate(a: Any) -> Optional[Tuple[Any, ...]]:
        return None if a is None else a.verdict.alert_key()

    def _settle(self, now: float, ended: bool) -> None:
        pd = self.pending
        if pd is None or pd.key == self.state.emitted_key:
            return
        wait = self.opts.settle * (UNEXPLAINED_SETTLE if pd.unexplained else 1)
        if not ended and (now - pd.since < wait or self.dirty):
            return
        revised = self.state.emitted_key is not None
        self.state.emitted_key = pd.key
        a = self.analysis
        report = self._write_reports(a)
        ev = E.base("root-cause", now - self.t0)
        ev.update(E.verdict_fields(a, self.opts.fail_on))
        ev["settle_s"] = round(wait, 3)
        ev["revised"] = revised
        ev["report"] = report
        self.emit(ev)
        for f in a.verdict.findings:             # the cascade known so far is the root cause's
            if f.role == "cascade":
                self.state.cascades.add(f.fingerprint)
        if self.store is not None:
            self.store(a)
        if not self.state.hook_ran and self.opts.on_failure:
            self._run_hook(ev, report)

    def _cascades(self, now: float) -> None:
        a = self.analysis
        for f in a.verdict.findings:
            if f.role == "cascade" and f.fingerprint not in self.state.cascades:
                self.state.cascades.add(f.fingerprint)
                ev = E.base("cascade", now - self.t0)
                ev.update(E.finding_fields(f))
                ev["ranks_text"] = f.ranks_text
                ev["count"] = f.count
                ev["root_cause"] = a.verdict.signature
                self.emit(ev)

    # --- hangs and the heartbeat ----------------------------------------------------------------
    def stall_window(self) -> float:
        if self.opts.stall:
            return self.opts.stall
        med = self.progress.median_step_s()
        return max(MIN_STALL_S, STALL_STEPS * med) if med else MIN_STALL_S

    def _failing(self) -> bool:
        """A rank logged an error: a verdict is settling or was emitted (then it is no silent hang)."""
        return self.pending is not None or self.state.emitted_key is not None

    def _hang(self, now: float) -> None:
        pr = self.progress
        if pr.last_advance is None or self.state.hang_for == pr.last_advance or pr.ended_at is not None:
            return
        quiet_since = max(pr.last_advance, pr.busy_at or 0.0)
        window = self.stall_window() * (BUSY_FACTOR if pr.busy_since is not None else 1)
        if now - quiet_since < window or self._failing():
            return
        self.state.hang_for = pr.last_advance
        ev = E.base("hang-suspected", now - self.t0)
        ev.update({"stalled_s": round(now - pr.last_advance, 3), "stall_s": round(window, 3),
                   "suspects": pr.laggards(), "last_step": pr.steps(),
                   "step_s": _r(pr.median_step_s()), "checkpoint_or_eval": pr.busy_since is not None})
        self.emit(ev)

    def _heartbeat(self, now: float) -> None:
        hb = self.opts.heartbeat
        if not hb or now - self.last_heartbeat < hb:
            return
        self.last_heartbeat = now
        if self.state.emitted_key is not None or self.pending is not None:
            return
        if not self.live.lines:               # never "healthy" before a line was read (issue 45)
            self.emit(self._waiting(now))
            return
        pr = self.progress
        ev = E.base("healthy-progress", now - self.t0)
        ev.update({"last_step": pr.steps(), "step_s": _r(pr.median_step_s()),
                   "since_advance_s": _r(now - pr.last_advance) if pr.last_advance is not None else None,
                   "lines": self.live.lines, "bytes": self.live.nbytes})
        self.emit(ev)

    def _waiting(self, now: float) -> Dict[str, Any]:
        """The heartbeat while no line was read: the inputs that are not there yet, else nothing logged."""
        ev = E.base("waiting", now - self.t0)
        ev.update({"missing": self.follower.missing(), "lines": self.live.lines, "bytes": self.live.nbytes})
        return ev

    # --- the end ----------------------------------------------------------------------------------
    def _end_reason(self, now: float) -> Optional[str]:
        pr = self.progress
        if pr.ended_at is not None:
            if now - self.last_bytes >= END_DRAIN_S or now - pr.ended_at >= END_DRAIN_MAX_S:
                return "launcher"
        if self.follower.closed:
            return "input-closed"
        if self.opts.idle and now - self.last_bytes >= self.opts.idle:
            return "idle"
        return None

    def finish(self, reason: str) -> int:
        """The job ended (or watch was stopped): the final verdict, the `ended` event; the exit code."""
        now = self.clock()
        for lab in list(self.live.inputs):
            self.live.end_input(lab)
        self._decide(now)
        self.dirty = False
        self._settle(now, ended=True)          # a verdict still settling is the verdict now
        if self.state.emitted_key is not None:
            self._cascades(now)
        a = self.analysis
        ev = E.base("ended", now - self.t0)
        ev["reason"] = reason
        if pr_line := self.progress.end_line:
            ev["launcher_line"] = pr_line
        code = 0
        if a is not None:
            ev.update(E.verdict_fields(a, self.opts.fail_on))
            code = int(ev["exit_code"])
            ev["report"] = self._write_reports(a)
            if self.store is not None:
                self.store(a)
        else:
            ev.update({"outcome": None, "exit_code": 0, "summary": "nothing was logged", "report": None})
        ev["last_step"] = self.progress.steps()
        self.emit(ev)
        self.follower.close()
        if self.hook is not None:
            try:
                self.hook.wait(timeout=HOOK_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        return code

    # --- reports and the hook ---------------------------------------------------------------------
    def _write_reports(self, a: Any) -> Optional[str]:
        """--report DIR: the JSON and HTML reports of A (atomically); returns the JSON's path.  Without
        --report, an --on-failure command still gets a report: in a temporary directory."""
        d = self.opts.report_dir
        if d is None:
            if not self.opts.on_failure or self.state.hook_ran:
                return None
            if self._tmp is None:
                self._tmp = tempfile.mkdtemp(prefix="triage-watch-")
            d = self._tmp
        from ..report import build_view, render_view
        os.makedirs(d, exist_ok=True)
        out = None
        view = build_view(a)            # one report dict for both: the JSON and the HTML of the same view
        for fmt, name in (("json", "triage-report.json"), ("html", "triage-report.html")):
            path = os.path.join(d, name)
            _write_atomic(path, render_view(view, fmt))
            self.reports[fmt] = path
            if fmt == "json":
                out = path
        return out

    def _run_hook(self, ev: Dict[str, Any], report: Optional[str]) -> None:
        self.state.hook_ran = True
        env = dict(os.environ)
        env.update({"TRIAGE_PRIMARY": str(ev.get("pitfall") or ev.get("outcome") or ""),
                    "TRIAGE_RANK": "" if ev.get("rank") is None else str(ev["rank"]),
                    "TRIAGE_SIGNATURE": str(ev.get("signature") or ""),
                    "TRIAGE_OUTCOME": str(ev.get("outcome") or ""),
                    "TRIAGE_SUMMARY": str(ev.get("summary") or ""),
                    "TRIAGE_REPORT": report or "",
                    "TRIAGE_REPORT_HTML": self.reports.get("html", "")})
        v = self.analysis.verdict if self.analysis is not None else None
        env.update({"TRIAGE_ACTION": v.action if v is not None else "",          # issue 43: what to do next
                    "TRIAGE_ACTION_HOST": (v.action_host or "") if v is not None else ""})
        try:
            self.hook = subprocess.Popen(self.opts.on_failure or "", shell=True, stdin=subprocess.PIPE, env=env,
                                         stdout=subprocess.DEVNULL)
            assert self.hook.stdin is not None
            self.hook.stdin.write((E.to_json(ev) + "\n").encode())
            self.hook.stdin.close()
        except (OSError, BrokenPipeError) as e:
            import sys
            print(f"triage: warning: --on-failure could not run: {e}", file=sys.stderr)


def _r(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x, 3)


def _write_atomic(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".triage-", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
