#!/bin/bash
# Issue 44, twelfth pass: device calls.  MODE=grid: the grid A/B against .ab/old (7a762e8), SHAPES= a subset,
# BIG=1G adds prod at 1 GiB, and the tiny log, 20 runs a tree; MODE=ab: this tree against .ab/s12 (8326a60, the
# pass's start; BASE=s13: .ab/s13) on the logs LOGS= (grid names, made when missing), -j 16, alternating, RUNS runs each; MODE=all: ab, then scaling; MODE=scaling:
# bench/host_scaling.py on prod 256 MiB; prod, healthy, fail-middle, prod-bare-k8s, hex-heavy at -j 16 in turn, and
# their phases.  Prints numbers.
. bench/device_venv.sh triage .ab/old/triage .ab/s12/triage
mkdir -p /tmp/g
run_mode() {
case "$1" in
grid)
  big=""; [ -n "$BIG" ] && big="--big $BIG"
  python bench/grid.py --size 256M $big --runs 2 --runs-j1 1 --tree .ab/old --tree . --rg --budget ${BUDGET:-420} --timeout 110 --tmp /tmp/g --out $OUT/grid.md --shapes ${SHAPES:-storm,tracebacks,megatron-dense,bench-dense,iter-all,prod,bench,prod-srun,prod-mpirun,prod-tee,prod-bare-k8s,short-lines,long-lines,warn-heavy,hex-heavy,fail-middle,fail-start,healthy} 2>&1 | tail -45
  if [ -n "$TINY" ]; then
    for t in .ab/old .; do echo "== tiny log, tree $t, 20 runs (s, sorted)"; for i in $(seq 20); do PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) /usr/bin/time -f "%e" python -P -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | tail -1; done | sort -n | tr '\n' ' '; echo; done
  fi
  ;;
ab)
  for spec in ${LOGS:-storm:256M tracebacks:256M prod:256M}; do
    shape=${spec%%:*}; size=${spec##*:}; f=/tmp/g/$shape-$size.log
    [ -f $f ] || python bench/gen_grid.py --size $size $shape $f >/dev/null
    a=""; b=""
    for i in $(seq ${RUNS:-4}); do
      a="$a $(PYTHONPATH=.ab/${BASE:-s12} TRIAGE_CACHE_DIR=/tmp/tc-${BASE:-s12} /usr/bin/time -f "%e" python -P -m triage analyze $f --format json -j 16 2>&1 >/dev/null | tail -1)"
      b="$b $(PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-main /usr/bin/time -f "%e" python -P -m triage analyze $f --format json -j 16 2>&1 >/dev/null | tail -1)"
    done
    echo "== $shape $size ($(stat -c %s $f) bytes) -j 16 alternating: ${BASE:-s12}$a | main$b"
  done
  for spec in $PHASES; do   # (shape:size of a log made above: this tree's phases at -j 16)
    echo "== phases ${spec%%:*}"; TRIAGE_CACHE_DIR=/tmp/tc-main python bench/scan_phases.py /tmp/g/${spec%%:*}-${spec##*:}.log -n 1 -j 16 2>&1 | tail -5
  done
  ;;
scaling)
  f=/tmp/g/prod-256M.log; [ -f $f ] || python bench/gen_grid.py --size 256M prod $f >/dev/null
  python bench/host_scaling.py $f 1 2 4 8 12 15 16 2>&1 | grep -v '^triage:'
  for s in prod healthy fail-middle prod-bare-k8s hex-heavy tracebacks; do g=/tmp/g/$s-256M.log; [ -f $g ] || python bench/gen_grid.py --size 256M $s $g >/dev/null; done
  for i in 1 2 3; do for s in prod healthy fail-middle prod-bare-k8s hex-heavy; do echo "$s $(PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-main /usr/bin/time -f "%e s" python -P -m triage analyze /tmp/g/$s-256M.log --format json -j 16 2>&1 >/dev/null | tail -1)"; done; done
  for s in prod healthy fail-middle prod-bare-k8s hex-heavy tracebacks storm; do echo "== phases $s"; TRIAGE_CACHE_DIR=/tmp/tc-main python bench/scan_phases.py /tmp/g/$s-256M.log -n 2 -j 16 2>&1 | tail -8; done
  ;;
esac
}
if [ "${MODE:-grid}" = all ]; then run_mode ab; run_mode scaling; else run_mode "${MODE:-grid}"; fi
