"""SYNTHETIC logs of NUL runs (issue 44), for the scans' and the live scan's tests."""
from triage.inputs.sources import MAX_RAW

_FAILURE = b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
_DATED = b"[rank2]:[E1203 07:12:11.426415547 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective operation "\
         b"timeout: WorkNCCL(SeqNum=1201, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600087 "\
         b"milliseconds before timing out.\n"
# SYNTHETIC layouts of a real shape (issue 44): NUL runs in a log -- logrotate's copytruncate truncates a file its
# writer keeps open at its offset, so the writer's next line lands after a run of NULs as long as what was cut (from
# bytes to gigabytes); the line reader (_readline) leaves the NULs out and reads the text after them as the line
GAP_LOGS = {
    # the run glued to the failure line: its rank prefix at the line's start once the NULs are out; past 16,000
    # bytes the block scan lost the line's match, past MAX_RAW its text (the reader's over-long line: its NULs left
    # out before it is measured; and at 1 MiB, MAX_RAW before the sixteenth pass)
    "gap-before-a-failure": b"[rank0]: start\n" + b"\x00" * 70000 + _FAILURE,
    "gap-of-4000-before-a-failure": b"[rank0]: start\n" + b"\x00" * 4000 + _FAILURE,
    "gap-longer-than-max-raw": b"[rank0]: start\n" + b"\x00" * (MAX_RAW + 4321) + _FAILURE,
    "gap-of-a-mib": b"[rank0]: start\n" + b"\x00" * ((1 << 20) + 4321) + _FAILURE,
    # a truncated file: the run is its start
    "file-starting-with-a-gap": b"\x00" * 300000 + _DATED + _FAILURE,
    # a run inside a line, pushing its date past the first 200 bytes the date is read in, and its year's line
    "gap-inside-a-dated-line": b"2025-03-01 10:00:00 [rank0]: start\n" + b"[rank0]: " + b"\x00" * 500
                               + b"2027-03-02 10:00:02 step 1\n" + b"[rank1]:E0302 10:00:03.000000 1 x.py:1] "
                               + _FAILURE[9:],
    # runs between two bytes not ASCII (left out once decoded, as _readline: two replacement characters, not an e)
    "gap-between-bytes-not-ascii": b"[rank0]: a line of the log\n" * 40 + b"[rank0]: caf\xc3" + b"\x00" * 3 + b"\xa9 RuntimeError: CUDA error: out of memory\n"
                                   + b"[rank3]: \xe2\x82" + b"\x00" + b"\xac\x00\x00x\n" + _FAILURE,
    # many lines with short runs, every block and its tail holding some
    "gaps-on-every-line": b"".join((b"[rank%d]: step %d" % (i % 4, i)) + b"\x00" * 20 + b" loss 1.0\n" for i in range(400))
                          + b"\x00" * 20 + _DATED + b"\x00\x00" + _FAILURE,
}
