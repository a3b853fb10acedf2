"""Every command's output is redacted, not only analyze's (issue 13)."""
import os
import subprocess
import sys
import inproc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyz012345"        # a fake Hugging Face token shape


def run(*args):
    return inproc.run(args, cwd=ROOT)       # in-process: tests/inproc.py


def test_check_config_and_diff_never_print_a_token(tmp_path):
    new = tmp_path / "new.yaml"
    new.write_text(f"model:\n  cuda_graph_impl: local\nenv:\n  HF_TOKEN: {TOKEN}\n")
    old = tmp_path / "old.yaml"
    old.write_text(f"model:\n  cuda_graph_impl: none\nenv:\n  HF_TOKEN: {TOKEN[::-1]}\n")
    outs = [run("check-config", str(new), "--format", "json"), run("check-config", str(new)),
            run("diff", str(old), str(new)), run("diff", str(old), str(new), "--format", "json")]
    for r in outs:
        assert TOKEN not in r.stdout and TOKEN[::-1] not in r.stdout, r.stdout
    assert "cuda_graph_impl" in outs[2].stdout                    # the rest of the diff stays readable
