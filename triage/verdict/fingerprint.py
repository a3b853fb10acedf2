"""A finding's identity: its message with its secrets redacted, then what varies between ranks
and jobs masked (hosts, paths, numbers, times), and the fingerprint of a (pitfall, masked message)
pair.  Redaction comes first: masked, a token or a URL's password is no longer recognisable (its
digits are <n>, `://svc:PASS@db:5432/x` is a <path>), and it would reach the signature, the store
and every fleet output; redacted, two jobs that differ only in a secret have the same identity."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

from .. import hashing as hashlib
from .. import tables
from ..match.rx import lazy
from ..redact import redact, redact_lines

_MASKS = [(lazy(m["regex"]), m["mask"]) for m in tables.load("verdict/masks")["masks"]]   # masks.yaml


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


# Lines that differ only in the values of their ASCII digits have one mask: every digit ends up in a
# placeholder (the number mask takes what the others leave) and no mask tells one digit from another,
# except `0x` (the hex mask's literal).  So the memo's key is the line with its digits made one: a
# 4,096-rank watchdog storm's 32,800 distinct lines (93 of them with a `0x`) are 185 keys.
_ONE_DIGIT = str.maketrans("0123456789", "1111111111")
_ONE_DIGIT_BUT_0 = str.maketrans("123456789", "111111111")
# (the same on an ASCII line's bytes: bytes.translate is a table lookup a byte, str.translate a dict lookup a
# character -- 10,000 dropped lines of a storm spent 27 of their 117 ms there; a bytes key is never a str's)
_ONE_DIGIT_B = bytes.maketrans(b"0123456789", b"1111111111")
_ONE_DIGIT_BUT_0_B = bytes.maketrans(b"123456789", b"111111111")


# the masks of redacted lines already seen, by _mask_key; and their fingerprints, by (pitfall, _mask_key)
MaskMemo = Dict[Union[str, bytes, Tuple[str, Union[str, bytes]]], str]


def _mask_key(x: str) -> Union[str, bytes]:
    if x.isascii():
        return x.encode("ascii").translate(_ONE_DIGIT_BUT_0_B if "0x" in x else _ONE_DIGIT_B)
    return x.translate(_ONE_DIGIT_BUT_0 if "0x" in x else _ONE_DIGIT)


def mask_lines(lines: Sequence[str], memo: Optional[MaskMemo] = None) -> List[str]:
    """`mask` of consecutive lines of one block (a key block spread over them is redacted whole);
    MEMO: the masks of redacted lines already seen (by _mask_key), shared between blocks."""
    memo = {} if memo is None else memo
    out = []
    for x in redact_lines(lines):
        k = _mask_key(x)
        m = memo.get(k)
        if m is None:
            m = memo[k] = _mask(x)
        out.append(m)
    return out


def fingerprint(pitfall: str, text: str, memo: Optional[MaskMemo] = None) -> str:
    """The fingerprint of (PITFALL, TEXT masked); MEMO: the masks of redacted texts already seen (by
    _mask_key), for many texts in a row."""
    if memo is None:
        return hashlib.sha1(f"{pitfall}\x00{mask(text)}".encode("utf-8", "replace")).hexdigest()[:12]
    return fingerprint_redacted(pitfall, redact(text), memo)


def fingerprint_redacted(pitfall: str, x: str, memo: MaskMemo) -> str:
    """fingerprint(PITFALL, TEXT, MEMO) of the text whose redaction (redact) is X."""
    k = _mask_key(x)
    fp = memo.get((pitfall, k))         # (a storm's 10,000 dropped lines: ~185 keys, a hash each)
    if fp is None:
        known = memo.get(k)
        masked = known if known is not None else memo.setdefault(k, _mask(x))
        fp = memo[(pitfall, k)] = hashlib.sha1(f"{pitfall}\x00{masked}".encode("utf-8", "replace")).hexdigest()[:12]
    return fp


def signature_id(signature: str) -> str:
    """A job signature's short id (12 hex characters), shown by every report: `triage known add ID URL`
    links a ticket without quoting the signature."""
    return hashlib.sha1(signature.encode("utf-8", "replace")).hexdigest()[:12]
