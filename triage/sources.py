"""Compatibility face: the input stage lives in triage.scan.sources (line normalisation in
triage.scan.text, rank prefixes in triage.scan.ranks, generated from triage.scan.launchers).  This
module re-exports them for code that imports triage.sources; patch settings on triage.scan.sources."""
from .scan.ranks import inner_rank, split_prefix
from .scan.sources import (
    BLOCK_SIZE,
    COMPRESSED,
    LOG_SUFFIXES,
    MAX_DIR_DEPTH,
    MAX_DIR_ENTRIES,
    MAX_DIR_FILES,
    MAX_EXPANDED,
    MAX_RATIO,
    MAX_RAW,
    Input,
    InputError,
    Line,
    attempt_from_path,
    block_tail,
    continues,
    describe_input,
    expand_paths,
    iter_blocks,
    iter_blocks_with_tail,
    iter_inputs,
    make_line,
    parse_ts,
    rank_from_filename,
    read_lines,
)
from .scan.text import CLIP_MARK, MAX_LINE, normalise

__all__ = ["BLOCK_SIZE", "CLIP_MARK", "COMPRESSED", "LOG_SUFFIXES", "MAX_DIR_DEPTH", "MAX_DIR_ENTRIES", "MAX_DIR_FILES",
           "MAX_EXPANDED", "MAX_LINE", "MAX_RATIO", "MAX_RAW", "Input", "InputError", "Line", "attempt_from_path",
           "block_tail", "continues", "describe_input", "expand_paths", "inner_rank", "iter_blocks",
           "iter_blocks_with_tail", "iter_inputs", "make_line", "normalise", "parse_ts", "rank_from_filename",
           "read_lines", "split_prefix"]
