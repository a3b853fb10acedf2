"""Config shown inside logs: Megatron-LM's `---- arguments ----` block, Bridge's
`------- Task Configuration -------` YAML block (<= v0.3) and `Configuration Summary (Non-Default
Values vs Megatron Core)` block (>= v0.4), an echoed command line (`--cuda-graph-impl
transformer_engine --cuda-graph-scope attn`), environment lines (`PYTORCH_CUDA_ALLOC_CONF=...`,
NCCL's `... set by environment to ...`) and software versions."""
from __future__ import annotations

import shlex
from typing import Any, Dict, Iterable, Iterator, List, Optional

import regex

from ..anchors import Anchor
from ..rx import TIMEOUT, lazy
from ..sources import Line
from .document import parse_config_text
from .keys import ENV_KEYS, Config, ConfigError, canonical, flatten

_ARGS_START = lazy(r"^-{10,} arguments -{10,}$")
_ARGS_END = lazy(r"^-{10,} end of arguments -{10,}$")
_ARG_LINE = lazy(r"^\s+(\S+) \.{2,} (.*)$")
_TASK_START = lazy(r"^-{3,} Task Configuration -{3,}$")
_TASK_END = lazy(r"^-{10,}$")
_SUMMARY_START = lazy(r"^Configuration Summary \(Non-Default Values vs Megatron Core\)")
_SUMMARY_SECTION = lazy(r"^\[(\w+)\] Non-default values")
_SUMMARY_LINE = lazy(r"^\s{2}(\w+): (.*?)(?:\s{2}\(Mcore default: .*\))?$")
_ENV_LINE = lazy(
    r"(?<![A-Za-z0-9_])(" + "|".join(ENV_KEYS) + r")(?:\s*=\s*|\s+set by environment to\s+)(['\"]?)([^\s'\"]+)\2"
)
# an echoed command line names a launcher or a script; error messages that mention flags do not count
_CMDLINE = lazy(r"(?:^|[\s/+'\"])(?:python\d*(?:\.\d+)?|torchrun|srun|mpirun|deepspeed|accelerate|uv)\s|\.py\b|\.sh\b")
_EXC_TEXT = lazy(r"(?:Error|Exception|Warning):|\bshould be set\b|\bmust\b|\bnot supported\b")
_CMD_FLAG = lazy(r"--cuda[-_]graph[-_](?:impl|scope|modules)|--enable[-_]cuda[-_]graph|--external[-_]cuda[-_]graph")
_VERSION_LINES = [
    ("torch_version", lazy(r"\b(?:torch|pytorch)(?:\s+version|\.__version__)?\s*(?:==|[:=])?\s*v?(\d+\.\d+\.\d+(?:[a-z]+\d*)?(?:\+\w+)?)", regex.I)),  # noqa: E501 - a regex reads best on one line
    ("te_version", lazy(r"transformer[_ -]engine(?:[_-]torch|[_-]cu\d+)?(?:\s+version)?\s*(?:==|[:=])?\s*v?(\d+\.\d+(?:\.\d+)?(?:\.dev\w*|\+\w+)?)", regex.I)),  # noqa: E501 - a regex reads best on one line
    ("mcore_version", lazy(r"megatron[_-]core(?:\s+version)?\s*(?:==|[:=])?\s*v?(\d+\.\d+\.\d+(?:rc\d+)?)", regex.I)),
    ("nccl_version", lazy(r"NCCL version:? (\d+\.\d+\.\d+[\w.+-]*)")),
    ("cuda_version", lazy(r"CUDA Version:?\s*(\d+\.\d+)|torch\.version\.cuda\s*[:=]\s*(\d+\.\d+)|\+cu(\d{3,})")),
    ("driver_version", lazy(r"Driver Version:?\s*(\d+\.\d+(?:\.\d+)?)|cudaDriverVersion (\d+)")),
]
VERSION_KEYS = tuple(k for k, _ in _VERSION_LINES)


_OVERRIDE_TOK = lazy(r"^[+~]?[A-Za-z_][\w]*(?:\.[\w]+)+=")


MULTI_VALUE_FLAGS = {"cuda_graph_scope", "cuda_graph_modules", "recompute_modules", "data_path",
                     "train_data_path", "valid_data_path", "test_data_path", "moe_layer_freq"}


def parse_cmdline(text: str) -> Dict[str, Any]:
    """Flags of an echoed command line: `--cuda-graph-scope attn moe_router --te-rng-tracker`."""
    try:
        toks = shlex.split(text, posix=True)
    except ValueError:
        toks = text.split()
    out: Dict[str, Any] = {}
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.startswith("--") and len(t) > 2:
            name = t[2:]
            if "=" in name:
                name, val = name.split("=", 1)
                out[name.replace("-", "_")] = val
                i += 1
                continue
            vals = []
            j = i + 1
            while j < len(toks) and not toks[j].startswith("--") and not _OVERRIDE_TOK.match(toks[j]):
                vals.append(toks[j])
                j += 1
            key = name.replace("-", "_")
            if not vals:
                if key.startswith("no_"):
                    out[key[3:]] = False
                else:
                    out[key] = True
            elif key in MULTI_VALUE_FLAGS:
                out[key] = [x for v in vals for x in v.split(",") if x]
            else:
                out[key] = vals[0]          # the rest is positional (e.g. the script after --nproc-per-node 8)
                j = i + 2
            i = j
        elif _OVERRIDE_TOK.match(t):                                   # Hydra/OmegaConf override
            k, v = t.split("=", 1)
            out[k] = v
            i += 1
        else:
            i += 1
    return out


