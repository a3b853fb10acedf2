"""Novelty against the last good log (issue 42, logreduce's idea without a model): the lines a failed
run printed that its last good run never did, as masked templates (the fingerprint's masks: hosts,
paths, numbers, times), the lines that say what went wrong first, then by rarity and first appearance
(a traceback's frames last, PyTorch's hints left out) -- where an unexplained failure usually is."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from .inputs.sources import iter_inputs
from .match.rx import lazy
from .record import record
from .verdict.fingerprint import mask
from .verdict.unexplained import is_boilerplate

MAX_LINES = 200_000        # lines read of each side (the rest is not compared; a note says so)
SHOWN = 10                 # novel templates reported


@record
class NovelLine:
    template: str          # the masked line
    source: str
    line: int
    count: int             # lines of the failed run with this template
    text: str              # its first occurrence, as printed (redacted by the report)

    def as_dict(self) -> Dict[str, object]:
        return {"template": self.template, "source": self.source, "line": self.line, "count": self.count,
                "text": self.text}


def _templates(paths: Sequence[str], limit: int = MAX_LINES) -> Tuple[Dict[str, Tuple[str, int, int, str]], bool]:
    """template -> (source, first line, count, first text) of PATHS' lines, and whether the cap cut them."""
    out: Dict[str, Tuple[str, int, int, str]] = {}
    memo: Dict[str, str] = {}
    n = 0
    for ln in iter_inputs(list(paths)):
        n += 1
        if n > limit:
            return out, True
        text = ln.text.strip()
        if not text:
            continue
        if ln.text.startswith("    ") and not _ERROR.search(text[:400]):
            text = "    " + text           # a traceback's source line: its indent tells it (_kind)
        t = memo.get(text)
        if t is None:
            t = mask(text)[:300]
            if len(memo) < 100_000:
                memo[text] = t
        seen = out.get(t)
        out[t] = (seen[0], seen[1], seen[2] + 1, seen[3]) if seen else (ln.source, ln.lineno, 1, text[:300])
    return out, False


_FRAME = lazy(r'^\s*(?:File "|frame #\d+|at \S+\(|Traceback \(most recent)')
_ERROR = lazy(r"(?:Error|Exception|FATAL|ERROR|error|failed|Killed|Segmentation|NCCL WARN)")


def _kind(text: str) -> int:
    """A line that says what went wrong first, then the run's other lines, then a traceback's frames."""
    if _FRAME.match(text) or text.startswith("    "):
        return 2
    return 0 if _ERROR.search(text[:400]) else 1


def novel_lines(failed: Sequence[str], good: Sequence[str]) -> Tuple[List[NovelLine], List[str]]:
    """The templates FAILED printed and GOOD never did, rarest first, then earliest; notes on caps."""
    cur, cut_cur = _templates(failed)
    base, cut_base = _templates(good)
    novel = [NovelLine(t, s, line, count, text) for t, (s, line, count, text) in cur.items()
             if t not in base and not is_boilerplate(text.strip())]
    novel.sort(key=lambda x: (_kind(x.text), x.count, x.source, x.line))
    notes = [f"novelty: only the first {MAX_LINES:,} lines of the {what} were compared"
             for what, cut in (("failed run's logs", cut_cur), ("last good run's logs", cut_base)) if cut]
    return novel[:SHOWN], notes
