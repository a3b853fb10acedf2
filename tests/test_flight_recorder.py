"""Issue 43, Flight Recorder dumps: `triage analyze DIR` reads the dumps beside the logs without running
anything in them, and names the first collective where the ranks disagree (missing ranks, another op,
other sizes), in the hang sentence and its evidence.

Dumps: tests/fixtures/frdumps/ (README.md): real torch 2.14.1 Gloo dumps (pickle and JSON), one
labelled synthetic set built from them; the malicious dump is made here.
"""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys

import pytest

from triage.inputs.frdump import MAX_DUMP_BYTES, find_dumps, read_dump
from triage.inputs.names import InputError
from triage.pipeline import triage
from triage.report import render
from triage.verdict.frtrace import first_disagreement

HERE = os.path.dirname(os.path.abspath(__file__))
FR = os.path.join(HERE, "fixtures", "frdumps")
REAL = os.path.join(FR, "real-2.14.1-gloo")
LOGS = os.path.join(HERE, "fixtures", "logs", "real")


def _dumps(folder):
    return [read_dump(os.path.join(folder, f)) for f in sorted(os.listdir(folder))]


def test_real_dump_is_read_as_plain_data():
    d = read_dump(os.path.join(REAL, "skip", "nccl_trace_rank_2"))
    assert d.rank == 2 and d.version == "2.10"
    assert [(e.seq, e.op, e.state) for e in d.entries] == [(1, "all_reduce", "scheduled"), (2, "all_reduce", "scheduled")]
    assert d.entries[0].input_sizes == "[[1024]]" and d.entries[0].desc == "default_pg"


@pytest.mark.parametrize("case,what,behind,seq,op", [
    ("skip", "missing", [2], 3, "all_reduce"),
    ("json", "missing", [2], 3, "all_reduce"),
    ("mismatch", "op", [1], 3, "all_reduce"),
    ("subgroup", "missing", [3], 3, "all_reduce"),      # rank 3 made two calls, rank 2 three
])
def test_real_dumps_first_disagreement(case, what, behind, seq, op):
    f = first_disagreement(_dumps(os.path.join(REAL, case)))
    assert f is not None and (f.what, f.behind, f.seq, f.op) == (what, behind, seq, op)


def test_subgroup_names_its_group():
    f = first_disagreement(_dumps(os.path.join(REAL, "subgroup")))
    assert f.desc == "TENSOR_MODEL_PARALLEL_GROUP" and f.reached == [2]
    assert "rank 3 never recorded all_reduce #3 of the TENSOR_MODEL_PARALLEL_GROUP group" in f.sentence


def test_mismatched_op_sentence():
    f = first_disagreement(_dumps(os.path.join(REAL, "mismatch")))
    assert f.sentence == ("the Flight Recorder dumps show rank 1 called broadcast as collective #3 of the default "
                          "group where the others called all_reduce")


def test_synthetic_sizes_mismatch():
    f = first_disagreement(_dumps(os.path.join(FR, "synthetic", "sizes")))
    assert (f.what, f.behind, f.seq) == ("sizes", [2], 3)
    assert "passed input sizes [[8]] to all_reduce #3" in f.sentence


def test_agreeing_dumps_give_nothing():
    dumps = _dumps(os.path.join(REAL, "skip"))
    for d in dumps:                       # every rank's first two all_reduces only: they agree
        d.entries = [e for e in d.entries if e.seq <= 2]
    assert first_disagreement(dumps) is None


def _job(tmp_path, log, dumps):
    job = tmp_path / "job"
    job.mkdir()
    shutil.copy(log, job / os.path.basename(log))
    for f in os.listdir(dumps):
        shutil.copy(os.path.join(dumps, f), job / f)
    return str(job)


def test_analyze_dir_adds_the_dumps_to_the_log_sentence(tmp_path):
    # the real 4-rank H100 hang where rank 2 held back at all_reduce #3, with the real dumps of the same shape
    job = _job(tmp_path, os.path.join(LOGS, "gpu-multirank", "nccl_hang_flight_recorder.log"), os.path.join(REAL, "skip"))
    a = triage([job])
    assert a.sources == [os.path.join(job, "nccl_hang_flight_recorder.log")]      # the dumps are not scanned as logs
    h = a.verdict.hang_detail
    assert h.source == "log+flight-recorder" and h.behind == [2]
    assert h.sentence == ("rank 2 never reached all_reduce #3 of the default group; the 3 others waited 15 s; the "
                          "Flight Recorder dumps show rank 2 never recorded all_reduce #3 of the default group, which "
                          "ranks 0, 1 and 3 recorded")
    assert any(e.source.endswith("nccl_trace_rank_2") for e in h.evidence)
    assert not any("no Flight Recorder dump" in n for n in a.notes)      # the how-to is for jobs without dumps
    for fmt in ("text", "markdown", "html", "junit", "jira", "json"):
        assert "Flight Recorder dumps show rank 2 never recorded all" in render(a, fmt), fmt


def test_dumps_alone_name_the_wavefront_when_the_log_has_no_sequence_numbers(tmp_path):
    # a real gloo timeout log (no SeqNum) beside real dumps: the dumps give the sentence
    job = _job(tmp_path, os.path.join(LOGS, "gpu", "gloo_rank_hang_timeout.log"), os.path.join(REAL, "json"))
    h = triage([job]).verdict.hang_detail
    assert h.source == "flight-recorder" and h.behind == [2] and h.seq == 3 and h.kind == "default"


