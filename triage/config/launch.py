"""Echoed launch lines: the command a job ran is its config when nothing else is printed.

A launch line is what a launcher or a shell echoes before it starts the job:

    + torchrun --nproc-per-node 8 pretrain_gpt.py --cuda-graph-impl local ...     (bash -x)
    Executing: torchrun --nproc_per_node=8 ... run_recipe.py --recipe X model.cuda_graph_impl=...
    Executing command...                      (Bridge's slurm examples; the command is the next line)
    srun -l python -m torch.distributed.run ... script.py --flag ...
    NCCL_GRAPH_REGISTER=0 python train.py ...

LEADS and COMMANDS below are the one table of these forms: the matcher, the anchors of the
config collector and the parser are all generated from them.  Tokens up to the training script
(`*.py`, or `-m module` that is not a launcher) belong to the launchers; after it come Megatron-LM
flags (`--cuda-graph-scope attn mlp`, `--no-check-for-nan-in-loss-and-grad`) and Hydra/OmegaConf
overrides (`model.cuda_graph_modules=[attn,mlp]`, `+x.y=1`, `~x.y`).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..match.anchors import Anchor
from ..match.rx import lazy, match, search

# What may stand before the command on an echoed line: (name, regex of the lead, an anchor literal).
LEADS: List[Tuple[str, str, Optional[str]]] = [
    ("bash -x trace", r"\+{1,4}[ \t]+", None),
    ("Megatron Bridge launcher (launch_with_sbatch.sh, slurm_inference.sh)", r"Executing:[ \t]*", "Executing:"),
    ("Megatron Bridge performance scripts (NeMo-Run)",
     r".*?Will launch the following command with Nemo-Run:[ \t]*", "Will launch the following command"),
    ("shell prompt", r"\$[ \t]+", None),
    ("plain echo", r"", None),
]
# A line that announces that the NEXT line is the command (Bridge's slurm examples).
ANNOUNCE_NEXT = ["Executing command..."]

# Launchers / wrappers: (command word regex, its anchor: a literal, or a regex where it holds a `[`).
# python's anchor needs the blank after the command word (LAUNCH_LINE's): a literal "python" woke the
# collector on every warning's /usr/lib/python3.12/... path (a third of a production log's hits).
COMMANDS: List[Tuple[str, Optional[str]]] = [
    (r"torchrun", "torchrun"),
    (r"srun", "srun "),
    (r"mpirun|mpiexec", "mpirun "),
    (r"deepspeed", "deepspeed "),
    (r"accelerate", "accelerate launch"),
    (r"uv", "uv run "),
    (r"python[\d.]*", r"python[\d.]*[ \t]"),
    (r"nsys", "nsys profile"),
    (r"numactl", "numactl "),
    (r"env", "env "),
    (r"bash|sh", None),                    # only as `bash -c "..."` (recursed into)
]
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")

_WORD = r"(?:\S*/)?(?:" + "|".join(c for c, _ in COMMANDS) + r")"
_ENV_ASSIGN = r"(?:[A-Z_][A-Z0-9_]*=\S*[ \t]+)*"
LAUNCH_LINE = lazy(r"^(?:" + "|".join(f"(?:{lead})" for _, lead, _ in LEADS) + r")" + _ENV_ASSIGN + _WORD + r"[ \t]")
_ENV_TOKEN = lazy(r"[A-Z_][A-Z0-9_]*=.*")
_OVERRIDE_TOK = lazy(r"^[+~]?[A-Za-z_][\w]*(?:\.[\w]+)+(?:=|$)")
_SCRIPT = lazy(r"\S+\.py")
# error and usage text that quotes a command or flags is no command line (argparse's `usage: x.py [-h]
# [--cuda-graph-impl {...}]`, `x.py: error: unrecognized arguments: ...`, python's "can't open file")
NOT_A_COMMAND = lazy(r"(?i:error|exception|warning):|\bshould be set\b|\bmust\b|\bnot supported\b|"
                     r"can't open file|^\s*usage:|^\s+\[")

# Anchors (anchors.Anchor, tag 0) of every line that may be a launch line.
ANCHORS: List[Anchor] = [Anchor(a, 0) for _, _, a in LEADS if a] \
    + [Anchor(a, 0, regex="[" in a) for _, a in COMMANDS if a] \
    + [Anchor(a, 0) for a in ANNOUNCE_NEXT] + [Anchor(m, 0) for m in LAUNCHER_MODULES]

# Megatron-LM flags whose dest is not their name (megatron/training/arguments.py)
FLAG_DEST: Dict[str, Tuple[str, Any]] = {
    "disable_bias_linear": ("add_bias_linear", False),
    "no_check_for_nan_in_loss_and_grad": ("check_for_nan_in_loss_and_grad", False),
    "recompute_activations": ("recompute_granularity", "selective"),
}
MULTI_VALUE_FLAGS = {"cuda_graph_scope", "cuda_graph_modules", "recompute_modules", "data_path",
                     "train_data_path", "valid_data_path", "test_data_path"}


def is_launch_line(text: str) -> bool:
    """`text` echoes a command that starts a job (and is no error message quoting one)."""
    return bool(match(LAUNCH_LINE, text)) and not search(NOT_A_COMMAND, text)


_LEAD_RX = [lazy(lead) for _, lead, _ in LEADS]      # (made from triage's cache: no `regex` import, match/rx.py)


def _strip_lead(text: str) -> str:
    for lead in _LEAD_RX:
        m = lead.match(text)
        if m and m.end() > 0:
            return text[m.end():]
    return text


def split_words(text: str) -> List[str]:
    """A command line's words as the shell splits them (a paste with an unbalanced quote: on blanks)."""
    try:
        import shlex
        return shlex.split(text, posix=True)
    except ValueError:               # an unbalanced quote in a pasted line
        return text.split()


