"""A finding's identity: its message with its secrets redacted, then what varies between ranks
and jobs masked (hosts, paths, numbers, times), and the fingerprint of a (pitfall, masked message)
pair.  Redaction comes first: masked, a token or a URL's password is no longer recognisable (its
digits are <n>, `://svc:PASS@db:5432/x` is a <path>), and it would reach the signature, the store
and every fleet output; redacted, two jobs that differ only in a secret have the same identity."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .. import hashing as hashlib
from ..redact import redact, redact_lines
from ..scan.rx import lazy

_MASKS = [
    # NCCL's "host:pid:tid [dev]" prefix and hostnames: the same failure on another node is the same
    (lazy(r"(?m)^(?:\[[^\]]*\] )?[\w.\-]+:\d+:\d+ \[\d+\]"), "<host>:<pid>:<tid> [<dev>]"),
    (lazy(r"\b(?:host|hostname|node)\s*[:=]\s*[\w.\-]+"), "host: <host>"),
    (lazy(r"(?:/[\w.\-+@]+)+/?|[A-Za-z]:\\[\w\\.\-]+"), "<path>"),
    (lazy(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b"), "<hex>"),
    (lazy(r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?"), "<time>"),
    (lazy(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+"), "<time>"),
    (lazy(r"\b(?:rank|Rank|RANK)\s*+(?:[:=]\s*+)?\d+"), "rank <n>"),  # (possessive: linear)
    (lazy(r"\d+(?:\.\d+)?"), "<n>"),
    (lazy(r"\s+"), " "),
]


def _mask(text: str) -> str:
    # every mask is linear in the line (no nested or adjacent quantifiers that can backtrack over one
    # another: the rank mask's are possessive), so none runs with rx's timeout, which doubles the cost
    # of a search (a 4,096-rank watchdog storm masks 10,000 distinct dropped lines)
    for rx, rep in _MASKS:
        text = rx.sub(rep, text)
    return text.strip()


def mask(text: str) -> str:
    """Redact the secrets of a message, then mask the parts that vary between ranks and jobs."""
    return _mask(redact(text))


def mask_lines(lines: Sequence[str], memo: Optional[Dict[str, str]] = None) -> List[str]:
    """`mask` of consecutive lines of one block (a key block spread over them is redacted whole);
    MEMO: the masks of redacted lines already seen, shared between blocks."""
    memo = {} if memo is None else memo
    out = []
    for x in redact_lines(lines):
        m = memo.get(x)
        if m is None:
            m = memo[x] = _mask(x)
        out.append(m)
    return out


def fingerprint(pitfall: str, text: str) -> str:
    return hashlib.sha1(f"{pitfall}\x00{mask(text)}".encode("utf-8", "replace")).hexdigest()[:12]


def signature_id(signature: str) -> str:
    """A job signature's short id (12 hex characters), shown by every report: `triage known add ID URL`
    links a ticket without quoting the signature."""
    return hashlib.sha1(signature.encode("utf-8", "replace")).hexdigest()[:12]
