"""Who a hang waits for: the ranks that logged nothing failing, the peers NCCL or gloo report
gone, and PyTorch's Flight Recorder dump lines (where its dumps go and what reads them)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..match.rx import lazy, search
from ..scan.results import ErrorBlock, Match
from .types import EVIDENCE_MAX, Case, Evidence, Finding, FlightRecorder, HangSuspect

MAX_TEXT = 2000
# Where PyTorch's Flight Recorder dumps go and what reads them (torch 2.13.0: DebugInfoWriter::getWriter
# in libtorch_cpu.so; the analyser is the `torchfrtrace` console script of the torch wheel).
FR_DUMPS = ("each rank writes <prefix><rank> on its own node; <prefix> is $TORCH_FR_DUMP_TEMP_FILE, else "
            "$TORCH_NCCL_DEBUG_INFO_TEMP_FILE, else ${XDG_CACHE_HOME:-~/.cache}/torch/comm_lib_trace_rank_ "
            "(torch 2.13); the buffer holds TORCH_FR_BUFFER_SIZE (TORCH_NCCL_TRACE_BUFFER_SIZE) entries, "
            "2000 by default, 0 turns it off")
FR_ANALYSE = ("torchfrtrace <folder holding every rank's dump> -p comm_lib_trace_rank_ "
              "(python -m torch.distributed.flight_recorder.fr_trace; -j prints each rank's entries)")


# a peer that went away, as NCCL (socket / IB / proxy service) and gloo name it
_PEER_ADDR = lazy(r"Connection closed by remote peer (\S+)|Connection closed by peer \[([^\]]+)\]:(\d+)|"
                  r"Got completion from peer (\S+) with|Call to recv from (\S+) failed")
_PEER_LOCAL = lazy(r"Connection closed by localRank (\d+)")   # NCCL proxy service thread
# PyTorch ProcessGroupNCCL's Flight Recorder dump on a timeout / watchdog hang
_FLIGHT = lazy(r"Received a dump signal|[Ff]light [Rr]ecorder|dump debug info|dumping debug info")


def _erred(findings: List[Finding], blocks: List[ErrorBlock]) -> set:
    """Ranks that logged an error (a hang's culprits are the ranks that did not)."""
    return {r for f in findings if f.role != "info" for r in f.ranks} | {b.rank for b in blocks}


def _peers(matches: List[Match], blocks: List[ErrorBlock]) -> List[HangSuspect]:
    """Peers that NCCL or gloo report gone (a closed socket, a failed proxy operation)."""
    texts: List[Tuple[Optional[int], str]] = [(m.line.rank, m.line.text) for m in matches
                                              if "peer" in m.line.text or "localRank" in m.line.text]
    texts += [(b.rank, x) for b in blocks for x in b.lines if "peer" in x or "localRank" in x]
    out: List[HangSuspect] = []
    seen = set()
    for rank, text in texts:
        who = f"rank {rank}" if rank is not None else "a rank"
        m = search(_PEER_ADDR, text[:MAX_TEXT])
        if m:
            peer = m.group(1) or (f"{m.group(2)}:{m.group(3)}" if m.group(2) else None) or m.group(4) or m.group(5)
            if peer and peer not in seen:
                seen.add(peer)
                out.append(HangSuspect(None, peer.rstrip(".,;"), f"{who} lost its connection to it: {text[:160]}"))
            continue
        m = search(_PEER_LOCAL, text[:MAX_TEXT])
        if m and f"localRank {m.group(1)}" not in seen:
            peer = f"localRank {m.group(1)}"
            seen.add(peer)
            out.append(HangSuspect(None, peer, f"{who}'s NCCL proxy lost its connection to it: {text[:160]}"))
    return out[:20]


def _flight_recorder(matches: List[Match]) -> Optional[FlightRecorder]:
    ranks = set()
    ev: List[Evidence] = []
    for m in matches:
        t = m.line.text
        # ("dump" or "light " is in every match of _FLIGHT: a storm's thousands of kept lines were a search each)
        if ("dump" in t or "light " in t) and search(_FLIGHT, t[:MAX_TEXT]):
            if m.line.rank is not None:
                ranks.add(m.line.rank)
            if len(ev) < EVIDENCE_MAX:
                ev.append(Evidence(m.line.source, m.line.lineno, m.line.rank, m.line.text))
    return FlightRecorder(sorted(ranks), ev) if ev else None


def _hang_suspects(case: Case, log: List[Finding]) -> List[HangSuspect]:
    """Ranks that logged nothing failing (when any rank did), then the peers NCCL / gloo name."""
    out: List[HangSuspect] = []
    erred = _erred(log, case.blocks)
    if erred:
        for r in sorted(set(case.ranks_fn() if case.ranks_fn is not None else ()) - erred):
            out.append(HangSuspect(r, None, "logged no error or timeout while other ranks waited for it"))
    seen = {(s.rank, s.peer) for s in out}
    for p in case.peers:
        if (p.rank, p.peer) not in seen and not (p.rank is not None and p.rank in erred and p.peer is None):
            seen.add((p.rank, p.peer))
            out.append(p)
    return out
