"""Pre-launch gates (issue 15): the pre-commit hook (.pre-commit-hooks.yaml) and the composite
GitHub Action (action.yml + scripts/gha_triage.py). docs/integrations.md documents both.

Most tests run the hook's entry and the action's script directly, with `triage` run as
`python -m triage` from this checkout. Two tests install triage from a git copy of this working
tree into a fresh virtualenv, the way pre-commit and the action do (pip, so they need the
package index): `test_precommit_run_from_a_project_config` (pre-commit itself, from a
project's .pre-commit-config.yaml; skipped when pre-commit is not installed) and
`test_action_steps_end_to_end` (the action's `run:` steps in bash). Each takes ~10-15 s;
TRIAGE_SKIP_INSTALL_TESTS=1 skips both.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
LOGS = ROOT / "tests" / "fixtures" / "logs"
PITFALL_LOG = LOGS / "real" / "gpu" / "capture_invalidated.log"
HEALTHY_LOG = LOGS / "synthetic" / "healthy_megatron_te_graphs.log"
UNEXPLAINED_LOG = LOGS / "synthetic" / "unrelated_dataset_error.log"
SCRIPT = ROOT / "scripts" / "gha_triage.py"
HOOK_ID = "triage-check-config"
OUTPUTS = {"outcome", "primary", "signature", "summary", "first-failing-rank", "exit-code", "html-report"}
NETWORK_TROUBLE = ("Could not find a version", "No matching distribution", "Failed to establish a new connection",
                   "Temporary failure in name resolution", "Network is unreachable", "ConnectTimeout", "ReadTimeout")


def expected_primary(log: Path):
    return json.loads(Path(str(log) + ".expected.json").read_text())["primary"]


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TRIAGE_"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def install_env(**extra) -> dict:
    """The environment of a test that installs triage (pre-commit, the action): only the installed
    triage (no PYTHONPATH); pip compiles nothing at install (sic: pip reads PIP_NO_COMPILE=0 as
    --no-compile) and the installed modules are compiled as they are first imported, and kept (no
    PYTHONDONTWRITEBYTECODE: they live in the test's own directory), so what a run imports is compiled
    once: the build backend's setuptools for pip's three hook calls, triage for the hook's runs."""
    env = base_env(**extra)
    env.pop("PYTHONPATH")
    env.pop("PYTHONDONTWRITEBYTECODE")
    env["PIP_NO_COMPILE"] = "0"
    return env


# --------------------------------------------------------------------------- pre-commit hook


def hook() -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list)
    (h,) = [h for h in hooks if h["id"] == HOOK_ID]
    return h


