"""How a worker's per-MiB cost grows with the workers beside it (issue 44: the host's workers took ~3x a lone
worker's time per MiB at -j 16).  N processes each take every N-th 2 MiB block of LOG and do one of: `pread`
(the copy alone), `pread+hs` (the copy and the catalog's Hyperscan scan, the anchors of a real run), `mmap+hs`
(the scan of the page cache's pages, no copy), `pread+hs+count` (and the block's newlines counted).  Prints,
per N and step: wall ms, and each process's CPU ms per MiB it took.  Usage: host_scaling.py LOG [N ...]"""
import mmap
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BLOCK = 2 << 20


def anchors_db():
    """The Hyperscan database of the anchors a run of the bundled sample log scans with (its AnchorSet)."""
    import triage.scan.engine as engine
    import triage.scan.prepare as prepare
    got = []
    real = prepare.anchor_set

    def cap(a):
        got.append(real(a))
        return got[-1]
    engine.anchor_set = cap
    import triage.cli
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "sample_job.log")
    sys.argv = ["triage", "analyze", here, "--format", "json", "-o", os.devnull]
    try:
        triage.cli.main()
    except SystemExit:
        pass
    return got[-1]


def work(step, fd, size, k, n, aset):
    import hyperscan as hs
    db = aset._db
    scratch = hs.Scratch(db)
    hits = [0]

    def cb(*a):
        hits[0] += 1
    mm = mmap.mmap(fd, 0, prot=mmap.PROT_READ) if step.startswith("mmap") else None
    took = 0
    c0 = time.thread_time()
    for i in range(k, (size + BLOCK - 1) // BLOCK, n):
        lo = i * BLOCK
        if mm is not None:
            buf = memoryview(mm)[lo:lo + BLOCK]
        else:
            buf = os.pread(fd, BLOCK, lo)
        took += len(buf)
        if "hs" in step:
            db.scan(buf, match_event_handler=cb, scratch=scratch)
        if "count" in step:
            buf.count(b"\n")
        del buf
    return (time.thread_time() - c0) * 1e3 / (took / 2**20)


def main():
    log = sys.argv[1]
    ns = [int(x) for x in sys.argv[2:]] or [1, 2, 4, 8, 12, 15, 16]
    aset = anchors_db()
    aset.scan(b"x\n")          # (its database made)
    fd = os.open(log, os.O_RDONLY)
    size = os.fstat(fd).st_size
    os.pread(fd, 1, 0)
    print(f"# {log}: {size / 2**20:.0f} MiB, {os.cpu_count()} cores; per step and N: wall ms, CPU ms/MiB of each "
          "process (min-max)")
    for step in ("pread", "pread+hs", "mmap+hs", "pread+hs+count"):
        for n in ns:
            r, w = os.pipe()
            t0 = time.perf_counter()
            kids = []
            for k in range(n):
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    v = work(step, fd, size, k, n, aset)
                    os.write(w, f"{v:.3f}\n".encode())
                    os._exit(0)
                kids.append(pid)
            os.close(w)
            for p in kids:
                os.waitpid(p, 0)
            wall = (time.perf_counter() - t0) * 1e3
            with os.fdopen(r) as f:
                per = [float(x) for x in f.read().split()]
            print(f"{step:15s} N={n:2d}  wall {wall:7.1f} ms  {min(per):.2f}-{max(per):.2f} ms/MiB")


if __name__ == "__main__":
    main()
