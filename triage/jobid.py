"""Which job a log is: its id and attempt (issue 24).

A stored verdict is one job: (job id, attempt).  The id comes from, in order:

1. `--job-id ID` (and `--attempt N`);
2. for `triage analyze` run inside the job's own environment (a Slurm epilog, a torchrun
   wrapper, a Kubernetes pod): TRIAGE_JOB_ID, SLURM_JOB_ID, TORCHELASTIC_RUN_ID;
   the attempt from TRIAGE_ATTEMPT, SLURM_JOB_RESTART_COUNT (a Slurm Epilog's), SLURM_RESTART_COUNT
   (a requeued job's own environment), TORCHELASTIC_RESTART_COUNT;
3. the log's own name, as the schedulers write it: Slurm's default `slurm-<jobid>.out` and
   `slurm-<arrayjob>_<task>.out`; for a directory (a job's per-rank / per-task logs), the one id all
   its logs' names hold (`slurm-<jobid>-<task>.out`, ...) -- one rule for a file and a directory;
4. the log's path (absolute); for stdin, `stdin:` and the first 16 hex digits of the input's
   SHA-256 -- the same piped log is one job, two different ones are two.

`triage fleet` takes steps 1, 3 and 4 only: it runs outside the jobs, and its own environment
(a CI job inside a Slurm allocation) says nothing of the logs it reads.

The attempt defaults to 0.  The content hash is no identity: it only tells that a job's log was
analysed before unchanged.
"""
from __future__ import annotations

import os
import re
from typing import Mapping, Optional, Sequence

from .lazyre import lazy_re
from .record import record

ID_VARS = ("TRIAGE_JOB_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")
# SLURM_JOB_RESTART_COUNT: what a Slurm Epilog gets (since 22.05); SLURM_RESTART_COUNT: the job's own steps
ATTEMPT_VARS = ("TRIAGE_ATTEMPT", "SLURM_JOB_RESTART_COUNT", "SLURM_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT")
MAX_ID = 400
# Slurm's output names: slurm-%j.out, an array task's slurm-%A_%a.out, a task's slurm-%j-%t.out / _%t
# (also .err / .log, and compressed).  One name, read two ways: a file alone is its job (an array
# task's id is %A_%a, as squeue shows it); in one directory the files of one %j are one job's (sources).
SLURM_OUTPUT = lazy_re(r"^slurm-(\d+)(?:([_-])(\d+))?\.(?:out|err|log)(?:\.(?:gz|bz2|xz|zst))?$", re.I)


@record(frozen=True)
class JobIdentity:
    job_id: str
    attempt: int = 0
    source: str = "path"        # where the id came from: option | env:VAR | name | path | stdin

    def __str__(self) -> str:
        return self.job_id if not self.attempt else f"{self.job_id} (attempt {self.attempt})"


class JobIdError(ValueError):
    """An id or attempt that cannot be used (empty, too long, control characters, not a number)."""


def _clean_id(raw: str, what: str) -> str:
    s = raw.strip()
    if not s:
        raise JobIdError(f"{what} is empty")
    if len(s) > MAX_ID:
        raise JobIdError(f"{what} is longer than {MAX_ID} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in s):
        raise JobIdError(f"{what} holds control characters")
    return s


def _attempt(raw: str, what: str) -> int:
    s = raw.strip()
    if not re.fullmatch(r"\d{1,6}", s):
        raise JobIdError(f"{what}={s[:20]!r} is not an attempt number (0, 1, 2, ...)")
    return int(s)


def from_name(path: str) -> Optional[str]:
    """The job id a scheduler wrote into the log's file name (slurm-123.out -> 123), or None."""
    m = SLURM_OUTPUT.match(os.path.basename(path.rstrip("/")))
    if not m:
        return None
    return f"{m.group(1)}_{m.group(3)}" if m.group(2) == "_" else m.group(1)


DIR_NAMES_MAX = 10_000     # entries of a directory read for its logs' common job id


def _name_id(path: str) -> Optional[str]:
    """The scheduler's job id of PATH's name; for a directory, the one id every log name in it holds
    (hidden entries and files of no Slurm name ignored; None when they hold none, or several)."""
    if not os.path.isdir(path):
        return from_name(path)
    ids = set()
    try:
        with os.scandir(path) as it:
            for n, entry in enumerate(it):
                if n >= DIR_NAMES_MAX:
                    return None
                if not entry.name.startswith("."):
                    m = SLURM_OUTPUT.match(entry.name)
                    if m:
                        ids.add(m.group(1) if m.group(2) != "_" else f"{m.group(1)}_{m.group(3)}")
    except OSError:
        return None
    return ids.pop() if len(ids) == 1 else None


def identify(paths: Sequence[str], job_id: Optional[str] = None, attempt: Optional[int] = None,
             env: Optional[Mapping[str, str]] = None, use_env: bool = True,
             stdin_digest: Optional[str] = None) -> JobIdentity:
    """The identity of the job whose logs are PATHS (see the module's rule)."""
    env = os.environ if env is None else env
    att = attempt
    if att is None and use_env:
        for k in ATTEMPT_VARS:
            if env.get(k, "").strip():
                att = _attempt(env[k], k)
                break
    att = att or 0
    if job_id is not None:
        return JobIdentity(_clean_id(job_id, "--job-id"), att, "option")
    if use_env:
        for k in ID_VARS:
            if env.get(k, "").strip():
                return JobIdentity(_clean_id(env[k], k), att, f"env:{k}")
    real = [p for p in paths if p != "-"]
    names = {_name_id(p) for p in real}
    if len(real) == len(paths) and len(names) == 1 and None not in names:
        return JobIdentity(names.pop() or "", att, "name")
    if not real:
        return JobIdentity(f"stdin:{stdin_digest[:16]}" if stdin_digest else "<stdin>", att, "stdin")
    return JobIdentity(" ".join(p if "://" in p else os.path.abspath(p) if p != "-" else "<stdin>"
                                for p in paths)[:4000], att, "path")
