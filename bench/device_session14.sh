#!/bin/bash
# Issue 44, fourteenth pass: device calls.  MODE=ab: this tree against .ab/$BASE (s14: e93c5ea, the fourteenth pass's
# start; BASE=s15: 16b5ef0, the fifteenth's) on the logs
# LOGS= (grid names: shape:size, made when missing), -j 16, alternating, RUNS runs each (device_session12.sh's A/B);
# MODE=starts: each tree's workers' first results and phases (scan_phases.py) on STARTS= logs, alternating, twice;
# MODE=grid: device_session12.sh's grid A/B against .ab/old (7a762e8; SHAPES= a subset, BIG=1G adds prod at 1 GiB,
# TINY=1 the tiny log); MODE=tiny: the tiny log's wall under 7a762e8, e93c5ea and this tree, 30 runs alternating.
# Prints numbers (and the host's CPU first).
B=${BASE:-s14}
. bench/device_venv.sh triage .ab/old/triage .ab/$B/triage
mkdir -p /tmp/g
run_mode() {
case "$1" in
ab)
  BASE=$B LOGS="${LOGS:-prod:256M hex-heavy:256M healthy:256M storm:256M tracebacks:256M}" RUNS=${RUNS:-5} PHASES= MODE=ab \
    bash bench/device_session12.sh 2>&1 | grep -v "Model name\|Thread\|Core\|Socket\|CPU(s)\|MHz\|L3"
  ;;
starts)
  for r in 1 2; do for spec in ${STARTS:-prod:256M hex-heavy:256M}; do for t in .ab/$B .; do
    f=/tmp/g/${spec%%:*}-${spec##*:}.log; [ -f $f ] || python bench/gen_grid.py --size ${spec##*:} ${spec%%:*} $f >/dev/null
    c=/tmp/tc-$( [ $t = . ] && echo main || echo $B )
    echo "== phases ${spec%%:*} tree $t: $(cd $t && TRIAGE_CACHE_DIR=$c python bench/scan_phases.py $f -n 1 -j 16 2>&1 | grep -o "exec -> start wall [0-9]* ms\|start -> scan wall [0-9]* ms\|scan -> scanned wall [0-9]* ms\|scanned -> render wall [0-9]* ms\|blocks fed x[0-9]*: wall [0-9]* ms, cpu [0-9]*\|results taken x[0-9]*: wall [0-9]* ms, cpu [0-9]*\|first [0-9]* ms, last [0-9]* ms\|workers cpu [0-9]* ms\|began [0-9-]*\|last sent [0-9-]*\|busy [0-9-]*" | tr '\n' ' ')"
  done; done; done
  ;;
grid)
  MODE=grid bash bench/device_session12.sh
  ;;
tiny)
  python bench/tiny_ab.py .ab/old .ab/$B . -n 30
  ;;
esac
}
for m in ${MODE:-ab}; do run_mode $m; done
