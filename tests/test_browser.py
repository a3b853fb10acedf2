"""Render a report in headless Chromium and check it the way a reader's browser sees it.

Talks to Chromium over the DevTools protocol (a websocket): the page session has Network,
Runtime, Log and Page enabled before the report is opened, so every request the page makes
(Network.requestWillBeSent), every console message (Runtime.consoleAPICalled, Log.entryAdded,
including CSP violations) and every uncaught exception (Runtime.exceptionThrown) is seen.
The report must make no request besides its own file:// URL and log no error; screenshots in
light and dark mode and a printed PDF are saved under pytest's tmp path.
"""
import base64
import itertools
import json
import os
import struct
import subprocess
import time

import pytest

from triage.report import load_view, render_html

from test_report import rich

CHROMIUM = os.environ.get("TRIAGE_CHROMIUM", "/usr/bin/chromium")
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} not installed (.ci/run installs Debian's chromium)")

# log text that would reach the network or the console if it were not escaped
HOSTILE = ['<img src="http://127.0.0.1:9/leak.png">', "<script>console.error('xss')</script>",
           '<link rel="stylesheet" href="https://example.invalid/x.css">', '"><svg onload=alert(1)>']


class CDP:
    def __init__(self, ws_url):
        import websocket  # websocket-client, from the [test] extra
        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events = []

    def call(self, method, session=None, **params):
        i = next(self.ids)
        msg = {"id": i, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        self.ws.settimeout(30)          # (wait_for and drain leave a short one behind)
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == i:
                assert "error" not in m, (method, m["error"])
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method, timeout=20.0):
        end = time.time() + timeout
        while time.time() < end:
            if any(e.get("method") == method for e in self.events):
                return
            self.ws.settimeout(max(0.1, end - time.time()))
            self.events.append(json.loads(self.ws.recv()))
        raise AssertionError(f"timed out waiting for {method}")

    def drain(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            self.ws.settimeout(max(0.05, end - time.time()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except Exception:  # timeout: nothing more arrived
                break


def start_chromium(profile_dir):
    """(process, CDP) of a headless Chromium with its profile in PROFILE_DIR."""
    prof = profile_dir
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
         f"--user-data-dir={prof}", "--remote-debugging-port=0", "--window-size=1200,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = prof / "DevToolsActivePort"
    try:
        end = time.time() + 60
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            assert proc.poll() is None, "chromium exited before it opened the DevTools port"
            assert time.time() < end, "chromium did not open the DevTools port in 60 s"
            time.sleep(0.1)       # polling for Chromium's DevToolsActivePort file, once a test session
        port, path = port_file.read_text().splitlines()[:2]
        return proc, CDP(f"ws://127.0.0.1:{port.strip()}{path.strip()}")
    except BaseException:
        stop_chromium(proc, None)
        raise


def stop_chromium(proc, cdp):
    if cdp is not None:
        cdp.ws.close()
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def problems(events, page_url):
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Network.requestWillBeSent" and p.get("request", {}).get("url") != page_url:
            out.append(f"network request: {p['request']['url']}")
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append(f"console.{p['type']}: {p.get('args')}")
        elif m == "Runtime.exceptionThrown":
            out.append(f"exception: {p.get('exceptionDetails')}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            out.append(f"log {p['entry']['level']}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
    return out


def open_report(cdp, html_path):
    target = cdp.call("Target.createTarget", url="about:blank")["targetId"]
    s = cdp.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for dom in ("Network", "Runtime", "Log", "Page"):
        cdp.call(f"{dom}.enable", session=s)
    cdp.events.clear()
    url = "file://" + str(html_path)
    cdp.call("Page.navigate", session=s, url=url)
    cdp.wait_for("Page.loadEventFired")
    cdp.drain(1.0)   # late requests / console messages
    return s, url


def shot(cdp, s, path):
    data = base64.b64decode(cdp.call("Page.captureScreenshot", session=s, format="png",
                                     captureBeyondViewport=True)["data"])
    path.write_bytes(data)
    return data


def test_report_in_chromium_no_console_errors_no_network(browser, tmp_path):
    d = rich()
    d["findings"][0]["evidence"][0]["before"] = HOSTILE
    d["unmatched"][0]["lines"] += HOSTILE
    d["summary"] += HOSTILE[0]
    html_path = tmp_path / "report.html"
    html_path.write_text(render_html(load_view(d)), encoding="utf-8")
    s, url = open_report(browser, html_path)
    # the page really loaded (the load event fired above) and the main document was requested
    assert any(e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"] == url
               for e in browser.events), "no request seen for the page itself: is Network tracking working?"
    assert problems(browser.events, url) == []
    ev = browser.call("Runtime.evaluate", session=s, returnByValue=True, expression=(
        "JSON.stringify({scripts: document.scripts.length, images: document.images.length,"
        " links: document.querySelectorAll('link').length, svgs: document.querySelectorAll('svg').length,"
        " resources: performance.getEntriesByType('resource').length,"
        " verdict: document.querySelector('#verdict h1').textContent,"
        " top: document.querySelector('#verdict').getBoundingClientRect().top,"
        " height: document.documentElement.scrollHeight,"
        " hostile: document.body.textContent.includes(\"<script>console.error('xss')</script>\")})"))
    info = json.loads(ev["result"]["value"])
    assert info["scripts"] == 0 and info["images"] == 0 and info["links"] == 0 and info["resources"] == 0
    assert info["svgs"] >= 2 and "capture-sync-forbidden" in info["verdict"] and info["top"] < 100
    assert info["hostile"], "hostile log text should be shown as text"
    light = shot(browser, s, tmp_path / "report-light.png")
    w, h = png_size(light)
    assert w >= 800 and h >= 900 and len(light) > 20000
    # dark mode and print render too, still with no errors
    browser.call("Emulation.setEmulatedMedia", session=s, features=[{"name": "prefers-color-scheme", "value": "dark"}])
    dark = shot(browser, s, tmp_path / "report-dark.png")
    assert png_size(dark)[0] == w and dark != light
    pdf = base64.b64decode(browser.call("Page.printToPDF", session=s, printBackground=True)["data"])
    (tmp_path / "report.pdf").write_bytes(pdf)
    assert pdf[:5] == b"%PDF-" and len(pdf) > 10000
    browser.drain(0.3)
    assert problems(browser.events, url) == []


def test_cli_report_of_fixture_log_in_chromium(browser, tmp_path):
    from click.testing import CliRunner
    from triage.cli import cli
    log = tmp_path / "job.log"
    log.write_text("[rank1]: AssertionError: Transformer engine's RNG tracker is required for cudagraphs, "
                   "it can be enabled with use_te_rng_tracker=True'.\n[rank1]: " + HOSTILE[0] + "\n")
    out = tmp_path / "report.html"
    r = CliRunner().invoke(cli, ["analyze", str(log), "-o", str(out)])
    assert out.exists(), r.output
    s, url = open_report(browser, out)
    assert problems(browser.events, url) == []
    assert len(shot(browser, s, tmp_path / "cli-report.png")) > 10000


def test_harness_sees_requests_and_console_errors(browser, tmp_path):
    """Negative control: a page that does load something and log an error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><title>bad</title><img src="http://127.0.0.1:9/leak.png">'
                   '<script>console.error("boom")</script>')
    s, url = open_report(browser, bad)
    found = problems(browser.events, url)
    assert any("network request: http://127.0.0.1:9/leak.png" in p for p in found), found
    assert any(p.startswith("console.error") and "boom" in p for p in found), found
