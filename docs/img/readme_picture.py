"""Take the README's picture: the Place page on the bundled chainmm runs (4 × P100), in headless Chromium.

Run from the repository root: ``make readme-picture`` (or ``.venv/bin/python docs/img/readme_picture.py``).
It runs four baseline placers on ``gen:chainmm`` / ``p100x4`` into a temporary user store, serves the app on
a free port with that store, opens a link to the four runs (HEFT's first, so its timeline is shown), and writes
``docs/img/place-page.png``: the results table, the makespan bars and HEFT's per-device timeline.
Debian's ``/usr/bin/chromium`` drives it through Playwright (nothing is downloaded).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "docs" / "img" / "place-page.png"
PLACERS = ("heft", "m-etf", "metis", "single-device")  # the first one's timeline is drawn


def place(runs_dir: str) -> list[str]:
    """Run :data:`PLACERS` on gen:chainmm / p100x4 into the store ``runs_dir``; their run ids."""
    from engine.specs import load_cluster, load_graph
    from engine.store.runs import RunStore
    from placelab.runner import place_and_simulate

    graph, cluster = load_graph("gen:chainmm"), load_cluster("p100x4")
    return [place_and_simulate(graph, cluster, name, store=RunStore(runs_dir)).run_id for name in PLACERS]


def serve(port: int, runs_dir: str) -> subprocess.Popen:
    env = {**os.environ, "PLACELAB_RUNS_DIR": runs_dir}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "dashboard" / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    sys.exit("streamlit did not start")


def wait_idle(page) -> None:
    page.wait_for_timeout(500)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=180_000)


def main() -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as runs_dir:
        ids = place(runs_dir)
        proc = serve(port, runs_dir)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                            args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
                page = browser.new_page(viewport={"width": 1400, "height": 3000}, device_scale_factor=1)
                page.set_default_timeout(180_000)
                page.goto(f"http://127.0.0.1:{port}/place?graph=gen:chainmm&cluster=p100x4&results={','.join(ids)}")
                page.get_by_text("Results: chainmm-g4").first.wait_for()
                page.locator(".gtitle", has_text="heft").first.wait_for()
                wait_idle(page)
                page.wait_for_timeout(1500)  # the charts' transitions
                top = page.get_by_text("Results: chainmm-g4").first.bounding_box()
                timeline = page.locator('[data-testid="stPlotlyChart"]').nth(1).bounding_box()
                sidebar = page.locator('[data-testid="stSidebar"]').first.bounding_box()
                left = sidebar["x"] + sidebar["width"]
                clip = {"x": left, "y": top["y"] - 16, "width": 1400 - left,
                        "height": timeline["y"] + timeline["height"] - top["y"] + 32}
                page.screenshot(path=str(OUT), clip=clip)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
