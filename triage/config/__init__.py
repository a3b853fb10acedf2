"""Config stage: load run configs from files and logs, map them to canonical keys, diff, check rules.

Sources understood:
- Megatron Bridge `run_config.yaml` (nested sections model./train./rng./rerun_state_machine./ddp./...),
  plain YAML or JSON, OmegaConf-style dotted overrides (`model.cuda_graph_impl=local`);
- inside logs: Megatron-LM's `---- arguments ----` block, Bridge's `------- Task Configuration -------`
  YAML block (<= v0.3) and `Configuration Summary (Non-Default Values vs Megatron Core)` block
  (>= v0.4), an echoed command line (`--cuda-graph-impl transformer_engine --cuda-graph-scope attn`),
  and environment lines (`PYTORCH_CUDA_ALLOC_CONF=...`, NCCL's `... set by environment to ...`).
Canonical keys are listed in PATTERNS.md.  Rules are evaluated declaratively; nothing is eval'ed.

Modules: `keys` (canonical keys and values), `scrape` (config shown in log lines), `document`
(bounded YAML/JSON parsing), `load` (config files, overrides), `rules` (the OPERATORS of config
rules, check), `changes` (diff).  Everything public is re-exported here.
"""
from .changes import NOT_CONFIG, Change, diff
from .defaults import apply_defaults
from .document import (
                   CONFIG_MAX_BYTES,
                   CONFIG_MAX_DEPTH,
                   CONFIG_MAX_SCALAR,
                   CONFIG_MAX_VALUES,
                   parse_config_text,
)
from .enums import Unknown, decode, enum_name
from .keys import (
                   ALIASES,
                   BRIDGE_SECTIONS,
                   DERIVED_FROM,
                   ENV_KEYS,
                   GRAPH_KEYS,
                   IMPLS,
                   KNOWN,
                   SCOPES,
                   Config,
                   ConfigError,
                   canonical,
                   flatten,
                   framework_of,
                   norm_scope,
                   parse_overrides,
                   parse_scalar,
)
from .launch import MULTI_VALUE_FLAGS, is_launch_line, parse_launch
from .load import build_config, load_config, with_log_env
from .operators import OPERATORS, Operator
from .rules import Undecided, Violation, check, cond_holds, rule_holds, undecided, unknown_values
from .scrape import (
                   VERSION_KEYS,
                   LogConfigCollector,
                   config_from_lines,
                   parse_cmdline,
                   tee,
)

__all__ = [
    "ALIASES", "BRIDGE_SECTIONS", "CONFIG_MAX_BYTES", "CONFIG_MAX_DEPTH", "CONFIG_MAX_SCALAR", "CONFIG_MAX_VALUES",
    "ENV_KEYS", "GRAPH_KEYS", "IMPLS", "KNOWN", "MULTI_VALUE_FLAGS", "NOT_CONFIG", "OPERATORS", "SCOPES",
    "VERSION_KEYS", "DERIVED_FROM",
    "Change", "Config", "ConfigError", "LogConfigCollector", "Operator", "Violation", "build_config", "canonical",
    "check", "cond_holds", "config_from_lines", "diff", "flatten", "framework_of", "load_config", "norm_scope",
    "parse_cmdline", "parse_config_text", "parse_overrides", "parse_scalar", "rule_holds", "tee", "with_log_env",
    "Undecided", "undecided", "unknown_values", "Unknown", "decode", "enum_name", "apply_defaults", "parse_launch",
    "is_launch_line",
]
