"""Report parts declared once (issue 41): a new field of the report is one `Part` in PARTS -- its JSON
key, its value (made from the Analysis, cut like the rest of the JSON) and the section every report
shows it as -- beside the value itself (the verdict / Analysis) and its line in the JSON schema
(triage/schemas/analyze.schema.json).  Nothing else changes:

- contract.to_dict writes each part's value, in PARTS order, after the fields it writes out itself
  (a value of None: the key is left out);
- the view (view.py: build_view of an Analysis, load_view of a stored dict) turns the value the JSON
  holds into a SectionView with `section`, which is given any value a stored or hand-made dict holds
  (check it; clip what it shows: util.clip);
- the text, markdown, Jira, HTML and JUnit reports render every SectionView alike (a titled block of
  lines), so no renderer is edited for a new field.

This module is a leaf of the report stage: the JSON contract and the view both read it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Tuple

from ..record import record

if TYPE_CHECKING:
    from ..verdict.analysis import Analysis


@record(frozen=True)
class SectionView:
    """A report part as every report shows it: `id` (the HTML section's id: a-z, 0-9 and -), its title
    and its lines of text (already clipped)."""
    id: str
    title: str
    lines: Tuple[str, ...]


class Cutter(Protocol):
    """What a part's value may use of the JSON's size level (contract._Cut): `text` cuts a string,
    `value` any list, dict or string, counting what it leaves out under `part` (the JSON's `omitted`)."""

    def text(self, t: Any) -> Any: ...

    def value(self, x: Any, part: str, depth: int = 0) -> Any: ...


@record(frozen=True)
class Part:
    """One field of the report: `key` in the JSON, `value` of an Analysis (None: left out), `section`
    of the JSON's value (None: not shown)."""
    key: str
    value: Callable[["Analysis", Cutter], Any]
    section: Callable[[Any], Optional[SectionView]]


PARTS: Tuple[Part, ...] = ()


def registered() -> Tuple[Part, ...]:
    """The parts, in the JSON's order (read when a report is made: a test may add one)."""
    return PARTS
