"""Config shown inside logs: Megatron-LM's `---- arguments ----` block, Bridge's
`------- Task Configuration -------` YAML block (<= v0.3) and `Configuration Summary (Non-Default
Values vs Megatron Core)` block (>= v0.4), an echoed command line (`--cuda-graph-impl
transformer_engine --cuda-graph-scope attn`), environment lines (`PYTORCH_CUDA_ALLOC_CONF=...`,
NCCL's `... set by environment to ...`) and software versions."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..inputs.sources import MAX_RAW, Line, scanned_text
from ..match.anchors import Anchor
from ..match.rx import ASCII, IGNORECASE, lazy, match, search
from .defaults import apply_defaults
from .document import parse_config_text
from .engines import NEEDLES as ENGINE_NEEDLES
from .engines import engine_config
from .keys import ENV_KEYS, Config, ConfigError, canonical, flatten, parse_scalar
from .launch import ANCHORS as LAUNCH_ANCHORS
from .launch import ANNOUNCE_NEXT, NOT_A_COMMAND, is_launch_line, parse_args, parse_launch, split_words

_ARGS_START = lazy(r"^-{10,} arguments -{10,}$")
_ARGS_END = lazy(r"^-{10,} end of arguments -{10,}$")
_ARG_LINE = lazy(r"^\s+(\S+) \.{2,} (.*)$")
FOLLOW_RECORDS = 20_000     # lines after an arguments-block header parsed ahead of the scanner, at most
_ARGS_NEEDLE = b"---------- arguments ----------"     # what a header line (_ARGS_START) holds
_TASK_START = lazy(r"^-{3,} Task Configuration -{3,}$")
_TASK_END = lazy(r"^-{10,}$")
_SUMMARY_START = lazy(r"^Configuration Summary \(Non-Default Values vs Megatron Core\)")
_SUMMARY_SECTION = lazy(r"^\[(\w+)\] Non-default values")
_SUMMARY_OTHER_SECTION = lazy(r"^\[(\w+)\]:$")
_SUMMARY_LINE = lazy(r"^\s{2}(\w+): (.*?)(?:\s{2}\(Mcore default: .*\))?$")
# An environment setting is read from env dumps only: a whole line `KEY=VALUE` (env, printenv), an
# `export KEY=VALUE` (a script, bash -x's `+ export`), NCCL's `KEY set by environment to VALUE`, and
# the assignments before an echoed launch command.  Advice that names a variable (PyTorch's "try
# setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", an assertion naming NCCL_GRAPH_REGISTER=0,
# "consider passing CUDA_LAUNCH_BLOCKING=1") is no setting of the run.
_ENV_KEYS_RX = "(" + "|".join(ENV_KEYS) + ")"
_ENV_DUMP = lazy(r"^\s*(?:\+{1,4}\s+)?(?:export\s+|declare\s+-x\s+|setenv\s+)?" + _ENV_KEYS_RX
                 + r"(?:=|\s+(?=\S+$))(['\"]?)([^\s'\"]*)\2;?\s*$")
_ENV_NCCL = lazy(r"\bNCCL INFO\s+" + _ENV_KEYS_RX + r"\s+set by environment to\s+(['\"]?)([^\s'\"]+)\2")
# an echoed command line names a launcher or a script; error messages that mention flags do not count
# a line that is no launch line but still echoes a command holding a graph flag (e.g. after a log prefix)
_CMDLINE = lazy(r"(?:^|[\s/+'\"])(?:python\d*(?:\.\d+)?|torchrun|srun|mpirun|deepspeed|accelerate|uv)\s|\.py\b|\.sh\b")
_CMD_FLAG = lazy(r"--cuda[-_]graph[-_](?:impl|scope|modules)|--enable[-_]cuda[-_]graph|--external[-_]cuda[-_]graph")
# (torch's and the `+cuNNN` form: ASCII, as their regex anchors -- Hyperscan's `\d`, `[ \t]` -- read them; a str
# regex's \s and \d read a no-break space and a digit of any script, a line the block scan's anchors pass over)
_VERSION_LINES = [
    ("torch_version", lazy(r"\b(?:torch|pytorch)(?:\s+version|\.__version__)?\s*(?:(?:==|[:=])\s*)?v?(\d+\.\d+\.\d+(?:\.?(?:dev|post)\d+|[a-z]+\d*)?(?:\+\w+)?)", IGNORECASE | ASCII)),  # noqa: E501 - a regex reads best on one line
    ("te_version", lazy(r"transformer[_ -]engine(?:[_-]torch|[_-]cu\d+)?(?:\s+version)?\s*(?:==|[:=])?\s*v?(\d+\.\d+(?:\.\d+)?(?:\.dev\w*|\+\w+)?)", IGNORECASE)),  # noqa: E501 - a regex reads best on one line
    ("mcore_version", lazy(r"megatron[_-]core(?:\s+version)?\s*(?:==|[:=])?\s*v?(\d+\.\d+\.\d+(?:rc\d+)?)", IGNORECASE)),  # noqa: E501
    ("nccl_version", lazy(r"NCCL version:? (\d+\.\d+\.\d+[\w.+-]*)")),
    ("cuda_version", lazy(r"CUDA Version:?\s*(\d+\.\d+)|torch\.version\.cuda\s*[:=]\s*(\d+\.\d+)|\+cu(\d{3,})", ASCII)),
    ("driver_version", lazy(r"Driver Version:?\s*(\d+\.\d+(?:\.\d+)?)|cudaDriverVersion (\d+)")),
]
VERSION_KEYS = tuple(k for k, _ in _VERSION_LINES)


def parse_cmdline(text: str) -> Dict[str, Any]:
    """Flags and overrides of an echoed command line (`torchrun ... pretrain_gpt.py --cuda-graph-scope
    attn moe_router --te-rng-tracker`): what follows the training script; a line without a script
    is read whole.  Environment assignments before the command come as env.NAME."""
    flags, env = parse_launch(text)
    if not flags and not env:
        flags = parse_args(split_words(text))
    flags.update({f"env.{k}": v for k, v in env.items() if k in ENV_KEYS})
    return flags


def _follow_run(buf: bytes, pos: int, n: int, leading: bool, out: Dict[int, Tuple[str, str]]) -> int:
    """Records (LogConfigCollector.follow_records) of the `  name ..... value` lines from buf[pos:], up
    to an arguments block's end line, at most FOLLOW_RECORDS lines (LEADING: while the lines are
    indented, as an arguments block's are: a name too long for its dots prints none); returns where
    it stopped."""
    for _ in range(FOLLOW_RECORDS):
        if pos >= n:
            break
        nl = buf.find(b"\n", pos)
        end = nl if nl >= 0 else n
        data = buf[pos:min(end, pos + MAX_RAW)]
        if b"end of arguments" in data:
            break
        if b" .." in data:
            text = scanned_text(data)
            if leading and not text[:1].isspace():
                break
            m = _ARG_LINE.match(text) if b"\r" not in data else None
            if m is not None:
                out[pos] = (m.group(1), m.group(2))
        elif leading and data[:1] not in (b" ", b"\t"):      # (an indented line prefixed by a launcher
            break                                              # ends the run too: only slower)
        pos = end + 1
    return pos


class LogConfigCollector:
    """Fed every line of a log (in one pass with the engine); collects the config it shows.

    Sources, most authoritative first: Megatron-LM's arguments block and Bridge's task configuration
    (the whole config), Bridge's Configuration Summary (the values that differ from megatron-core's
    defaults), and the echoed launch line (flags and overrides).  A config read from a summary or a
    launch line alone is partial: what it leaves out has the default of the release that ran
    (config.defaults, by the megatron-core version the log prints), else it is unknown."""

    def __init__(self) -> None:
        self.flat: Dict[str, Any] = {}        # arguments block / task configuration / summary
        self.cmd: Dict[str, Any] = {}         # the first echoed launch line
        self.env: Dict[str, Any] = {}         # env dumps
        self._mode: Optional[str] = None
        self._buf: List[str] = []
        self._section = ""
        self._next_is_command = False
        self.found: List[str] = []   # which kinds of config were seen (for the report)
        self.versions: Dict[str, str] = {}   # software versions the log mentions

    # anchors (anchors.Anchor) of every line `feed` reacts to while it is in no block: block
    # starts, environment keys, launch lines and graph flags of an echoed command line, version lines
    ANCHORS = [
        Anchor(r"-{10} arguments -{10}", 0, regex=True), Anchor(r"-{3} Task Configuration -{3}", 0, regex=True),
        Anchor("Configuration Summary (Non-Default Values vs Megatron Core)", 0),
        *[Anchor(k, 0) for k in ENV_KEYS], *LAUNCH_ANCHORS,
        Anchor(r"--cuda[-_]graph[-_](?:impl|scope|modules)|--enable[-_]cuda[-_]graph|--external[-_]cuda[-_]graph",
               0, regex=True),
        Anchor(r"\b(?:torch|pytorch)(?:[ \t]+version|\.__version__)?[ \t]*(?:(?:==|[:=])[ \t]*)?v?\d+\.\d+\.\d+", 0,
               ignore_case=True, regex=True),
        Anchor(r"transformer[_ -]engine", 0, ignore_case=True, regex=True),
        Anchor(r"megatron[_-]core", 0, ignore_case=True, regex=True),
        Anchor("NCCL version", 0), Anchor("CUDA Version", 0), Anchor("torch.version.cuda", 0),
        Anchor(r"\+cu\d{3}", 0, regex=True), Anchor("Driver Version", 0), Anchor("cudaDriverVersion", 0),
        *[Anchor(n, 0) for n in ENGINE_NEEDLES],      # vLLM's / SGLang's start-up config (config.engines)
    ]

    def following(self) -> bool:
        """Inside an arguments / task configuration / summary block, or right after a line that
        announces the command: every line matters."""
        return self._mode is not None or self._next_is_command

    @staticmethod
    def follow_records(buf: bytes, lo: int) -> Dict[int, Tuple[str, str]]:
        """The lines of the block buf[lo:] that an arguments block's `  name ..... value` lines may
        be, parsed ahead of the scanner (a pool worker; see observer.Feeder.records): {line start:
        (name, value)}, exactly what _feed_args takes from the line's text (inputs.sources.scanned_text).
        Looked for after each arguments-block header of the block, up to its end line (at most
        FOLLOW_RECORDS lines), and from the block's start while its lines have that shape (a block
        that starts inside an arguments block).  Pure: whether the scan is inside an arguments block
        is for feed_follow to say."""
        out: Dict[int, Tuple[str, str]] = {}
        n = len(buf)
        pos = _follow_run(buf, lo, n, True, out)        # the block may start inside an arguments block
        i = buf.find(_ARGS_NEEDLE, pos)
        while i >= 0:
            ls = buf.rfind(b"\n", 0, i) + 1
            nl = buf.find(b"\n", i)
            end = nl if nl >= 0 else n
            if _ARGS_START.match(scanned_text(buf[ls:min(end, ls + MAX_RAW)])) and nl >= 0:
                pos = _follow_run(buf, nl + 1, n, False, out)
            else:
                pos = end + 1
            i = buf.find(_ARGS_NEEDLE, pos)        # every line is looked at once at most
        return out

    def feed_follow(self, rec: Tuple[str, str]) -> bool:
        """A record of follow_records for the next line: taken (True) inside an arguments block, where
        feed() would take the same name and value from the line; else the line goes to feed()."""
        if self._mode != "args":
            return False
        self.flat.setdefault(rec[0], rec[1])
        return True

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
        if not text.strip() or text.startswith("-" * 20):
            return
        m = _SUMMARY_SECTION.match(text)
        if m:
            self._section = m.group(1)
            return
        if text.startswith("Other Configuration Values"):
            self._section = "other"
            return
        m = _SUMMARY_OTHER_SECTION.match(text)         # 0.4+: "[train]:" under Other Configuration Values
        if m and self._section:
            self._section = m.group(1)
            return
        m = _SUMMARY_LINE.match(text)
        if m:
            self.flat.setdefault(f"{self._section}.{m.group(1)}", m.group(2))
            return
        if not text.startswith(" ") and not text.startswith("="):
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
        announced, self._next_is_command = self._next_is_command, False
        stripped = text.strip()
        if any(stripped.endswith(a) for a in ANNOUNCE_NEXT):
            self._next_is_command = True
            return
        if self._feed_engine(text):     # (vLLM's `non-default args: {...}` holds no `=`)
            return
        if "=" in text or "set by environment" in text:
            self._feed_env(text)
        if (announced or is_launch_line(stripped)) and not self.cmd:
            flags, env = parse_launch(stripped)
            if flags:
                self.cmd = flags
                self.found.append("command line")
            for k, v in env.items():
                if k in ENV_KEYS:
                    self.env.setdefault(f"env.{k}", v)
        elif not self.cmd and "--" in text and search(_CMD_FLAG, text) \
                and search(_CMDLINE, text) and not search(NOT_A_COMMAND, text):
            self.cmd = parse_cmdline(text)
            self.found.append("command line")
        if "ersion" in text or "torch" in text or "+cu" in text or "megatron" in text or "ngine" in text:
            self._feed_versions(text)

    def _feed_engine(self, text: str) -> bool:
        """An inference engine's start-up config line (vLLM, SGLang): the first one read wins."""
        got = engine_config(text) if any(n in text for n in ENGINE_NEEDLES) else None
        if got is None:
            return False
        fw, settings = got
        if self.flat.get("framework", fw) != fw:
            return True
        if "framework" not in self.flat:
            self.found.append(f"{fw} engine config")
        self.flat["framework"] = fw
        for k, v in settings.items():
            self.flat.setdefault(k, v)
        return True

    def _feed_env(self, text: str) -> None:
        m = match(_ENV_DUMP, text) or search(_ENV_NCCL, text)
        if m:
            self.env.setdefault(f"env.{m.group(1)}", m.group(3).rstrip(".,;"))

    def _feed_versions(self, text: str) -> None:
        for key, rx in _VERSION_LINES:
            if key not in self.versions:
                m = search(rx, text[:300])
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
            for k, v in flatten(data, mcore_version=self.versions.get("mcore_version")).items():
                self.flat.setdefault(k, v)
        self._buf = []

    def config(self) -> Config:
        if self._mode == "task":
            self._end_task()
        complete = any(f in self.found for f in ("megatron-lm arguments block", "bridge task configuration"))
        flat: Dict[str, Any] = {}
        bridge_cmd = any("." in k for k in self.cmd)
        if self.cmd and not complete:
            flat.update(_cmd_settings(self.cmd, bridge_cmd))
            flat.setdefault("framework", "bridge" if bridge_cmd else "megatron-lm")
        flat.update(self.flat)            # a block the job printed says what it parsed: it wins
        flat.update(self.env)
        cfg = canonical(flat)
        if not cfg or (set(cfg) <= {"torch_version", "te_version", "mcore_version"} and not self.env):
            return cfg
        if self.env:
            cfg["env_known"] = True
        if cfg.get("framework") in ("vllm", "sglang"):
            return cfg              # an engine prints its whole config: no Megatron defaults to fill in
        if not complete:
            summary = "bridge configuration summary" in self.found
            # a Bridge launch line overrides a recipe whose values the log does not show: no defaults
            cfg = apply_defaults(cfg, kind="mcore-transformer-config" if summary else
                                 None if bridge_cmd else "megatron-lm")
        return cfg


_RNG_SPELLINGS = ("model.use_te_rng_tracker", "rng.te_rng_tracker")


def _cmd_settings(cmd: Dict[str, Any], bridge: bool) -> Dict[str, Any]:
    """A launch line's settings as config: Bridge syncs model.use_te_rng_tracker and rng.te_rng_tracker
    (either on turns both on), so one of them overridden off says nothing of the other, which the
    recipe sets: the tracker is then unknown, not off."""
    out = dict(cmd)
    given = [k for k in _RNG_SPELLINGS if k in out]
    if bridge and len(given) == 1 and not parse_scalar(out[given[0]]):
        del out[given[0]]
    return out


def config_from_lines(lines: Iterable[Line]) -> Config:
    c = LogConfigCollector()
    for ln in lines:
        c.feed(ln)
    return c.config()


def tee(lines: Iterable[Line], collector: LogConfigCollector) -> Iterator[Line]:
    for ln in lines:
        collector.feed(ln)
        yield ln