@pytest.fixture(scope="module")
def triage_on_path(tmp_path_factory) -> dict:
    """An env whose PATH has a `triage` that runs this checkout (as the hook's venv would)."""
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "triage"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m triage "$@"\n')
    shim.chmod(0o755)
    return base_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def run_entry(env: dict, *args, cwd=ROOT) -> subprocess.CompletedProcess:
    """pre-commit runs shlex.split(entry) + args + filenames."""
    cmd = shlex.split(hook()["entry"]) + [str(a) for a in args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_hook_manifest():
    h = hook()
    assert h["language"] == "python"  # pre-commit pip-installs this repo: `triage` is on PATH
    assert h["entry"].lstrip().startswith("bash -c")
    assert "triage check-config" in h["entry"]
    assert set(h["types_or"]) == {"yaml", "json"}
    files, exclude = re.compile(h["files"]), re.compile(h["exclude"])
    picked = lambda p: bool(files.search(p)) and not exclude.search(p)  # noqa: E731
    for p in ("run_config.yaml", "exp/run_config.yaml", "configs/llama3_8b.yaml", "conf/model.yml",
              "recipes/config/moe.json", "model_config.json", "gpt_config_small.yaml"):
        assert picked(p), p
    for p in (".pre-commit-config.yaml", ".github/workflows/ci.yml", ".pre-commit-hooks.yaml",
              "data/train.json", "patterns/oom.yaml", "src/config.py", "configs/README.md", "action.yml"):
        assert not picked(p), p


def test_hook_checks_each_file_on_its_own(triage_on_path, tmp_path):
    # Merged, the second file would fix the first (check-config A B merges them): the hook must
    # not merge, so bad_flat.yaml still fails and is named.
    fix = tmp_path / "env_config.yaml"
    fix.write_text('env:\n  NCCL_GRAPH_REGISTER: "0"\n')
    merged = subprocess.run([sys.executable, "-m", "triage", "check-config", str(CONFIGS / "bad_flat.yaml"), str(fix)],
                            env=triage_on_path, capture_output=True, text=True)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    p = run_entry(triage_on_path, CONFIGS / "bad_flat.yaml", fix)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{CONFIGS / 'bad_flat.yaml'}: CUDA-graph pitfall" in p.stdout
    assert "nccl-graph-register-expandable" in p.stdout
    assert str(fix) not in p.stdout  # a passing file is not printed


def test_hook_good_configs_pass_quietly(triage_on_path):
    p = run_entry(triage_on_path, CONFIGS / "good_flat.json", CONFIGS / "good_run_config.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout == "" and p.stderr == ""


def test_hook_names_every_failing_file(triage_on_path):
    p = run_entry(triage_on_path, CONFIGS / "good_flat.json", CONFIGS / "bad_flat.yaml", CONFIGS / "bad_run_config.yaml")
    assert p.returncode == 1, p.stdout + p.stderr
    for name, pitfall in (("bad_flat.yaml", "nccl-graph-register-expandable"), ("bad_run_config.yaml", "moe-scope-conflict")):
        assert f"{CONFIGS / name}: CUDA-graph pitfall" in p.stdout
        assert pitfall in p.stdout
    assert "good_flat.json" not in p.stdout


def test_hook_args_apply_to_every_file(triage_on_path):
    p = run_entry(triage_on_path, "--env", "NCCL_GRAPH_REGISTER=0", CONFIGS / "bad_flat.yaml", CONFIGS / "good_flat.json")
    assert p.returncode == 0, p.stdout + p.stderr


def test_hook_unreadable_config_exits_2_and_checks_the_rest(triage_on_path, tmp_path):
    lst = tmp_path / "list_config.json"
    lst.write_text("[1, 2]\n")
    p = run_entry(triage_on_path, lst, CONFIGS / "bad_flat.yaml")
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{lst}: not a readable run config (exit 2)" in p.stdout
    assert "must be a mapping" in p.stdout
    assert "nccl-graph-register-expandable" in p.stdout  # the next file was still checked


def test_hook_filename_with_equals_sign_is_a_file(triage_on_path, tmp_path):
    # check-config reads KEY=VALUE as an override unless the path exists; the hook passes paths
    f = tmp_path / "lr=3e-4_config.yaml"
    shutil.copy(CONFIGS / "bad_flat.yaml", f)
    p = run_entry(triage_on_path, f, cwd=tmp_path)
    assert p.returncode == 1 and "nccl-graph-register-expandable" in p.stdout, p.stdout + p.stderr


def skip_if_install_tests_off():
    if os.environ.get("TRIAGE_SKIP_INSTALL_TESTS"):
        pytest.skip("TRIAGE_SKIP_INSTALL_TESTS is set")
    if not shutil.which("git"):
        pytest.skip("git is not installed (pre-commit and the action install from a git checkout)")


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=triage-test", "-c", "user.email=test@example.invalid",
                    "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                   cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A git repo with one commit holding this working tree's installable parts (pre-commit clones
    a git repo at a commit; uncommitted files of the real checkout would be left out)."""
    repo = tmp_path_factory.mktemp("triage-repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "setup.py", "setup.cfg", "README.md", "LICENSE", "MANIFEST.in",
                 ".pre-commit-hooks.yaml", "action.yml"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, repo / name)
    for name in ("triage", "patterns", "scripts"):
        shutil.copytree(ROOT / name, repo / name, ignore=ignore)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "snapshot for tests/test_gates.py", cwd=repo)
    return repo


def skip_on_network_trouble(p: subprocess.CompletedProcess, what: str):
    out = (p.stdout or "") + (p.stderr or "")
    if any(s in out for s in NETWORK_TROUBLE):
        pytest.skip(f"{what}: pip cannot reach the package index here")


def test_precommit_run_from_a_project_config(hook_repo, tmp_path):
    """Slow (~10 s, pip): pre-commit itself, as a project uses the hook: its .pre-commit-config.yaml
    names this repo at a commit, and `pre-commit run` checks a bad and a good pair of configs.  The
    hook's environment is built once (pip install of the repo) and kept for the second run, as
    pre-commit keeps it between commits (`try-repo` would build it again in a throwaway store)."""
    skip_if_install_tests_off()
    pc = shutil.which("pre-commit")
    if not pc:
        pytest.skip("pre-commit is not installed (pip install pre-commit)")
    user = tmp_path / "user"
    (user / "configs").mkdir(parents=True)
    for name in ("bad_run_config.yaml", "good_flat.json", "good_run_config.yaml"):
        shutil.copy(CONFIGS / name, user / "configs" / name)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, check=True, capture_output=True,
                         text=True).stdout.strip()
    (user / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": str(hook_repo), "rev": rev, "hooks": [{"id": HOOK_ID}]}]}))
    git("init", "-q", cwd=user)
    git("add", "-A", cwd=user)
    env = install_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))  # the triage pre-commit installed

    def run(*files):
        p = subprocess.run([pc, "run", HOOK_ID, "--files", *files],
                           cwd=user, env=env, capture_output=True, text=True, timeout=300)
        skip_on_network_trouble(p, "pre-commit run")
        return p

    bad = run("configs/bad_run_config.yaml", "configs/good_flat.json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and f"- hook id: {HOOK_ID}" in bad.stdout
    assert "configs/bad_run_config.yaml: CUDA-graph pitfall" in bad.stdout
    assert "moe-scope-conflict" in bad.stdout and "dropless-moe-scope" in bad.stdout
    assert "good_flat.json" not in bad.stdout            # a file that passes is not printed
    good = run("configs/good_flat.json", "configs/good_run_config.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    envs = [d for d in (tmp_path / "pre-commit-home").glob("repo*/py_env-*")]
    assert len(envs) == 1, envs                          # one hook environment, built by the first run


# --------------------------------------------------------------------------- GitHub Action


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def test_action_yml_is_a_composite_action_running_the_script():
    a = action()
    assert a["name"] and a["description"]
    assert a["runs"]["using"] == "composite"
    steps = a["runs"]["steps"]
    runs = [s for s in steps if "run" in s]
    assert all(s.get("shell") == "bash" for s in runs)  # composite run steps must name a shell
    install = next(s for s in runs if "pip install" in s["run"])
    assert '"${{ github.action_path }}"' in install["run"]  # triage from the action's own checkout
    (main,) = [s for s in runs if "scripts/gha_triage.py" in s["run"]]
    assert main["id"] == "triage"
    assert (ROOT / "scripts" / "gha_triage.py").is_file()
    setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["python-version"] == "${{ inputs.python-version }}"
    # inputs reach the script through env, never pasted into shell code (script injection)
    for s in runs:
        assert "${{ inputs." not in s["run"], s["run"]
    ins = a["inputs"]
    assert ins["log"]["required"] is True
    for name in ("args", "fail-on-pitfall", "fail-on-unexplained", "html-report", "summary", "python-version"):
        assert name in ins and "default" in ins[name], name
    env_values = " ".join(str(v) for v in main["env"].values())
    for name in ins:
        if name != "python-version":
            assert "${{ inputs.%s }}" % name in env_values, name
    assert set(a["outputs"]) == OUTPUTS
    for name, o in a["outputs"].items():
        assert o["value"] == "${{ steps.triage.outputs.%s }}" % name


def test_docs_list_every_input_and_output():
    doc = (ROOT / "docs" / "integrations.md").read_text()
    a = action()
    for name in list(a["inputs"]) + list(a["outputs"]):
        assert f"| `{name}` |" in doc, name
    assert "uses: <owner>/triage@<ref>" in doc and f"id: {HOOK_ID}" in doc


def read_outputs(path: Path) -> dict:
    """Parse $GITHUB_OUTPUT (name<<DELIM ... DELIM and name=value lines)."""
    out, lines, i = {}, path.read_text(encoding="utf-8").split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
        else:
            if line:
                name, value = line.split("=", 1)
                out[name] = value
            i += 1
    return out


def run_script(tmp_path, log, cwd=ROOT, **inputs):
    summary, outputs = tmp_path / "step_summary.md", tmp_path / "github_output"
    env = base_env(TRIAGE_CMD=f"{shlex.quote(sys.executable)} -m triage", TRIAGE_LOG=str(log),
                   GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs))
    env.update({f"TRIAGE_{k.upper()}": v for k, v in inputs.items()})
    p = subprocess.run([sys.executable, str(SCRIPT)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    s = summary.read_text(encoding="utf-8") if summary.exists() else ""
    o = read_outputs(outputs) if outputs.exists() else {}
    return p, s, o


def test_action_script_pitfall_log_fails_with_the_report(tmp_path):
    primary = expected_primary(PITFALL_LOG)
    p, summary, out = run_script(tmp_path, PITFALL_LOG)
    assert p.returncode == 1, p.stdout + p.stderr
    assert summary.startswith(f"### triage: `{primary}`")
    assert "**Verdict:**" in summary and "**Fix:**" in summary and "| Outcome | `pitfall` |" in summary
    assert set(out) == OUTPUTS
    assert out["outcome"] == "pitfall" and out["primary"] == primary and out["exit-code"] == "1"
    assert out["signature"].startswith(f"{primary}: ")
    assert out["html-report"] == ""
    assert f"::error title=triage%3A {primary}::" in p.stdout
    assert "::group::triage report (Markdown)" in p.stdout


def test_action_script_healthy_log_passes(tmp_path):
    assert expected_primary(HEALTHY_LOG) is None
    p, summary, out = run_script(tmp_path, HEALTHY_LOG)
    assert p.returncode == 0, p.stdout + p.stderr
    assert summary.startswith("### triage: no known pitfall found")
    assert "| Outcome | `healthy` |" in summary
    assert out["outcome"] == "healthy" and out["primary"] == "" and out["exit-code"] == "0"
    assert "::error" not in p.stdout and "::warning" not in p.stdout


def test_action_script_fail_on_pitfall_false_reports_but_passes(tmp_path):
    p, summary, out = run_script(tmp_path, PITFALL_LOG, fail_on_pitfall="false")
    assert p.returncode == 0, p.stdout + p.stderr
    assert out["outcome"] == "pitfall" and out["exit-code"] == "1"
    assert "::warning title=triage%3A" in p.stdout and "::error" not in p.stdout
    assert f"`{expected_primary(PITFALL_LOG)}`" in summary


def test_action_script_unexplained_failure(tmp_path):
    p, summary, out = run_script(tmp_path, UNEXPLAINED_LOG)
    assert p.returncode == 3, p.stdout + p.stderr
    assert out["outcome"] == "unexplained-failure" and out["primary"] == "" and out["exit-code"] == "3"
    assert out["first-failing-rank"] == "0"
    assert "FileNotFoundError" in summary
    (tmp_path / "b").mkdir()
    p2, _, out2 = run_script(tmp_path / "b", UNEXPLAINED_LOG, fail_on_unexplained="false", fail_on_pitfall="true")
    assert p2.returncode == 0 and out2["outcome"] == "unexplained-failure"


def test_action_script_glob_args_and_html_report(tmp_path):
    html = tmp_path / "reports" / "nested" / "triage.html"
    log_glob = str(PITFALL_LOG.relative_to(ROOT).parent / "**" / "capture_inv*.log")
    p, summary, out = run_script(tmp_path, log_glob, html_report=str(html),
                                 args=f"--config {shlex.quote(str(CONFIGS / 'bad_flat.yaml'))}")
    assert p.returncode == 1, p.stdout + p.stderr
    assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html>")
    assert out["html-report"] == str(html.resolve())
    # --config reached triage: the config's own pitfalls are in the report
    assert "nccl-graph-register-expandable" in summary


def test_action_script_appends_to_an_existing_summary(tmp_path):
    (tmp_path / "step_summary.md").write_text("# Earlier step\n\n", encoding="utf-8")
    p, summary, _ = run_script(tmp_path, HEALTHY_LOG)
    assert p.returncode == 0
    assert summary.startswith("# Earlier step\n\n### triage: no known pitfall found")


def test_action_script_unwritable_summary_is_a_warning(tmp_path):
    summary_dir = tmp_path / "missing-dir"
    env = base_env(TRIAGE_CMD=f"{shlex.quote(sys.executable)} -m triage", TRIAGE_LOG=str(HEALTHY_LOG),
                   GITHUB_STEP_SUMMARY=str(summary_dir / "s.md"), GITHUB_OUTPUT=str(tmp_path / "o"))
    p = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "::warning title=triage::cannot write the job summary" in p.stdout
    assert read_outputs(tmp_path / "o")["outcome"] == "healthy"
    env["GITHUB_OUTPUT"] = str(summary_dir / "o")
    p = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stdout + p.stderr


def test_action_script_summary_false_writes_no_summary(tmp_path):
    p, summary, out = run_script(tmp_path, PITFALL_LOG, summary="false")
    assert p.returncode == 1 and summary == "" and out["outcome"] == "pitfall"


@pytest.mark.parametrize("log, inputs, message", [
    ("no/such/dir/*.log", {}, "no log matched: no/such/dir/*.log"),
    ("missing.log", {}, "no log matched: missing.log"),
    ("", {}, "no log given"),
    (str(PITFALL_LOG), {"args": "--format text"}, "must not set the output (--format)"),
    (str(PITFALL_LOG), {"args": "-o out.md"}, "must not set the output (-o)"),
    (str(PITFALL_LOG), {"fail_on_pitfall": "maybe"}, "TRIAGE_FAIL_ON_PITFALL must be true or false"),
    (str(PITFALL_LOG), {"args": "--baseline-log /no/such/file.log"}, "triage: error:"),
])
def test_action_script_usage_errors_exit_2(tmp_path, log, inputs, message):
    p, summary, out = run_script(tmp_path, log, **inputs)
    assert p.returncode == 2, p.stdout + p.stderr
    assert out["outcome"] == "error" and out["exit-code"] == "2"
    assert message in out["summary"]
    assert summary.startswith("### triage: could not analyse the log") and message in summary
    assert "::error title=triage::" in p.stdout


def test_action_script_without_github_env_prints_outputs(tmp_path):
    env = base_env(TRIAGE_CMD=f"{shlex.quote(sys.executable)} -m triage", TRIAGE_LOG=str(HEALTHY_LOG))
    p = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outcome=healthy" in p.stdout.splitlines()


def test_action_script_cuts_a_huge_summary(tmp_path, monkeypatch):
    import importlib.util
    spec = importlib.util.spec_from_file_location("gha_triage", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "s.md"))
    monkeypatch.delenv("TRIAGE_SUMMARY", raising=False)
    mod.append_summary("### triage\n" + "é" * (mod.SUMMARY_LIMIT))
    data = (tmp_path / "s.md").read_bytes()
    assert len(data) < 1024 * 1024  # GitHub's per-step limit
    assert b"the report was cut at" in data
    data.decode("utf-8")  # never cut inside a character


def render(expr_text: str, values: dict) -> str:
    def sub(m):
        key = m.group(1).strip()
        assert key in values, f"action.yml uses an expression this test does not know: {key}"
        return values[key]
    return re.sub(r"\$\{\{(.*?)\}\}", sub, expr_text)


def test_action_steps_end_to_end(hook_repo, tmp_path):
    """Slow (~6 s, pip): the action's own run: steps in bash, as the runner would run them with
    python-version '' (the runner's python3): a fresh venv without a pip of its own, the runner's pip
    installing the action's checkout into it, then the script calling the installed `triage`."""
    skip_if_install_tests_off()
    a = action()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    summary, runner_temp, work = tmp_path / "summary.md", tmp_path / "runner_temp", tmp_path / "workspace"
    runner_temp.mkdir()
    (work / "logs").mkdir(parents=True)
    shutil.copy(PITFALL_LOG, work / "logs" / "rank_0.log")
    inputs = {k: str(v.get("default", "")) for k, v in a["inputs"].items()}
    inputs.update({"log": "logs/*.log", "python-version": "", "html-report": "out/report.html"})
    values = {f"inputs.{k}": v for k, v in inputs.items()}
    values["github.action_path"] = str(hook_repo)
    values["inputs.python-version != '' && 'python' || 'python3'"] = "python3"
    steps_out = {}
    env0 = install_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", RUNNER_TEMP=str(runner_temp),
                       GITHUB_STEP_SUMMARY=str(summary), GITHUB_ACTION_PATH=str(hook_repo))
    for step in a["runs"]["steps"]:
        if "uses" in step:
            assert step["if"] == "inputs.python-version != ''"  # skipped: python-version is ''
            continue
        for sid, outs in steps_out.items():
            values.update({f"steps.{sid}.outputs.{k}": v for k, v in outs.items()})
        out_file = tmp_path / f"output_{step['id']}"
        env = dict(env0, GITHUB_OUTPUT=str(out_file))
        env.update({k: render(str(v), values) for k, v in step.get("env", {}).items()})
        p = subprocess.run(["bash", "-e", "-c", render(step["run"], values)], cwd=work, env=env,
                           capture_output=True, text=True, timeout=300)
        if step["id"] == "install":
            skip_on_network_trouble(p, "pip install of the action's checkout")
            assert p.returncode == 0, p.stdout + p.stderr
        steps_out[step["id"]] = read_outputs(out_file) if out_file.exists() else {}
    assert Path(steps_out["install"]["python"]).parent.parent == runner_temp / "triage-action-venv"
    assert p.returncode == 1, p.stdout + p.stderr  # the triage step: a pitfall fails the job
    out = steps_out["triage"]
    assert out["outcome"] == "pitfall" and out["primary"] == expected_primary(PITFALL_LOG)
    assert summary.read_text(encoding="utf-8").startswith(f"### triage: `{out['primary']}`")
    assert out["html-report"] == str((work / "out" / "report.html").resolve())
    assert Path(out["html-report"]).is_file()
    # action outputs map onto the step's outputs
    for name, o in a["outputs"].items():
        assert render(o["value"], {f"steps.triage.outputs.{k}": v for k, v in out.items()}) == out[name]


FAKE_PYTHON = r'''#!/bin/bash
# a stand-in python: logs its arguments; `-m venv --without-pip DIR` makes DIR/bin/python (itself);
# `-m pip --python ...` fails as a pip older than 22.3 does when PIP_OLD is set
echo "$0 $*" >> "$CALLS"
if [ "$1 $2 $3" = "-m venv --without-pip" ]; then mkdir -p "$4/bin" && cp "$0" "$4/bin/python"; exit 0; fi
if [ "$1 $2 $3" = "-m pip --python" ] && [ -n "$PIP_OLD" ]; then echo "no such option: --python" >&2; exit 2; fi
exit 0
'''


@pytest.mark.parametrize("old_pip", [False, True])
def test_action_install_step_uses_the_runners_pip_else_the_venvs_own(tmp_path, old_pip):
    """The install step (what test_action_steps_end_to_end runs with a real pip) with a stand-in
    python: the venv is made without pip and the runner's pip installs into it; a runner whose pip
    has no --python (older than 22.3) or no pip at all gets the venv's own pip (ensurepip) instead."""
    (step,) = [s for s in action()["runs"]["steps"] if s.get("id") == "install"]
    fake = tmp_path / "runner" / "python3"
    fake.parent.mkdir()
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    calls, out_file, temp = tmp_path / "calls", tmp_path / "output", tmp_path / "temp"
    temp.mkdir()
    env = base_env(RUNNER_TEMP=str(temp), GITHUB_OUTPUT=str(out_file), CALLS=str(calls), TRIAGE_PYTHON=str(fake))
    if old_pip:
        env["PIP_OLD"] = "1"
    script = render(step["run"], {"github.action_path": "/action"})
    p = subprocess.run(["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    venv = temp / "triage-action-venv"
    want = [f"{fake} -m venv --without-pip {venv}",
            f"{fake} -m pip --python {venv}/bin/python install --quiet --disable-pip-version-check /action"]
    if old_pip:
        want += [f"{venv}/bin/python -m ensurepip --default-pip",
                 f"{venv}/bin/python -m pip install --quiet --disable-pip-version-check /action"]
        assert "installing with the venv's own pip" in p.stdout
    assert calls.read_text().splitlines() == want
    assert read_outputs(out_file) == {"python": f"{venv}/bin/python"}
