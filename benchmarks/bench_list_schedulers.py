"""Do the list schedulers beat one device on graphs nobody tuned them on? Keras applications on three presets.

Issue 55, items 1–2: every list scheduler plans with the cluster's simulation mode (``engine/sim/estimator.py``); its
own estimate (``predicted_makespan_s``) should agree with the simulation within 1 %, and with the guard on it
should never be worse than 1.01× one device. This script builds Keras ``EfficientNetB0`` and ``DenseNet121``
(``keras.applications``, ``weights=None``: random weights, nothing downloaded), saves each as ``.keras`` and imports
it as placelab does (``graph import``: one training step, batch 32), then places it with every list scheduler on
``k80x2`` (placeto mode), ``p100x4`` and ``v100x8`` (work-conserving), with the guard (the default) and without
(``guard=False``: the papers' rules alone), and prints per placer × preset: the simulated makespan ÷ everything on
the fastest single device, and the placer's own estimate ÷ the simulation.

The models are built into ``--cache`` (default: a temporary folder, removed at the end; pass a folder to keep the
graphs between runs). ``--graphs`` adds placelab specs (e.g. ``gen:nmt``). Placers that predate the guard are run
as they are (the script then works on older commits, for a before/after in one table).

Usage::

    .venv/bin/python benchmarks/bench_list_schedulers.py --cache /tmp/keras-apps
    .venv/bin/python benchmarks/bench_list_schedulers.py --cache /tmp/keras-apps --graphs gen:nmt,gen:chainmm --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from engine.graph.io import load_graph_json, save_graph
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from policies.registry import make_placer, placer_parameters

PLACERS = ("heft", "m-etf", "m-topo", "m-sct", "critical-path")
PRESET_NAMES = ("k80x2", "p100x4", "v100x8")
MODELS = ("EfficientNetB0", "DenseNet121")


def keras_graph(name: str, cache: str):
    """The imported graph of ``keras.applications.<name>`` (random weights), built once into ``cache``."""
    out = os.path.join(cache, f"{name}.json")
    if not os.path.exists(out):
        from engine.importers.keras_files import load_keras_file
        from engine.quiet import quiet_tensorflow_start

        with quiet_tensorflow_start():
            import keras
        path = os.path.join(cache, f"{name}.keras")
        getattr(keras.applications, name)(weights=None).save(path)
        save_graph(load_keras_file(path, name=name), out)
    return load_graph_json(out)


def measure(graph, preset: str) -> dict:
    """Every list scheduler with and without the guard on ``graph`` × ``preset``."""
    cluster = PRESETS[preset]()
    sim = Simulator(graph, cluster)
    single = min(sim.makespan(np.full(graph.num_ops, d)) for d in range(cluster.num_devices))
    row = {"graph": graph.name, "ops": graph.num_ops, "preset": preset, "single_ms": single * 1e3, "placers": {}}
    for name in PLACERS:
        for guard in (True, False):
            params = {"guard": guard} if "guard" in placer_parameters(name) else {}
            if not guard and not params:
                continue
            t = time.perf_counter()
            p = make_placer(name, **params).place(graph, cluster, seed=0)
            seconds = time.perf_counter() - t
            ms = sim.makespan(p)
            est = p.predicted_makespan_s
            row["placers"][name + ("" if guard else " (no guard)")] = {
                "x_single": ms / single, "estimate_over_sim": None if est is None else est / ms, "seconds": seconds}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="folder for the .keras models and imported graphs (default: a temporary one)")
    ap.add_argument("--graphs", default="", help="more placelab graph specs, comma-separated")
    ap.add_argument("--presets", default=",".join(PRESET_NAMES))
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="placelab-keras-apps-") as tmp:
        cache = args.cache or tmp
        os.makedirs(cache, exist_ok=True)
        graphs = [keras_graph(m, cache) for m in MODELS] + [load_graph(s) for s in args.graphs.split(",") if s]
        rows = [measure(g, p) for g in graphs for p in args.presets.split(",")]
    if args.json:
        json.dump({"rows": rows}, sys.stdout, indent=1)
        print()
        return
    for row in rows:
        print(f"\n{row['graph']} ({row['ops']} ops) on {row['preset']}: one device {row['single_ms']:.2f} ms")
        for name, r in row["placers"].items():
            est = "—" if r["estimate_over_sim"] is None else f"{r['estimate_over_sim']:.4f}"
            print(f"  {name:<26} {r['x_single']:6.3f}× one device   estimate ÷ simulated {est}   "
                  f"{r['seconds']:6.2f} s")


if __name__ == "__main__":
    main()
