"""Is the trace view smooth on a 100k-op schedule? Payload, first paint and wheel-zoom frame times.

For random DAGs of ``--sizes`` ops (default 10,000 and 100,000; ``gen:random``, seed 1) placed
round-robin on ``k80x4`` and simulated, the trace view (:mod:`dashboard.trace_view`) is mounted in a
Streamlit app (this file, run by ``streamlit run``) and opened in headless ``/usr/bin/chromium``:

* ``payload``: bytes of the JSON object the component gets (typed arrays as base64, names);
* ``first paint``: from the browser's navigation start to the canvas's first frame (Streamlit's
  page load, the script run with the schedule cached, building and sending the payload, decoding
  included; the second visit, the first one builds the schedule), and the component's own share
  (decoding the payload and drawing the first frame, ``performance.now()`` in the JS);
* ``first frame``: the first ``draw()`` (the whole schedule, every op binned);
* ``frame``: median and max time of one ``draw()`` (``performance.now()`` around it, read from the
  canvas's ``data-trace`` debug hook) over ``--steps`` wheel-zoom steps into the middle of the
  schedule, from the whole schedule down to single named ops; ``named`` is how many ops carry their
  name in the last frame. The issue's goal: median frame ≤ 16 ms at 100k ops;
* ``wheel → frame``: from the wheel event to the animation frame after the one that drew it (so
  rasterizing and compositing the drawn frame is included; a 60 Hz display makes it 17–33 ms when no
  frame is missed), median and max over the same steps.

Usage::

    .venv/bin/python benchmarks/bench_trace_view.py [--sizes 10000,100000] [--steps 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

CHROMIUM = "/usr/bin/chromium"
CLUSTER = "k80x4"


def schedule_for(ops: int):
    """The benchmark's schedule of ``ops`` ops: graph, cluster and round-robin schedule."""
    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator
    from engine.specs import load_graph

    graph, cluster = load_graph(f"gen:random?ops={ops}&seed=1"), PRESETS[CLUSTER]()
    return graph, cluster, Simulator(graph, cluster).run(np.arange(graph.num_ops) % len(cluster.devices))


def app() -> None:
    """The page ``streamlit run`` shows: the trace view of ``?ops=N``'s schedule, alone."""
    import streamlit as st

    from dashboard.trace_view import show_trace_view

    ops = int(st.query_params.get("ops", "10000"))
    graph, cluster, schedule = st.cache_resource(schedule_for)(ops)
    show_trace_view(schedule, graph, cluster, key="bench_trace", view_id=f"bench-{ops}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_streamlit(script: str, *, seconds: float = 60, env: dict | None = None,
                    out=subprocess.DEVNULL) -> tuple[subprocess.Popen, str]:
    """``streamlit run script`` headless on a free local port, from the repository root; the process and its URL once
    its health check answers ``ok`` (RuntimeError if it has not within ``seconds`` or it exited)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        stdout=out, stderr=subprocess.STDOUT,
        cwd=Path(__file__).resolve().parents[1], env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("streamlit did not start")


def _serve() -> tuple[subprocess.Popen, str]:
    return start_streamlit(__file__)


#: The trace view's debug hook (its canvas's ``data-trace``), found through the component's shadow root.
_STATE = ("() => { const c = [...document.querySelectorAll('[data-testid=stBidiComponentIsolated], "
          "[data-testid=stBidiComponentIsolated] *')].map(e => e.shadowRoot).filter(Boolean)"
          ".map(r => r.querySelector('canvas')).find(Boolean) || document.querySelector('canvas.pl-canvas'); "
          "return c && c.dataset.trace ? JSON.parse(c.dataset.trace) : null; }")


def measure(page, url: str, ops: int, steps: int) -> dict:
    """Open the view of ``ops`` ops, wait for its first frame, then zoom ``steps`` wheel steps into the middle.
    A first visit builds and simulates the graph (cached by the app) and is not timed."""
    page.goto(f"{url}/?ops={ops}")
    page.wait_for_function(_STATE, timeout=180_000)
    page.goto("about:blank")
    page.goto(f"{url}/?ops={ops}")
    page.wait_for_function(_STATE, timeout=180_000)
    first = page.evaluate(_STATE)
    nav_paint = page.evaluate("performance.now()")  # upper bound: navigation start → first frame seen
    box = page.locator("[data-testid='trace-view-canvas']").first.bounding_box()  # locators pierce shadow roots
    x, y = box["x"] + box["width"] * 0.5, box["y"] + 20
    page.mouse.move(x, y)
    canvas = page.locator("[data-testid='trace-view-canvas']").first
    seen = first["frames"]
    for k in range(steps):
        page.mouse.wheel(0, -240)
        page.wait_for_function(f"() => ({_STATE})().frames > {seen}", timeout=10_000)
        deadline = time.monotonic() + 10
        while len(json.loads(canvas.get_attribute("data-latency") or "[]")) < min(k + 1, 64):
            if time.monotonic() > deadline:
                raise RuntimeError("no frame after a wheel step")
            page.wait_for_timeout(5)
        page.wait_for_timeout(30)
        seen = page.evaluate(_STATE)["frames"]
    last = page.evaluate(_STATE)
    zoom = last["frame_times"][-steps:]
    latency = json.loads(canvas.get_attribute("data-latency"))[-steps:]
    return {"latency_median_ms": statistics.median(latency), "latency_max_ms": max(latency),
            "first_paint_ms": nav_paint, "component_first_paint_ms": first["first_paint_ms"],
            "decode_ms": first["decode_ms"], "frame_median_ms": statistics.median(zoom), "frame_max_ms": max(zoom),
            "first_frame_ms": first["frame_ms"], "drawn_zoomed_out": first["drawn"], "drawn": last["drawn"],
            "named": last["named"], "window_ms": [last["t0"], last["t1"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="op counts, comma-separated")
    parser.add_argument("--steps", type=int, default=20, help="wheel-zoom steps")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from dashboard.trace_view import trace_payload

    rows = []
    proc, url = _serve()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1500, "height": 900})
            for ops in (int(s) for s in args.sizes.split(",")):
                graph, cluster, schedule = schedule_for(ops)
                payload = len(json.dumps(trace_payload(schedule, graph, cluster, view_id="x")).encode())
                row = {"ops": ops, "transfers": int(schedule.transfer_primary.sum()), "payload_bytes": payload,
                       **measure(page, url, ops, args.steps)}
                rows.append(row)
                print(f"{ops} ops done", file=sys.stderr)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    if args.json:
        print(json.dumps({"benchmark": "trace_view", "steps": args.steps, "rows": rows}))
        return
    print(f"trace view on {CLUSTER}, round-robin, {args.steps} wheel-zoom steps (headless chromium, --disable-gpu)")
    print("| ops | transfers | payload | first paint (page / component) | first frame | zoom frame median / max | "
          "wheel → frame median / max | drawn zoomed out | drawn / named zoomed in |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['ops']:,} | {r['transfers']:,} | {r['payload_bytes'] / 1e6:.2f} MB | "
              f"{r['first_paint_ms']:.0f} / {r['component_first_paint_ms']:.0f} ms | {r['first_frame_ms']:.1f} ms | "
              f"{r['frame_median_ms']:.2f} / {r['frame_max_ms']:.2f} ms | "
              f"{r['latency_median_ms']:.1f} / {r['latency_max_ms']:.1f} ms | {r['drawn_zoomed_out']:,} | "
              f"{r['drawn']:,} / {r['named']:,} |")


if __name__ == "__main__":
    from streamlit import runtime

    if runtime.exists():
        app()
    else:
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        main()