def test_explicit_dump_files_are_split_from_logs():
    logs, dumps = find_dumps([os.path.join(LOGS, "gpu", "gloo_rank_hang_timeout.log"),
                              os.path.join(REAL, "skip", "nccl_trace_rank_0")])
    assert logs == [os.path.join(LOGS, "gpu", "gloo_rank_hang_timeout.log")]
    assert dumps == [os.path.join(REAL, "skip", "nccl_trace_rank_0")]


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_dump_runs_nothing_and_is_a_one_line_error(tmp_path):
    marker = tmp_path / "pwned"
    job = tmp_path / "job"
    job.mkdir()
    shutil.copy(os.path.join(LOGS, "gpu", "nccl_rank_hang_timeout.log"), job / "rank.log")
    with open(job / "nccl_trace_rank_0", "wb") as f:
        pickle.dump({"version": "2.10", "entries": [_Evil(str(marker))]}, f, protocol=2)
    with pytest.raises(InputError) as e:
        read_dump(str(job / "nccl_trace_rank_0"))
    assert "asks to load" in str(e.value) and "system" in str(e.value)
    assert not marker.exists()
    # the CLI: a one-line error, a non-zero exit, no traceback, nothing run
    r = subprocess.run([sys.executable, "-m", "triage", "analyze", str(job)], capture_output=True, text=True,
                       cwd=os.path.dirname(HERE), timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len([x for x in r.stderr.splitlines() if x.strip()]) == 1 and "not a Flight Recorder dump" in r.stderr
    assert not marker.exists()


@pytest.mark.parametrize("data,why", [
    (b"\x80\x02}q\x00.", "no 'entries' list"),            # a pickled empty dict
    (b"\x80\x02\x00garbage", "broken pickle"),
    (b"not a pickle at all", "neither a pickle nor JSON"),
    (b'{"entries": [', "JSON"),
])
def test_broken_dumps_are_input_errors(tmp_path, data, why):
    p = tmp_path / "nccl_trace_rank_1"
    p.write_bytes(data)
    with pytest.raises(InputError) as e:
        read_dump(str(p))
    assert why in str(e.value)


def test_oversized_dump_is_refused_unread(tmp_path):
    p = tmp_path / "nccl_trace_rank_1"
    with open(p, "wb") as f:
        f.seek(MAX_DUMP_BYTES + 1)
        f.write(b"\0")
    with pytest.raises(InputError) as e:
        read_dump(str(p))
    assert "MiB" in str(e.value)


def test_entry_cap(tmp_path, monkeypatch):
    import triage.inputs.frdump as frdump
    monkeypatch.setattr(frdump, "MAX_ENTRIES", 2)
    d = read_dump(os.path.join(REAL, "skip", "nccl_trace_rank_0"))
    assert [e.seq for e in d.entries] == [2, 3] and d.dropped == 1      # the newest kept


def test_hostile_plain_data_is_bounded(tmp_path):
    """Plain data a pickle can still make hostile (review, 2026-12-06): numbers of 5,000 digits (str() of
    them raises) and one list of 5 million items that 20,000 entries share through the pickle's memo
    (copying it for every entry took over 60 s): read in well under the bound, no crash."""
    import time
    big = tmp_path / "nccl_trace_rank_0"
    big.write_bytes(pickle.dumps({"version": 10 ** 5000, "entries": [
        {"profiling_name": "nccl:all_reduce", "collective_seq_id": 10 ** 5000, "input_sizes": [[10 ** 5000]],
         "process_group": ("0", "default_pg")}]}, 2))
    d = read_dump(str(big))
    assert d.version == "" and d.entries == []
    n = 5_000_000                       # MARK, NONE, DUP x n, LIST: one list, memo 1; an entry: memo 2
    shared = b"(N" + b"2" * n + b"lq\x01"
    ent = (b"}q\x02(" + b"X\x11\x00\x00\x00collective_seq_idK\x01" + b"X\x0e\x00\x00\x00profiling_name"
           + b"X\x0f\x00\x00\x00nccl:all_reduce" + b"X\x0b\x00\x00\x00input_sizes(" + b"h\x01" * 8 + b"l"
           + b"X\x0c\x00\x00\x00output_sizes(" + b"h\x01" * 8 + b"l" + b"u")
    data = b"\x80\x02}q\x00(X\x07\x00\x00\x00entries(" + shared + b"0" + ent + b"h\x02" * 19999 + b"lu."
    assert len(pickle.loads(data)["entries"]) == 20000
    big.write_bytes(data)
    t0 = time.monotonic()
    d = read_dump(str(big))
    assert time.monotonic() - t0 < 20 and d.entries and d.entries[0].seq == 1


def test_flight_recorder_lines_found_by_their_words_first():
    """_flight_recorder searches a kept line only when it holds "dump" or "light " (issue 44: a storm's thousands of
    kept lines were a search each): every wording of _FLIGHT holds one of them, and the lines found are the lines
    the search alone finds."""
    from types import SimpleNamespace

    from triage.inputs.sources import Line
    from triage.match.rx import search
    from triage.verdict.hangs import _FLIGHT, _flight_recorder
    assert all("dump" in alt or "light " in alt for alt in _FLIGHT.pattern.split("|"))
    texts = ["[PG ID 0 PG GUID 0 Rank 3] Received a dump signal due to a collective timeout from this local rank",
             "Flight Recorder dump written", "flight recorder is enabled", "dumping debug info to /tmp/nccl_trace",
             "dump debug info failed", "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2)",
             "a dumpster fire", "lightweight recorder", "Flight recorder"]
    ms = [SimpleNamespace(line=Line(t, "job.log", i + 1, i, None)) for i, t in enumerate(texts)]
    fr = _flight_recorder(ms)
    want = [i for i, t in enumerate(texts) if search(_FLIGHT, t)]
    assert fr is not None and fr.ranks == want and len(want) == 6
