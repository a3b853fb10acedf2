"""Compatibility face: the multi-pattern anchor search lives in triage.scan.anchors (this module
re-exports it for code that imports triage.anchors; patch settings on triage.scan.anchors)."""
from .scan.anchors import CACHE_KEEP, Anchor, AnchorSet, cache_dir, hyperscan_available, load_cached, store_cached

__all__ = ["CACHE_KEEP", "Anchor", "AnchorSet", "cache_dir", "hyperscan_available", "load_cached", "store_cached"]
