"""The CLI where people run it: exit codes by severity (--fail-on), the terminal (colour only on a
TTY, NO_COLOR, wrapping), inputs a user gets wrong, one error path (exit 2 for a user's mistake,
4 and a bug-report line for an internal error), examples in every command's help."""
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from triage import term
from triage.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "examples", "sample_job.log")
FIX = os.path.join(ROOT, "tests", "fixtures")
HEALTHY = os.path.join(FIX, "logs", "synthetic", "healthy_megatron_te_graphs.log")
UNEXPLAINED = os.path.join(FIX, "logs", "synthetic", "unrelated_dataset_error.log")
ENV = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_DB", "NO_COLOR")}


def run(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(ENV, **(env or {})), timeout=120)


@pytest.mark.parametrize("log,fail_on,code", [
    (SAMPLE, "error", 1), (SAMPLE, "warning", 1), (SAMPLE, "never", 0),
    (HEALTHY, "error", 0), (HEALTHY, "warning", 0), (HEALTHY, "never", 0),
    (UNEXPLAINED, "error", 3), (UNEXPLAINED, "warning", 3), (UNEXPLAINED, "never", 0),
])
def test_fail_on(log, fail_on, code):
    r = CliRunner().invoke(cli, ["analyze", log, "-q", "--fail-on", fail_on])
    assert r.exit_code == code, r.output


def test_exit_zero_is_fail_on_never():
    assert CliRunner().invoke(cli, ["analyze", UNEXPLAINED, "-q", "--exit-zero"]).exit_code == 0


def test_unknown_report_suffix_is_an_error_not_text_in_a_pdf(tmp_path):
    out = tmp_path / "report.pdf"
    r = run("analyze", SAMPLE, "-o", str(out))
    assert r.returncode == 2 and not out.exists()
    assert "unknown report suffix '.pdf'" in r.stderr and ".html" in r.stderr
    r = run("analyze", SAMPLE, "-o", str(out), "--format", "markdown")      # explicit: the user asked for it
    assert r.returncode == 1 and out.read_text().startswith("#")
    assert run("fleet", SAMPLE, "--no-store", "-o", str(tmp_path / "f.docx")).returncode == 2


def test_colour_only_on_a_terminal_and_never_with_no_color():
    plain = run("analyze", SAMPLE).stdout
    assert "\x1b[" not in plain                                   # a pipe: plain text
    forced = run("analyze", SAMPLE, "--color", "always").stdout
    assert "\x1b[1;31mPRIMARY  moe-scope-conflict  [error]" in forced
    assert term.use_color("auto", _Tty()) is True
    os.environ["NO_COLOR"] = "1"
    try:
        assert term.use_color("auto", _Tty()) is False
        assert term.use_color("always", _Tty()) is True
    finally:
        del os.environ["NO_COLOR"]


class _Tty:
    def isatty(self):
        return True


def test_prose_is_wrapped_to_the_terminal_width_and_not_in_a_pipe():
    text = run("analyze", SAMPLE).stdout
    why = next(ln for ln in text.splitlines() if ln.startswith("  why: "))
    assert len(why) > 100                                         # a pipe keeps whole lines (for grep)
    wrapped = term.wrap(text, 72)
    lines = wrapped.splitlines()
    i = lines.index(next(ln for ln in lines if ln.startswith("  why: ")))
    assert all(len(ln) <= 72 for ln in lines[i:i + 3])
    assert lines[i + 1].startswith("       ") and not lines[i + 1].startswith("        ")  # under the label
    assert " ".join(x.strip() for x in wrapped.split("\n")).count("The `moe` scope captures") == 1


def test_quiet_prints_the_verdict_line_only():
    r = run("analyze", SAMPLE, "-q")
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("triage: rank 1 failed first with moe-scope-conflict")


def test_empty_input_is_an_input_error_not_healthy(tmp_path):
    """Issue 22: an empty input has no verdict (never "healthy"): one line, exit 2."""
    p = tmp_path / "empty.log"
    p.write_text("")
    r = run("analyze", str(p))
    assert r.returncode == 2 and r.stderr.startswith("triage: error: the input is empty") and r.stdout == ""


