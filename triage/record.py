"""`record`: `dataclasses.dataclass` without its start-up cost.

`@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__` and `__hash__` (and,
frozen, `__setattr__` / `__delattr__`) and compiles it when the class is defined: ~0.5-2.7 ms a class,
~45 ms for the ~65 classes a `triage analyze` imports, most of which a small log never builds or
compares.  `@record` (and `@record(frozen=True)`) makes the same dataclass -- `dataclasses.fields`,
`replace`, `asdict`, `is_dataclass` and `__dataclass_params__` as before -- but the generated methods
are made on their first call, by `dataclasses.dataclass` itself (on a stand-in class of the same
fields), so they are the very same code; the frozen ones raise FrozenInstanceError as before.  The
fields themselves are collected by record when every annotation is a string (`from __future__ import
annotations`) naming no ClassVar, InitVar or KW_ONLY and the class has no base (dataclass's checks of
each annotation cost ~60 us a class), else by dataclass; a generated docstring is made when first read.

Only what triage uses is supported: `frozen`, fields with defaults and `field(...)`, a class docstring
or dataclass's generated one; no dataclass bases, `order`, `slots`, `__post_init__` or methods of its
own that dataclass would keep (`__eq__`, `__hash__`, ...): a TypeError says so when the class is defined.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
from types import CodeType
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
    exec(_compiled(src), vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}, ns)
    fn: Callable[..., None] = ns["__create_fn__"](**env)
    return fn


# The code of the __init__ methods compiled so far, by their source: kept in triage's cache directory
# between runs, as Python keeps a module's code in __pycache__ and trusted as that is: the file is read
# only when this user wrote it and nobody else can write it (triage/cachefiles.py), and what is not a
# dict of source -> code is ignored.  Compiling them was ~0.25 ms a class, ~6 ms of a tiny log's
# `triage analyze` (24 classes).  The file is named by the Python build and triage's version
# (marshal's format and the code change with them).  New code is written back once, at exit.
CODE_PREFIX = "record-init-"
CODE_MAX_BYTES = 4 << 20
CODE_MAX_ENTRIES = 2048
_codes: Optional[Dict[str, CodeType]] = None
_codes_changed = False


def _code_name() -> str:
    from . import __version__
    from .hashing import sha256
    build = sha256(sys.version.encode()).hexdigest()[:8]      # this build of Python (its version, date, compiler)
    return f"{CODE_PREFIX}{sys.implementation.cache_tag}-{__version__}-{build}.marshal"


def _load_codes() -> Dict[str, CodeType]:
    from . import cachefiles
    codes = cachefiles.read_marshal_dict(_code_name(), CODE_MAX_BYTES)
    if codes is None or not all(isinstance(k, str) and type(v) is CodeType for k, v in codes.items()):
        return {}
    return codes


def _save_codes() -> None:
    """At exit: best effort, silent (a cache that cannot be written is no cache, never a traceback)."""
    from . import cachefiles
    if _codes:
        cachefiles.write_marshal(_code_name(), _codes, CODE_PREFIX)


def _compiled(src: str) -> CodeType:
    """SRC compiled (without this module's `annotations` future), from the cache when it holds it."""
    global _codes, _codes_changed
    if _codes is None:
        _codes = _load_codes()
    code = _codes.get(src)
    if code is None:
        code = compile(src, "<string>", "exec", dont_inherit=True)
        if len(_codes) < CODE_MAX_ENTRIES:
            _codes[src] = code
            if not _codes_changed:
                _codes_changed = True
                import atexit
                atexit.register(_save_codes)
    return code


def _lazy_methods(cls: Any, frozen: bool) -> Dict[str, Callable[..., Any]]:
    """Stand-ins that generate the real method on their first call, then call it (frozen: __hash__ too,
    the hash of the fields that __eq__ compares)."""
    def make_init() -> Callable[..., None]:
        init = _init(cls, frozen)
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = init
        return init

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        make_init()(self, *args, **kwargs)
    __init__.make = make_init           # type: ignore[attr-defined]  # (ready())

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


def ready(*classes: type) -> None:
    """Each record class's __init__ made now, as its first instance would make it (from the code cache): before a
    fork whose children make instances (a scan's pool workers, issue 44), so that each child does not make it again
    -- and its code is in the cache the parent writes at exit (a child writes none)."""
    for cls in classes:
        make = getattr(cls.__dict__.get("__init__"), "make", None)
        if make is not None:
            make()


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


class _LazyDoc:
    """A class's `__doc__` as dataclass writes it for a class without one (its name and __init__
    signature), made when first read (`cls.__doc__` calls a descriptor kept under that name), then
    kept as the class's own string."""

    def __get__(self, obj: Any, owner: Optional[type] = None) -> str:
        cls = owner if owner is not None else type(obj)
        doc = _doc(cls)
        cls.__doc__ = doc
        return doc


# the __dataclass_params__ that dataclass made for the first record class (frozen or not), copied for
# the next ones: all the same but for `frozen`
_PARAMS: Dict[bool, Any] = {}


def _fields(cls: Any) -> Optional[Dict[str, dataclasses.Field]]:  # type: ignore[type-arg]
    """CLS's fields as dataclass collects them (in place: a `field(...)` in the class body becomes its
    default, or goes), without dataclass's checks of each annotation for ClassVar, InitVar and KW_ONLY
    (regexes on the annotation's text): None, for dataclass to collect them, when an annotation could
    be one of those or is not a string (this module's callers write `from __future__ import annotations`)."""
    ann = cls.__dict__.get("__annotations__")
    if not isinstance(ann, dict):    # none, or made when read (Python 3.14's __annotate__): dataclass reads them
        return None
    if any(not isinstance(t, str) or "ClassVar" in t or "InitVar" in t or "KW_ONLY" in t for t in ann.values()):
        return None
    body = cls.__dict__
    for name, value in body.items():
        if isinstance(value, dataclasses.Field) and name not in ann:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    out: Dict[str, dataclasses.Field] = {}  # type: ignore[type-arg]
    for name, typ in ann.items():
        default = body.get(name, dataclasses.MISSING)
        f: Any = default if isinstance(default, dataclasses.Field) else dataclasses.field(default=default)
        f.name = name
        f.type = typ
        f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        if getattr(f, "kw_only", False) is dataclasses.MISSING:
            f.kw_only = False
        if f.default is not dataclasses.MISSING and (f.default.__class__.__hash__ is None if sys.version_info >= (3, 11)
                                                     else isinstance(f.default, (list, dict, set))):
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        if f is default:
            if f.default is dataclasses.MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out[name] = f
    return out


def _record(cls: _C, frozen: bool) -> _C:
    own = [n for n in _UNSUPPORTED if n in cls.__dict__]
    if own or any(dataclasses.is_dataclass(b) for b in cls.__mro__[1:]):
        raise TypeError(f"@record does not support {cls.__name__} ({', '.join(own) or 'a dataclass base'}): "
                        "use @dataclass")
    own_doc = bool(cls.__dict__.get("__doc__"))
    # (a class with bases of its own, or abstract: dataclass collects the fields, inherited defaults and all)
    fields = _fields(cls) if frozen in _PARAMS and cls.__mro__[1:] == (object,) and \
        not hasattr(cls, "__abstractmethods__") else None
    if fields is None:
        if not own_doc:
            cls.__doc__ = "-"      # else dataclass asks inspect for the signature of an __init__ not made yet
        dataclasses.dataclass(cls, init=False, repr=False, eq=False)     # the fields (in place), nothing compiled
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        params.init = params.repr = params.eq = True
        params.frozen = frozen
        _PARAMS.setdefault(frozen, params)
    else:
        # what dataclass(init=False, repr=False, eq=False) sets, the params as the first record's
        c: Any = cls
        c.__dataclass_fields__ = fields
        c.__dataclass_params__ = copy.copy(_PARAMS[frozen])
        if "__replace__" not in cls.__dict__ and hasattr(dataclasses, "_replace"):     # Python >= 3.13: copy.replace
            c.__replace__ = dataclasses._replace
        if sys.version_info >= (3, 10) and "__match_args__" not in cls.__dict__:
            setattr(c, "__match_args__",  # noqa: B010 - (mypy refuses the assignment)
                    tuple(f.name for f in fields.values() if f.init and not getattr(f, "kw_only", False)))
    if not own_doc:
        cls.__doc__ = _LazyDoc()  # type: ignore[assignment]
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

