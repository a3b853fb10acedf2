#!/bin/bash
# Issue 44, thirteenth pass: device calls.  MODE=ab: this tree against .ab/s13 (31aec9f, the pass's start) on the
# logs LOGS= (grid names: shape:size, made when missing), -j 16, alternating, RUNS runs each; MODE=phases: each tree's
# phases of PHASES= (shape:size), alternating, twice; MODE=tiny: the tiny log's wall (perf_counter, ms) under
# 7a762e8, 31aec9f and this tree, 30 runs alternating; MODE=grid: device_session12.sh's grid A/B against
# .ab/old (7a762e8; SHAPES= a subset, BIG=1G adds prod at 1 GiB, TINY=1 the tiny log); MODE=all: ab, phases,
# tiny.  Prints numbers.
. bench/device_venv.sh triage .ab/old/triage .ab/s13/triage
mkdir -p /tmp/g
run_mode() {
case "$1" in
phases)
  for r in 1 2; do for spec in ${PHASES:-tracebacks:256M storm:256M}; do for t in .ab/s13 .; do
    f=/tmp/g/${spec%%:*}-${spec##*:}.log; [ -f $f ] || python bench/gen_grid.py --size ${spec##*:} ${spec%%:*} $f >/dev/null
    echo "== phases ${spec%%:*} tree $t: $(cd $t && TRIAGE_CACHE_DIR=/tmp/tc-$(basename $t) python bench/scan_phases.py $f -n 1 -j 16 2>&1 | grep -o "exec -> start wall [0-9]* ms\|start -> scan wall [0-9]* ms\|scan -> scanned wall [0-9]* ms\|scanned -> render wall [0-9]* ms\|blocks fed x[0-9]*: wall [0-9]* ms, cpu [0-9]*\|results taken x[0-9]*: wall [0-9]* ms\|first [0-9]* ms, last [0-9]* ms\|workers cpu [0-9]* ms\|last sent [0-9-]*" | tr '\n' ' ')"
  done; done; done
  ;;
tiny)
  python bench/tiny_ab.py .ab/old .ab/s13 . -n 30
  ;;
ab)            # (the twelfth pass's A/B, against .ab/s13)
  BASE=s13 LOGS="${LOGS:-storm:256M tracebacks:256M prod:256M healthy:256M}" PHASES= MODE=ab bash bench/device_session12.sh
  ;;
grid)          # (the twelfth pass's grid: 7a762e8 against this tree)
  MODE=grid bash bench/device_session12.sh
  ;;
esac
}
if [ "${MODE:-ab}" = all ]; then run_mode ab; run_mode phases; run_mode tiny; else run_mode "${MODE:-ab}"; fi