def test_directory_that_is_not_a_job(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    (big / "r0.log").write_text("")
    for i in range(1, 4097):             # hard links: the same empty regular file, ~10x cheaper to make
        os.link(big / "r0.log", big / f"r{i}.log")
    r = run("analyze", str(big))
    assert r.returncode == 2 and "holds more than 4,096 log-like files" in r.stderr
    assert f"triage fleet --jobs-in {big}" in r.stderr
    tree = tmp_path / "tree"
    (tree / "a" / "b" / "c" / "d" / "e").mkdir(parents=True)
    (tree / ".git").mkdir()
    (tree / ".git" / "ORIG_HEAD").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    (tree / "a" / "b" / "c" / "d" / "e" / "too_deep.log").write_text("RuntimeError: deep\n")
    (tree / "a" / "rank0.log").write_text("iteration 1 ok\n")
    (tree / "a" / "model.py").write_text("raise RuntimeError('x')\n")
    r = run("analyze", str(tree), "--format", "json")
    assert r.returncode == 0, r.stderr
    import json
    assert json.loads(r.stdout)["stats"]["sources"] == [str(tree / "a" / "rank0.log")]


def test_arguments_that_are_wrong_say_what_is_wrong(tmp_path):
    r = run("check-config", str(tmp_path))
    assert r.returncode == 2 and "is a directory: give the run's config file" in r.stderr
    r = run("analyze", SAMPLE, "--patterns", str(tmp_path / "nope"))
    assert r.returncode == 2 and "--patterns" in r.stderr and "no such file or directory" in r.stderr
    bad = tmp_path / "p.yaml"
    bad.write_text("id: [unclosed\n")
    r = run("analyze", SAMPLE, "--patterns", str(bad))
    assert r.returncode == 2 and "p.yaml" in r.stderr and r.stderr.count("\n") == 1


def test_internal_error_has_its_own_exit_code_and_asks_for_a_report(tmp_path):
    # a real bug surfaced on purpose: a pattern loader monkeypatched to raise in a child process
    # (cli imports the loader when a command runs: the patch is on triage.patterns)
    code = ("import sys, triage.cli as c, triage.patterns as p; "
            "p.load_all = lambda *a, **k: (_ for _ in ()).throw(ZeroDivisionError('boom')); "
            "sys.argv = ['triage', 'analyze', sys.argv[1]]; c.main()")
    r = subprocess.run([sys.executable, "-c", code, SAMPLE], capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert r.returncode == 4
    assert "triage: internal error: ZeroDivisionError: boom" in r.stderr and "please report it" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [
    ["analyze"], ["check-config"], ["diff"], ["fleet"], ["fleet", "run"], ["fleet", "report"], ["known"],
    ["known", "add"], ["known", "list"], ["known", "remove"], ["schema"], ["patterns"], ["patterns", "list"],
    ["patterns", "check"], ["patterns", "suggest"],
])
def test_every_command_has_examples_in_its_help(command):
    r = CliRunner().invoke(cli, [*command, "--help"])
    assert r.exit_code == 0 and "Example" in r.output, r.output


@pytest.mark.parametrize("command", [["analyze"], ["check-config"], ["fleet", "run"], ["patterns", "list"],
                                     ["patterns", "suggest"]])
def test_patterns_option_is_explained_everywhere(command):
    r = CliRunner().invoke(cli, [*command, "--help"])
    assert "--patterns" in r.output and "pattern" in r.output.split("--patterns", 1)[1][:200].lower()


def test_shell_completion_script():
    r = run(env={"_TRIAGE_COMPLETE": "bash_source"})
    assert r.returncode == 0 and "_triage_completion" in r.stdout


@pytest.mark.parametrize("command", [["analyze", SAMPLE], ["fleet", SAMPLE, "--no-store"], ["patterns", "list"],
                                     ["check-config", os.path.join(FIX, "configs", "bad_flat.yaml")]])
def test_patterns_argument_that_is_not_a_pattern_file_says_so(command):
    r = run(*command, "--patterns", os.path.join(FIX, "configs", "bad_flat.yaml"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("triage: error: --patterns ") and "a pattern file is YAML with id, title" in r.stderr


def test_check_config_markdown_and_junit_report_through_the_cli(tmp_path):
    r = run("check-config", os.path.join(FIX, "configs", "bad_flat.yaml"), "--format", "markdown")
    assert r.returncode == 1
    assert r.stdout.startswith("### triage check-config: 1 CUDA-graph pitfall in this config")
    assert "`nccl-graph-register-expandable`" in r.stdout
    out = tmp_path / "triage.xml"
    r = run("analyze", SAMPLE, "-o", str(out))
    assert r.returncode == 1 and "junit report written" in r.stderr
    import xml.etree.ElementTree as ET
    from triage.patterns import load_all
    suite = ET.parse(out).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {p.id for p in load_all()} | {"unexplained-failure"}
    failed = sorted(n for n, c in cases.items() if c.find("failure") is not None)
    # only the root cause fails its testcase (issue 21: the counts agree with the verdict); the
    # cascade passes with its evidence
    assert failed == ["moe-scope-conflict"] and suite.get("failures") == "1"
    assert "cascade of the root cause" in cases["nccl-error"].find("system-out").text
    assert "AssertionError: cuda_graph_scope must not contain both moe and moe_router" in \
        cases["moe-scope-conflict"].find("failure").text
