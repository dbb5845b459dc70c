"""How far is each baseline from a strong search? ``anneal`` on the DOPPLER authors' graphs and on two others.

Part 1, on the DOPPLER authors' four published graphs (``GRAPHS_DIR``: their ``compute_graph/`` folder, found
there as ``placelab reproduce doppler-table2 --graphs-dir`` finds them, the ``gdp_`` twins first) on ``p100x4``
in its own work-conserving mode: every baseline's makespan (each registered placer but the learned ones and
``anneal``, default parameters, seed 0), ``anneal`` at ``--budgets`` evaluations (seed 0) and, with ``--seconds``,
at wall-time limits, and a long run of ``anneal`` (``--long`` evaluations for each of ``--long-seeds`` seeds). The
best placement known is the best of all of them; each figure is printed ÷ it. Goal (issue 55): ``anneal`` at its
default budget within 1.10× of the best known on every graph.

Part 2 (``--random-check``, and always without ``GRAPHS_DIR``), on graphs it was not tuned on: ``gen:random`` of
``--random-ops`` ops on ``v100x8`` and ``k80x2``, ``anneal`` at its default budget against random search (the best
of as many ``random`` placements) and ``local-search``, both at the same number of evaluations.

Every makespan is the simulator's (deterministic: the presets' settings, no noise). Costs are compared as the
search compares them (memory-penalized runtime, Placeto A.7), equal to the makespan where nothing runs out of memory.

Usage::

    .venv/bin/python benchmarks/bench_search_reference.py /tmp/doppler/compute_graph --quick --random-check
    .venv/bin/python benchmarks/bench_search_reference.py DIR --budgets 2000,10000,20000,50000 --seconds 30,150 \\
        --long 500000 --long-seeds 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

from engine.errors import PlacelabError
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from placelab.reproduce.published import resolve
from placelab.reproduce.registry import get
from policies.list_scheduling import memory_penalized
from policies.registry import PLACERS, make_placer
from policies.simulated_annealing import Anneal

CLUSTER = "p100x4"
SEARCH = "anneal"
DEFAULT_EVALUATIONS = Anneal().evaluations


def baselines() -> list[str]:
    """Every registered placer but the learned ones and the search reference itself."""
    return [n for n, info in PLACERS.items() if info.family != "learned" and n != SEARCH]


def cost(graph, cluster, placement) -> float:
    return memory_penalized(*Simulator(graph, cluster).makespan_and_peak(placement), cluster.memory)


def timed(graph, cluster, name: str, seed: int = 0, **params: Any) -> dict[str, Any]:
    """One placer's placement: its cost, seconds, and for ``anneal`` its report."""
    placer = make_placer(name, **params)
    t = time.perf_counter()
    try:
        p = placer.place(graph, cluster, seed=seed)
    except PlacelabError as exc:
        return {"placer": name, "error": str(exc)}
    out: dict[str, Any] = {"placer": name, "cost_s": cost(graph, cluster, p), "seconds": time.perf_counter() - t}
    report = getattr(placer, "report", None)
    if report is not None:
        out.update(evaluations_used=report.evaluations_used, stopped_by=report.stopped_by, start=report.start,
                   simulations=report.simulations)
    return out


def authors(graphs_dir: str, args) -> list[dict[str, Any]]:
    sources = resolve(get("doppler-table2"), graphs_dir)
    cluster = PRESETS[CLUSTER]()
    out = []
    for use in sources.uses:
        if use.file is None:
            print(f"# {use.row}: no file found in {graphs_dir}, skipped", file=sys.stderr)
            continue
        g = load_graph(os.path.join(sources.directory, use.file))
        print(f"# {use.row}: {use.file} ({g.num_ops} ops)", file=sys.stderr)
        base = [timed(g, cluster, n) for n in baselines()]
        budgets = [{**timed(g, cluster, SEARCH, evaluations=b), "budget": f"{b:,} evaluations"} for b in args.budgets]
        budgets += [{**timed(g, cluster, SEARCH, evaluations=10**6, time_limit_s=s), "budget": f"{s:g} s"}
                    for s in args.seconds]
        long = [{**timed(g, cluster, SEARCH, seed=s, evaluations=args.long), "seed": s} for s in range(args.long_seeds)]
        best = min(r["cost_s"] for r in [*base, *budgets, *long] if "cost_s" in r)
        out.append({"row": use.row, "file": use.file, "ops": g.num_ops, "best_known_s": best, "baselines": base,
                    "search": budgets, "long": long})
    return out


