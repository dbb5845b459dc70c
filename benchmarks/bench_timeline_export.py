"""How long does exporting a timeline take? Figure build and SVG / PNG export of a schedule's timeline.

For random DAGs of ``--sizes`` ops (default 180 and 5,000; ``gen:random``, seed 1) placed round-robin on
``p100x4`` and simulated, the timeline (:func:`dashboard.figures.timeline`) is built and exported the way the
*Export figure* popover does it (:func:`dashboard.figures.theme.export_bytes`: the export copy, then the
system chromium draws it) at the popover's default size, 1600 × 900 px. ``first`` is the process's first
export (it starts the kept browser, :mod:`dashboard.figures.render`); every other line prints the median
and the slowest of ``--repeats`` runs, in seconds, and the size of the export. ``--one-shot`` draws each
image with kaleido's one-shot export instead (a browser started per image: the app before issue 58). The
goal (issue 58.6): SVG and PNG of a 5k-op timeline in 10 s or less.

Usage::

    .venv/bin/python benchmarks/bench_timeline_export.py [--sizes 180,5000] [--repeats 3] [--formats svg,png]
        [--one-shot]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def schedule_for(ops: int):
    """Graph, cluster and round-robin schedule of a ``gen:random`` DAG of ``ops`` ops on p100x4."""
    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator
    from engine.specs import load_graph

    graph = load_graph(f"gen:random?ops={ops}&seed=1")
    cluster = PRESETS["p100x4"]()
    placement = np.arange(graph.num_ops) % cluster.num_devices
    return graph, cluster, Simulator(graph, cluster).run(placement)


def timed(fn, repeats: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="180,5000", help="comma-separated op counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default="svg,png")
    parser.add_argument("--one-shot", action="store_true", help="a browser per image (kaleido's to_image)")
    args = parser.parse_args()

    import plotly.graph_objects as go

    from dashboard.figures import render, timeline
    from dashboard.figures.theme import SYSTEM_CHROMIUM, export_bytes

    if not SYSTEM_CHROMIUM.exists():
        raise SystemExit(f"no chromium at {SYSTEM_CHROMIUM}: image export cannot be measured")
    if args.one_shot:
        def refuse(*_args, **_kwargs):
            raise RuntimeError("one-shot export asked for")

        render.render_image = refuse  # figure_image falls back to kaleido's one-shot export
    print(f"{'ops':>6}  {'what':<7} {'median s':>9} {'max s':>8}  size")
    times, _ = timed(lambda: export_bytes(go.Figure(go.Bar(x=[1], y=[1])), "png"), 1)
    print(f"{'-':>6}  {'first':<7} {times[0]:>9.3f} {times[0]:>8.3f}  (a one-bar figure)", flush=True)
    for ops in (int(s) for s in args.sizes.split(",")):
        graph, cluster, schedule = schedule_for(ops)
        times, fig = timed(lambda g=graph, c=cluster, s=schedule: timeline(s, g, c), args.repeats)
        print(f"{ops:>6}  {'build':<7} {statistics.median(times):>9.3f} {max(times):>8.3f}  {len(fig.data)} traces")
        for fmt in args.formats.split(","):
            times, data = timed(lambda f=fmt, fg=fig: export_bytes(fg, f), args.repeats)
            size = "failed" if data is None else f"{len(data) / 1e3:.0f} kB"
            print(f"{ops:>6}  {fmt:<7} {statistics.median(times):>9.3f} {max(times):>8.3f}  {size}", flush=True)


if __name__ == "__main__":
    main()
