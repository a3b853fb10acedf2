"""Every command of the CLI but `analyze`, one module per stage, each loaded only when its command is
run or listed (cli.py's lazy command table names them: `triage analyze` never imports them).

    watch    triage watch
    config   triage check-config, triage diff
    catalog  triage patterns list|check|suggest, triage schema
    fleet    triage fleet run|report|recheck
    known    triage known add|list|remove
"""
