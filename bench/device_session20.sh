#!/bin/bash
# Issue 44, twentieth pass: one device call (written in a session lent no device: its figures are this machine's).
# The grid A/B of this tree against .ab/s19 (5e934dd, the pass's start) on the shapes of how a log was captured and
# of a hang -- CRLF, colours, both, non-ASCII text, a hang's ranks -- at -j 16, with the log also piped to stdin
# (`grid.py --stdin`) and rg; then the production mix and the dense shapes as before (SHAPES2), within BUDGET
# seconds; the tiny log under both trees (NO_TINY=1: not).  Numbers.
. bench/device_venv.sh triage .ab/s19/triage
mkdir -p /tmp/g
python bench/grid.py --size ${SIZE:-256M} --runs ${RUNS:-2} --runs-j1 ${RUNS_J1:-1} --tree .ab/s19 --tree . --rg --stdin \
  --budget ${BUDGET:-360} --timeout 110 --tmp /tmp/g --out $OUT/grid20.md \
  --shapes ${SHAPES:-prod,prod-crlf,prod-ansi,prod-tty,prod-utf8,prod-hang} 2>&1 | tail -16
[ -z "$SHAPES2" ] || python bench/grid.py --size ${SIZE:-256M} --runs 2 --runs-j1 1 --tree .ab/s19 --tree . --rg \
  --budget ${BUDGET2:-200} --timeout 110 --tmp /tmp/g --shapes $SHAPES2 2>&1 | tail -12
[ -n "$NO_TINY" ] || python bench/tiny_ab.py .ab/s19 . -n ${TINY_N:-20}
