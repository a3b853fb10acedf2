#!/bin/bash
# Issue 44, eighteenth pass, one device call: the tiny log under 7a762e8, 3970885 (.ab/s17: the pass's start) and
# this tree; this tree against .ab/s17 alternating (-j 16) on LOGS; the block size's cap on the 256 MiB and 1 GiB
# production mixes (blocksize_ab.py); then the grid A/B against .ab/old (7a762e8) within GRID_BUDGET seconds.
# Prints numbers (the host's CPU first).
. bench/device_venv.sh triage .ab/old/triage .ab/s17/triage
BASE=s17 MODE=tiny bash bench/device_session14.sh 2>&1 | grep "== tiny"
BASE=s17 MODE=ab LOGS="${LOGS:-prod:256M prod:1G megatron-dense:64M tracebacks:128M storm:64M}" RUNS=${RUNS:-3} PHASES= \
  bash bench/device_session14.sh 2>&1 | grep "^=="
[ -n "$NO_BS" ] || python bench/blocksize_ab.py /tmp/g/prod-256M.log /tmp/g/prod-1G.log -n ${RUNS:-3}
[ -n "$NO_GRID" ] || BUDGET=${GRID_BUDGET:-250} MODE=grid SHAPES=${SHAPES:-prod,healthy,hex-heavy,storm,megatron-dense,prod-srun,prod-bare-k8s,tracebacks} \
  bash bench/device_session12.sh 2>&1 | tail -22
