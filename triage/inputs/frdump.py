"""PyTorch Flight Recorder dumps beside the logs (issue 43), read without running anything in them.

Each rank writes one dump on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT=1) to <prefix><rank>: the prefix is
$TORCH_FR_DUMP_TEMP_FILE, else $TORCH_NCCL_DEBUG_INFO_TEMP_FILE, else /tmp/nccl_trace_rank_ (torch 2.2 ..
2.12) or ~/.cache/torch/comm_lib_trace_rank_ (2.13+).  A dump is a pickle of plain data (torch's own
reader, torch/distributed/flight_recorder/components/loader.py, pickle.load()s it): {"version", "pg_config":
{pg name: {"name", "desc", "ranks": "[0, 1]"}}, "entries": [{"record_id", "pg_id", "process_group":
(name, desc), "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name": "nccl:all_reduce",
"input_sizes", "output_sizes", "state": scheduled|started|completed, "time_created_ns", "frames", ...}]}
(2.14.1: the same keys; the JSON form, where a release writes it, holds the same).

The pickle is read by an Unpickler whose find_class refuses every global: only containers and scalars
can be built, so a dump that asks to call anything (os.system in __reduce__) is an input error, never
run.  Bounded: MAX_DUMP_BYTES a file, MAX_ENTRIES entries a dump, MAX_DUMPS dumps.
"""
from __future__ import annotations

import functools
import io
import json
import os
import re
from itertools import islice
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..record import record
from .names import MAX_DIR_DEPTH, MAX_DIR_ENTRIES, InputError

MAX_DUMP_BYTES = 64 << 20      # a dump larger than this is not read (the default 2000 entries are ~1 MB)
MAX_ENTRIES = 20_000           # entries kept per dump (the ring buffer's newest)
MAX_DUMPS = 4096               # dumps read per analysis
MAX_TEXT = 200                 # characters kept of a name, a description, an op
# <prefix><rank>: torch's default prefixes, and any name ending in trace_rank_<N> (a .json form too)
DUMP_NAME = re.compile(r"(?:^|[_\-.])trace_rank_(\d{1,9})(?:\.json)?$")
_PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_RANK_TAIL = re.compile(r"(\d{1,9})(?:\.json)?$")
_INTS = re.compile(r"-?\d{1,9}")


@record
class FREntry:
    pg: str                       # the process group's name (its GUID)
    desc: str
    seq: int                      # collective_seq_id
    p2p: bool
    op: str                       # profiling_name without the backend ("all_reduce", "send 1->2")
    input_sizes: str              # as written, for comparison
    output_sizes: str
    state: str
    index: int                    # 1-based place in the dump's entries


@record
class FRDump:
    path: str
    rank: int
    version: str
    groups: Dict[str, Tuple[str, List[int]]]     # pg name -> (desc, global ranks)
    entries: List[FREntry]
    dropped: int = 0              # entries over MAX_ENTRIES (the oldest)


@functools.lru_cache(maxsize=1)
def _unpickling() -> Tuple[Any, Any, Any]:
    """(pickle, the refusal, the unpickler that builds containers and scalars only: any global -- a class,
    a function -- is refused); pickle is imported only when a dump is read."""
    import pickle

    class Refused(pickle.UnpicklingError):
        """A dump that asks to load a global: refused, never loaded."""

    class PlainUnpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            raise Refused(f"it asks to load {module[:60]}.{name[:60]}")

    return pickle, Refused, PlainUnpickler


def looks_like_dump(path: str) -> bool:
    """A Flight Recorder dump by its name (<...>trace_rank_<N>) or, for a name with no suffix that ends
    in a rank, by its first bytes (a pickle)."""
    base = os.path.basename(path)
    if DUMP_NAME.search(base):
        return True
    if "." in base or not _RANK_TAIL.search(base):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(2) in _PICKLE_MAGIC
    except OSError:
        return False


