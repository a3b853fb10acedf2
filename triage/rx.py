"""Regex helpers: every pattern is compiled with the `regex` package and searched with a timeout."""
from __future__ import annotations

from typing import Optional

import regex

TIMEOUT = 0.05  # seconds allowed for one search of one line
timeouts = 0    # searches cut off by the timeout (checked by `triage patterns check`)


def compile_rx(pattern: str, ignore_case: bool = False) -> "regex.Pattern[str]":
    flags = regex.V0 | (regex.IGNORECASE if ignore_case else 0)
    return regex.compile(pattern, flags)


def search(rx: "regex.Pattern[str]", text: str) -> Optional["regex.Match[str]"]:
    """Search with a timeout; a pathological line counts as no match instead of hanging."""
    global timeouts
    try:
        return rx.search(text, timeout=TIMEOUT)
    except TimeoutError:
        timeouts += 1
        return None
