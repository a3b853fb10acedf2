"""Compatibility face: the scan stage lives in the triage.scan package (one module per job: results,
state, observer, the observers attempts / launcher / followups / blocks / rules, blockview,
blockscan, prepare, pool, ranks, engine).  This module re-exports the names code imported from
triage.engine; patch settings (MATCHES_PER_KEY, POOL_MIN_BYTES, ...) on the module that owns them."""
from .scan.attempts import Attempts
from .scan.blocks import EXC_LINE, Blocks
from .scan.blockview import BlockView
from .scan.engine import Engine
from .scan.followups import Followups, _ctx_hit
from .scan.launcher import LauncherExits, LauncherRoot
from .scan.observer import Feeder, Observer, lit, rxa
from .scan.pool import POOL_MIN_BYTES, _Pool, _worker
from .scan.prepare import NORM_TAG, NORMED_TAG, RULE_TAG, anchor_set, prepare_block
from .scan.ranks import RANKS
from .scan.results import ErrorBlock, LauncherExit, Match, ScanResult, StreamKey
from .scan.rules import Rules
from .scan.state import CONTEXT_LINES, MATCHES_PER_KEY, MAX_MATCHES, Core, Event, InputState, Stream, View

_ranks_in = RANKS.ranks_in
_prefixed_ranks = RANKS.prefixed_ranks
_inner_ranks = RANKS.inner_ranks

__all__ = ["Attempts", "EXC_LINE", "Blocks", "BlockView", "Engine", "Followups", "_ctx_hit", "LauncherExits",
           "LauncherRoot", "Feeder", "Observer", "lit", "rxa", "POOL_MIN_BYTES", "_Pool", "_worker", "NORM_TAG",
           "NORMED_TAG", "RULE_TAG", "anchor_set", "prepare_block", "ErrorBlock", "LauncherExit", "Match",
           "ScanResult", "StreamKey", "Rules", "CONTEXT_LINES", "MATCHES_PER_KEY", "MAX_MATCHES", "Core", "Event",
           "InputState", "Stream", "View", "_ranks_in", "_prefixed_ranks", "_inner_ranks"]
