"""Hostile configs: a clear one-line error and exit 2, bounded memory (issue 13); a hang fails through
the subprocess timeout."""
import json
import os
import subprocess
import sys

import pytest

from triage.config import CONFIG_MAX_BYTES, ConfigError, load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]) + "\n"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("name,text,message", [
    ("laughs.yaml", LAUGHS, "YAML expands to more than 1,000,000 values (YAML alias expansion?)"),
    ("deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000 + "\n", "YAML nested too deeply to read"),
    ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply to read"),
    ("list.yaml", "- 1\n- 2\n", "a config must be a mapping, got list"),
    # issue 45: file:line:col, PyYAML's problem and its context
    ("broken.yaml", "a: [1, 2\n", "2:1: not valid YAML: did not find expected ',' or ']' (while parsing a flow "
                                  "sequence started at line 1, column 4)"),
], ids=["laughs", "deep-yaml", "deep-json", "list", "broken"])
def test_hostile_config_is_one_clear_line_and_exit_2(tmp_path, name, text, message):
    p = tmp_path / name
    p.write_text(text)
    r = cli("check-config", str(p))          # a hang fails through cli()'s timeout
    sep = ":" if message[0].isdigit() else ": "
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"triage: error: {p}{sep}{message}\n")


def test_binary_and_huge_files_are_refused(tmp_path):
    b = tmp_path / "bin.yaml"
    b.write_bytes(bytes(range(256)) * 100)
    with pytest.raises(ConfigError, match="binary"):
        load_config(str(b))
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(CONFIG_MAX_BYTES + 1)
    with pytest.raises(ConfigError, match="at most"):
        load_config(str(big))


def test_python_tags_are_data_never_code(tmp_path):
    p = tmp_path / "tag.yaml"
    marker = tmp_path / "pwned"
    p.write_text(f'x: !!python/object/apply:os.system ["touch {marker}"]\nmodel:\n  cuda_graph_impl: local\n')
    cfg = load_config(str(p))
    assert not marker.exists()
    assert cfg["cuda_graph_impl"] == "local"


def test_an_alias_bomb_inside_a_log_task_configuration_is_skipped(tmp_path):
    # synthetic: Bridge's "Task Configuration" block (real markers) holding a YAML alias bomb
    log = tmp_path / "job.log"
    log.write_text("------- Task Configuration -------\n" + LAUGHS + "-" * 20 + "\nRuntimeError: boom\n")
    r = cli("analyze", str(log), "--format", "json")
    # the exception line that ends the input is an uncaught exception (issue 22): exit 3, no traceback
    assert r.returncode == 3 and r.stderr == ""
    d = json.loads(r.stdout)
    # the bomb is not expanded (no config key from it); the block's marker still says Bridge
    assert (d["outcome"], d["first_failure"]["message"], d["config"]) == (
        "unexplained-failure", "RuntimeError: boom", {"framework": "bridge"})


BIG = "9" * 5000                                   # over Python's 4,300-digit int/str limit
HOSTILE_VALUES = {
    "huge-int.yaml": f"model:\n  cuda_graph_impl: local\n  seq_length: {BIG}\n",
    "huge-hex.yaml": "model:\n  cuda_graph_impl: local\n  seq_length: 0x" + "f" * 5000 + "\n",
    "huge-int.json": json.dumps({"model": {"cuda_graph_impl": "local"}})[:-2] + f', "seq_length": {BIG}}}}}',
    "dates.yaml": "model:\n  cuda_graph_impl: local\nb: 0000-00-00\nc: 10000-01-01\nd: 2001-02-30\ne: 9999-12-31\n",
    "surrogate.json": '{"model": {"cuda_graph_impl": "local", "name": "x\\ud800y"}, "\\udfff": 1}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE_VALUES))
def test_values_python_cannot_hold_as_read_are_read_as_their_text(tmp_path, name):
    """Found by fuzzing: an integer of 5,000 digits (YAML, JSON; a YAML hex one read fine but could
    not be printed), a YAML date out of datetime's range (0000-00-00, 10000-01-01) and a JSON lone
    surrogate were internal errors.  They are read as their text (the int as hex, clipped; the
    surrogate as U+FFFD), and the rest of the config is still checked: the graph impl without the TE
    RNG tracker is found in every one, in every format."""
    import inproc
    p = tmp_path / name
    p.write_text(HOSTILE_VALUES[name], encoding="utf-8")
    for fmt in ("text", "json", "markdown", "html"):
        r = inproc.run(["check-config", str(p), "--format", fmt])
        assert r.returncode == 1 and r.stderr == "", (fmt, r.stderr)
        assert "te-rng-tracker-missing" in r.stdout, fmt
        if fmt == "json":
            json.loads(r.stdout)
    d = inproc.run(["diff", str(p), os.path.join(ROOT, "tests", "fixtures", "configs", "bad_run_config.yaml")])
    assert d.returncode in (0, 1) and "internal error" not in d.stderr, d.stderr


def test_an_override_of_5000_digits_and_a_pattern_file_of_an_unreadable_date(tmp_path):
    """Found by fuzzing (internal errors before): KEY=<5,000 digits> is its text; a pattern file
    holding a date PyYAML cannot make (0000-00-00) is that file's one-line problem."""
    import inproc
    r = inproc.run(["check-config", "model.seq_length=" + "9" * 5000, "model.cuda_graph_impl=local", "--format", "json"])
    assert r.returncode == 1 and "te-rng-tracker-missing" in r.stdout, r.stderr
    p = tmp_path / "mine.yaml"
    with open(os.path.join(ROOT, "patterns", "te-required.yaml"), encoding="utf-8") as f:
        p.write_text(f.read() + "\nreviewed: 0000-00-00\n")
    r = inproc.run(["patterns", "check", str(p)])
    assert r.returncode == 1 and "mine.yaml: a value PyYAML cannot read: year 0 is out of range" in r.stdout + r.stderr
    r = inproc.run(["analyze", os.path.join(ROOT, "examples", "sample_job.log"), "--patterns", str(p)])
    assert r.returncode == 2 and r.stderr.startswith("triage: error: --patterns") and r.stderr.count("\n") == 1