def parse_launch(text: str) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """(flags and overrides of the training script, environment assignments) of a launch line."""
    toks = split_words(_strip_lead(text.strip()))
    env: Dict[str, str] = {}
    args = _script_args(toks, env, 0)
    return (parse_args(args) if args is not None else {}), env


def _script_args(toks: List[str], env: Dict[str, str], depth: int) -> Optional[List[str]]:
    """The tokens after the training script; launcher options and env assignments are consumed."""
    i = 0
    while i < len(toks):
        t = toks[i]
        if _ENV_TOKEN.fullmatch(t) and "=" in t:
            k, v = t.split("=", 1)
            env[k] = v
        elif t.startswith("--export="):                      # srun --export=ALL,KEY=VAL
            for part in t.split("=", 1)[1].split(","):
                if "=" in part:
                    k, v = part.split("=", 1)
                    env[k] = v
        elif t == "-c" and i + 1 < len(toks) and depth < 3 and i > 0 and toks[i - 1].rsplit("/", 1)[-1] in (
                "bash", "sh"):
            return _script_args(split_words(toks[i + 1]), env, depth + 1)
        elif t == "-m" and i + 1 < len(toks):
            if toks[i + 1] not in LAUNCHER_MODULES:
                return toks[i + 2:]
            i += 1
        elif _SCRIPT.fullmatch(t):
            return toks[i + 1:]
        i += 1
    return None


def parse_args(toks: List[str]) -> Dict[str, Any]:
    """Megatron-LM flags and Hydra overrides: `--cuda-graph-scope attn moe_router --te-rng-tracker
    model.cuda_graph_impl=local` -> {cuda_graph_scope: [...], te_rng_tracker: True, model.cuda_graph_impl: ...}."""
    out: Dict[str, Any] = {}
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.startswith("--") and len(t) > 2:
            i = _flag(toks, i, out)
        elif _OVERRIDE_TOK.match(t):
            if "=" in t:
                k, v = t.split("=", 1)
                out[k.lstrip("+")] = v
            i += 1
        else:
            i += 1
    return out


def _flag(toks: List[str], i: int, out: Dict[str, Any]) -> int:
    name = toks[i][2:]
    if "=" in name:
        name, val = name.split("=", 1)
        out[name.replace("-", "_")] = val
        return i + 1
    key = name.replace("-", "_")
    vals = []
    j = i + 1
    while j < len(toks) and not toks[j].startswith("--") and not _OVERRIDE_TOK.match(toks[j]):
        vals.append(toks[j])
        j += 1
    if not vals:
        if key in FLAG_DEST:
            dest, value = FLAG_DEST[key]
            out[dest] = value
        elif key.startswith("no_"):
            out[key[3:]] = False
        else:
            out[key] = True
        return j
    if key in MULTI_VALUE_FLAGS:
        out[key] = [x for v in vals for x in v.split(",") if x]
        return j
    out[key] = vals[0]          # the rest is positional
    return i + 2
