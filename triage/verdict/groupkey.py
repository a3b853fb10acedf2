"""How an unexplained failure is grouped across jobs (issue 24), the way Sentry groups errors: by the
exception type and the top in-app frame -- where the job's own code stood when it failed -- rather
than by the exception's message.  The job signature of an unexplained failure is

    unexplained-failure: <type> @ <top in-app frame>[ (raised in <raising frame>)]

for example `unexplained-failure: FileNotFoundError @ indexed_dataset.py:__init__`, or, for a
traceback without any frame (a lone error line, a paste of the last line, srun's report), the old
message-based form `unexplained-failure: <masked error line>`.  The rule:

1. the traceback: the last one of the block (a chained exception printed in one block, "During
   handling of the above exception ..." / "The above exception was the direct cause ...", is grouped
   by the outermost exception: the one its exception line -- the verdict's title -- names).  A
   launcher's `[rank3]: ` / `0: ` prefix is already gone (the scan's launcher table strips it);
2. the exception type, as printed (`FileNotFoundError`, `torch.OutOfMemoryError`), read from the
   error line the verdict shows (its title); without an exception line, no key (rule 6);
3. the top in-app frame: the most recent frame whose file is the job's own code -- not under
   site-packages / dist-packages, not the Python standard library (`lib/python3.X/`), not a pseudo
   file (`<frozen importlib._bootstrap>`, `<string>`), not generated code (torchinductor's and
   Triton's caches), not a console-script entry point (`bin/torchrun`); a checkout such as
   /opt/megatron-lm or /workspace is in-app.  A frame is `file name:function` -- never a line
   number or a directory (they move between versions and hosts), the package for an `__init__.py`
   (`tokenizer/__init__.py:build_tokenizer`), long digit / hex runs masked;
4. the raising frame (the most recent frame of all) follows as `(raised in ...)` when it is not
   the in-app one: the same call of the job's code failing in another library function is
   another failure;
5. no in-app frame at all: the most recent frame of an installed package stands in for it (with
   the raising frame after it, as in 4: `FileNotFoundError @ filesystem.py:create_stream (raised in
   pathlib.py:open)`), else the raising frame alone (a failure in the standard library);
6. no frame (or no exception type): the masked error line (`fingerprint.mask`), as before issue 24.

The old message-based signature stays readable (`message_signature`): the verdict's and the JSON
report's `message_signature`; a known issue keyed by it still matches (store.known_match's ALSO).
docs/grouping.md states the rule for users.
"""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from ..lazyre import lazy_re
from ..redact import redact
from ..scan.blocks import EXC_LINE
from .fingerprint import mask

KEY_MAX = 200          # characters of a group key (and of the masked message), as the old signature
_TB_HEAD = "Traceback (most recent call last):"
# CPython's traceback.StackSummary.format: '  File "{filename}", line {lineno}, in {name}'
_FRAME = lazy_re(r'^\s*File "(?P<path>[^"]+)", line \d+, in (?P<func>\S+)\s*$')
# a file that is not the job's own code
_LIBRARY = lazy_re(
    r"(?:^|[/\\])(?:site|dist)-packages[/\\]"          # installed packages
    r"|(?:^|[/\\])lib(?:64)?[/\\]python\d+(?:\.\d+)?t?[/\\]"   # the standard library (the above live under it)
    r"|^[A-Za-z]:\\.*\\Lib\\"                            # ... on Windows
    r"|^<"                                               # <frozen ...>, <string>, <eval_with_key>.3
    r"|(?:^|/)torchinductor_[^/]*/|(?:^|/)\.triton/"     # generated code: inductor's and Triton's caches
    r"|(?:^|/)s?bin/[^/.]+$"                             # a console-script entry point (torchrun, deepspeed)
)
_PACKAGE = lazy_re(r"(?:^|[/\\])(?:site|dist)-packages[/\\]")     # an installed package's file
_VARIES = lazy_re(r"\d{4,}|[0-9a-f]{8,}")          # a date, a build number, a hash in a file name
_PSEUDO_NUM = lazy_re(r"\d+")
# Python's exception line when the type has no Error/Exception suffix (StopIteration,
# torch._dynamo.exc.Unsupported, ray's RayTaskError(ValueError)): read only where the traceback ends
_TYPE = lazy_re(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\([\w.]*\))?)(?::\s|:$|$)")

