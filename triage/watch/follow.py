"""Following a running job's logs: files that grow, a directory where per-rank files appear, stdin.

Polling, not inotify (it works the same on NFS / Lustre, where a job's logs usually are): every
poll reads what was appended since the last one, at most READ_BUDGET bytes per file (memory stays
bounded however fast the job writes; the rest is read on the next poll).

- rotation (logrotate's `create`, a logger's rename): the path names another file (inode) than the
  one open: the old file is read to its end, then the new one from its start;
- truncation (`copytruncate`): the open file is shorter than what was read: read again from its
  start (the NUL bytes a writer without O_APPEND leaves in front are skipped);
- a directory: looked at every DIR_EVERY seconds for new log-like files (as `analyze` picks them);
  a file whose inode is already followed (a rotated copy renamed beside it) is not read twice;
- stdin (`kubectl logs -f`, `tail -F`): a reader thread; its end is the input's end.

Each poll returns Chunk records: new bytes of an input, or a `reset` (truncated / replaced: its
partial last line is a line of its own) or an `end` (stdin closed).
"""
from __future__ import annotations

import hashlib
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ..inputs.names import COMPRESSED, InputError
from ..inputs.sources import _walk_logs

READ_BUDGET = 4 << 20      # bytes read from one file per poll at most
BEHIND = 32 << 20          # unread bytes of a file past which the follower skips to its tail (a writer faster than
#                            the scan: issue 46, 850k step lines a second) ...
TAIL_KEEP = READ_BUDGET    # ... keeping this much before its end
DIR_EVERY = 1.0            # seconds between looks at a directory for new files
STDIN_CHUNK = 1 << 16


@dataclass
class Chunk:
    label: str
    path: Optional[str]
    data: bytes = b""
    kind: str = "data"          # data | reset | end | skip (`skipped` bytes not read: fallen behind)
    skipped: int = 0


class FileTail:
    """One followed file (see the module docstring)."""

    def __init__(self, path: str, label: Optional[str] = None):
        self.path = path
        self.label = label or path
        self.fd: Optional[int] = None
        self.ino: Optional[Tuple[int, int]] = None
        self.pos = 0
        self.after_truncate = False
        self.missing_noted = False

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        st = os.fstat(fd)
        self.fd, self.ino, self.pos = fd, (st.st_dev, st.st_ino), 0
        return True

    def _read(self, budget: int) -> bytes:
        parts: List[bytes] = []
        got = 0
        assert self.fd is not None
        while got < budget:
            try:
                b = os.pread(self.fd, min(1 << 20, budget - got), self.pos)
            except OSError:
                break
            if not b:
                break
            if self.after_truncate:          # a non-O_APPEND writer continues at its old offset: a hole
                s = b.lstrip(b"\x00")
                self.pos += len(b) - len(s)
                got += len(b) - len(s)
                if not s:
                    continue
                self.after_truncate = False
                b = s
            parts.append(b)
            self.pos += len(b)
            got += len(b)
        return b"".join(parts)

    def poll(self, budget: int = READ_BUDGET) -> List[Chunk]:
        out: List[Chunk] = []
        if self.fd is None and not self._open():
            return out
        out += self._catch_up()
        data = self._read(budget)
        if data:
            out.append(Chunk(self.label, self.path, data))
        if len(data) >= budget:
            return out                       # more to read: rotation is looked at once caught up
        try:
            size = os.fstat(self.fd).st_size if self.fd is not None else 0
        except OSError:
            size = self.pos
        if size < self.pos:                  # copytruncate: read again from the start
            return out + self._truncated(budget)
        try:
            st = os.stat(self.path)
            now_ino: Optional[Tuple[int, int]] = (st.st_dev, st.st_ino)
        except OSError:
            now_ino = None                   # renamed away, the new file not there yet
        if now_ino is not None and now_ino != self.ino:     # rotated: the old file is read to its end above
            out += self._rotated(budget)
        return out

    def _catch_up(self) -> List[Chunk]:
        """Fallen behind (more than BEHIND bytes unread): skip to TAIL_KEEP bytes before the end, a `skip`
        chunk saying how much was not read (its lines are not triaged; the scan notes it)."""
        try:
            size = os.fstat(self.fd).st_size if self.fd is not None else 0
        except OSError:
            return []
        if size - self.pos <= BEHIND:
            return []
        to = size - TAIL_KEEP
        skipped, self.pos = to - self.pos, to
        self.after_truncate = False
        return [Chunk(self.label, self.path, kind="skip", skipped=skipped)]

    def _truncated(self, budget: int) -> List[Chunk]:
        self.pos = 0
        self.after_truncate = True
        out = [Chunk(self.label, self.path, kind="reset")]
        more = self._read(budget)
        if more:
            out.append(Chunk(self.label, self.path, more))
        return out

    def _rotated(self, budget: int) -> List[Chunk]:
        self.close()
        out = [Chunk(self.label, self.path, kind="reset")]
        if self._open():
            more = self._read(budget)
            if more:
                out.append(Chunk(self.label, self.path, more))
        return out

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


