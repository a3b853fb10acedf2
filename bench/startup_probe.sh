#!/usr/bin/env bash
# The tiny-log start-up on the device host (issue 27): installs the carried wheels (.whl/) into a venv,
# times `python -c pass`, `import click` and a tiny analyze (best and median of 30), and leaves an
# -X importtime listing and a cProfile of one tiny analyze in $OUT.   bash bench/startup_probe.sh
OUT=${OUT:-/tmp}
set -e
VENV=/tmp/v; python3 -m venv $VENV; $VENV/bin/pip install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy
export PATH="$VENV/bin:$PATH" PYTHONPATH="$PWD"
python -m compileall -q triage; python -m compileall -q $VENV/lib >/dev/null 2>&1 || true
printf 'hello\n' > /tmp/tiny.log
python -m triage analyze /tmp/tiny.log >/dev/null || true
t() { python - "$@" <<'PY'
import subprocess, sys, time, statistics
cmd = sys.argv[1:]
ts = []
for _ in range(30):
    s = time.perf_counter(); subprocess.run(cmd, stdout=subprocess.DEVNULL); ts.append(time.perf_counter() - s)
ts.sort(); print(f"{' '.join(cmd[-3:]):40s} best {ts[0]*1000:6.1f} ms  median {statistics.median(ts)*1000:6.1f} ms")
PY
}
t python -c pass
t python -c "import click"
t python -c "import json, dataclasses"
t python -m triage analyze /tmp/tiny.log
t python -m triage analyze /tmp/tiny.log --format json
t python -m triage --version
python -X importtime -m triage analyze /tmp/tiny.log 2> $OUT/imp.txt >/dev/null || true
python -m cProfile -o $OUT/tiny.prof -m triage analyze /tmp/tiny.log >/dev/null || true