Frame = Tuple[str, str]        # (path, function)


def last_traceback(lines: Sequence[str]) -> List[str]:
    """The lines of the block's last traceback (from its last "Traceback (most recent call last):"
    on; all of them when it has none)."""
    for i in range(len(lines) - 1, -1, -1):
        if _TB_HEAD in lines[i]:
            return list(lines[i:])
    return list(lines)


def frames(lines: Sequence[str]) -> List[Frame]:
    """The frames of the block's last traceback as (path, function), oldest first."""
    out = []
    for ln in last_traceback(lines):
        m = _FRAME.match(ln)
        if m:
            out.append((m.group("path"), m.group("func")))
    return out


def in_app(path: str) -> bool:
    """PATH is the job's own code (rule 3)."""
    return not _LIBRARY.search(path)


def frame_name(frame: Frame) -> str:
    """`file name:function` (rule 3): stable across hosts, checkouts and versions of the same code."""
    path, func = frame
    parts = [p for p in re.split(r"[/\\]", path) if p]
    base = parts[-1] if parts else path
    if path.startswith("<"):
        base = _PSEUDO_NUM.sub("<n>", path)
    elif base in ("__init__.py", "__main__.py") and len(parts) > 1:
        base = f"{parts[-2]}/{base}"
    return f"{_VARIES.sub('<n>', base)}:{func}"


def exception_type(message: str, lines: Sequence[str] = ()) -> Optional[str]:
    """The exception type of an error line (`pkg.SomeError: ...`), or None when it is no exception
    line.  A type without an Error/Exception suffix counts only where LINES' last traceback ends
    with MESSAGE (the first line after its frames that is neither indented nor a caret line)."""
    text = message.strip()
    if EXC_LINE.match(text):
        return text.split(":", 1)[0].strip()
    tb = last_traceback(lines)
    last = max((i for i, ln in enumerate(tb) if _FRAME.match(ln)), default=None)
    if last is None:
        return None
    end = next((ln for ln in tb[last + 1:] if ln.strip() and not ln[:1].isspace()), None)
    m = _TYPE.match(text)
    return m.group("type") if m and end is not None and end.strip() == text else None


def group_key(lines: Sequence[str], message: str) -> Optional[str]:
    """The group key of an error block LINES whose error line (the verdict's title) is MESSAGE:
    `<type> @ <top in-app frame>[ (raised in <raising frame>)]`; None without a frame or an
    exception type (the caller falls back to the masked message, rule 6)."""
    fs = frames(lines)
    if not fs:
        return None
    exc = exception_type(message, lines)
    if exc is None:
        return None
    raising = fs[-1]
    app = [f for f in fs if in_app(f[0])] or [f for f in fs if _PACKAGE.search(f[0])]
    top = app[-1] if app else raising
    key = f"{exc} @ {frame_name(top)}"
    if top is not raising and frame_name(top) != frame_name(raising):
        key += f" (raised in {frame_name(raising)})"
    return " ".join(key.split())[:KEY_MAX]


def message_signature(message: str) -> str:
    """The message-based signature of an unexplained failure (the job signature before issue 24):
    `unexplained-failure: <masked error line>`, redacted as the store and the fleet view redact it
    (mask redacts before it masks; once more after the cut, which could leave `password=<red`)."""
    return redact(f"unexplained-failure: {mask(message)[:KEY_MAX]}")


def unexplained_signatures(lines: Sequence[str], message: str) -> Tuple[str, str]:
    """(job signature, message signature) of an unexplained failure whose error block is LINES and
    error line MESSAGE: the signature is the group key's (the module's rule), else the message's."""
    msg_sig = message_signature(message)
    key = group_key(lines, message)
    return (redact(f"unexplained-failure: {key}") if key is not None else msg_sig), msg_sig
