"""A process that dies without an error of its own in the log is still a failure when torchrun or
the shell reports it (issue 12: never silent on a failed job).  Synthetic one-line logs built from
the real format strings: libstdc++'s verbose terminate handler, torch/distributed/elastic/multiprocessing/api.py ("failed (exitcode: %s)
local_rank: %s (pid: %s) of binary: %s", SignalException "Process %d got signal: %d") and bash's
job-control messages (strsignal texts, "(core dumped)")."""
import os
import pytest

import inproc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("line,code,rank", [
    ("E1203 07:12:30.123000 140 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -6) "
     "local_rank: 1 (pid: 4242) of binary: /usr/bin/python3", 3, 1),
    ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15", 3, None),
    ("Segmentation fault (core dumped)", 3, None),
    ("./run.sh: line 7:  4242 Killed                  python train.py", 3, None),
    ("E1203 07:12:30.123000 140 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 0) "
     "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3", 0, None),
    ("terminate called after throwing an instance of 'std::runtime_error'\n  what():  something odd happened", 3, 0),
    ("[rank0]: iteration 3 | Killed processes: 0", 0, None),
    ("the OOM killer Killed nothing today", 0, None),
])
def test_launcher_and_shell_reports_of_a_death(tmp_path, line, code, rank):
    p = tmp_path / "job.log"
    p.write_text("[rank0]: training step 1\n" + line + "\n")
    r = inproc.run(["analyze", str(p), "--format", "json"], cwd=ROOT)      # in-process: tests/inproc.py
    assert r.returncode == code, r.stdout[-500:]
    import json
    d = json.loads(r.stdout)
    assert d["outcome"] == {0: "healthy", 3: "unexplained-failure"}[code]
    if code:
        assert d["first_failure"]["kind"] == "launcher-exit" and d["first_failing_rank"] == rank
