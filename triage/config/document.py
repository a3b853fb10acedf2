"""Parse one YAML or JSON document within bounded time and memory (config files, a log's YAML block)."""
from __future__ import annotations

import json
from typing import Any

import yaml

from .keys import ConfigError

CONFIG_MAX_BYTES = 16 << 20      # a YAML/JSON config bigger than this is refused
CONFIG_MAX_VALUES = 1_000_000    # values a config may expand to (YAML aliases re-used count again)
CONFIG_MAX_DEPTH = 100           # nesting of a config


class _LenientLoader(yaml.SafeLoader):
    """SafeLoader that reads unknown tags (OmegaConf / python objects) as plain data."""


def _unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    # there are no other kinds of node; construct_scalar raised the same for one
    raise yaml.constructor.ConstructorError(None, None, f"expected a scalar node, but found {type(node).__name__}",
                                            node.start_mark)


_LenientLoader.add_multi_constructor("", _unknown)


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


def parse_config_text(text: str, kind: str, where: str) -> Any:
    """Parse a YAML or JSON document within bounded time and memory; ConfigError otherwise."""
    try:
        data = json.loads(text) if kind == "JSON" else yaml.load(text, Loader=_LenientLoader)  # noqa: S506
        _expansion(data)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{where}: not valid {kind}: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(f"{where}: {kind} nested too deeply to read") from None
    except _TooBig as e:
        raise ConfigError(f"{where}: {kind} {e}") from None
    return data
