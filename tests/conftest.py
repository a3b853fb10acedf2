import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


import pytest  # noqa: E402
import click.testing  # noqa: E402

# click 8.1 (the last for Python 3.9, which requires-python admits) has either a result's `output` of
# both streams or its `stderr` apart; 8.2 and later have both, as the tests read them.
if "mix_stderr" in click.testing.CliRunner.__init__.__code__.co_varnames:  # pragma: no cover - click 8.1
    _runner_init = click.testing.CliRunner.__init__

    def _apart(self, *a, mix_stderr=False, **k):
        _runner_init(self, *a, mix_stderr=mix_stderr, **k)
    click.testing.CliRunner.__init__ = _apart
    click.testing.Result.output = property(   # type: ignore[method-assign, assignment]
        lambda r: r.stdout + (r.stderr if r.stderr_bytes is not None else ""))

# The tests that take longest (seconds of wall time each: installs, many processes, a live writer, a
# store's timeout, a big generated log), longest first.  They run before every other test, so that
# pytest-xdist (README: -n auto; pyproject.toml: --dist loadgroup, one test or group at a time to the
# next free worker, in this order) spreads them over the workers and the run
# does not end on one of them.  Only the order changes: every test still runs.  A node id prefix
# each; a group (GROUPS below) runs where its first test would.
SLOW_FIRST = (
    "tests/test_gates.py::test_action_steps_end_to_end",
    "tests/test_gates.py::test_precommit_run_from_a_project_config",
    "tests/test_recipes.py::test_epilog_requeue_is_a_second_record_and_a_rerun_keeps_one",
    "tests/test_store.py::test_32_concurrent_record_processes",
    "tests/test_recipes.py::test_k8s_collector_records_one_verdict_per_pod",
    "tests/test_s3.py::test_object_gives_the_local_files_verdict",
    "tests/test_fleet.py::test_known_issue_linked_and_text_view",
    "tests/test_bounded.py::test_huge_log_json_stays_small_and_counts_are_right",
    "tests/test_hardening2_bounds.py::test_identical_cleanup_warnings_share_one_pending_check",
    "tests/test_recipes.py::test_epilog_",
    "tests/test_fleet.py::test_parallel_equals_serial_and_store_is_idempotent",
    "tests/test_hardening2_inputs.py::test_a_file_growing_faster_than_it_is_read_is_finished_with_a_note",
    "tests/test_corpus.py::test_corpus_script_exits_0_on_a_clean_corpus_and_lists_the_cases",
    "tests/test_store.py::test_concurrent_first_open",
    "tests/test_watch.py::test_record_stores_the_verdict_the_epilog_finds",
    "tests/test_recipes.py::test_k8s_pipeline_on_stdin_as_the_recipe_runs_it",
    "tests/test_s3.py::test_a_big_object_is_streamed",
    "tests/test_bounded.py::",
    "tests/test_hardening2_bounds.py::test_dense_untimed_error_lines",
    "tests/test_store_faults.py::test_read_only_sqlite_store_is_a_warning_after_the_report",
    "tests/test_gates.py::test_action_script_",
)


# The tests that mostly wait (seconds of wall time, a tenth of it CPU: a live log written at training
# speed, a store's lock or connect timeout, a budget run out, a headless browser), with the Chromium
# tests: one group, run one after the other on one worker from the start, while the other workers keep
# the cores busy (CHROMIUM_TESTS are in the group too).  Spread over the workers as they came, three
# of them waited at once and a core stood idle (~10 s of a 2-core run).
WAITING = (
    "tests/test_watch.py::test_checkpoint_save_is_no_hang_and_a_clean_end_exits_0",
    "tests/test_watch.py::test_directory_where_per_rank_files_appear",
    "tests/test_watch.py::test_rotation_and_copytruncate",
    "tests/test_store_faults.py::test_postgresql_server_that_never_answers_gives_up_within_the_budget",
    "tests/test_watch.py::test_stdin_from_a_pipe",
    "tests/test_recipes.py::test_epilog_exits_zero_within_its_bound_whatever_fails",
    "tests/test_store_faults.py::test_locked_sqlite_store_gives_up_within_the_budget",
    "tests/test_watch.py::test_text_alerts_on_a_finished_log_and_the_launcher_end",
    "tests/test_store_faults.py::test_lock_released_within_the_budget_is_waited_for",
    "tests/test_output_safety.py::test_an_interrupted_run_leaves_no_report_and_no_temp_file",
)


