"""A throwaway PostgreSQL server for the store tests, started from the server's own binaries
(Debian's `postgresql` package: /usr/lib/postgresql/<v>/bin) -- a real server, never a mock.

PostgreSQL refuses to run as root: as root the cluster is made and run as the `postgres` user
(created by the Debian package) through runuser.  The server listens on 127.0.0.1 on a free port,
with trust authentication, fsync off (a test cluster), and is stopped and deleted at the end.
`TRIAGE_REQUIRE_PG=1` (set by .ci/run) makes a missing server a test failure instead of a skip."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from typing import List, Optional, Tuple


def bindir() -> Optional[str]:
    found = shutil.which("pg_ctl")
    if found:
        return os.path.dirname(os.path.realpath(found))
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    return dirs[-1] if dirs and os.path.exists(os.path.join(dirs[-1], "pg_ctl")) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self) -> None:
        b = bindir()
        if b is None:
            raise RuntimeError("no PostgreSQL server binaries (pg_ctl/initdb): apt-get install postgresql")
        self.bin = b
        self.root = tempfile.mkdtemp(prefix="triage-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.as_user: List[str] = []
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no 'postgres' user to run the server as") from None
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chmod(self.root, 0o700)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.url = f"postgresql://triage@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: int = 120) -> None:
        subprocess.run(self.as_user + [os.path.join(self.bin, args[0]), *args[1:]], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)

    def start(self) -> "Server":
        try:
            self._run("initdb", "-D", self.data, "-A", "trust", "-U", "triage", "--no-sync", "-E", "UTF8")
            opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
            self._run("pg_ctl", "-D", self.data, "-o", opts, "-l", os.path.join(self.root, "server.log"),
                      "-w", "-t", "60", "start")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            out = getattr(e, "stdout", b"") or b""
            self.stop()
            raise RuntimeError(f"could not start PostgreSQL: {e}: {out.decode(errors='replace')[-500:]}") from None
        return self

    def createdb(self, name: str) -> str:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "triage", name)
        return f"postgresql://triage@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", timeout=60)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
                pass
        shutil.rmtree(self.root, ignore_errors=True)


def start(attempts: int = 3) -> Tuple[Optional[Server], Optional[str]]:
    """(server, None) or (None, why not).  A free port is one nothing held when it was picked: a
    process of another worker (a moto server, a test's silent server, Chromium) can take it before
    the server binds it, so a failed start is tried again with another port (and a new cluster)."""
    why = ""
    for _ in range(attempts):
        try:
            srv = Server()              # no binaries, no `postgres` user to run them as: nothing to retry
        except RuntimeError as e:
            return None, str(e)
        try:
            return srv.start(), None
        except RuntimeError as e:
            why = str(e)
    return None, why
