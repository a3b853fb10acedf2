"""Shared matching, below both the pattern catalog and the scan.

    rx       catalog regexes with a timeout, the risky-regex check, the validated-source cache
    anchors  one multi-pattern (Hyperscan) search per block, its compiled-database cache
"""
