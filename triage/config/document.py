"""Parse one YAML or JSON document within bounded time and memory (config files, a log's YAML block)."""
from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Tuple

from .. import hashing as hashlib
from ..match.rx import lazy
from ..unicode import utf8_safe
from .keys import ConfigError, int_or_text

CONFIG_MAX_BYTES = 16 << 20      # a YAML/JSON config bigger than this is refused
CONFIG_MAX_VALUES = 1_000_000    # values a config may expand to (YAML aliases re-used count again)
CONFIG_MAX_DEPTH = 100           # nesting of a config
# characters kept of one string (a key or a value) of a config; the rest becomes a marker that
# says how much was clipped and holds a digest of the whole string, so a change beyond the kept
# part is still a change (a 15 MiB scalar took `analyze` to 690 MB and `diff` printed it)
CONFIG_MAX_SCALAR = 4096

# libyaml's parser where PyYAML has it: a 15 MiB scalar took the pure-Python reader 4 s.  Its
# composer recurses in C (a segfault 50,000 levels down, not a RecursionError), so the nesting is
# measured on the event stream first (libyaml's parser keeps a stack of its own).  PyYAML is
# imported on the first document (_loaders): a log without a YAML block never loads it.
_C_SAFE_DEPTH = 5000             # nesting the C composer is given (it survived 20,000 levels)


def clip_scalar(text: str) -> str:
    """TEXT, or its first CONFIG_MAX_SCALAR characters and `…[+N chars #digest]`."""
    if len(text) <= CONFIG_MAX_SCALAR:
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{text[:CONFIG_MAX_SCALAR]}…[+{len(text) - CONFIG_MAX_SCALAR:,} chars #{digest}]"


if TYPE_CHECKING:
    import yaml


@lru_cache(maxsize=1)
def _loaders() -> Tuple[Any, Any]:
    """PyYAML's base safe loader (libyaml's when present) and _LenientLoader, made from it once."""
    import yaml
    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _LenientLoader(base):  # type: ignore[misc,valid-type]  # a C or Python SafeLoader
        """SafeLoader that reads unknown tags (OmegaConf / python objects) as plain data."""

    _LenientLoader.add_multi_constructor("", _unknown)
    for tag in ("int", "timestamp"):      # 0000-00-00, 10000-01-01, 5,000 digits: the text as written
        _LenientLoader.add_constructor(f"tag:yaml.org,2002:{tag}", _or_text(getattr(base, f"construct_yaml_{tag}")))
    return base, _LenientLoader


def _or_text(construct: Any) -> Any:
    """A YAML scalar constructor that gives the scalar's text where CONSTRUCT cannot make its value
    (a date out of datetime's range, an integer over Python's 4,300 digits)."""
    def constructor(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, OverflowError):
            return loader.construct_scalar(node)    # type: ignore[arg-type]
    return constructor


def _unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    import yaml
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    # there are no other kinds of node; construct_scalar raised the same for one
    raise yaml.constructor.ConstructorError(None, None, f"expected a scalar node, but found {type(node).__name__}",
                                            node.start_mark)


class _TooBig(Exception):
    pass


def _expansion(data: Any) -> None:
    """Raise _TooBig when `data` expands beyond the limits: a YAML "billion laughs" document
    holds few nodes but aliases that multiply; walking it as the rest of triage would hang."""
    budget = [CONFIG_MAX_VALUES]

    def walk(v: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooBig(f"expands to more than {CONFIG_MAX_VALUES:,} values (YAML alias expansion?)")
        if depth > CONFIG_MAX_DEPTH:
            raise _TooBig(f"is nested deeper than {CONFIG_MAX_DEPTH} levels")
        if isinstance(v, dict):
            for k, x in v.items():
                walk(k, depth + 1)
                walk(x, depth + 1)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, depth + 1)
    walk(data, 0)


_INT_BITS = 14000          # an int of more bits has over 4,214 digits: str() of it may raise


def _clipped(v: Any) -> Any:
    """V with every string (keys too) clipped to CONFIG_MAX_SCALAR characters (see clip_scalar);
    V itself when nothing is that long."""
    if isinstance(v, str):
        return clip_scalar(utf8_safe(v))      # (a JSON "\ud800": no UTF-8 output could hold it)
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > _INT_BITS:
        return clip_scalar(hex(v))            # (YAML's 0x...: too long for str(), which every view uses)
    if isinstance(v, dict):
        out = {}
        changed = False
        for k, x in v.items():
            k2, x2 = _clipped(k), _clipped(x)
            changed = changed or k2 is not k or x2 is not x
            out[k2] = x2
        return out if changed else v
    if isinstance(v, list):
        items = [_clipped(x) for x in v]
        return items if any(a is not b for a, b in zip(items, v)) else v
    return v


def _yaml_depth_ok(text: str) -> bool:
    """The document nests at most _C_SAFE_DEPTH collections (read as events: no recursion)."""
    import yaml
    base = _loaders()[0]
    if base is yaml.SafeLoader:
        return True                      # the pure-Python composer raises RecursionError
    depth = 0
    try:
        for ev in yaml.parse(text, Loader=base):
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > _C_SAFE_DEPTH:
                    return False
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as e:
        # libyaml 0.2.6+ (PyYAML 6.0.4's wheels) has its own limit: "exceeded maximum nesting depth"
        if "nesting depth" in str(e):
            return False
        raise
    return True


_TOML_AT = lazy(r"\(at line (\d+), column (\d+)\)")     # (tomllib's error's place)


def _toml(text: str, where: str) -> Any:
    """A TOML document (Python 3.11's tomllib), bounded as YAML is; PATH:LINE:COL where it is not valid."""
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]  # Python 3.11+
    except ImportError:             # pragma: no cover - Python 3.9/3.10
        raise ConfigError(f"{where}: TOML configs are read on Python 3.11 and later (tomllib); give YAML or "
                          "JSON, or run triage on Python 3.11+") from None
    try:
        data = tomllib.loads(text)
        _expansion(data)
        return _clipped(data)
    except ValueError as e:          # TOMLDecodeError, and a 5,000-digit integer (int's str limit)
        m = _TOML_AT.search(str(e))
        at = f"{where}:{m.group(1)}:{m.group(2)}" if m else where
        what = str(e)[:m.start()].strip() if m else str(e)
        raise ConfigError(f"{at}: not valid TOML: {what}") from None
    except RecursionError:
        raise ConfigError(f"{where}: TOML nested too deeply to read") from None
    except _TooBig as e:
        raise ConfigError(f"{where}: TOML {e}") from None


