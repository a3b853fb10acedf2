"""`python -m triage ARGS` in this process (click's CliRunner): the same exit code, stdout and stderr
as the subprocess, without ~0.4 s of interpreter start and imports a call.

For tests that are about what triage prints and returns, not about the process (signals, pipes, a
real terminal, concurrency between processes, the installed entry point): those keep subprocess.
`run` takes what subprocess.run took (a full ENV, a cwd, text or bytes input) and returns a
subprocess.CompletedProcess (returncode, stdout, stderr), so a test reads the same either way."""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Mapping, Optional, Sequence, Union

from click.testing import CliRunner

from triage.cli import cli


def _overrides(env: Optional[Mapping[str, str]]) -> dict:
    """CliRunner's env is a set of changes to os.environ (None removes a name): the changes that make
    os.environ equal to ENV, as subprocess's env=ENV would."""
    if env is None:
        return {}
    out: dict = {k: None for k in os.environ if k not in env}
    out.update({k: v for k, v in env.items() if os.environ.get(k) != v})
    return out


def _text(b: bytes) -> str:
    return b.decode().replace("\r\n", "\n").replace("\r", "\n")


def run(args: Sequence[str], input: Union[str, bytes, None] = None, env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None, text: bool = True) -> subprocess.CompletedProcess:
    args = [str(a) for a in args]
    old_cwd = os.getcwd()
    old_term = signal.getsignal(signal.SIGTERM)       # triage's main() installs its own SIGTERM handler
    try:
        if cwd is not None:
            os.chdir(cwd)
        r = CliRunner().invoke(cli, args, input=input, env=_overrides(env), prog_name="triage")
    finally:
        os.chdir(old_cwd)
        signal.signal(signal.SIGTERM, old_term)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception                   # main() turns every error into an exit code: this is the test's
    out, err = r.stdout_bytes, r.stderr_bytes or b""
    if text:                                # subprocess's text=True: decoded, universal newlines
        return subprocess.CompletedProcess(["triage", *args], r.exit_code, _text(out), _text(err))
    return subprocess.CompletedProcess(["triage", *args], r.exit_code, out, err)