# Tests that share an expensive session or module fixture run on one worker (pyproject.toml: --dist
# loadgroup, scheduled by GroupScheduling below), so that it is made once: moto's S3 server with its
# 80 MiB of objects, the analysis of every corpus case that test_schemas validates, test_bounded's
# hostile analysis, one headless Chromium.  Every other test is a unit of its own and goes to whichever
# worker is free.  Groups are told from node ids alone, so the controller needs nothing from a worker.
GROUPS = (("tests/test_s3.py::", "s3"), ("tests/test_schemas.py::", "schemas"), ("tests/test_bounded.py::", "bounded"))

# The tests that use the session's Chromium (the `chromium` / `browser` fixtures); a test that uses it
# and is not listed is a collection error (else every worker would start a Chromium of its own).
CHROMIUM_TESTS = ("tests/test_browser.py::test_report_in_chromium_no_console_errors_no_network",
                  "tests/test_browser.py::test_cli_report_of_fixture_log_in_chromium",
                  "tests/test_browser.py::test_harness_sees_requests_and_console_errors",
                  "tests/test_fleet_html.py::test_cli_fleet_report_in_chromium",
                  "tests/test_report_formats.py::test_html_evidence_lines_wrap_in_chromium")

# A corpus case's tests (its expectation, its verdict's agreement, its JUnit counts): one worker, so
# tests/corpus.py analyses the case once.
CASE_TESTS = ("tests/test_corpus.py::test_case_matches_expectation[",
              "tests/test_verdict_agreement.py::test_findings_timeline_and_exit_agree_with_the_verdict[",
              "tests/test_verdict_agreement.py::test_junit_counts_agree_with_the_verdict[")


def group_of(nodeid):
    """The group of the test NODEID (None: a unit of its own)."""
    if nodeid.startswith(CHROMIUM_TESTS) or nodeid.startswith(WAITING):
        return "waiting"                  # the Chromium tests wait too: their one Chromium there
    for prefix in CASE_TESTS:
        if nodeid.startswith(prefix) and nodeid.endswith("]"):
            return "case:" + nodeid[len(prefix):-1]
    for prefix, name in GROUPS:
        if nodeid.startswith(prefix):
            return name
    return None


@pytest.hookimpl(tryfirst=True, optionalhook=True)        # (optional: a run without pytest-xdist)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup, by group_of: pytest-xdist's own loadgroup reads `xdist_group` marks through a
    suffix it writes into each node id, which pytest 9.2 no longer lets it write (node ids are
    structured there): every group was split over the workers, and each worker made the group's
    fixture again (three moto servers with their uploads, three Chromiums, ...)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            if nodeid.rfind("@") > nodeid.rfind("]"):      # a suffix pytest-xdist did write: not ours
                nodeid = nodeid[:nodeid.rfind("@")]
            return group_of(nodeid) or nodeid
    return GroupScheduling(config, log)


# The test modules that hold the tests marked `timing` (the README's second command, `-m timing`,
# collects only these: eight tests need not have every worker import the 76 modules); a timing test
# in any other module is a collection error of the main run, which says to add its module here.
TIMING_MODULES = ("test_watch.py", "test_bombs_early.py")


