"""Pattern regexes: validated when loaded, compiled only when first used."""
import pytest
import regex

from triage.match import rx


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    saved = (rx.VALIDATED.known, rx.VALIDATED.new)
    rx.VALIDATED.reset()
    yield tmp_path
    rx.VALIDATED.known, rx.VALIDATED.new = saved


def test_first_load_validates_and_remembers_then_compiles_lazily(fresh_cache):
    a = rx.compile_rx(r"an illegal (memory|mem) access")
    assert a._rx is not None                     # compiled to validate it
    rx.remember_valid()
    assert list(fresh_cache.glob("regex-ok-*.txt"))
    rx.VALIDATED.reset()                         # a new process
    b = rx.compile_rx(r"an illegal (memory|mem) access")
    assert b._rx is None                         # known to compile: not compiled at load
    assert rx.search(b, "CUDA error: an illegal memory access was encountered").group(1) == "memory"
    assert b._rx is not None


def test_a_bad_regex_is_an_error_at_load_every_time(fresh_cache):
    for _ in range(2):
        with pytest.raises(regex.error):
            rx.compile_rx(r"unbalanced (paren")
        rx.remember_valid()


def test_ignore_case_is_part_of_what_is_remembered(fresh_cache):
    rx.compile_rx("abc")
    rx.remember_valid()
    rx.VALIDATED.reset()
    assert rx.compile_rx("abc", ignore_case=True)._rx is not None     # another flag set: validated again
    assert rx.search(rx.compile_rx("abc", ignore_case=True), "xABCx")
