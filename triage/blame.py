"""Blame stage: rank the config changes since the last good run by the findings that implicate them.

Score of a changed key:
- +1.0 for each config rule that the change turns from satisfied to violated (the rule's keys);
- +1.0 when the primary finding's pattern `implicates` the key, +0.5 for another root-cause finding's
  (cascades and info findings never blame);
- graph keys changed while a perf finding (graph-no-speedup, step-time-regression) exists: +0.5;
  other model/parallelism/environment keys then get +0.25 (they may change speed), while
  bookkeeping keys (learning rate, iterations, logging, checkpointing, seeds) never do.
Keys with score 0 are listed last and marked unrelated.  No diff means no suspects.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .config import GRAPH_KEYS, Config, check, diff
from .findings import Finding
from .patterns import Pattern
from .rx import lazy

BOOKKEEPING = lazy(
    r"(?:^|[._])(?:lr|min_lr|learning_rate|lr_\w+|\w*_iters|train_samples|iterations|log_\w+|\w*logging\w*|save\w*|"
    r"load\w*|\w*checkpoint\w*|ckpt\w*|seed|wandb\w*|tensorboard\w*|exp_name|name|eval_\w+|weight_decay|"
    r"adam_\w+|clip_grad|lr_decay_\w+|lr_warmup_\w+|data_path|\w*_dir|\w*_path)$"
)


@dataclass
class Suspect:
    """A changed config key, scored by what blames it."""
    key: str
    old: Any
    new: Any
    score: float
    because: List[str] = field(default_factory=list)     # the pitfalls that blame it
    unrelated: bool = False                               # score 0: nothing blames it
    evidence: List[str] = field(default_factory=list)    # why, in a few lines

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def blame(old: Config, new: Config, patterns: Sequence[Pattern], findings: Sequence[Finding],
          primary: Optional[Finding], partial: bool = False) -> List[Suspect]:
    changes = diff(old, new, partial)
    if not changes:
        return []
    before = {(v.pitfall, v.message) for v in check(old, patterns)}
    introduced = [v for v in check(new, patterns) if (v.pitfall, v.message) not in before]
    perf = any(f.kind == "perf" for f in findings)
    out = []
    for ch in changes:
        score = 0.0
        because: List[str] = []
        evidence: List[str] = []
        for v in introduced:
            if ch.key in v.keys:
                score += 1.0
                because.append(v.pitfall)
                evidence.append(f"rule: {v.message}")
        for f in findings:
            if ch.key in f.implicates and f.role == "root-cause":
                w = 1.0 if f is primary else 0.5
                score += w
                because.append(f.pitfall)
                evidence.append(f"{f.source}:{f.line}: {f.evidence[0].text[:200]}" if f.evidence else f.pitfall)
        if perf and not because and not BOOKKEEPING.search(ch.key):
            score += 0.5 if ch.key in GRAPH_KEYS else 0.25
            because.extend(f.pitfall for f in findings if f.kind == "perf")
            evidence.append("may change step time")
        out.append(Suspect(key=ch.key, old=ch.old, new=ch.new, score=round(score, 2),
                           because=sorted(set(because)), unrelated=score == 0, evidence=evidence[:3]))
    out.sort(key=lambda s: (-s.score, s.key))
    return out
