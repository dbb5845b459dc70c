"""How close is each list scheduler's own estimate to the simulation, in every mode? Issue 55, item 1.

For each graph × preset × simulation mode (the preset's cluster with its mode replaced: ``placeto``, ``default``,
``work_conserving``) × list scheduler (``guard=False``: the papers' rules alone), the placer's
``predicted_makespan_s`` ÷ the simulated makespan of the placement it returns. Prints the cells whose ratio differs
from 1 by more than ``--tolerance`` (default 1e-6), how many of them are beyond 1 %, and the total.

Usage::

    .venv/bin/python benchmarks/bench_estimates.py
    .venv/bin/python benchmarks/bench_estimates.py --graphs gen:chainmm,gen:ffnn --presets p100x4 --json
"""

from __future__ import annotations

import argparse
import json

from engine.presets import PRESETS
from engine.sim.simulator import simulate
from engine.specs import load_graph
from policies.registry import make_placer

PLACERS = ("critical-path", "heft", "m-etf", "m-topo", "m-sct")
GRAPHS = ("gen:chainmm", "gen:ffnn", "gen:llama-block", "gen:llama-layer", "gen:nmt", "bench:resnet50_training")
MODES = ("placeto", "default", "work_conserving")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--presets", default="k80x2,p100x4,v100x8")
    ap.add_argument("--tolerance", type=float, default=1e-6)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for spec in args.graphs.split(","):
        g = load_graph(spec)
        for preset in args.presets.split(","):
            for mode in MODES:
                c = PRESETS[preset]().with_simulation(mode=mode)
                for name in PLACERS:
                    p = make_placer(name, guard=False).place(g, c, seed=0)
                    ratio = p.predicted_makespan_s / simulate(g, c, p.devices).makespan
                    rows.append({"graph": spec, "preset": preset, "mode": mode, "placer": name, "ratio": ratio})
    off = [r for r in rows if abs(r["ratio"] - 1) > args.tolerance]
    if args.json:
        print(json.dumps({"cells": len(rows), "off": off}))
        return
    for r in off:
        where = f"{r['graph']:26s} {r['preset']:7s} {r['mode']:16s} {r['placer']:14s}"
        print(f"{where} estimate/simulated {r['ratio']:.4f}")
    beyond = sum(abs(r["ratio"] - 1) > 0.01 for r in off)
    equal = len(rows) - len(off)
    print(f"{len(rows)} cells: {equal} equal (±{args.tolerance:g}), {len(off)} differ, {beyond} beyond 1 %")


if __name__ == "__main__":
    main()
