"""The one base class of the errors a user causes (a bad input, pattern, config, store or
argument): the CLI turns any of them into one line on stderr and exit 2, in one place.  Anything
else reaching the CLI is an internal error (its own exit code and a request for a bug report)."""
from __future__ import annotations


class TriageError(Exception):
    """An error the user can fix; its message is one line that says what is wrong with what."""
