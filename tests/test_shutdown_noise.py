"""What Python prints at shutdown and then ignores is no failure; a thread's death is one.

SYNTHETIC logs (labelled here), in the formats CPython prints: PyErr_WriteUnraisable writes
"Exception ignored in: <obj>" then the traceback, and the process goes on (exit status unchanged);
threading.excepthook writes "Exception in thread NAME:" then the traceback."""
import pytest

from helpers import analyse_path
from triage.verdict.analyse import analyse

HEALTHY_END = (" [2026-12-03 10:00:01] iteration      100/     100 | consumed samples:        12800 | "
               "elapsed time per iteration (ms): 512.3 | lm loss: 2.345678E+00 |\n"
               "[after training is done] datetime: 2026-12-03 10:00:05\n")
UNRAISABLE = ("Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3a2c1b5d30>\n"
              "Traceback (most recent call last):\n"
              '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/data/dataloader.py", line 1618, in __del__\n'
              "    self._shutdown_workers()\n"
              "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers_status'\n")
THREAD = ("Exception in thread Thread-3 (_pin_memory_loop):\n"
          "Traceback (most recent call last):\n"
          '  File "/usr/lib/python3.12/threading.py", line 1073, in _bootstrap_inner\n'
          "    self.run()\n"
          "RuntimeError: Pin memory thread exited unexpectedly\n")


def _both(engine, tmp_path, text):
    p = tmp_path / "job.log"
    p.write_text(text)
    by_lines = analyse_path(engine, str(p))
    by_blocks = analyse(engine.scan_paths([str(p)]))
    assert (by_lines.outcome, by_lines.summary) == (by_blocks.outcome, by_blocks.summary)
    return by_blocks


def test_an_exception_python_ignored_at_shutdown_is_not_a_failure(engine, tmp_path):
    a = _both(engine, tmp_path, HEALTHY_END + UNRAISABLE)
    assert a.outcome == "healthy" and a.first_failure is None
    assert len(a.unmatched) == 1                  # still listed, for whoever reads the whole report


@pytest.mark.parametrize("rank_prefix", ["", "[rank3]: "])
def test_the_same_traceback_without_the_ignored_line_is_a_failure(engine, tmp_path, rank_prefix):
    body = "".join(rank_prefix + ln + "\n" for ln in UNRAISABLE.splitlines()[1:])
    a = _both(engine, tmp_path, HEALTHY_END + body)
    assert a.outcome == "unexplained-failure"
    assert a.first_failure.message.startswith("AttributeError: '_MultiProcessingDataLoaderIter'")


def test_a_thread_that_died_is_a_failure(engine, tmp_path):
    a = _both(engine, tmp_path, HEALTHY_END + THREAD)
    assert a.outcome == "unexplained-failure"
    assert a.first_failure.message == "RuntimeError: Pin memory thread exited unexpectedly"


def test_ignored_line_of_another_rank_does_not_excuse_a_crash(engine, tmp_path):
    text = HEALTHY_END + "[rank1]: Exception ignored in: <function X.__del__ at 0x7f>\n" + "".join(
        "[rank3]: " + ln + "\n" for ln in UNRAISABLE.splitlines()[1:])
    a = _both(engine, tmp_path, text)
    assert a.outcome == "unexplained-failure" and a.first_failure.rank == 3
