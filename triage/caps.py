"""Every cap on what triage keeps of a log and shows of it, in one place.

A log of any size gives output of a bounded size: each stage keeps or shows at most so many lines,
rows and items, and counts the rest.  The caps come in the order the data flows:

    line      characters of one log line the reader keeps (the rest is clipped)
    analysis  what the analysis keeps (findings.py): evidence lines per finding, timeline events,
              unexplained error blocks, lines of one error block
    JSON      what the JSON report writes (report/contract.py): findings, step-time points, its
              byte budget and the tighter LEVELS tried when it is still too big
    view      what the report view shows of the JSON (report/view.py), read by the text, Markdown,
              Jira, JUnit and HTML reports; a comment's character limit
    charts    what the HTML report's SVG charts draw (svg.py)

A later stage never promises more than an earlier one kept: the view shows the EVIDENCE_MAX
evidence lines the analysis keeps (tests/test_caps.py fails when the two differ).

This module imports nothing of triage's but `record` (a dataclass): any module may read its caps from here.
"""
from __future__ import annotations

from typing import Optional

from .record import record

# -- line: the log reader (scan/text.py) --------------------------------------------------------
MAX_LINE = 4000            # characters kept of one log line; the rest is clipped, CLIP_MARK appended
CLIP_MARK = " …[clipped]"  # what a clipped line ends with
LINE_CLIP = MAX_LINE + len(CLIP_MARK)   # a log line in HTML and JUnit: in full, as the reader kept it

# -- look back: how far before a line a rule's context may be (patterns.py, scan/) ----------------
MAX_WINDOW = 1000          # lines a rule's `context` window reaches at most (the catalog refuses more); the block
#                            scan's tail before a block keeps that many whole lines (sources.block_tail) ...
TAIL_MAX = 1 << 20         # ... within at most this many bytes: lines of 1 KiB on average (a log of 5 KB lines read
#                            16 MiB tails 25% slower, +34 MB; past it a window's lines before a block are what fits)

# -- analysis: what the findings keep (findings.py, scan/blocks.py) ------------------------------
EVIDENCE_MAX = 6           # evidence lines kept per finding (the first ones, each with its context);
#                            the JSON writes them all (LEVELS[0]) and the view shows them all
TIMELINE_MAX = 500         # timeline events kept (the first of each rank and pitfall, then evenly spread)
UNMATCHED_MAX = 50         # unexplained error blocks kept: the first of each distinct masked signature
BLOCK_MAX_LINES = 40       # lines of one error block the scan keeps
BLOCK_HEAD_LINES = 10      # of a longer traceback: its first lines, then its last ones (the raising frames)

# -- JSON: the report dict (report/contract.py) -------------------------------------------------
MAX_JSON_BYTES = 256 * 1024   # the JSON report stays under this, whatever the log size
FINDINGS_MAX = 100         # findings written in full (the primary first, in verdict order)
SERIES_MAX = 1000          # step-time points per run (evenly thinned, the last one kept)
SUMMARY_MAX = 2000         # characters of the summary (a hang of thousands of ranks lists them)
MAX_DEPTH = 4              # nesting kept in config values and the like once the caps apply


@record(frozen=True)
class Caps:
    """One size level of the JSON report: how much of each part it writes."""
    findings: int
    evidence: Optional[int]      # evidence lines per finding (None: all the analysis kept)
    context: Optional[int]       # context lines before / after one evidence line
    timeline: int
    unmatched: int
    block_lines: Optional[int]   # lines of one unmatched block (the first and the last ones)
    series: int                  # step-time points (and steady / capture iterations) per run
    text: Optional[int]          # characters of one log line or config value
    items: Optional[int]         # entries of rank_counts, config, diff, suspects, notes, sources, ...


# The first level is what the analysis kept (plus FINDINGS_MAX and SERIES_MAX); should the JSON still
# be over MAX_JSON_BYTES, the tighter levels are tried in turn; the last one cuts every list and
# string short.
LEVELS = (
    Caps(FINDINGS_MAX, None, None, TIMELINE_MAX, UNMATCHED_MAX, None, SERIES_MAX, None, None),
    Caps(40, 6, 3, 200, 20, 20, 400, 1000, 1000),
    Caps(15, 3, 1, 80, 8, 10, 150, 300, 200),
    Caps(5, 1, 0, 20, 3, 4, 40, 120, 40),
    Caps(3, 1, 0, 10, 2, 2, 10, 80, 10),        # last resort: every list and string cut short
)

# -- view: what the reports show of the JSON (report/view.py, report/text.py) -----------------------
CLIP = 400                 # characters of one log line in a Markdown / Jira comment (HTML: LINE_CLIP)
MAX_FINDINGS = 60          # findings shown in full besides the primary; the rest are counted
MAX_CONTEXT = 6            # context lines shown before / after an evidence line
MAX_UNMATCHED = 20         # unmatched error blocks shown
MAX_BLOCK_LINES = 40       # lines shown of one error block (a first failure may join several)
BLOCK_TAIL = 10            # last lines of an error block (the exception), for the text report
DIFF_CLIP = 200            # characters of a value in `triage diff`'s text output (CONFIG_MAX_SCALAR when read)
MAX_ROWS = 400             # config diff rows (and settings of a check-config comment)
MAX_ITEMS = 50             # attempts, hang suspects, config violations shown
MAX_NOTES = 20             # notes, sources, captured iterations and implicated settings shown
MAX_REFERENCES = 12        # source references of one finding
MAX_BECAUSE = 10           # reasons of one blamed setting; settings of one violation; fingerprints of a pattern
MAX_VERSIONS = 20          # versions found in the log beyond the well-known ones
TEXT_MAX_ITEMS = 50        # findings / attempts / hang suspects listed in the text report
MD_LIMIT = 32767           # a comment's characters: Jira's limit, the smallest of GitHub (65536),
#                            GitLab (1000000) and Jira

# -- charts: the HTML report's SVG (svg.py) ------------------------------------------------------
MAX_POINTS = 2000          # timeline markers drawn at most; more are thinned (root causes kept first)
MAX_SERIES = 1500          # points per step-time line at most
