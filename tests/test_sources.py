import gzip

import pytest

from triage.inputs.ranks import split_prefix
from triage.inputs.sources import InputError, expand_paths, iter_inputs, parse_ts, rank_from_filename, read_lines
from triage.inputs.text import MAX_LINE, normalise


@pytest.mark.parametrize("raw,text,rank", [
    ("[rank3]: torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", 3),
    ("[default12]:[rank12]: AssertionError: x", "AssertionError: x", 12),
    ("7: RuntimeError: boom", "RuntimeError: boom", 7),
    ("[1,5]<stderr>:NCCL WARN x", "NCCL WARN x", 5),
    ("plain line: 3: not a prefix", "plain line: 3: not a prefix", None),
])
def test_split_prefix(raw, text, rank):
    assert split_prefix(raw) == (text, rank)


def test_normalise_strips_ansi_and_progress_bars_and_clips():
    assert normalise("\x1b[31mERROR\x1b[0m boom") == "ERROR boom"
    assert normalise("10%|#   |\r50%|#####  |\r100%|########|") == "100%|########|"
    long = normalise("x" * (MAX_LINE * 3))
    assert len(long) < MAX_LINE + 20 and long.endswith("[clipped]")


@pytest.mark.parametrize("text,expected", [
    ("[E1203 07:12:01.426415540 ProcessGroupNCCL.cpp:629] x", "12-03 07:12:01"),
    (" [2026-12-03 06:41:56.123456] iteration 5/10", "12-03 06:41:56"),
    ("2026-12-03 06:41:56,123 - INFO - x", "12-03 06:41:56"),
])
def test_timestamps(text, expected):
    import time
    ts = parse_ts(text)
    assert ts is not None
    assert time.strftime("%m-%d %H:%M:%S", time.gmtime(ts)) == expected


def test_no_timestamp():
    assert parse_ts("AssertionError: moe_preprocess cuda graph is only supported") is None


@pytest.mark.parametrize("name,rank", [
    ("rank_3.log", 3), ("job_rank12.out", 12), ("slurm-123456_7.out", 7), ("logs/rank-0.log.gz", 0),
    ("train.log", None),
])
def test_rank_from_filename(name, rank):
    assert rank_from_filename(name) == rank


def test_reads_gz_dirs_and_invalid_utf8(tmp_path):
    d = tmp_path / "job"
    (d / "node0").mkdir(parents=True)
    with gzip.open(d / "node0" / "rank_1.log.gz", "wt") as f:
        f.write("hello\nworld\n")
    (d / "rank_2.log").write_bytes(b"caf\xe9 \xff\n")
    files = expand_paths([str(d)])
    assert len(files) == 2
    lines = list(iter_inputs([str(d)]))
    assert sorted((l.text, l.rank) for l in lines) == [("caf\ufffd \ufffd", 2), ("hello", 1), ("world", 1)]


def test_overlong_physical_line_is_streamed_and_clipped(tmp_path):
    p = tmp_path / "big.log"
    p.write_text("a" * 1_000_000 + "\nnext\n")
    lines = list(read_lines(str(p)))
    assert [l.lineno for l in lines] == [1, 2]
    assert lines[1].text == "next"
    assert len(lines[0].text) < MAX_LINE + 20


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        expand_paths([str(tmp_path / "nope.log")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no log files"):
        expand_paths([str(tmp_path / "empty")])


@pytest.mark.parametrize("raw,rank", [
    ("[E1203 07:12:11.4 ProcessGroupNCCL.cpp:629] [PG ID 0 PG GUID 0(default_pg) Rank 12] Watchdog caught", 12),
    ("[Rank 3] Watchdog caught collective operation timeout", 3),
    ("[PG 0 Rank 7] Watchdog caught collective operation timeout", 7),
    ("[PG 0 (default_pg) Rank 9] Watchdog caught", 9),
    ("[NeMo E 2026-12-03 07:12:01 exp_manager:123] RuntimeError: x", None),
])
def test_rank_inside_message_and_nemo_prefix(raw, rank):
    from triage.inputs.sources import make_line
    ln = make_line(raw, "x.log", 1)
    assert ln.rank == rank
    if raw.startswith("[NeMo"):
        assert ln.text == "RuntimeError: x" and ln.ts is not None


def test_random_bytes_never_crash(tmp_path):
    import random

    from click.testing import CliRunner

    from triage.cli import cli
    rnd = random.Random(7)
    for i in range(5):
        data = bytes(rnd.getrandbits(8) for _ in range(20000))
        data += b"\n[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n" if i % 2 else b""
        p = tmp_path / f"r{i}.log"
        p.write_bytes(data)
        for fmt in ("text", "json", "markdown", "html"):
            r = CliRunner().invoke(cli, ["analyze", str(p), "--format", fmt])
            assert r.exit_code in (0, 1), r.output
            assert r.exception is None or isinstance(r.exception, SystemExit)


def test_utf16_and_crlf(tmp_path):
    p = tmp_path / "win.log"
    p.write_bytes("\ufeffhello\r\nRuntimeError: x\r\n".encode("utf-16-le"))
    assert [l.text for l in read_lines(str(p))] == ["hello", "RuntimeError: x"]


def test_glog_year_taken_from_dated_lines(tmp_path):
    import time
    p = tmp_path / "rank_3.log"
    p.write_text("[2025-06-01 10:00:00] start\n[E0601 10:10:00.000000 x.cpp:1] boom\n")
    lines = list(read_lines(str(p)))
    assert time.gmtime(lines[1].ts).tm_year == 2025


def test_torchrun_log_dir_layout(tmp_path):
    d = tmp_path / "run" / "attempt_1" / "3"
    d.mkdir(parents=True)
    (d / "stderr.log").write_text("x\n")
    [ln] = list(iter_inputs([str(tmp_path / "run")]))
    assert ln.rank == 3 and ln.attempt == 1
