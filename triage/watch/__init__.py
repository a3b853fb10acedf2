"""`triage watch`: follow a running job's logs and name the root cause while it still hangs.

    follow    tailing files (rotation, truncation), directories (new per-rank files), stdin
    progress  each rank's last step, checkpoint / evaluation in progress, the launcher's end lines
    events    the event shapes (JSON lines, text alerts)
    live      the loop: incremental engine (scan/live.py), verdict with --settle, hangs, hooks, reports
"""
