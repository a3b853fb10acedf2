#!/bin/bash
# Issue 44, eighteenth pass, the second device call: this tree against .ab/s17 (3970885, the pass's start; its
# patterns/ and bench/ copied in) alternating at -j 16, RUNS runs each, on LOGS; the tiny log under 7a762e8, s17
# and this tree; the grid A/B against .ab/old (7a762e8) on SHAPES within GRID_BUDGET seconds.  Prints numbers.
[ -d .ab/s17/patterns ] || cp -r patterns .ab/s17/
[ -d .ab/s17/bench ] || cp -r bench .ab/s17/
. bench/device_venv.sh triage .ab/old/triage .ab/s17/triage
python bench/tiny_ab.py .ab/old .ab/s17 . -n ${TINY_N:-30}
BASE=s17 LOGS="${LOGS:-megatron-dense:64M prod:256M prod:1G storm:64M tracebacks:128M hex-heavy:256M}" RUNS=${RUNS:-6} PHASES= \
  MODE=ab bash bench/device_session12.sh 2>&1 | grep "^=="
[ -n "$NO_GRID" ] || BUDGET=${GRID_BUDGET:-200} MODE=grid SHAPES=${SHAPES:-prod,healthy,hex-heavy,storm,megatron-dense,prod-srun,prod-bare-k8s,tracebacks} \
  BIG=${BIG:-1G} bash bench/device_session12.sh 2>&1 | tail -24