def _yaml_error(where: str, e: Any) -> str:
    """PATH:LINE:COL: not valid YAML: what is wrong (while parsing what, started at line L col C):
    PyYAML's marks are 0-based; an editor's line and column are 1-based."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = str(getattr(e, "problem", None) or "").strip() or str(e).splitlines()[0]
    context, cmark = getattr(e, "context", None), getattr(e, "context_mark", None)
    where_at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark is not None else where
    msg = f"{where_at}: not valid YAML: {problem}"
    if context:
        msg += f" ({context}" + (f" started at line {cmark.line + 1}, column {cmark.column + 1}" if cmark else "") + ")"
    return msg


def parse_config_text(text: str, kind: str, where: str) -> Any:
    """Parse a YAML or JSON document within bounded time and memory; ConfigError otherwise.
    Strings longer than CONFIG_MAX_SCALAR characters are clipped (clip_scalar)."""
    if kind == "TOML":
        return _toml(text, where)
    import yaml
    try:
        if kind != "JSON" and not _yaml_depth_ok(text):
            raise RecursionError
        data = json.loads(text, parse_int=int_or_text) if kind == "JSON" else \
            yaml.load(text, Loader=_loaders()[1])  # noqa: S506
        _expansion(data)
        data = _clipped(data)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except yaml.YAMLError as e:
        raise ConfigError(_yaml_error(where, e)) from None
    except RecursionError:
        raise ConfigError(f"{where}: {kind} nested too deeply to read") from None
    except _TooBig as e:
        raise ConfigError(f"{where}: {kind} {e}") from None
    return data
