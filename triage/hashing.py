"""SHA-1 and SHA-256 of small things (cache keys, fingerprints) without loading OpenSSL.

`import hashlib` loads `_hashlib` (OpenSSL): ~3 ms of a tiny log's start-up.  These are the builtin
implementations hashlib itself falls back to (`_sha1`, and `_sha2` from Python 3.12, `_sha256`
before): the same digests (tests/test_startup.py compares them).  Big inputs (the content hash of
`analyze --record`) keep hashlib's OpenSSL ones, which are faster on many bytes."""
from __future__ import annotations

from typing import Any, Callable, Dict

_MADE: Dict[str, Callable[..., Any]] = {}


def _maker(name: str) -> Callable[..., Any]:
    f = _MADE.get(name)
    if f is None:
        f = _builtin(name)
        _MADE[name] = f
    return f


def _builtin(name: str) -> Callable[..., Any]:
    try:
        if name == "sha1":
            from _sha1 import sha1 as f1  # type: ignore[import-not-found]
            return f1  # type: ignore[no-any-return]
        try:
            from _sha2 import sha256 as f2  # type: ignore[import-not-found]  # Python >= 3.12
            return f2  # type: ignore[no-any-return]
        except ImportError:
            from _sha256 import sha256 as f3  # type: ignore[import-not-found]  # Python 3.11
            return f3  # type: ignore[no-any-return]
    except ImportError:              # an interpreter without them: hashlib's
        import hashlib
        return getattr(hashlib, name)  # type: ignore[no-any-return]


def sha1(data: bytes = b"") -> Any:
    return _maker("sha1")(data)


def sha256(data: bytes = b"") -> Any:
    return _maker("sha256")(data)
