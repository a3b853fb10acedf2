#!/bin/bash
# Issue 44, eleventh pass: device calls.  MODE=mid: this tree against .ab/s11 (de2eadd, the pass's start) on the
# dense shapes, prod at 256 MiB and 1 GiB, with the phases of tracebacks and the 1 GiB prod mix at -j 16;
# MODE=grid: the grid A/B against .ab/old (7a762e8) and the tiny log.  Prints numbers.
. bench/device_venv.sh triage .ab/old/triage .ab/s11/triage
case "${MODE:-mid}" in
mid)
  python bench/grid.py --size 256M --big 1G --shapes tracebacks,storm,megatron-dense,bench-dense,iter-all,prod,prod-bare-k8s --runs 3 --runs-j1 1 --tree .ab/s11 --tree . --budget ${BUDGET:-300} --timeout 60 --tmp /tmp/g --out $OUT/mid.md 2>&1 | tail -20
  for f in /tmp/g/tracebacks-*.log /tmp/g/prod-1073741824*.log; do for t in .ab/s11 . .ab/s11 .; do echo "== $(basename $f), tree $t, -j 16"; PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python bench/scan_phases.py $f -n 1 -j 16 2>&1 | tail -4; done; done
  ;;
grid)
  python bench/grid.py --size 256M --big 1G --runs 2 --runs-j1 1 --tree .ab/old --tree . --rg --budget ${BUDGET:-420} --timeout 110 --tmp /tmp/g --out $OUT/grid.md --shapes ${SHAPES:-storm,tracebacks,megatron-dense,bench-dense,iter-all,prod,bench,prod-srun,prod-mpirun,prod-tee,prod-bare-k8s,short-lines,long-lines,warn-heavy,hex-heavy,fail-middle,fail-start,healthy} 2>&1 | tail -45
  for t in .ab/s11 .; do echo "== tiny log, tree $t, 20 runs (s, sorted)"; for i in $(seq 20); do PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) /usr/bin/time -f "%e" python -P -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | tail -1; done | sort -n | tr '\n' ' '; echo; done
  # this tree against the pass's start, alternating, on the grid's logs (-j 16, seconds, in run order)
  for f in /tmp/g/prod-268435456.log /tmp/g/prod-1073741824.log /tmp/g/tracebacks-134217728.log /tmp/g/storm-67108864.log; do
    a=""; b=""
    for i in 1 2 3 4; do
      a="$a $(PYTHONPATH=.ab/s11 TRIAGE_CACHE_DIR=/tmp/tc-s11 /usr/bin/time -f "%e" python -P -m triage analyze $f --format json -j 16 2>&1 >/dev/null | tail -1)"
      b="$b $(PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-main /usr/bin/time -f "%e" python -P -m triage analyze $f --format json -j 16 2>&1 >/dev/null | tail -1)"
    done
    echo "== $(basename $f) -j 16 alternating: s11$a | main$b"
  done
  ;;
esac