def pytest_ignore_collect(collection_path, config):
    if (config.getoption("markexpr", "") == "timing" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_") and collection_path.name not in TIMING_MODULES):
        return True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Longest first (SLOW_FIRST), the rest in pytest's own order (a stable sort)."""
    stray = sorted({item.path.name for item in items if item.get_closest_marker("timing")} - set(TIMING_MODULES))
    if stray:
        raise pytest.UsageError(f"tests marked `timing` in {', '.join(stray)}: add the module to TIMING_MODULES "
                                "(tests/conftest.py), or `pytest -m timing` will not run them")
    browser = sorted(item.nodeid for item in items if "chromium" in getattr(item, "fixturenames", ())
                     and not item.nodeid.startswith(CHROMIUM_TESTS))
    if browser:
        raise pytest.UsageError(f"{', '.join(browser)} use Chromium: add them to CHROMIUM_TESTS (tests/conftest.py), "
                                "or each worker starts a Chromium of its own")
    if hasattr(config, "workerinput") and os.environ.get(COMPANION_ENV):
        timing = [item for item in items if item.get_closest_marker("timing")]
        if timing:                       # run by the controller's companion pytest (_start_companion)
            config.hook.pytest_deselected(items=timing)
            items[:] = [item for item in items if not item.get_closest_marker("timing")]
    def rank(item):
        if group_of(item.nodeid) == "waiting":     # first: the group's worker starts on it at once
            return -1
        for i, prefix in enumerate(SLOW_FIRST):
            if item.nodeid.startswith(prefix):
                return i
        return len(SLOW_FIRST)
    items[:] = sorted(items, key=rank)


def pytest_configure(config):
    """pyproject.toml's --dist loadgroup: the units in the order above, not reordered by size.  The
    session's first process byte-compiles triage once: the tests start ~150 `python -m triage`
    processes, and where PYTHONDONTWRITEBYTECODE is set (this project's machines set it) a fresh
    checkout has no .pyc files, so each of them compiled every module it imported (~0.1 s of CPU)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if hasattr(config, "workerinput"):                # an xdist worker
        if os.environ.get(COMPANION_ENV) and hasattr(os, "nice"):
            os.nice(10)             # the timing tests' processes, beside this worker, come first
        return
    import compileall
    triage_dir = os.path.join(os.path.dirname(TESTS), "triage")
    if not config.getoption("numprocesses", None):    # a run without xdist
        compileall.compile_dir(triage_dir, quiet=2)
        return
    # the xdist controller, before it starts the workers: triage, the tests' own helper modules
    # (corpus.py, pgserver.py, ...) and the test modules' rewritten asserts, on every core
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    global _CONFIG
    _CONFIG = config
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:                                # no fork (Windows): one after the other
        compileall.compile_dir(triage_dir, quiet=2)
        for name in _to_rewrite(config):
            _rewrite_ahead(name)
        _start_companion(config)
        return
    with ProcessPoolExecutor(max(1, cores), mp_context=ctx) as pool:
        done = [pool.submit(compileall.compile_dir, triage_dir, quiet=2),
                pool.submit(compileall.compile_dir, TESTS, maxlevels=0, quiet=2,
                            rx=re.compile(r"[/\\](test_[^/\\]*|conftest)\.py$"))]
        done += [pool.submit(_rewrite_ahead, name) for name in _to_rewrite(config)]
        for d in done:
            d.result()
    _start_companion(config)


TESTS = os.path.dirname(os.path.abspath(__file__))


_CONFIG = None


def _to_rewrite(config):
    only = TIMING_MODULES if config.getoption("markexpr", "") == "timing" else None
    return [name for name in sorted(os.listdir(TESTS))
            if (name.startswith("test_") and name.endswith(".py") and (not only or name in only)) or name == "conftest.py"]


def _rewrite_ahead(name):
    """Each xdist worker imports every test module it collects, and pytest rewrites a test module's
    asserts on import (~2.4 s of CPU for the 77 modules) unless its rewritten .pyc is in __pycache__
    already; with PYTHONDONTWRITEBYTECODE set it never writes one, so on a fresh checkout every worker
    rewrote every module.  The controller writes them once, before the workers start: they read them
    (pytest reads a rewritten .pyc whether or not it may write one).  pytest's own rewriting functions,
    the ones its import hook calls; if a pytest version lacks them, the workers rewrite as before.
    Run in a process forked from the controller (_CONFIG: its config)."""
    try:
        from _pytest.assertion import rewrite
        state = _CONFIG.stash[rewrite.assertstate_key]
        fn = Path(TESTS) / name
        cache = rewrite.get_cache_dir(fn)
        pyc = cache / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc) is not None:
            return
        cache.mkdir(exist_ok=True)
        source_key, co = rewrite._rewrite_test(fn, _CONFIG)
        rewrite._write_pyc(state, co, source_key, pyc)
    except Exception:       # an optimisation only: a module it cannot write is rewritten on import
        return


# The tests that assert a latency or a CPU budget (marked `timing`: `triage watch` beside a simulated
# training job) mostly wait, and measured beside the rest of the suite they would measure the
# neighbours.  In a whole run (`pytest -n auto`, no -m, -k or paths) they run in a companion pytest
# of their own (-n 4, beside each other only), started by the controller when the workers start; the
# workers give way to it (nice 10), so its processes get a core whenever they wake, and its
# budgets keep their margins.  Its output is printed at the end and its failure fails the run.
# `pytest -m timing` / `-m "not timing"` still run the two halves one at a time.
COMPANION_ENV = "TRIAGE_TIMING_COMPANION"
_COMPANION = {}


def _whole_run(config):
    return (config.getoption("markexpr", "") == "" and not config.getoption("keyword", "")
            and [os.path.abspath(a) for a in config.args] == [TESTS] and not config.getoption("collectonly"))


def _start_companion(config):
    if not _whole_run(config):
        return
    import subprocess
    import tempfile
    out = tempfile.TemporaryFile(mode="w+b")
    env = {k: v for k, v in os.environ.items() if k != COMPANION_ENV}       # its workers: not niced
    cmd = [sys.executable, "-m", "pytest", "-q", "-rP", "-n", "4", "-m", "timing", "-p", "no:cacheprovider",
           "--rootdir", str(config.rootpath), *[os.path.join(TESTS, m) for m in TIMING_MODULES]]
    _COMPANION["proc"] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(config.rootpath))
    _COMPANION["out"] = out
    os.environ[COMPANION_ENV] = "1"          # the workers, started after this, see it: nice, no timing tests


def pytest_sessionfinish(session, exitstatus):
    proc = _COMPANION.get("proc")
    if proc is None:
        return
    try:
        rc = proc.wait(timeout=600)
    except Exception:      # noqa: BLE001 - a companion that hangs fails the run
        proc.kill()
        rc = proc.wait()
    out = _COMPANION["out"]
    out.seek(0)
    _COMPANION["text"] = out.read().decode("utf-8", "replace")
    _COMPANION["rc"] = rc
    if rc != 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if "rc" not in _COMPANION:
        return
    terminalreporter.section(f"the timing tests, beside the others (-m timing -n 4): exit {_COMPANION['rc']}")
    terminalreporter.write(_COMPANION["text"])
    if _COMPANION["rc"] != 0:
        terminalreporter.write_line(f"the timing tests failed (exit {_COMPANION['rc']}, above): this run fails",
                                    red=True, bold=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the usable cores.  Many of the slow tests mostly wait (a live log
    written at training speed, a store's lock or connect timeout, pip, a browser): the extra worker
    keeps the cores busy meanwhile.  PYTEST_XDIST_AUTO_NUM_WORKERS, when set, still decides (xdist's own)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return cores + 1


@pytest.fixture(scope="module")
def engine():
    """The shipped catalog's engine, built once per test module."""
    from triage.scan.engine import Engine
    from triage.patterns import load_all
    return Engine(load_all())


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for this test run (tests/pgserver.py)."""
    import pgserver
    srv, why = pgserver.start()
    if srv is None:
        if os.environ.get("TRIAGE_REQUIRE_PG"):
            pytest.fail(f"PostgreSQL is required (TRIAGE_REQUIRE_PG) but: {why}")
        pytest.skip(f"no PostgreSQL server: {why}")
    yield srv
    srv.stop()


@pytest.fixture
def pg_url(pg_server, request):
    """A fresh database on the test run's PostgreSQL server."""
    import re
    name = "t_" + re.sub(r"\W", "_", request.node.name.lower())[:50] + f"_{os.getpid()}_{id(request) % 100000}"
    return pg_server.createdb(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A fresh store on each engine: a SQLite file, then a database on the real PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "triage.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="session")
def chromium(tmp_path_factory):
    """One headless Chromium per test run (per xdist worker), talked to over the DevTools protocol
    (tests/test_browser.py); its profile in this worker's own pytest tmp dir."""
    from test_browser import start_chromium, stop_chromium
    proc, cdp = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield cdp
    stop_chromium(proc, cdp)


@pytest.fixture
def browser(chromium):
    """The session's Chromium for one test: each test opens its own page (open_report), closed after
    the test with every other page it made, and no event of one test is left for the next."""
    def pages():
        return {t["targetId"] for t in chromium.call("Target.getTargets")["targetInfos"] if t["type"] == "page"}
    before = pages()
    chromium.events.clear()
    yield chromium
    for target in pages() - before:
        chromium.call("Target.closeTarget", targetId=target)
    chromium.events.clear()


def pytest_collection_finish(session):
    """The collected session (every module, item and fixture definition, ~3,400 items) is frozen out
    of the cyclic GC: the in-process scans allocate millions of objects, and each full collection
    otherwise walked the whole collected heap again.  The thresholds stay Python's (the memory
    tests measure peaks that cyclic garbage kept longer would raise)."""
    import gc
    gc.collect()
    gc.freeze()