def find_dumps(paths: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(the inputs that are not dumps, the dumps): given files that are dumps, and the dumps found in
    given directories (bounded walk; the log walk skips them too, sources._walk_logs)."""
    logs: List[str] = []
    dumps: List[str] = []
    for p in paths:
        if p == "-" or "://" in p:
            logs.append(p)
        elif os.path.isdir(p):
            logs.append(p)
            dumps += _walk(p)
        elif os.path.isfile(p) and looks_like_dump(p):
            dumps.append(p)
        else:
            logs.append(p)
    if len(dumps) > MAX_DUMPS:
        raise InputError(f"{len(dumps):,} Flight Recorder dumps: more than {MAX_DUMPS:,} is not one job's; pass the "
                         "job's own directory")
    return logs, dumps


def _walk(top: str) -> List[str]:
    out: List[str] = []
    base = top.rstrip(os.sep).count(os.sep)
    seen = 0
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if root.count(os.sep) - base < MAX_DIR_DEPTH else []
        seen += len(dirs) + len(files)
        if seen > MAX_DIR_ENTRIES:
            break
        out += [os.path.join(root, f) for f in sorted(files)
                if not f.startswith(".") and looks_like_dump(os.path.join(root, f))]
    return out


def read_dump(path: str) -> FRDump:
    """One dump, or an InputError saying in one line why it is not one."""
    try:
        size = os.path.getsize(path)
        if size > MAX_DUMP_BYTES:
            raise InputError(f"{path}: a Flight Recorder dump of {size:,} bytes is over the {MAX_DUMP_BYTES >> 20} MiB "
                             "triage reads")
        with open(path, "rb") as f:
            data = f.read(MAX_DUMP_BYTES + 1)
    except OSError as e:
        raise InputError(f"cannot read Flight Recorder dump {path!r}: {e.strerror or e}") from None
    obj = _load(path, data)
    if not isinstance(obj, dict) or not isinstance(obj.get("entries"), list):
        raise InputError(f"{path}: not a Flight Recorder dump (no 'entries' list)")
    m = _RANK_TAIL.search(os.path.basename(path))
    rank = int(m.group(1)) if m else -1
    entries = obj["entries"]
    dropped = max(0, len(entries) - MAX_ENTRIES)
    try:                       # (what a hostile dump's plain data can still do is an input error, never a crash)
        kept = [e for e in (_entry(x, dropped + i + 1) for i, x in enumerate(entries[dropped:])) if e is not None]
        return FRDump(path, rank, _text(obj.get("version")), _groups(obj.get("pg_config")), kept, dropped)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError, MemoryError,
            OverflowError) as e:
        raise InputError(f"{path}: not a Flight Recorder dump ({type(e).__name__} in its entries)") from None


def _load(path: str, data: bytes) -> Any:
    if data[:1] in (b"{", b"["):
        try:
            return json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as e:
            raise InputError(f"{path}: not a Flight Recorder dump (JSON: {str(e)[:120]})") from None
    if data[:2] not in _PICKLE_MAGIC:
        raise InputError(f"{path}: not a Flight Recorder dump (neither a pickle nor JSON)")
    pickle, refused, unpickler = _unpickling()
    try:
        return unpickler(io.BytesIO(data)).load()
    except refused as e:
        raise InputError(f"{path}: not a Flight Recorder dump: {str(e)[:200]} (a dump holds only plain data; "
                         "triage runs nothing an input asks for)") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, RecursionError, OverflowError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a Flight Recorder dump (a broken pickle: {type(e).__name__})") from None


_INT_MAX = 1 << 63            # a number in a dump past this is no id or size (and str() of a 5,000-digit int raises)


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and -_INT_MAX < x < _INT_MAX


def _text(x: Any) -> str:
    if isinstance(x, str):
        return x[:MAX_TEXT]
    if _int(x) or isinstance(x, float):
        return str(x)[:MAX_TEXT]
    return ""


def _groups(cfg: Any) -> Dict[str, Tuple[str, List[int]]]:
    out: Dict[str, Tuple[str, List[int]]] = {}
    if not isinstance(cfg, dict):
        return out
    for name, g in list(cfg.items())[:1000]:
        if not isinstance(g, dict):
            continue
        ranks = g.get("ranks")
        if isinstance(ranks, str):
            rs = [int(r) for r in _INTS.findall(ranks[:1_000_000])[:100_000] if len(r) < 19]
        elif isinstance(ranks, (list, tuple)):      # (islice: a pickle's memo lets 1,000 groups share one
            rs = [r for r in islice(ranks, 100_000) if _int(r)]     # list of millions: no copy of it)
        else:
            rs = []
        out[_text(name)] = (_text(g.get("desc")), rs)
    return out


def _entry(x: Any, index: int) -> Optional[FREntry]:
    if not isinstance(x, dict):
        return None
    pgv = x.get("process_group")
    pg, desc = (_text(pgv[0]), _text(pgv[1])) if isinstance(pgv, (list, tuple)) and len(pgv) >= 2 else ("", "")
    name = _text(x.get("profiling_name"))
    op = name.split(":", 1)[1] if ":" in name else name
    seq = x.get("collective_seq_id")
    if not _int(seq) or not op:
        return None
    assert isinstance(seq, int)
    p2p = bool(x.get("is_p2p")) or op.split(" ")[0] in ("send", "recv")
    return FREntry(pg, desc, seq, p2p, op, _sizes(x.get("input_sizes")), _sizes(x.get("output_sizes")),
                   _text(x.get("state")), index)


def _sizes(x: Any) -> str:
    """Tensor sizes ([[4096, 1024]]) as text: lists of ints only, the first 8 tensors and dims."""
    if not isinstance(x, (list, tuple)):
        return ""
    out = []
    for t in islice(x, 8):
        dims = [d for d in islice(t, 8) if _int(d)] if isinstance(t, (list, tuple)) else []
        out.append("[" + ", ".join(str(d) for d in dims) + "]")
    return "[" + ", ".join(out) + "]"


def read_dumps(paths: Sequence[str]) -> List[FRDump]:
    return [read_dump(p) for p in paths[:MAX_DUMPS]]
