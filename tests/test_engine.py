from helpers import pat

from triage.scan.engine import Engine
from triage.selftest import lines_of

IMA = pat("illegal-memory-access", r"an illegal memory access was encountered", "illegal memory access")
WD = pat("nccl-watchdog-timeout", r"Watchdog caught collective operation timeout", "Watchdog caught", generic=True,
         waits=True, cascade_verb="timed out",
         hang={"summary": "{who} timed out waiting for a collective ({id}): a hang", "silent": "never joined it"})
CTX = pat("capture-memory-overhead", r"CUDA out of memory", "out of memory",
          context=[{"regex": r"Start CUDA Graphs capture", "literal": "CUDA Graphs capture", "window": 5}])


def scan(text, *pats):
    return Engine(list(pats)).scan(lines_of(text))


def test_prefilter_and_regex_match():
    r = scan("ok\nRuntimeError: CUDA error: an illegal memory access was encountered\nok", IMA)
    assert [(m.pattern.id, m.line.lineno) for m in r.matches] == [("illegal-memory-access", 2)]


def test_source_echo_after_frame_line_is_not_a_message():
    tb = ('Traceback (most recent call last):\n'
          '  File "x.py", line 3, in <module>\n'
          '    msg = "an illegal memory access was encountered"\n'
          'ValueError: something else')
    assert scan(tb, IMA).matches == []


def test_quoted_source_line_without_frame_is_not_a_message():
    assert scan('        "an illegal memory access was encountered"', IMA).matches == []


def test_context_before_and_after():
    before = "Start CUDA Graphs capture...\nx\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    after = "torch.OutOfMemoryError: CUDA out of memory.\nx\nStart CUDA Graphs capture..."
    far = "Start CUDA Graphs capture...\n" + "x\n" * 10 + "torch.OutOfMemoryError: CUDA out of memory."
    assert [m.line.lineno for m in scan(before, CTX).matches] == [3]
    assert [m.line.lineno for m in scan(after, CTX).matches] == [1]
    assert scan(far, CTX).matches == []


def test_unexplained_traceback_is_kept_as_block():
    tb = ('[rank2]: Traceback (most recent call last):\n'
          '[rank2]:   File "train.py", line 3, in <module>\n'
          '[rank2]:     load()\n'
          '[rank2]: FileNotFoundError: [Errno 2] No such file or directory: \'/data/x.idx\'')
    r = scan(tb, IMA)
    assert len(r.blocks) == 1
    b = r.blocks[0]
    assert b.rank == 2 and b.start == 1 and b.lines[-1].startswith("FileNotFoundError")


def test_explained_traceback_is_not_unmatched():
    tb = ('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    step()\n'
          'torch.AcceleratorError: CUDA error: an illegal memory access was encountered')
    r = scan(tb, IMA)
    assert len(r.matches) == 1 and r.blocks == []


def test_pathological_line_is_cut_off_as_no_match_and_the_scan_goes_on():
    # (a+)+$ on 'aaa...ab' backtracks exponentially: the one search is cut off by rx.TIMEOUT, counted,
    # and read as no match; the next line is searched as usual
    from triage.match import rx
    evil = pat("cuda-oom", r"(a+)+$", "aaaa")
    before = getattr(rx, "timeouts", 0)
    r = scan("a" * 3000 + "b\naaaa", evil)
    # the count is the scan's own (ScanResult.regex_timeouts) where it has one, else rx's global
    assert (r.regex_timeouts if hasattr(r, "regex_timeouts") else rx.timeouts - before) == 1
    assert [(m.pattern.id, m.line.lineno) for m in r.matches] == [("cuda-oom", 2)]


def test_exception_right_after_a_frame_without_source_is_matched():
    tb = ('Traceback (most recent call last):\n  File "<frozen runpy>", line 88, in _run_code\n'
          'RuntimeError: CUDA error: an illegal memory access was encountered')
    assert [m.line.lineno for m in scan(tb, IMA).matches] == [3]
