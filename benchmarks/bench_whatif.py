"""How fast does the Place page's what-if editor answer? One edit re-simulated and diffed at 10k ops.

For a random DAG of ``--ops`` ops (default 10,000; ``gen:random``, seed 1) placed round-robin on each cluster of
``--clusters`` (default ``k80x2``, placeto mode, and ``p100x4``, work-conserving mode), the editor's *Apply* is
timed as the app runs it (:mod:`dashboard.widgets.whatif`): ``simulate`` builds the result's simulator and applies
one edit — every op of the busiest device's first tenth of the makespan, a time range, moved to the next device —
and simulates the edited placement; ``diff`` makes the per-device change table, the moved-ops mask and the
placement diff; ``figures`` builds the two timelines on one axis (before, and after with the moved ops marked).
Each line prints the median and the slowest of ``--repeats`` runs, in seconds. With ``--page`` it also times the
script run after a click on *Apply* (streamlit's AppTest, no browser: the server's side of the round trip) of the
whole Place page (with the result's own timeline, explorer and figures) and of the editor alone, which is what the
browser reruns (the editor is a fragment).

Usage::

    .venv/bin/python benchmarks/bench_whatif.py [--ops 10000] [--clusters k80x2,p100x4] [--repeats 7] [--page]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from bench_timeline_export import timed  # a sibling script: the times of repeated runs and the last result


def line(what: str, times: list[float]) -> str:
    return f"  {what:<26} median {statistics.median(times):.4f} s   slowest {max(times):.4f} s"


def one_cluster(graph, cluster_name: str, repeats: int) -> None:
    from dashboard.data.whatif import Edit, Outcome, device_changes, moved_mask
    from dashboard.figures import timeline
    from dashboard.figures.diff import placement_diff
    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator

    cluster = PRESETS[cluster_name]()
    base = np.arange(graph.num_ops) % cluster.num_devices
    schedule = Simulator(graph, cluster).run(base, record_memory=True)  # as the Place result holds it
    busiest = int(np.argmax(schedule.compute_time))
    edit = Edit("range", cluster.devices[busiest].name, cluster.devices[(busiest + 1) % cluster.num_devices].name,
                (0.0, float(schedule.makespan * 1e3 / 10)))
    start = Outcome(base, schedule)
    start.then(Simulator(graph, cluster), edit)  # warm: the kernels' first call

    sim_times, outcome = timed(lambda: start.then(Simulator(graph, cluster), edit), repeats)
    names = [d.name for d in cluster.devices]

    def diff():
        device_changes(cluster, schedule, outcome.schedule)
        placement_diff(graph, base, outcome.devices, names, names)
        return moved_mask(cluster, base, outcome.devices)

    diff_times, moved = timed(diff, repeats)
    end = max(schedule.makespan, outcome.schedule.makespan) * 1e3 * 1.03

    def figures():
        timeline(schedule, graph, cluster, title="before", time_range_ms=(0.0, end))
        return timeline(outcome.schedule, graph, cluster, title="after", time_range_ms=(0.0, end), highlight=moved)

    fig_times, _ = timed(figures, repeats)
    both = [a + b for a, b in zip(sim_times, diff_times, strict=True)]
    print(f"{cluster_name} ({outcome.schedule.mode}): {edit.label()}: {outcome.moved[0]:,} ops moved, makespan "
          f"{schedule.makespan * 1e3:.4g} -> {outcome.schedule.makespan * 1e3:.4g} ms")
    print(line("simulate (Apply)", sim_times))
    print(line("diff", diff_times))
    print(line("simulate + diff", both))
    print(line("figures (two timelines)", fig_times))


def _apply_times(app, placed, repeats: int) -> list[float]:
    """Seconds of the script run after each of ``repeats`` clicks on Apply, each moving op k off its device."""
    times = []
    for k in range(repeats):
        app.radio(key="place_whatif_move_0").set_value("op")
        app.selectbox(key="place_whatif_op_0").set_value(k)
        app.selectbox(key="place_whatif_to_0").set_value((int(placed[k]) + 1) % 2)
        t0 = time.perf_counter()
        app.button(key="place_whatif_apply_0").click().run()
        times.append(time.perf_counter() - t0)
        assert not app.exception and not app.error, (app.exception, [e.value for e in app.error])
    assert len(app.session_state["place_results"]["results"][0]["whatif"]["edits"]) == repeats
    return times


def page(spec: str, repeats: int) -> None:
    """The script run after a click on Apply, as AppTest runs it (the server's side): the whole Place page, and the
    editor alone (what the browser reruns: the editor is a fragment)."""
    import os
    import tempfile

    from streamlit.testing.v1 import AppTest

    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator
    from engine.specs import load_graph
    from placelab.runner import place_and_simulate

    os.environ["PLACELAB_RUNS_DIR"] = tempfile.mkdtemp(prefix="bench-whatif-")
    source = ("from dashboard.context import set_graph, current_graph\nfrom engine.specs import load_graph\n"
              f"if current_graph() is None:\n    set_graph(load_graph({spec!r}), {spec!r}, {spec!r})\n"
              "from dashboard.app_pages import place\nplace.page()\n")
    app = AppTest.from_string(source, default_timeout=600).run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    app.run()  # once more: caches warm, as a result already on the page
    placed = app.session_state["place_results"]["results"][0]["placement"].devices
    print(f"{spec}, round-robin on k80x2 (the sidebar's default), server side of one Apply (AppTest, no browser):")
    print(line("whole Place page", _apply_times(app, placed, repeats)))

    graph, cluster = load_graph(spec), PRESETS["k80x2"]()
    res = place_and_simulate(graph, cluster, "round-robin")
    result = {"placer": "round-robin", "params": {}, "seed": 0, "budget": None, "placement": res.placement,
              "schedule": Simulator(graph, cluster).run(res.placement, record_memory=True), "metrics": res.metrics,
              "seconds": res.seconds_to_place, "startup": None, "run_id": None, "kept_id": "bench"}
    alone = AppTest.from_string("import streamlit as st\nfrom dashboard.widgets.whatif import show_whatif\n"
                                "s = st.session_state['place_results']\nshow_whatif(s, s['results'][0], 0)\n",
                                default_timeout=600)
    alone.session_state["place_results"] = {"graph": graph, "cluster": cluster, "results": [result]}
    alone.run()
    print(line("the editor alone", _apply_times(alone.run(), res.placement.devices, repeats)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--clusters", default="k80x2,p100x4")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--page", action="store_true", help="also time the Place page's run after Apply (AppTest)")
    args = parser.parse_args()

    from engine.specs import load_graph

    spec = f"gen:random?ops={args.ops}&seed=1"
    graph = load_graph(spec)
    print(f"{spec}: {graph.num_ops:,} ops, {graph.num_edges:,} edges; {args.repeats} repeats")
    for name in args.clusters.split(","):
        one_cluster(graph, name.strip(), args.repeats)
    if args.page:
        page(spec, args.repeats)


if __name__ == "__main__":
    main()