class LogConfigCollector:
    """Fed every line of a log (in one pass with the engine); collects the config it shows."""

    def __init__(self) -> None:
        self.flat: Dict[str, Any] = {}
        self._mode: Optional[str] = None
        self._buf: List[str] = []
        self._section = ""
        self.found: List[str] = []   # which kinds of config were seen (for the report)
        self.versions: Dict[str, str] = {}   # software versions the log mentions

    # anchors (anchors.Anchor) of every line `feed` reacts to while it is in no block: block
    # starts, environment keys, graph flags of an echoed command line, version lines
    ANCHORS = [
        Anchor(r"-{10} arguments -{10}", 0, regex=True), Anchor(r"-{3} Task Configuration -{3}", 0, regex=True),
        Anchor("Configuration Summary (Non-Default Values vs Megatron Core)", 0),
        *[Anchor(k, 0) for k in ENV_KEYS],
        Anchor(r"--cuda[-_]graph[-_](?:impl|scope|modules)|--enable[-_]cuda[-_]graph|--external[-_]cuda[-_]graph",
               0, regex=True),
        Anchor(r"\b(?:torch|pytorch)(?:[ \t]+version|\.__version__)?[ \t]*(?:==|[:=])?[ \t]*v?\d+\.\d+\.\d+", 0,
               ignore_case=True, regex=True),
        Anchor(r"transformer[_ -]engine", 0, ignore_case=True, regex=True),
        Anchor(r"megatron[_-]core", 0, ignore_case=True, regex=True),
        Anchor("NCCL version", 0), Anchor("CUDA Version", 0), Anchor("torch.version.cuda", 0),
        Anchor(r"\+cu\d{3}", 0, regex=True), Anchor("Driver Version", 0), Anchor("cudaDriverVersion", 0),
    ]

    def following(self) -> bool:
        """Inside an arguments / task configuration / summary block: every line matters."""
        return self._mode is not None

    def feed(self, line: Line) -> None:
        mode = self._mode
        if mode == "args":
            self._feed_args(line.text)
        elif mode == "task":
            self._feed_task(line)
        elif mode == "summary":
            self._feed_summary(line.text)
        elif not self._block_start(line.text):
            self._feed_other(line.text)

    def _feed_args(self, text: str) -> None:
        if _ARGS_END.match(text):
            self._mode = None
            return
        m = _ARG_LINE.match(text)
        if m:
            self.flat.setdefault(m.group(1), m.group(2))

    def _feed_task(self, line: Line) -> None:
        text = line.text
        if _TASK_END.match(text):
            self._end_task()
            return
        if len(self._buf) < 20000:
            self._buf.append(line.raw if line.raw.startswith(text) else text)

    def _feed_summary(self, text: str) -> None:
        if text.startswith("=" * 20) and self._section:
            self._mode = None
            return
        m = _SUMMARY_SECTION.match(text)
        if m:
            self._section = m.group(1)
            return
        if text.startswith("Other Configuration Values"):
            self._section = "other"
            return
        m = _SUMMARY_LINE.match(text)
        if m:
            self.flat.setdefault(f"{self._section}.{m.group(1)}", m.group(2))
            return
        if text.strip() and not text.startswith(" ") and not text.startswith("="):
            self._mode = None

    def _block_start(self, text: str) -> bool:
        """An arguments / task configuration / summary block starts at this line."""
        if "---" in text:
            if _ARGS_START.match(text):
                self._start("args", "megatron-lm", "megatron-lm arguments block")
                return True
            if _TASK_START.match(text):
                self._start("task", "bridge", "bridge task configuration")
                self._buf = []
                return True
        if "Configuration Summary" in text and _SUMMARY_START.match(text):
            self._start("summary", "bridge", "bridge configuration summary")
            self._section = ""
            return True
        return False

    def _start(self, mode: str, framework: str, found: str) -> None:
        self._mode = mode
        self.flat.setdefault("framework", framework)
        self.found.append(found)

    def _feed_other(self, text: str) -> None:
        """A line outside any block: environment settings, an echoed command line, versions."""
        if "=" in text or "set by environment" in text:
            for m in _ENV_LINE.finditer(text, timeout=TIMEOUT):
                self.flat.setdefault(f"env.{m.group(1)}", m.group(3).rstrip(".,;"))
        if "--" in text and _CMD_FLAG.search(text, timeout=TIMEOUT) and _CMDLINE.search(text, timeout=TIMEOUT) \
                and not _EXC_TEXT.search(text, timeout=TIMEOUT):
            for k, v in parse_cmdline(text).items():
                self.flat.setdefault(k, v)
            self.found.append("command line")
        if "ersion" in text or "torch" in text or "+cu" in text or "megatron" in text or "ngine" in text:
            self._feed_versions(text)

    def _feed_versions(self, text: str) -> None:
        for key, rx in _VERSION_LINES:
            if key not in self.versions:
                m = rx.search(text[:300], timeout=TIMEOUT)
                if m:
                    self.versions[key] = next(g for g in m.groups() if g)
                    if key in ("torch_version", "te_version", "mcore_version"):
                        self.flat.setdefault(key, self.versions[key])

    def _end_task(self) -> None:
        self._mode = None
        try:
            data = parse_config_text("\n".join(self._buf), "YAML", "task configuration")
        except ConfigError:              # a log's block that is no readable YAML is just skipped
            data = None
        if isinstance(data, dict):
            for k, v in flatten(data).items():
                self.flat.setdefault(k, v)
        self._buf = []

    def config(self) -> Config:
        if self._mode == "task":
            self._end_task()
        return canonical(self.flat)


def config_from_lines(lines: Iterable[Line]) -> Config:
    c = LogConfigCollector()
    for ln in lines:
        c.feed(ln)
    return c.config()


def tee(lines: Iterable[Line], collector: LogConfigCollector) -> Iterator[Line]:
    for ln in lines:
        collector.feed(ln)
        yield ln
