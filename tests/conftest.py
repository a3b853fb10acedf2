import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def engine():
    """The shipped catalog's engine, built once per test module."""
    from triage.engine import Engine
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
