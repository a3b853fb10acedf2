#!/bin/bash
# triage-epilog.sh: diagnose a finished Slurm job's output with `triage analyze`, record the verdict
# in the cluster's store (PostgreSQL) and write a per-job report next to the job's output.
#
#   slurm.conf:  Epilog=/etc/slurm/epilog.d/triage-epilog.sh            (compute nodes, as root)
#           or:  EpilogSlurmctld=/etc/slurm/triage-epilog.sh            (the controller, as SlurmUser)
#   config:      /etc/triage/epilog.env (TRIAGE_EPILOG_CONF names another), KEY=VALUE lines:
#                TRIAGE_DB=postgresql://triage@db.example.org/triage   (no password: PGPASSFILE)
#                PGPASSFILE=/etc/triage/pgpass                          (mode 0600, owned by the runner)
#                TRIAGE_BIN=/opt/triage/bin/triage   TRIAGE_EPILOG_TIMEOUT=60   TRIAGE_DB_TIMEOUT=5
#                TRIAGE_EPILOG_SYSLOG=1              TRIAGE_EPILOG_LOG=<the log, when no Slurm variable names it>
#   See recipes/slurm/README.md.
#
# It never fails: a non-zero Epilog drains the node (Slurm doc/html/prolog_epilog.shtml, "Failure
# Handling"), so every path ends in `exit 0`, triage runs with --exit-zero under `timeout`, and a
# store that is down is a warning (the report is still written).
#
# The Slurm variables read (verified in Slurm's source, SchedMD/slurm 26.11.0rc1:
# src/plugins/prep/script/prep_script_slurmd.c _build_env() for Epilog, src/slurmctld/job_mgr.c
# job_common_env_vars() for EpilogSlurmctld; the first version per tag slurm-<v>-0-1):
#   SLURM_JOB_ID              both, all versions
#   SLURM_JOB_RESTART_COUNT   both since 22.05 (the requeue count; SLURM_RESTART_COUNT is the job's own
#                             variable, in SrunProlog/TaskProlog/SrunEpilog/TaskEpilog only)
#   SLURM_JOB_STDOUT          EpilogSlurmctld since 21.08, Epilog since 22.05; the path as submitted,
#                             NOT expanded ("slurm-%j.out", "logs/%x-%j.out"), relative to the work dir;
#                             unset before 25.11 when the job gave no --output (the default slurm-%j.out)
#   SLURM_JOB_STDERR          as SLURM_JOB_STDOUT; set only when the job gave --error
#   SLURM_JOB_WORK_DIR        EpilogSlurmctld since 21.08, Epilog since 21.08
#   SLURM_JOB_UID, SLURM_JOB_GID, SLURM_JOB_USER   both
#   SLURM_JOB_NODELIST        both (a hostlist expression: "gpu[01-04,07]")
#   SLURMD_NODENAME           Epilog only (the node this Epilog runs on)
#   SLURM_JOB_NAME, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID   EpilogSlurmctld only (for %x, %A, %a)
# Epilog and EpilogSlurmctld run without a search path (prolog_epilog.shtml): PATH is set below.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 077

TAG=triage-epilog
SYSLOG=1

say() {     # one line: stderr (slurmd's log at debug level) and syslog
    local msg="$TAG: job ${SLURM_JOB_ID:-?}: $*"
    msg=${msg//$'\n'/ }
    printf '%s\n' "${msg:0:1000}" >&2
    if [ "$SYSLOG" = 1 ] && command -v logger >/dev/null 2>&1; then
        logger -t "$TAG" -- "${msg:0:1000}" >/dev/null 2>&1 || true
    fi
}

# --- config: KEY=VALUE lines, read (never sourced: no code runs from it); known keys only -------
CONF=${TRIAGE_EPILOG_CONF:-/etc/triage/epilog.env}
TRIAGE_BIN=triage
TIMEOUT_S=60
LOG_OVERRIDE=${TRIAGE_EPILOG_LOG:-}
if [ -r "$CONF" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in ''|'#'*) continue ;; esac
        key=${line%%=*}; val=${line#*=}
        val=${val#\"}; val=${val%\"}
        case $key in
            TRIAGE_DB|PGPASSFILE|TRIAGE_DB_TIMEOUT|PGSSLMODE|PGSSLROOTCERT|PGCONNECT_TIMEOUT) export "$key=$val" ;;
            TRIAGE_BIN) TRIAGE_BIN=$val ;;
            TRIAGE_EPILOG_TIMEOUT) TIMEOUT_S=$val ;;
            TRIAGE_EPILOG_SYSLOG) SYSLOG=$val ;;
            TRIAGE_EPILOG_LOG) [ -n "$LOG_OVERRIDE" ] || LOG_OVERRIDE=$val ;;
        esac
    done < "$CONF"
