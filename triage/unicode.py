"""Text that every UTF-8 output can carry.  A file name, job id or environment variable whose bytes
are no UTF-8 reaches Python as lone surrogates (os.fsdecode's surrogateescape): no UTF-8 encoder,
JSON consumer or database takes them.  Reports and the store show such a character as U+FFFD."""
from __future__ import annotations

import re

_SURROGATES = re.compile("[\ud800-\udfff]")


def utf8_safe(text: str) -> str:
    """TEXT, with each lone surrogate replaced by U+FFFD (TEXT itself when it has none)."""
    if text.isascii() or not _SURROGATES.search(text):
        return text
    return _SURROGATES.sub("\ufffd", text)
