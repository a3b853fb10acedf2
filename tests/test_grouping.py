"""Issue 24: an unexplained failure is grouped the way Sentry groups errors -- exception type plus the
top in-app frame (triage/verdict/groupkey.py, docs/grouping.md) -- with the old message-based
signature kept readable (`message_signature`) and still matching the known issues keyed by it.

The tracebacks are real-shaped (CPython 3.12's layout; container paths); the logs are the SYNTHETIC
fixtures of tests/fixtures/logs/synthetic/grouping/ (gen_grouping.py)."""
import hashlib
import json
import os

import pytest
from click.testing import CliRunner

from corpus import LOGS
from triage.caps import BLOCK_MAX_LINES
from triage.cli import cli
from triage.scan.blocks import TB_CUT
from triage.verdict.groupkey import (exception_type, frame_name, frames, group_key, in_app, message_signature,
                                     unexplained_signatures)

GROUPING = os.path.join(LOGS, "synthetic", "grouping")
OLD = "unexplained-failure: FileNotFoundError: [Errno <n>] No such file or directory: '<path>'"
CKPT = ("unexplained-failure: FileNotFoundError @ checkpointing.py:_load_base_checkpoint "
        "(raised in serialization.py:__init__)")
INDEX = "unexplained-failure: FileNotFoundError @ indexed_dataset.py:__init__"
VOCAB = "unexplained-failure: FileNotFoundError @ gpt2_tokenization.py:__init__"
PY = "/usr/local/lib/python3.12"


