"""`record`: `dataclasses.dataclass` without its start-up cost.

`@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__` and `__hash__` (and,
frozen, `__setattr__` / `__delattr__`) and compiles it when the class is defined: ~0.5-2.7 ms a class,
~45 ms for the ~65 classes a `triage analyze` imports, most of which a small log never builds or
compares.  `@record` (and `@record(frozen=True)`) makes the same dataclass -- `dataclasses.fields`,
`replace`, `asdict`, `is_dataclass` and `__dataclass_params__` as before -- but the generated methods
are made on their first call, by `dataclasses.dataclass` itself (on a stand-in class of the same
fields), so they are the very same code; the frozen ones raise FrozenInstanceError as before.

Only what triage uses is supported: `frozen`, fields with defaults and `field(...)`, a class docstring
or dataclass's generated one; no dataclass bases, `order`, `slots`, `__post_init__` or methods of its
own that dataclass would keep (`__eq__`, `__hash__`, ...): a TypeError says so when the class is defined.
"""
from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kw: Any) -> Callable[[Any], Any]:
        return lambda f: f

_C = TypeVar("_C", bound=type)
# what @dataclass would keep or use from the class body: not supported (a TypeError says so)
_UNSUPPORTED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__post_init__",
                "__slots__", "__lt__", "__le__", "__gt__", "__ge__")


class _Factory:
    """A default made by a factory, as dataclass's generated signature shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _generate(cls: type, frozen: bool, **what: bool) -> Dict[str, Any]:
    """The methods `dataclasses.dataclass(**WHAT)` generates for CLS's fields: made for a stand-in class
    of the same name, module and fields (the Field objects themselves), so they are dataclass's own."""
    ns: Dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                          "__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}}
    ns.update((f.name, f) for f in dataclasses.fields(cls))
    stand_in: type = dataclasses.dataclass(type(cls.__name__, (), ns), frozen=frozen, **what)
    return dict(vars(stand_in))


def _install(cls: type, names: Tuple[str, ...], frozen: bool, **what: bool) -> None:
    made = _generate(cls, frozen, **what)
    for name in names:
        setattr(cls, name, made[name])


def _init(cls: Any, frozen: bool) -> Callable[..., None]:
    """CLS's __init__ as dataclass writes it: a parameter per init field (annotated with the field's
    type; a default, or `<factory>` for a default_factory) and an assignment per field (through
    object.__setattr__ when frozen); one compile, without dataclass's stand-in class (a third of the
    cost).  Keyword-only fields: made by dataclass itself."""
    fields = dataclasses.fields(cls)
    if any(getattr(f, "kw_only", False) is True for f in fields):
        return _generate(cls, frozen, init=True, repr=False, eq=False)["__init__"]  # type: ignore[no-any-return]
    env: Dict[str, Any] = {"_HAS_DEFAULT_FACTORY": _FACTORY, "__dataclass_builtins_object__": object,
                           "_return_type": None}
    params, body = ["self"], []
    for f in fields:
        n = f.name
        env[f"_type_{n}"] = f.type
        factory = f.default_factory is not dataclasses.MISSING
        if factory:
            env[f"_dflt_{n}"] = f.default_factory
            value = f"_dflt_{n}() if {n} is _HAS_DEFAULT_FACTORY else {n}" if f.init else f"_dflt_{n}()"
        elif f.init:
            if f.default is not dataclasses.MISSING:
                env[f"_dflt_{n}"] = f.default
            value = n
        else:
            continue                        # not initialised: the class attribute is its default
        if f.init:
            params.append(f"{n}:_type_{n}" + ("=_HAS_DEFAULT_FACTORY" if factory else
                                               f"=_dflt_{n}" if f.default is not dataclasses.MISSING else ""))
        body.append(f"__dataclass_builtins_object__.__setattr__(self,{n!r},{value})" if frozen else
                    f"self.{n}={value}")
    src = (f"def __create_fn__({', '.join(env)}):\n"
           f" def __init__({', '.join(params)})->_return_type:\n" + "".join(f"  {b}\n" for b in body or ["pass"]) +
           " return __init__")
    ns: Dict[str, Any] = {}
    code = compile(src, "<string>", "exec", dont_inherit=True)     # not this module's `annotations` future
    exec(code, vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}, ns)
    fn: Callable[..., None] = ns["__create_fn__"](**env)
    return fn


