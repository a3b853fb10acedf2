#!/bin/bash
# Issue 44, nineteenth pass: one device call.  The tiny log under 7a762e8, .ab/s17 (3970885), .ab/s18 (aa4dcfe, the
# pass's start) and this tree; this tree against .ab/$BASE (s18) at -j 16 alternating on LOGS (RUNS each); with
# JJ (e.g. 17: 16 workers), this tree at -j 16 against -j $JJ on the same logs; the phases (scan_phases.py -n 2 -j 16)
# of PHASES under this tree; blocksize_ab.py (caps 4 and 8 MiB) on BS; the grid A/B against .ab/old on SHAPES (NO_GRID=1: none) within GRID_BUDGET.  Numbers.
. bench/device_venv.sh triage .ab/old/triage .ab/s17/triage .ab/s18/triage
mkdir -p /tmp/g
[ -n "$NO_TINY" ] || python bench/tiny_ab.py .ab/old .ab/s17 .ab/s18 . -n ${TINY_N:-20}
t() { /usr/bin/time -f "%e" python -P -m triage analyze "$@" --format json 2>&1 >/dev/null | tail -1; }
for spec in ${LOGS:-megatron-dense:64M prod:256M}; do
  shape=${spec%%:*}; size=${spec##*:}; f=/tmp/g/$shape-$size.log
  [ -f $f ] || python bench/gen_grid.py --size $size $shape $f >/dev/null
  a=""; b=""; c=""
  for i in $(seq ${RUNS:-4}); do
    a="$a $(PYTHONPATH=.ab/${BASE:-s18} TRIAGE_CACHE_DIR=/tmp/tc-${BASE:-s18} t $f -j 16)"
    b="$b $(PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-main t $f -j 16)"
    [ -z "$JJ" ] || c="$c $(PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-main t $f -j $JJ)"
  done
  echo "== $shape $size -j 16 alternating: ${BASE:-s18}$a | main$b${JJ:+ | main -j $JJ$c}"
done
for spec in $BS; do                  # (blocksize_ab.py: the pool's block cap 4 against 8 MiB, -j 16)
  f=/tmp/g/${spec%%:*}-${spec##*:}.log; [ -f $f ] || python bench/gen_grid.py --size ${spec##*:} ${spec%%:*} $f >/dev/null
  TRIAGE_CACHE_DIR=/tmp/tc-main python bench/blocksize_ab.py $f --caps 4,8 -n ${BS_N:-3} -j 16 | sed 's/^/== /'
done
for spec in $PHASES; do
  shape=${spec%%:*}; size=${spec##*:}; f=/tmp/g/$shape-$size.log
  [ -f $f ] || python bench/gen_grid.py --size $size $shape $f >/dev/null
  echo "== phases $shape $size"; TRIAGE_CACHE_DIR=/tmp/tc-main python bench/scan_phases.py $f -n 2 -j 16 2>&1 | tail -8
done
[ -n "$NO_GRID" ] || BUDGET=${GRID_BUDGET:-200} MODE=grid SHAPES=${SHAPES:-prod,hex-heavy,prod-srun,storm} \
  BIG=${BIG:-} bash bench/device_session12.sh 2>&1 | tail -14
