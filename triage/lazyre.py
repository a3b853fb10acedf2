"""Module-level regexes compiled on first use: `X = lazy_re(r"...")` instead of `X = re.compile(r"...")`.

Compiling the ~100 module-level regexes of the modules `triage analyze` imports took ~15 ms of its
start-up, most of them never used on a small log.  A lazy regex compiles on its first attribute
look-up and then keeps the compiled pattern's methods and attributes (`search`, `match`, `sub`,
`flags`, ...) in its own `__dict__`, so a look-up costs what it costs on the compiled pattern.
`pattern` is there from the start (composing regexes from others' `.pattern` compiles nothing).

It is not an `re.Pattern`: pass it to no `re.*` function (`re.sub(X, ...)`: use `X.sub(...)`) and do
not `isinstance` it.  Typed as the compiled pattern (`re.Pattern[str]` / `re.Pattern[bytes]`, or
whatever COMPILE returns: `lazy_re(p, flags, regex.compile)`).
"""
from __future__ import annotations

import re
from typing import Any, Callable, TypeVar, Union, cast, overload

from . import regexwarm

_P = TypeVar("_P")


class LazyPattern:
    """COMPILE(pattern, flags), made on the first look-up of anything but `pattern`."""

    def __init__(self, pattern: Union[str, bytes], flags: int, compile: Callable[..., Any]):
        self.pattern = pattern
        self._how = (flags, compile)

    def __getattr__(self, name: str) -> Any:          # only names not in __dict__: before the first compile
        if name.startswith("__"):                      # copy, pickle and the like ask for dunders
            raise AttributeError(name)
        flags, compile = self._how
        rx = compile(self.pattern, flags)
        if compile is re.compile or getattr(compile, "__module__", "").startswith("regex."):
            regexwarm.note("re" if compile is re.compile else "regex", self.pattern, flags)
        d = self.__dict__
        for attr in dir(rx):
            if not attr.startswith("_"):
                d[attr] = getattr(rx, attr)
        d["compiled"] = rx
        return getattr(rx, name)

    def __repr__(self) -> str:
        return f"lazy_re({self.pattern!r})"


@overload
def lazy_re(pattern: str, flags: int = 0) -> "re.Pattern[str]": ...
@overload
def lazy_re(pattern: bytes, flags: int = 0) -> "re.Pattern[bytes]": ...
@overload
def lazy_re(pattern: Union[str, bytes], flags: int, compile: Callable[..., _P]) -> _P: ...


def lazy_re(pattern: Union[str, bytes], flags: int = 0, compile: Callable[..., Any] = re.compile) -> Any:
    """A regex compiled (by COMPILE, re.compile by default) when it is first used."""
    return cast(Any, LazyPattern(pattern, flags, compile))
