#!/usr/bin/env python3
"""Run `triage analyze` for the GitHub Action (action.yml) and publish the result.

Everything the action does after installing triage lives here so it can be run and tested
outside GitHub. Inputs come from environment variables (the action maps its inputs onto them,
so no input is ever pasted into shell code):

  TRIAGE_LOG                  log paths or globs (`**` recurses), separated by whitespace or
                              newlines; quote a path holding spaces. Required.
  TRIAGE_ARGS                 extra `triage analyze` arguments (--config, --baseline-log,
                              --env, --patterns, ...). Not --format, -o/--output or -q.
  TRIAGE_FAIL_ON_PITFALL      true|false (default true): exit 1 when the outcome is `pitfall`
  TRIAGE_FAIL_ON_UNEXPLAINED  true|false (default true): exit 3 on `unexplained-failure`
  TRIAGE_HTML_REPORT          path: also write the HTML report there (parents are created)
  TRIAGE_SUMMARY              true|false (default true): append the Markdown report to
                              $GITHUB_STEP_SUMMARY
  TRIAGE_CMD                  how to run triage (default: the `triage` next to this Python,
                              else `triage` on PATH); tests use "python -m triage"

It runs `triage analyze --format json` (outcome, primary) and `--format markdown` (the
summary), appends the Markdown to $GITHUB_STEP_SUMMARY and writes the outputs `outcome`,
`primary`, `signature`, `summary`, `first-failing-rank`, `exit-code` and `html-report` to
$GITHUB_OUTPUT (printed to stdout when that is unset). Exit status: 0, 1 (pitfall and
fail-on-pitfall), 3 (unexplained failure and fail-on-unexplained) or 2 (no log matched, bad
input, triage could not read the log: the outcome output is then `error`).
"""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

# GitHub refuses a step summary over 1 MiB; keep the report below that.
SUMMARY_LIMIT = 1000 * 1024
EXIT_OF = {"healthy": 0, "pitfall": 1, "unexplained-failure": 3}
FORBIDDEN = ("--format", "-o", "--output", "-q", "--quiet")


class Usage(Exception):
    pass


def flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("true", "1", "yes", "on"):
        return True
    if raw in ("false", "0", "no", "off"):
        return False
    raise Usage(f"{name} must be true or false, got {raw!r}")


def triage_cmd() -> list:
    cmd = os.environ.get("TRIAGE_CMD", "").strip()
    if cmd:
        # a bare path (a Windows one has backslashes shlex would eat) is one word
        return [cmd] if os.path.exists(cmd) else shlex.split(cmd)
    here = Path(sys.executable).parent
    for name in ("triage", "triage.exe"):
        if (here / name).exists():
            return [str(here / name)]
    found = shutil.which("triage")
    if not found:
        raise Usage("the `triage` command is not installed (pip install triage's checkout)")
    return [found]


def expand_logs(spec: str) -> list:
    words = shlex.split(spec)
    if not words:
        raise Usage("no log given (the action's `log` input)")
    logs, missing = [], []
    for w in words:
        if glob.has_magic(w):
            hits = sorted(glob.glob(w, recursive=True))
            logs.extend(hits) if hits else missing.append(w)
        elif os.path.exists(w):
            logs.append(w)
        else:
            missing.append(w)
    if missing:
        raise Usage("no log matched: " + ", ".join(missing))
    return logs


def extra_args(spec: str) -> list:
    args = shlex.split(spec)
    for a in args:
        if a in FORBIDDEN or a.startswith("--format=") or a.startswith("--output=") or (
                a.startswith("-o") and not a.startswith("--")):
            raise Usage(f"args must not set the output ({a}): the action picks the formats")
    return args


