"""Blame stage: rank the config changes since the last good run by the findings that implicate them.

Score of a changed key:
- +1.0 for each config rule that the change turns from satisfied to violated (the rule's keys);
- +1.0 when the primary finding's pattern `implicates` the key, +0.5 for another root-cause finding's
  (cascades and info findings never blame); a step-time finding (graph-no-speedup,
  step-time-regression) blames only what its pattern implicates, and never a graph setting of a run
  that got faster than the last good one.
A change nothing ties to the failure (a schedule key such as lr_decay_iters or wd_incr_steps, a
logging or checkpoint setting, a model setting no rule or finding names) has score 0: listed last
and marked unrelated.  No diff means no suspects.
"""
from __future__ import annotations

from typing import Collection, List, Optional, Sequence

from ..config import DERIVED_FROM, GRAPH_KEYS, Config, check, diff
from ..match.rx import lazy
from ..patterns import Pattern
from .types import Finding, Suspect

# Settings that never change what a CUDA graph captures: the schedule, logging, checkpoints, data.
# Shown in the report as unrelated even if a pattern were to implicate one by its short name.
BOOKKEEPING = lazy(
    r"(?:^|[._])(?:lr|min_lr|learning_rate|lr_\w+|\w*_iters|train_samples|iterations|log_\w+|\w*logging\w*|save\w*|"
    r"load\w*|\w*checkpoint\w*|ckpt\w*|seed|wandb\w*|tensorboard\w*|exp_name|name|eval_\w+|\w*weight_decay\w*|"
    r"wd_\w+|\w*_decay_\w+|adam_\w+|clip_grad|lr_decay_\w+|lr_warmup_\w+|data_path|\w*_dir|\w*_path|\w*_interval|"
    r"recipe|exit_\w+|wsd_\w+)$"
)


def blame(old: Config, new: Config, patterns: Sequence[Pattern], findings: Sequence[Finding],
          primary: Optional[Finding], partial: bool = False, faster: bool = False,
          after_graph_change: Collection[str] = ()) -> List[Suspect]:
    """Rank the changes from OLD (the last good run) to NEW.  `faster`: the run's steady-state step
    time beat the last good run's (a graph setting of it is then no suspect of a step-time finding);
    `after_graph_change`: the step-time findings measured slower with a graph setting changed."""
    changes = diff(old, new, partial)
    if not changes:
        return []
    before = {(v.pitfall, v.message) for v in check(old, patterns)}
    introduced = [v for v in check(new, patterns) if (v.pitfall, v.message) not in before]
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
            if ch.key not in f.implicates or f.role != "root-cause" or BOOKKEEPING.search(ch.key):
                continue
            if f.kind == "perf" and faster and ch.key in GRAPH_KEYS:
                continue
            score += 1.0 if f is primary else 0.5
            if f.kind == "perf" and ch.key in GRAPH_KEYS and f.pitfall in after_graph_change:
                score += 0.5            # the measurement supports it: the slowdown came with the graph change
            because.append(f.pitfall)
            evidence.append(f"{f.source}:{f.line}: {f.evidence[0].text[:200]}" if f.evidence else f.pitfall)
        out.append(Suspect(key=ch.key, old=ch.old, new=ch.new, score=round(score, 2),
                           because=sorted(set(because)), unrelated=score == 0, evidence=evidence[:3]))
    out = _one_row_per_change(out)
    out.sort(key=lambda s: (-s.score, s.key))
    return out


def _one_row_per_change(rows: List[Suspect]) -> List[Suspect]:
    """A key triage derives from a setting (expandable_segments from env.PYTORCH_CUDA_ALLOC_CONF) is the
    same change as that setting: one row, named as the user wrote it, with what blames either."""
    by_key = {s.key: s for s in rows}
    out = []
    for s in rows:
        if s.key in DERIVED_FROM and DERIVED_FROM[s.key] in by_key:
            continue
        folded = [by_key[d] for d, src in DERIVED_FROM.items() if src == s.key and d in by_key]
        if folded:
            score = round(s.score + sum(d.score for d in folded), 2)
            because = sorted(set(s.because).union(*(d.because for d in folded)))
            evidence = (s.evidence + [e for d in folded for e in d.evidence])[:3]
            s = Suspect(key=s.key, old=s.old, new=s.new, score=score, because=because, unrelated=score == 0,
                        evidence=evidence)
        out.append(s)
    return out