def random_check(args) -> list[dict[str, Any]]:
    out = []
    for cname in ("v100x8", "k80x2"):
        g, c = load_graph(f"gen:random?ops={args.random_ops}&seed=1"), PRESETS[cname]()
        n = DEFAULT_EVALUATIONS
        t = time.perf_counter()
        rand = min(cost(g, c, make_placer("random").place(g, c, seed=s)) for s in range(n))
        rand_s = time.perf_counter() - t
        out.append({"graph": g.name, "ops": g.num_ops, "cluster": cname, "evaluations": n,
                    "anneal": timed(g, c, SEARCH), "local_search": timed(g, c, "local-search", evaluations=n),
                    "random_search": {"cost_s": rand, "seconds": rand_s},
                    "single_device": timed(g, c, "single-device")})
    return out


def _x(v: float | None, best: float) -> str:
    return "-" if v is None else f"{v / best:.3f}"


def print_tables(res: dict[str, Any]) -> None:
    rows = res["authors"]
    if rows:
        print(f"# DOPPLER authors' graphs on {CLUSTER} ({PRESETS[CLUSTER]().simulation.mode}); "
              "each figure ÷ the best placement known on its graph")
        names = [b["placer"] for b in rows[0]["baselines"]]
        print("| placer | " + " | ".join(r["row"] for r in rows) + " |")
        print("|---|" + "---:|" * len(rows))
        print("| best known (ms) | " + " | ".join(f"{r['best_known_s'] * 1e3:.1f}" for r in rows) + " |")
        for i, name in enumerate(names):
            cells = [_x(r["baselines"][i].get("cost_s"), r["best_known_s"]) for r in rows]
            print(f"| {name} | " + " | ".join(cells) + " |")
        print("| **best baseline** | " + " | ".join(
            _x(min(b["cost_s"] for b in r["baselines"] if "cost_s" in b), r["best_known_s"]) for r in rows) + " |")
        for j, s in enumerate(rows[0]["search"]):
            cells = [f"{_x(r['search'][j]['cost_s'], r['best_known_s'])} ({r['search'][j]['seconds']:.1f} s)"
                     for r in rows]
            print(f"| anneal, {s['budget']}, seed 0 | " + " | ".join(cells) + " |")
        for j, s in enumerate(rows[0]["long"]):
            cells = [f"{_x(r['long'][j]['cost_s'], r['best_known_s'])} ({r['long'][j]['seconds']:.1f} s)" for r in rows]
            print(f"| anneal, {res['long']:,} evaluations, seed {s['seed']} | " + " | ".join(cells) + " |")
    for r in res["random"]:
        best = min(r[k]["cost_s"] for k in ("anneal", "local_search", "random_search", "single_device"))
        print(f"# {r['graph']} ({r['ops']} ops) on {r['cluster']}, {r['evaluations']:,} evaluations each: "
              + ", ".join(f"{k} {r[k]['cost_s'] * 1e3:.3f} ms ({r[k]['cost_s'] / best:.3f}×, {r[k]['seconds']:.1f} s)"
                          for k in ("anneal", "local_search", "random_search", "single_device")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs_dir", nargs="?", help="the DOPPLER authors' compute_graph/ folder (part 1)")
    ap.add_argument("--quick", action="store_true", help="budgets 2,000 and the default; a long run of 2 × 100,000")
    ap.add_argument("--budgets", type=lambda s: [int(x) for x in s.split(",")],
                    default=[2_000, 10_000, DEFAULT_EVALUATIONS, 50_000])
    ap.add_argument("--seconds", type=lambda s: [float(x) for x in s.split(",")], default=[])
    ap.add_argument("--long", type=int, default=500_000, help="evaluations of each long run")
    ap.add_argument("--long-seeds", type=int, default=3)
    ap.add_argument("--random-check", action="store_true",
                    help="part 2: gen:random on v100x8 and k80x2 (always without GRAPHS_DIR)")
    ap.add_argument("--random-ops", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.budgets, args.seconds, args.long, args.long_seeds = [2_000, DEFAULT_EVALUATIONS], [], 100_000, 2
    t0, cpu0 = time.perf_counter(), time.process_time()
    if not args.graphs_dir:
        print("# no GRAPHS_DIR (the DOPPLER authors' compute_graph/ folder): part 1 skipped", file=sys.stderr)
    res = {"cluster": CLUSTER, "long": args.long, "default_evaluations": DEFAULT_EVALUATIONS,
           "authors": authors(args.graphs_dir, args) if args.graphs_dir else [],
           "random": random_check(args) if args.random_check or not args.graphs_dir else []}
    res.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - cpu0)
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"# python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print_tables(res)
    print(f"# {res['wall_s']:.0f} s wall, {res['cpu_s']:.0f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