def run(cmd: list) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode("utf-8", "replace")
    if err:
        sys.stderr.write(err)
    return p


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_prop(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def set_outputs(outputs: dict) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    lines = []
    for k, v in outputs.items():
        v = "" if v is None else str(v)
        delim = f"ghadelimiter_{uuid.uuid4().hex}"
        lines.append(f"{k}<<{delim}\n{v}\n{delim}\n")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
    else:
        for k, v in outputs.items():
            print(f"{k}={'' if v is None else v}")


def append_summary(text: str) -> None:
    if not flag("TRIAGE_SUMMARY", True):
        return
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    data = text.encode("utf-8")
    if len(data) > SUMMARY_LIMIT:
        cut = data[:SUMMARY_LIMIT].decode("utf-8", "ignore")
        text = cut + ("\n\n</details></details>\n\n_triage: the report was cut at "
                      f"{SUMMARY_LIMIT // 1024} KiB (GitHub's step summary limit); "
                      "set `html-report` for the whole report._\n")
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text.rstrip("\n") + "\n\n")
    except OSError as e:  # the report is still in the log and the outputs
        print(f"::warning title=triage::{escape_data(f'cannot write the job summary: {e}')}")


def fail_usage(msg: str) -> int:
    print(f"::error title=triage::{escape_data(msg)}")
    append_summary(f"### triage: could not analyse the log\n\n```text\n{msg}\n```\n")
    set_outputs({"outcome": "error", "primary": "", "signature": "", "summary": msg,
                 "first-failing-rank": "", "exit-code": 2, "html-report": ""})
    return 2


def main() -> int:
    try:
        fail_on_pitfall = flag("TRIAGE_FAIL_ON_PITFALL", True)
        fail_on_unexplained = flag("TRIAGE_FAIL_ON_UNEXPLAINED", True)
        flag("TRIAGE_SUMMARY", True)
        logs = expand_logs(os.environ.get("TRIAGE_LOG", ""))
        extra = extra_args(os.environ.get("TRIAGE_ARGS", ""))
        base = triage_cmd() + ["analyze"] + extra
    except (Usage, ValueError) as e:  # ValueError: shlex, unbalanced quotes
        return fail_usage(str(e))

    def analyze(*fmt: str) -> subprocess.CompletedProcess:
        return run(base + list(fmt) + ["--"] + logs)

    p = analyze("--format", "json")
    try:
        report = json.loads(p.stdout.decode("utf-8", "replace")) if p.returncode != 2 else None
    except ValueError:
        report = None
    if not isinstance(report, dict) or report.get("outcome") not in EXIT_OF:
        err = p.stderr.decode("utf-8", "replace").strip() or f"triage exited {p.returncode}"
        return fail_usage(err)
    outcome, primary = report["outcome"], report.get("primary")

    md = analyze("--format", "markdown").stdout.decode("utf-8", "replace")
    html = os.environ.get("TRIAGE_HTML_REPORT", "").strip()
    if html:
        Path(html).parent.mkdir(parents=True, exist_ok=True)
        h = analyze("--format", "html", "-o", html, "--force")
        if h.returncode == 2:
            return fail_usage(h.stderr.decode("utf-8", "replace").strip())
        html = str(Path(html).resolve())

    append_summary(md)
    print("::group::triage report (Markdown)")
    print(md.rstrip("\n"))
    print("::endgroup::")

    code = EXIT_OF[outcome]
    failing = (outcome == "pitfall" and fail_on_pitfall) or (
        outcome == "unexplained-failure" and fail_on_unexplained)
    summary = str(report.get("summary") or outcome)
    if outcome != "healthy":
        level = "error" if failing else "warning"
        title = f"triage: {primary or outcome}"
        print(f"::{level} title={escape_prop(title)}::{escape_data(summary)}")
    else:
        print(f"triage: {summary}")
    rank = report.get("first_failing_rank")
    set_outputs({"outcome": outcome, "primary": primary or "",
                 "signature": report.get("signature") or "", "summary": summary,
                 "first-failing-rank": "" if rank is None else rank,
                 "exit-code": code, "html-report": html})
    return code if failing else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:  # $GITHUB_OUTPUT, the HTML report's folder: never a traceback read as exit 1
        print(f"::error title=triage::{escape_data(str(e))}")
        sys.exit(2)