class StdinTail:
    """Standard input, read by a thread (a pipe from `kubectl logs -f` blocks)."""

    def __init__(self) -> None:
        self.label = "<stdin>"
        self.q: "queue.Queue[Optional[bytes]]" = queue.Queue(maxsize=64)    # bounded: back-pressure on the pipe
        self.ended = False
        self.sha = hashlib.sha256()           # of every byte read (the store's content hash)
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()

    def _reader(self) -> None:
        fd = sys.stdin.fileno()
        while True:
            try:
                b = os.read(fd, STDIN_CHUNK)
            except OSError:
                b = b""
            if not b:
                self.q.put(None)
                return
            self.q.put(b)

    def poll(self, budget: int = READ_BUDGET) -> List[Chunk]:
        parts: List[bytes] = []
        got = 0
        end = False
        while got < budget:
            try:
                b = self.q.get_nowait()
            except queue.Empty:
                break
            if b is None:
                end = True
                break
            parts.append(b)
            self.sha.update(b)
            got += len(b)
        out = [Chunk(self.label, "-", b"".join(parts))] if parts else []
        if end:
            self.ended = True
            out.append(Chunk(self.label, "-", kind="end"))
        return out

    def close(self) -> None:
        pass


class Follower:
    """Every input of one `triage watch`: files, directories (new files join), stdin."""

    def __init__(self, paths: List[str]):
        self.files: Dict[str, FileTail] = {}
        self.dirs: List[str] = []
        self.stdin: Optional[StdinTail] = None
        self.inodes: Set[Tuple[int, int]] = set()
        self.notes: List[str] = []
        self._dir_at = 0.0
        for p in paths:
            if p == "-":
                if self.stdin is None:
                    self.stdin = StdinTail()
            elif os.path.isdir(p):
                self.dirs.append(p)
            else:
                self._add(p)              # a file that does not exist yet is waited for
        self._look_dirs(force=True)

    def missing(self) -> List[str]:
        """The files given that do not exist (yet): watch waits for them to appear."""
        return [p for p, ft in self.files.items() if ft.fd is None and not os.path.exists(p)]

    @property
    def only_stdin(self) -> bool:
        return self.stdin is not None and not self.files and not self.dirs

    def _add(self, path: str) -> None:
        if path in self.files or path.lower().endswith(COMPRESSED):
            return
        try:
            st = os.stat(path)
            ino = (st.st_dev, st.st_ino)
            if ino in self.inodes:          # a rotated copy of a file already followed
                return
        except OSError:
            ino = None
        self.files[path] = FileTail(path)
        if ino is not None:
            self.inodes.add(ino)

    def _look_dirs(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.dirs or (not force and now - self._dir_at < DIR_EVERY):
            return
        self._dir_at = now
        for d in self.dirs:
            try:
                found = _walk_logs(d, self.notes)
            except InputError as e:
                self.notes.append(str(e))
                continue
            for f in found:
                if f not in self.files:
                    self._add(f)

    def poll(self) -> List[Chunk]:
        self._look_dirs()
        out: List[Chunk] = []
        for ft in list(self.files.values()):
            got = ft.poll()
            if ft.ino is not None:
                self.inodes.add(ft.ino)
            out.extend(got)
        if self.stdin is not None and not self.stdin.ended:
            out.extend(self.stdin.poll())
        return out

    @property
    def closed(self) -> bool:
        """Every input has ended (only stdin can end by itself)."""
        return self.only_stdin and self.stdin is not None and self.stdin.ended

    def close(self) -> None:
        for ft in self.files.values():
            ft.close()
