"""The one base class of the errors a user causes (a bad input, pattern, config, store or
argument): the CLI turns any of them into one line on stderr and exit 2, in one place.  Anything
else reaching the CLI is an internal error (its own exit code and a request for a bug report)."""
from __future__ import annotations


class TriageError(Exception):
    """An error the user can fix; its message is one line that says what is wrong with what."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (a report being written is removed, never
    left half): the CLI exits 143 (128 + SIGTERM) where Ctrl-C exits 130, each with one line on stderr."""


class StopWatch(KeyboardInterrupt):
    """`triage watch`'s own stop (SIGUSR1): end now with the verdict so far and its exit code, as when
    the job ends; not an interruption."""


EXIT_SIGINT = 130       # 128 + SIGINT: the shell's convention for a command stopped by Ctrl-C
EXIT_SIGTERM = 143      # 128 + SIGTERM
