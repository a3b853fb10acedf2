"""Load a config: a YAML/JSON file (Megatron Bridge run_config.yaml, plain YAML/JSON) or a log
(its arguments / configuration blocks), plus OmegaConf-style overrides and environment settings."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence

from .document import CONFIG_MAX_BYTES, parse_config_text
from .keys import Config, ConfigError, canonical, flatten, framework_of, parse_overrides
from .scrape import config_from_lines


def load_config(path: str) -> Config:
    """A YAML/JSON config file, or a log (its arguments/config blocks are read)."""
    if os.path.isdir(path):
        raise ConfigError(f"{path!r} is a directory: give the run's config file (YAML/JSON, e.g. "
                          "run_config.yaml) or a log holding its arguments block")
    if not os.path.exists(path):
        raise ConfigError(f"no such config file: {path!r}")
    if not os.path.isfile(path):
        raise ConfigError(f"{path!r} is not a regular file: give a config file")
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise ConfigError(f"cannot read {path!r}: {e.strerror or e}") from None
    looks_like_log = path.endswith((".log", ".out", ".err", ".gz", ".txt")) or head[:2] == b"\x1f\x8b"
    if not looks_like_log:
        cfg = _load_document(path)
        if cfg is not None:
            return cfg
    from ..inputs.sources import read_lines
    cfg = config_from_lines(read_lines(path))
    if not cfg:
        raise ConfigError(f"{path}: found no configuration in it (no mapping, arguments block or config summary)")
    return cfg


def _load_document(path: str) -> Optional[Config]:
    """A YAML/JSON config file; None when it holds no mapping but text (a log after all)."""
    try:
        size = os.path.getsize(path)
        if size > CONFIG_MAX_BYTES:
            raise ConfigError(f"{path}: {size:,} bytes; a config file may hold at most "
                              f"{CONFIG_MAX_BYTES >> 20} MiB")
        with open(path, "rb") as fb:
            raw = fb.read(CONFIG_MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read {path!r}: {e.strerror or e}") from None
    if b"\x00" in raw[:1 << 16]:
        raise ConfigError(f"{path}: a binary file, not a YAML/JSON config or a log")
    kind = "JSON" if path.endswith(".json") else "TOML" if path.lower().endswith(".toml") else "YAML"
    data = parse_config_text(raw.decode("utf-8", errors="replace"), kind, path)
    if isinstance(data, dict):
        cfg = canonical(flatten(data))
        fw = framework_of(data)
        if fw:
            cfg.setdefault("framework", fw)
            model = data.get("model")
            if isinstance(model, dict) and "cuda_graph_modules" in model:
                cfg.setdefault("scope_spelling", "cuda_graph_modules")    # megatron-core 0.19+'s name
        return cfg
    if data is not None and not isinstance(data, str):
        raise ConfigError(f"{path}: a config must be a mapping, got {type(data).__name__}")
    return None


def build_config(paths: Sequence[str] = (), overrides: Sequence[str] = (), env: Sequence[str] = (),
                 base: Optional[Config] = None) -> Config:
    """Config files (later ones win), then dotted overrides, then --env KEY=VAL, over `base`."""
    flat: Dict[str, Any] = {}
    cfg: Config = dict(base or {})
    for p in paths:
        cfg.update(load_config(p))
    flat.update(parse_overrides(overrides))
    for e in env:
        if "=" not in e:
            raise ConfigError(f"--env {e!r} is not KEY=VALUE")
        k, v = e.split("=", 1)
        flat[f"env.{k.strip()}"] = v
    merged = dict(cfg)
    merged.update(canonical(flat))
    if env:
        merged["env_known"] = True
    return canonical(merged)


def with_log_env(cfg: Config, from_log: Config) -> Config:
    """A config file's settings plus the environment that the job's log shows (env dumps): a file
    holds no environment, and an env change since the last good run is a suspect too."""
    env = {k: v for k, v in from_log.items() if k.startswith("env.")}
    if not env:
        return cfg
    merged = dict(cfg)
    merged.update(env)
    merged["env_known"] = True
    return canonical(merged)
