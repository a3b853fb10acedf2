"""The fleet stage: many jobs, their verdicts kept and grouped.

    store        the verdict store (one record per job, the known-issue table; SQLite or PostgreSQL)
    run          `triage fleet`: jobs found, analysed in worker processes, stored, grouped by signature
    render       the fleet view as text, JSON and markdown
    html         the fleet view as one HTML page
    job_reports  each job's own HTML report beside a fleet run (--reports DIR)
    recheck      `triage fleet recheck`: stored jobs triaged again with today's catalog
"""
