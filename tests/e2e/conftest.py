"""A live ``streamlit run dashboard/app.py`` on a free localhost port, with a runs dir holding real runs."""

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "tests" / "artifacts"


#: A stand-in for the Perfetto UI: it answers Perfetto's deep-linking handshake (PING → PONG) and
#: shows what it was sent, so a test can check what *Open in Perfetto* hands over.
FAKE_PERFETTO = """<!doctype html><title>fake perfetto</title><body><script>
window.addEventListener("message", (e) => {
  if (e.data === "PING") { e.source.postMessage("PONG", "*"); return; }
  if (e.data && e.data.perfetto) {
    const p = e.data.perfetto;
    document.body.dataset.bytes = p.buffer.byteLength;
    document.body.dataset.file = p.fileName;
    document.body.dataset.head = new TextDecoder().decode(p.buffer.slice(0, 64));
    document.title = "received";
  }
});
</script></body>"""


@pytest.fixture(scope="module")
def fake_perfetto(tmp_path_factory):
    """The URL of a local fake Perfetto UI (a static page on a free port)."""
    import functools
    import http.server
    import threading

    root = tmp_path_factory.mktemp("perfetto")
    (root / "index.html").write_text(FAKE_PERFETTO, encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, fake_perfetto):
    if not (os.path.exists(CHROMIUM) and shutil.which(CHROMIUM)):
        pytest.skip(f"browser e2e test needs Debian chromium at {CHROMIUM}, which is missing")
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from engine.store.runs import RunStore
    from placelab.runner import place_and_simulate

    root = tmp_path_factory.mktemp("e2e") / "runs"
    graph, cluster = random_dag(ops=60, seed=2), PRESETS["k80x2"]()
    for name in ("single-device", "round-robin"):
        place_and_simulate(graph, cluster, name, store=RunStore(root), tags=["e2e"])
    port = free_port()
    log = (tmp_path_factory.getbasetemp() / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "dashboard" / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=REPO, env={**os.environ, "PLACELAB_RUNS_DIR": str(root),
                       "PLACELAB_EXAMPLE_RUNS_DIR": str(root.parent / "examples"),
                       "PLACELAB_PERFETTO_URL": fake_perfetto},
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # generous: a busy machine starts Streamlit slowly
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start (exit {proc.poll()}); see {log.name}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser_page(app_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run"])
        context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(180_000)
        yield page
        context.close()
        browser.close()