def _lazy_methods(cls: Any, frozen: bool) -> Dict[str, Callable[..., Any]]:
    """Stand-ins that generate the real method on their first call, then call it (frozen: __hash__ too,
    the hash of the fields that __eq__ compares)."""
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = _init(cls, frozen)
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = init
        init(self, *args, **kwargs)

    def __repr__(self: Any) -> str:
        _install(cls, ("__repr__",), False, init=False, repr=True, eq=False)
        return cls.__repr__(self)

    def __eq__(self: Any, other: Any) -> Any:
        _install(cls, ("__eq__", "__hash__") if frozen else ("__eq__",), False, init=False, repr=False, eq=True,
                 unsafe_hash=frozen)
        return cls.__eq__(self, other)

    def __hash__(self: Any) -> int:
        _install(cls, ("__eq__", "__hash__"), False, init=False, repr=False, eq=True, unsafe_hash=True)
        return cls.__hash__(self)

    out: Dict[str, Callable[..., Any]] = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__}
    if frozen:
        out["__hash__"] = __hash__
    return out


def _frozen_methods(cls: Any) -> Dict[str, Callable[..., Any]]:
    """A frozen dataclass's __setattr__ and __delattr__, as dataclass writes them."""
    names = tuple(f.name for f in dataclasses.fields(cls))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return {"__setattr__": __setattr__, "__delattr__": __delattr__}


def _doc(cls: type) -> str:
    """dataclass's docstring of a class without one: its name and __init__ signature."""
    params = []
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        default = (f.default if f.default is not dataclasses.MISSING else
                   _FACTORY if f.default_factory is not dataclasses.MISSING else inspect.Parameter.empty)
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY if getattr(f, "kw_only", False)
                                        is True else kind, default=default, annotation=f.type))
    params.sort(key=lambda p: p.kind)           # keyword-only fields last, as in the generated __init__
    return cls.__name__ + str(inspect.Signature(params))


def _record(cls: _C, frozen: bool) -> _C:
    own = [n for n in _UNSUPPORTED if n in cls.__dict__]
    if own or any(dataclasses.is_dataclass(b) for b in cls.__mro__[1:]):
        raise TypeError(f"@record does not support {cls.__name__} ({', '.join(own) or 'a dataclass base'}): "
                        "use @dataclass")
    own_doc = bool(cls.__dict__.get("__doc__"))
    if not own_doc:
        cls.__doc__ = "-"          # else dataclass asks inspect for the signature of an __init__ not made yet
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)     # the fields (in place), nothing compiled
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = True
    params.frozen = frozen
    if not own_doc:
        cls.__doc__ = _doc(cls)
    lazy = _lazy_methods(cls, frozen)
    if frozen:
        lazy.update(_frozen_methods(cls))
    for name, fn in lazy.items():
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        fn.__module__ = cls.__module__
        setattr(cls, name, fn)
    if not frozen:
        cls.__hash__ = None  # type: ignore[assignment]     # eq without frozen: unhashable, as dataclass makes it
    return cls


@overload
def record(cls: _C, /) -> _C: ...
@overload
def record(*, frozen: bool = False) -> Callable[[_C], _C]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: Optional[_C] = None, /, *, frozen: bool = False) -> Any:
    """`@dataclass` / `@dataclass(frozen=True)`, with its methods generated on first use."""
    if cls is None:
        return lambda c: _record(c, frozen)
    return _record(cls, frozen)

