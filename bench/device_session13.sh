#!/bin/bash
# Issue 44, thirteenth pass: device calls.  MODE=ab: this tree against .ab/s13 (31aec9f, the pass's start) on the
# logs LOGS= (grid names: shape:size, made when missing), -j 16, alternating, RUNS runs each, then this tree's phases
# of PHASES= (shape:size of a log made above); MODE=grid: bench/grid.py's grid A/B against .ab/old (7a762e8), SHAPES=
# a subset, BIG=1G adds prod at 1 GiB, TINY=1 the tiny log, 20 runs a tree.  Prints numbers.
. bench/device_venv.sh triage .ab/old/triage .ab/s13/triage
mkdir -p /tmp/g
case "${MODE:-ab}" in
ab)
  for spec in ${LOGS:-storm:256M tracebacks:256M prod:256M healthy:256M}; do
    shape=${spec%%:*}; size=${spec##*:}; f=/tmp/g/$shape-$size.log
    [ -f $f ] || python bench/gen_grid.py --size $size $shape $f >/dev/null
    a=""; b=""
    for i in $(seq ${RUNS:-4}); do
      a="$a $(PYTHONPATH=.ab/s13 TRIAGE_CACHE_DIR=/tmp/tc-s13 /usr/bin/time -f "%e" python -P -m triage analyze $f --format json -j 16 2>&1 >/dev/null | tail -1)"
      b="$b $(PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-main /usr/bin/time -f "%e" python -P -m triage analyze $f --format json -j 16 2>&1 >/dev/null | tail -1)"
    done
    echo "== $shape $size ($(stat -c %s $f) bytes) -j 16 alternating: s13$a | main$b"
  done
  for spec in $PHASES; do
    echo "== phases ${spec%%:*}"; TRIAGE_CACHE_DIR=/tmp/tc-main python bench/scan_phases.py /tmp/g/${spec%%:*}-${spec##*:}.log -n 2 -j 16 2>&1 | tail -8
  done
  ;;
grid)
  big=""; [ -n "$BIG" ] && big="--big $BIG"
  python bench/grid.py --size 256M $big --runs 2 --runs-j1 1 --tree .ab/old --tree . --rg --budget ${BUDGET:-420} --timeout 110 --tmp /tmp/g --out $OUT/grid.md --shapes ${SHAPES:-storm,tracebacks,megatron-dense,bench-dense,iter-all,prod,bench,prod-srun,prod-mpirun,prod-tee,prod-bare-k8s,short-lines,long-lines,warn-heavy,hex-heavy,fail-middle,fail-start,healthy} 2>&1 | tail -45
  if [ -n "$TINY" ]; then
    for t in .ab/old .ab/s13 .; do echo "== tiny log, tree $t, 20 runs (s, sorted)"; for i in $(seq 20); do PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) /usr/bin/time -f "%e" python -P -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | tail -1; done | sort -n | tr '\n' ' '; echo; done
  fi
  ;;
esac