fi
case $TIMEOUT_S in ''|*[!0-9]*) TIMEOUT_S=60 ;; esac

[ -n "${SLURM_JOB_ID:-}" ] || { say "no SLURM_JOB_ID: not run by Slurm; nothing done"; exit 0; }

# --- once per job: the Epilog runs on every node of the allocation, so only its first node goes on
first_node() {   # the first host of a hostlist expression: "gpu[07-09,11],cpu1" -> "gpu07"
    local hl=$1 head rest range
    case $hl in
        *\[*) head=${hl%%\[*}; rest=${hl#*\[}
              case $head in *,*) printf '%s\n' "${head%%,*}"; return ;; esac
              range=${rest%%[],-]*}; rest=${rest#*\]}; rest=${rest%%,*}
              printf '%s%s%s\n' "$head" "$range" "$rest" ;;
        *) printf '%s\n' "${hl%%,*}" ;;
    esac
}
if [ -n "${SLURMD_NODENAME:-}" ] && [ -n "${SLURM_JOB_NODELIST:-}" ]; then
    first=$(first_node "$SLURM_JOB_NODELIST")
    if [ "$first" != "$SLURMD_NODENAME" ]; then
        exit 0          # another node's Epilog (the first one's) does it; nothing to log
    fi
fi

ATTEMPT=${SLURM_JOB_RESTART_COUNT:-${SLURM_RESTART_COUNT:-0}}
case $ATTEMPT in ''|*[!0-9]*) ATTEMPT=0 ;; esac
JOB=$SLURM_JOB_ID

# --- the job's output: SLURM_JOB_STDOUT as Slurm's own filename patterns expand it ---------------
expand() {   # expand a --output pattern (sbatch(1) "filename pattern"); fails on what it cannot know
    local p=$1 out="" c pad
    case $p in *\\*) printf '%s\n' "${p//\\/}"; return 0 ;; esac     # a backslash: no expansion at all
    while [ -n "$p" ]; do
        c=${p:0:1}; p=${p:1}
        if [ "$c" != % ]; then out+=$c; continue; fi
        pad=""
        while [ -n "$p" ] && [[ ${p:0:1} == [0-9] ]]; do pad+=${p:0:1}; p=${p:1}; done
        c=${p:0:1}; p=${p:1}
        local v=""
        case $c in
            %) out+=%; continue ;;
            j) v=$SLURM_JOB_ID ;;
            A) v=${SLURM_ARRAY_JOB_ID:-} ; [ -n "$v" ] || return 1 ;;
            a) v=${SLURM_ARRAY_TASK_ID:-}; [ -n "$v" ] || return 1 ;;
            x) v=${SLURM_JOB_NAME:-}     ; [ -n "$v" ] || return 1; out+=$v; continue ;;
            u) v=${SLURM_JOB_USER:-}     ; [ -n "$v" ] || return 1; out+=$v; continue ;;
            N) v=$(first_node "${SLURM_JOB_NODELIST:-}"); [ -n "$v" ] || return 1; out+=$v; continue ;;
            n|t) v=0 ;;                        # the batch script: node 0, task 0
            *) return 1 ;;                     # %J %s: per-step files, not the batch script's
        esac
        if [ -n "$pad" ]; then
            [ "$pad" -gt 10 ] && pad=10
            v=$(printf "%0${pad}d" "$v")
        fi
        out+=$v
    done
    printf '%s\n' "$out"
}
absolute() {     # a relative path is the job's work dir's
    case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "${SLURM_JOB_WORK_DIR:-.}" "$1" ;; esac
}

if [ -n "$LOG_OVERRIDE" ]; then
    OUT=$(expand "$LOG_OVERRIDE") || { say "cannot expand TRIAGE_EPILOG_LOG=$LOG_OVERRIDE; nothing done"; exit 0; }
else
    pattern=${SLURM_JOB_STDOUT:-}
    if [ -z "$pattern" ]; then       # no --output, before Slurm 25.11: the default name
        if [ -n "${SLURM_ARRAY_JOB_ID:-}" ]; then pattern="slurm-%A_%a.out"; else pattern="slurm-%j.out"; fi
    fi
    OUT=$(expand "$pattern") || {
        say "cannot expand the output name $pattern here (%x %A %a need EpilogSlurmctld; %J %s are per step); nothing done"
        exit 0; }