def analyze(*args):
    r = CliRunner().invoke(cli, ["analyze", *args, "--format", "json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return json.loads(r.stdout)


def fixture(name):
    return os.path.join(GROUPING, name)


def tb(*frames_, exc):
    """A traceback as CPython prints it: FRAMES are (path, line, function, source line)."""
    out = ["Traceback (most recent call last):"]
    for path, line, func, src in frames_:
        out += [f'  File "{path}", line {line}, in {func}', f"    {src}"]
    return out + [exc]


# --- the rule, on error blocks --------------------------------------------------------------------

def test_the_three_missing_files_are_three_groups_with_one_message_signature():
    sigs = {n: analyze(fixture(n)) for n in ("ckpt_missing_rank3.log", "dataset_index_missing.log",
                                            "tokenizer_vocab_missing.log")}
    assert [d["signature"] for d in sigs.values()] == [CKPT, INDEX, VOCAB]
    assert {d["message_signature"] for d in sigs.values()} == {OLD}
    assert all(d["outcome"] == "unexplained-failure" for d in sigs.values())
    # each title still says what was missing
    assert sigs["dataset_index_missing.log"]["first_failure"]["message"].endswith("pile_text_document.idx'")


def test_the_same_failure_on_another_rank_host_path_and_line_numbers_is_one_group():
    a = analyze(fixture("ckpt_missing_rank3.log"))
    b = analyze(fixture("ckpt_missing_rank5_other_host.log"))
    assert (a["first_failing_rank"], b["first_failing_rank"]) == (3, 5)     # `[rank3]: ` and `5: ` read
    assert a["first_failure"]["message"] != b["first_failure"]["message"]
    assert a["signature"] == b["signature"] == CKPT and a["signature_id"] == b["signature_id"]


def test_launcher_prefixes_are_gone_before_the_frames_are_read():
    # the block's lines are the scan's, a `[rank0]: ` / `0: ` prefix stripped
    d = analyze(fixture("ckpt_missing_rank3.log"))
    assert d["first_failure"]["lines"][0] == "Traceback (most recent call last):"
    assert all(not ln.startswith("[rank") for ln in d["first_failure"]["lines"])


def test_a_lone_error_line_without_frames_keeps_the_masked_message():
    d = analyze(fixture("lone_error_line.log"))
    assert d["outcome"] == "unexplained-failure"
    assert d["signature"] == d["message_signature"] == OLD
    assert group_key(["FileNotFoundError: [Errno 2] No such file or directory: '/x'"],
                     "FileNotFoundError: [Errno 2] No such file or directory: '/x'") is None


def test_no_in_app_frame_uses_the_library_frame_and_the_raising_frame():
    d = analyze(fixture("library_only_frames.log"))
    assert d["signature"] == ("unexplained-failure: FileNotFoundError @ filesystem.py:create_stream "
                              "(raised in pathlib.py:open)")
    # only the standard library: the raising frame alone
    lines = tb((f"{PY}/runpy.py", 198, "_run_module_as_main", "return _run_code(code, main_globals, None,"),
               (f"{PY}/json/decoder.py", 355, "raw_decode", "raise JSONDecodeError(\"Expecting value\", s, err.value)"),
               exc="json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)")
    assert group_key(lines, lines[-1]) == "json.decoder.JSONDecodeError @ decoder.py:raw_decode"


CHAIN = (tb(("/opt/megatron-lm/megatron/core/datasets/indexed_dataset.py", 221, "__init__",
             'with open(idx_path, "rb") as stream:'),
            exc="FileNotFoundError: [Errno 2] No such file or directory: '/data/gpt/pile_text_document.idx'")
         + ["", "The above exception was the direct cause of the following exception:", ""]
         + tb(("/workspace/pretrain_gpt.py", 284, "<module>", "pretrain("),
              ("/workspace/data_setup.py", 57, "build_datasets", "raise RuntimeError(...) from e"),
              exc="RuntimeError: cannot open the dataset /data/gpt/pile_text_document"))


@pytest.mark.parametrize("sep", ["The above exception was the direct cause of the following exception:",
                                 "During handling of the above exception, another exception occurred:"])
def test_a_chained_exception_in_one_block_is_grouped_by_the_outermost_traceback(sep):
    lines = [sep if ln.startswith("The above") else ln for ln in CHAIN]
    assert frames(lines) == [("/workspace/pretrain_gpt.py", "<module>"), ("/workspace/data_setup.py", "build_datasets")]
    assert group_key(lines, lines[-1]) == "RuntimeError @ data_setup.py:build_datasets"


def test_a_chained_exception_in_a_log_is_grouped_by_the_error_the_report_shows():
    # the scan makes each traceback of the chain a block; the first failure is the first (the cause),
    # and the signature is read from it: type and frames of one traceback, the title's
    d = analyze(fixture("chained_dataset_error.log"))
    assert d["first_failure"]["message"].startswith("FileNotFoundError: ")
    assert d["signature"] == INDEX and d["message_signature"] == OLD


def test_in_app_is_the_jobs_own_code():
    for path in ("/workspace/pretrain_gpt.py", "/opt/megatron-lm/megatron/training/checkpointing.py",
                 "/home/me/src/train.py", "train.py", "/tmp/site/megatron/core/transformer/module.py"):
        assert in_app(path), path
    for path in (f"{PY}/dist-packages/torch/serialization.py", "/opt/conda/lib/python3.10/site-packages/x.py",
                 f"{PY}/pathlib.py", "/usr/lib/python3.12/runpy.py", "/root/.pyenv/versions/3.11.4/lib/python3.11/os.py",
                 "<frozen runpy>", "<string>", "<eval_with_key>.5", "/usr/local/bin/torchrun",
                 "/tmp/torchinductor_root/ab/cabcdefgh.py", "/root/.triton/cache/x/k.py"):
        assert not in_app(path), path


def test_a_frame_is_its_file_name_and_function_only():
    assert frame_name(("/opt/megatron-lm/megatron/training/checkpointing.py", "load_checkpoint")) == \
        "checkpointing.py:load_checkpoint"
    assert frame_name(("/x/megatron/training/tokenizer/__init__.py", "build_tokenizer")) == \
        "tokenizer/__init__.py:build_tokenizer"
    assert frame_name(("/runs/20261203/train_20261203.py", "main")) == "train_<n>.py:main"
    assert frame_name(("<eval_with_key>.12", "forward")) == "<eval_with_key>.<n>:forward"


def test_line_numbers_and_directories_do_not_change_the_key():
    def key(root, line):
        lines = tb((f"{root}/pretrain_gpt.py", line, "<module>", "main()"),
                   (f"{root}/model.py", line + 7, "forward", "x = self.proj(x)"),
                   (f"{PY}/dist-packages/torch/nn/functional.py", 2935, "linear", "return torch._C._nn.linear(x)"),
                   exc=f"RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x{line} and 8x8)")
        return group_key(lines, lines[-1])
    assert key("/workspace", 10) == key("/home/ci/job-77/src", 99) == \
        "RuntimeError @ model.py:forward (raised in functional.py:linear)"


def test_the_exception_type_is_read_from_the_error_line():
    assert exception_type("torch.OutOfMemoryError: CUDA out of memory.") == "torch.OutOfMemoryError"
    assert exception_type("KeyboardInterrupt") == "KeyboardInterrupt"
    assert exception_type("srun: error: node-3: task 3: Exited with exit code 1") is None
    # a type without an Error suffix only where the traceback ends with it
    lines = tb(("/workspace/train.py", 5, "<module>", "next(it)"), exc="StopIteration")
    assert exception_type("StopIteration", lines) == "StopIteration"
    assert group_key(lines, "StopIteration") == "StopIteration @ train.py:<module>"
    assert exception_type("StopIteration") is None


def test_the_signatures_are_redacted():
    msg = "PermissionError: access denied for hf_abcdefghijklmnopqrstuvwxyz0123456789 at https://u:PASS@db:5432/x"
    lines = tb(("/workspace/train.py", 42, "<module>", "main()"), exc=msg)
    sig, old = unexplained_signatures(lines, msg)
    assert sig == "unexplained-failure: PermissionError @ train.py:<module>"
    assert old == message_signature(msg) and "PASS" not in old and "hf_abc" not in old


def test_a_long_traceback_keeps_where_it_was_raised(tmp_path):
    # 30 frames (90 lines): the scan keeps the head, a mark, and the tail with the raising frames
    body = [f'  File "{PY}/dist-packages/torch/nn/modules/module.py", line {1700 + i}, in _call_impl'
            f'\n    return forward_call(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^^^' for i in range(28)]
    log = tmp_path / "long.log"
    log.write_text("\n".join(["Traceback (most recent call last):",
                              '  File "/workspace/pretrain_gpt.py", line 284, in <module>', "    pretrain("]
                             + body + ['  File "/workspace/model/attention.py", line 91, in core_attention',
                                       "    scores = torch.baddbmm(q, k, v)",
                                       "RuntimeError: CUDA error: invalid configuration argument"]) + "\n")
    d = analyze(str(log))
    lines = d["first_failure"]["lines"]
    assert len(lines) == BLOCK_MAX_LINES and TB_CUT in lines
    assert lines[0].startswith("Traceback") and lines[-1].startswith("RuntimeError: CUDA error")
    assert d["signature"] == "unexplained-failure: RuntimeError @ attention.py:core_attention"


# --- the JSON, the reports and known issues -------------------------------------------------------

def test_json_signature_id_and_message_signature():
    d = analyze(fixture("tokenizer_vocab_missing.log"))
    keys = list(d)
    assert keys[keys.index("signature"):keys.index("signature") + 3] == ["signature", "signature_id",
                                                                            "message_signature"]
    assert d["signature_id"] == hashlib.sha1(VOCAB.encode()).hexdigest()[:12]
    assert d["message_signature"] == OLD
    pit = analyze(os.path.join(LOGS, "synthetic", "multirank_ima_cascade.log"))
    assert pit["outcome"] == "pitfall" and pit["signature"] and pit["message_signature"] is None
    ok = analyze(os.path.join(LOGS, "synthetic", "healthy_megatron_te_graphs.log"))
    assert ok["outcome"] == "healthy" and "signature" not in ok and "message_signature" not in ok


def test_markdown_shows_the_message_signature_under_the_signature():
    r = CliRunner().invoke(cli, ["analyze", fixture("dataset_index_missing.log"), "--format", "markdown"])
    out = r.stdout
    assert f"| Signature | `{INDEX}`" in out
    assert f"| Message signature | `{OLD}` |" in out
    assert out.index("| Signature |") < out.index("| Message signature |")


def test_a_known_issue_keyed_by_the_old_message_signature_still_matches(tmp_path):
    db = str(tmp_path / "s.db")
    run = CliRunner().invoke
    assert run(cli, ["known", "add", OLD, "https://tickets/42", "--db", db]).exit_code == 0
    d = analyze(fixture("dataset_index_missing.log"), "--db", db, "--record")
    assert d["signature"] == INDEX
    assert d["known"]["key"] == OLD and d["known"]["url"] == "https://tickets/42" and d["known"]["seen"] == 1
    # the new key wins over the old one
    assert run(cli, ["known", "add", INDEX, "https://tickets/43", "--db", db]).exit_code == 0
    assert analyze(fixture("dataset_index_missing.log"), "--db", db)["known"]["url"] == "https://tickets/43"
    # a pitfall's verdict has no message signature: the old key does not reach it
    pit = analyze(os.path.join(LOGS, "synthetic", "multirank_ima_cascade.log"), "--db", db)
    assert "known" not in pit


def test_fleet_groups_by_the_key_shows_a_sample_error_and_matches_old_known_issues(tmp_path):
    db = str(tmp_path / "s.db")
    run = CliRunner().invoke
    assert run(cli, ["known", "add", "re:No such file or directory", "https://tickets/7", "--db", db]).exit_code == 0
    logs = [fixture(n) for n in ("ckpt_missing_rank3.log", "ckpt_missing_rank5_other_host.log",
                                 "dataset_index_missing.log", "tokenizer_vocab_missing.log")]
    r = run(cli, ["fleet", *logs, "--db", db, "--format", "json", "-j", "1", "-q"])
    v = json.loads(r.stdout)
    groups = {g["signature"]: g for g in v["unexplained"]}
    assert set(groups) == {CKPT, INDEX, VOCAB} and groups[CKPT]["count"] == 2
    assert groups[INDEX]["title"].startswith("FileNotFoundError: [Errno 2] No such file or directory: ")
    # a regex key written against the old signatures' message still finds the groups
    assert all(g["known"] == {"url": "https://tickets/7", "title": None} for g in groups.values())
    text = run(cli, ["fleet", *logs, "--db", db, "--format", "text", "-j", "1", "-q"]).stdout
    assert f"x1    {INDEX}" in text
    assert "e.g. FileNotFoundError: [Errno 2] No such file or directory: '/data/gpt/pile_text_document.idx'" in text
    md = run(cli, ["fleet", *logs, "--db", db, "--format", "markdown", "-j", "1", "-q"]).stdout
    assert "<br>e.g. FileNotFoundError" in md


def test_fleet_matches_a_known_issue_keyed_by_the_old_message_signature(tmp_path):
    db = str(tmp_path / "s.db")
    run = CliRunner().invoke
    assert run(cli, ["known", "add", OLD, "https://tickets/42", "--db", db]).exit_code == 0
    r = run(cli, ["fleet", fixture("tokenizer_vocab_missing.log"), "--db", db, "--format", "json", "-j", "1", "-q"])
    (g,) = json.loads(r.stdout)["unexplained"]
    assert g["signature"] == VOCAB and g["known"]["url"] == "https://tickets/42"
