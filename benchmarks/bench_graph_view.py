"""First paint of the app's graph view (pyvis / vis-network page) on graphs of 1k to 30k ops.

For each graph: seconds to build the page in Python (grouping, layout, HTML) and seconds for
the system chromium to load it and draw the network canvas; medians of ``--repeats`` runs.
Usage: ``python benchmarks/bench_graph_view.py [--repeats 3]`` (needs /usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from dashboard.figures import placement_graph_html
from engine.sources import load_graph

SPECS = ("gen:random?ops=1000&seed=1", "gen:nmt", "gen:nasnet", "gen:random?ops=30000&seed=1")


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 800})
        print(f"{'graph':32} {'ops':>7} {'build s':>8} {'paint s':>8} {'total s':>8}")
        for spec in SPECS:
            g = load_graph(spec)
            builds, paints = [], []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                html = placement_graph_html(g, None, color_by="op type")
                builds.append(time.perf_counter() - t0)
                path = Path(tmp) / "view.html"
                path.write_text(html, encoding="utf-8")
                t0 = time.perf_counter()
                page.goto(path.as_uri())
                page.locator("#mynetwork canvas").wait_for()
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                paints.append(time.perf_counter() - t0)
            b, d = statistics.median(builds), statistics.median(paints)
            print(f"{spec:32} {g.num_ops:7,} {b:8.2f} {d:8.2f} {b + d:8.2f}")
        browser.close()


if __name__ == "__main__":
    main()
