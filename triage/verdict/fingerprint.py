"""A finding's identity: its message with what varies between ranks and jobs masked (hosts,
paths, numbers, times), and the fingerprint of a (pitfall, masked message) pair."""
from __future__ import annotations

import hashlib

from ..scan.rx import TIMEOUT, lazy

_MASKS = [
    # NCCL's "host:pid:tid [dev]" prefix and hostnames: the same failure on another node is the same
    (lazy(r"(?m)^(?:\[[^\]]*\] )?[\w.\-]+:\d+:\d+ \[\d+\]"), "<host>:<pid>:<tid> [<dev>]"),
    (lazy(r"\b(?:host|hostname|node)\s*[:=]\s*[\w.\-]+"), "host: <host>"),
    (lazy(r"(?:/[\w.\-+@]+)+/?|[A-Za-z]:\\[\w\\.\-]+"), "<path>"),
    (lazy(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b"), "<hex>"),
    (lazy(r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),
    (lazy(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+"), "<time>"),
    (lazy(r"\b(?:rank|Rank|RANK)\s*[:=]?\s*\d+"), "rank <n>"),
    (lazy(r"\d+(?:\.\d+)?"), "<n>"),
    (lazy(r"\s+"), " "),
]


def mask(text: str) -> str:
    """Mask the parts of a message that vary between ranks and jobs."""
    for rx, rep in _MASKS:
        text = rx.sub(rep, text, timeout=TIMEOUT)
    return text.strip()


def fingerprint(pitfall: str, text: str) -> str:
    return hashlib.sha1(f"{pitfall}\x00{mask(text)}".encode("utf-8", "replace")).hexdigest()[:12]