fi
OUT=$(absolute "$OUT")
LOGS=("$OUT")
if [ -n "${SLURM_JOB_STDERR:-}" ] && ERR=$(expand "$SLURM_JOB_STDERR"); then
    ERR=$(absolute "$ERR")
    [ "$ERR" != "$OUT" ] && LOGS+=("$ERR")
fi

# --- as the job's user: what root reads and writes in the job's directories ------------------------
AS_USER=()
if [ "$(id -u)" = 0 ] && [ -n "${SLURM_JOB_UID:-}" ] && [ "${SLURM_JOB_UID}" != 0 ]; then
    AS_USER=(setpriv --reuid="$SLURM_JOB_UID" --regid="${SLURM_JOB_GID:-$SLURM_JOB_UID}" --clear-groups --)
fi
readable=()
for f in "${LOGS[@]}"; do
    # a regular file (never a link the user left there) the job's user can read
    if [ -f "$f" ] && [ ! -L "$f" ] && "${AS_USER[@]}" test -r "$f" 2>/dev/null; then
        readable+=("$f")
    fi
done
if [ ${#readable[@]} = 0 ]; then
    say "no readable output file ${LOGS[*]}; nothing done"
    exit 0
fi

# the report: next to the output, one per attempt
REPORT="$OUT.triage.html"
[ "$ATTEMPT" != 0 ] && REPORT="$OUT.triage.$ATTEMPT.html"
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/triage-epilog.XXXXXX") || { say "no temp dir; nothing done"; exit 0; }
trap 'rm -rf "$TMPD"' EXIT

# --- triage: bounded, never failing; the verdict recorded as (job id, attempt) -----------------------
# As root, the log is read through the job's user (`cat` under setpriv, on triage's stdin): a user who
# swaps the output for a link to another file between the checks above and the read gets nothing
# that user could not read.  The record then names no path (`triage fleet recheck` cannot re-read it);
# run as a service user (EpilogSlurmctld), triage reads the paths and records them.
args=(analyze --record --exit-zero -q --job-id "$JOB" --attempt "$ATTEMPT" -o "$TMPD/report.html")
if [ -n "${TRIAGE_DB:-}" ]; then args+=(--db "$TRIAGE_DB"); fi
if [ ${#AS_USER[@]} = 0 ]; then
    err=$(timeout -k 5 "$TIMEOUT_S" "$TRIAGE_BIN" "${args[@]}" -- "${readable[@]}" 2>&1 >/dev/null </dev/null)
    rc=$?
else
    err=$("${AS_USER[@]}" cat -- "${readable[@]}" 2>/dev/null |
          timeout -k 5 "$TIMEOUT_S" "$TRIAGE_BIN" "${args[@]}" 2>&1 >/dev/null)
    rc=$?
fi
err=${err//"; html report written to $TMPD/report.html"/}
if [ $rc = 124 ] || [ $rc = 137 ]; then
    say "attempt $ATTEMPT: triage ran past ${TIMEOUT_S}s and was stopped; no verdict"
    exit 0
fi

# --- the report, written as the job's user; never over a file triage did not write -----------------
note=""
if [ -s "$TMPD/report.html" ]; then
    if [ -e "$REPORT" ] || [ -L "$REPORT" ]; then
        if [ -f "$REPORT" ] && [ ! -L "$REPORT" ] &&
           "${AS_USER[@]}" head -c 2048 -- "$REPORT" 2>/dev/null | grep -q '<meta name="generator" content="triage '; then
            "${AS_USER[@]}" rm -f -- "$REPORT" 2>/dev/null
        else
            note="; report not written: $REPORT exists and is not a triage report"
        fi
    fi
    if [ -z "$note" ]; then
        # noclobber: created, never written through a file or link that appeared meanwhile
        if "${AS_USER[@]}" bash -c 'set -C; umask 077; cat > "$1" && chmod --reference="$2" -- "$1"' \
                _ "$REPORT" "${readable[0]}" < "$TMPD/report.html" 2>/dev/null; then
            note="; report $REPORT"
        else
            note="; report not written: $REPORT cannot be created"
        fi
    fi
fi
say "attempt $ATTEMPT: ${err:-triage exited $rc}$note"
exit 0
