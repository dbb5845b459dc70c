"""How close is the simulator to real execution here, and what does the executor cost?

1. **Fidelity** (issue #14 goal: Spearman ≥ 0.9 and median relative error ≤ 10 % in the
   calibrated ``work_conserving`` mode; DOPPLER App. G.1 reports 0.79 / 0.69): for
   ``gen:chainmm``, ``gen:ffnn`` and a Placeto family graph (``gen:family-cifar10``), each
   scaled so one device's share of the work takes ``--step-ms`` and its transfers take, relative
   to compute, what they would on a ``--link-gbps`` link (default 20 GB/s, DOPPLER's P100
   NVLink; the graphs' bytes at this machine's copy bandwidth would make transfers dominate),
   ``--placements`` placements
   (the baselines', then random ones) are executed ``--repeats`` times (10, as the papers
   average; in rounds over all placements, or back to back with ``--blocked``) on 2 calibrated
   CPU workers and simulated in every available mode; Pearson, Spearman, median and max relative
   error per mode. The *replay* row simulates each run with its own measured op and copy
   durations (``engine.executor.fidelity.replay_graph``): its error is that of the simulator's
   rules alone, the rest of the calibrated mode's error that of the predicted durations; the
   *replay, ops only* and *replay, copies only* rows take one of the two measured durations and
   predict the other, to show which one the gap comes from. The
   *refined* row is out of sample (2-fold): each placement is simulated (``work_conserving``) on
   the cluster refined (``engine.executor.fidelity.refine_cluster``: device speeds and one factor
   on the copy times fitted to measured durations) on the runs of the *other* half of the
   placements. The *recalibrated* row simulates (``work_conserving``) on the cluster whose link and
   per-op cost the calibration's probes measured before every round and after the last
   (``validate(recalibrate=True)``): calibrated over the same minutes as the measurements instead
   of once before all three graphs; the *recal. per run* row simulates each run on the probe before its
   round and the one after it, interpolated by when it ran (``Validation.per_run_predicted``); the
   *copy bus* line lists the capacity each probe read
   (``engine.executor.calibration.bus_capacity``: ~1.15 when the two workers' copies share the
   memory bandwidth, ~2 when they do not; the 2-core development VM switches between the two,
   ``bench_copy_bus.py``). Each graph is validated on two placement samples
   (``placelab.fidelity``, ``--samples``): ``random`` (the baselines', then uniformly random
   placements) and ``perturbed`` (the baselines', then the baselines with a growing share of ops
   redrawn at random, good to random, as a learner visits them: DOPPLER App. G.1 Fig. 26). The
   *noise ceiling* row (``engine.executor.fidelity.noise_ceiling``) is the Spearman correlation an
   error-free prediction could reach against the measured means of that sample, given the
   run-to-run noise: uniformly random placements of the family graph lie so close together that
   the noise alone can keep their ranking under 0.9 (ceiling 0.849 in one run, 0.947 in the next).
2. **Dispatch cost per op** (goal ≤ 50 µs): a chain of ``--dispatch-ops`` zero-time ops on one
   device and the same number of independent zero-time ops: the median time from one op's start
   to the next one's (robust to the odd preemption), and makespan / ops (median of 5 runs).
3. **Repeat noise** (goal: std ≤ 5 % of the mean on an idle machine): one placement
   (round-robin of ``gen:chainmm``) executed ``--noise-repeats`` times after a warm-up.

The cluster is calibrated first (2 devices, into a temporary file; nothing is written to the
user cache or to runs/). Pinned workers are disturbed by any other load on the machine:
report the load (printed) with the figures.

Usage::

    .venv/bin/python benchmarks/bench_executor.py                 # full (50 placements each)
    .venv/bin/python benchmarks/bench_executor.py --quick         # 10 placements, 2 repeats
    .venv/bin/python benchmarks/bench_executor.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from engine.cluster import cluster_from_dict, cluster_to_dict
from engine.executor import Executor, scale_graph
from engine.executor.calibration import calibrate, mode_cluster
from engine.executor.fidelity import fidelity_stats, refine_cluster, replay_makespan
from engine.graph.compgraph import CompGraph
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from placelab.fidelity import SAMPLES, Validation, validate
from policies.registry import make_placer

GRAPHS = ("gen:chainmm", "gen:ffnn", "gen:family-cifar10")


def _zero_ops(n: int, chain: bool) -> CompGraph:
    edges = np.arange(n - 1) if chain else np.zeros(0, int)
    return CompGraph("zero", [f"z{i}" for i in range(n)], compute_any=np.zeros(n), edge_src=edges,
                     edge_dst=edges + 1 if chain else edges)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _row(label: str, s: dict, note: str = "") -> str:
    return (f"  {label:20s} Pearson {_num(s['pearson'])}  Spearman {_num(s['spearman'])}  "
            f"median rel. err {s['median_rel_error']:.1%}  max {s['max_rel_error']:.1%}  "
            f"sim/measured {s['mean_ratio']:.2f}" + (f"   ({note})" if note else ""))


def _scaled(spec: str, cluster, args) -> CompGraph:
    g = load_graph(spec)
    share = float(g.min_compute().sum()) / cluster.num_devices
    time_scale = args.step_ms * 1e-3 / share
    return scale_graph(g, time_scale, time_scale * cluster.link.bandwidth_bytes_per_s / (args.link_gbps * 1e9))


def _refined_out_of_sample(g: CompGraph, cluster, v: Validation) -> dict:
    """Fidelity of ``work_conserving`` on clusters refined on the other half of the placements (2-fold)."""
    predicted = [0.0] * len(v.placements)
    for fold in (0, 1):
        fit = [(v.placements[i], s) for i in range(len(v.placements)) if i % 2 != fold for s in v.schedules[i]]
        sim = Simulator(g, mode_cluster(refine_cluster(cluster, g, fit), "work_conserving"))
        for i in range(fold, len(v.placements), 2):
            predicted[i] = sim.makespan(v.placements[i])
    return fidelity_stats(v.measured_mean, predicted)


def _half_replays(g: CompGraph, cluster, v: Validation) -> dict[str, dict]:
    """Fidelity of replays that take only the measured op durations, or only the measured copies."""
    out = {}
    for label, which in (("ops only", {"copies": False}), ("copies only", {"ops": False})):
        predicted = [replay_makespan(g, cluster, dev, runs, **which)
                     for dev, runs in zip(v.placements, v.schedules, strict=True)]
        out[label] = fidelity_stats(v.measured_mean, predicted)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--placements", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--blocked", action="store_true",
                    help="run each placement's repeats back to back (default: in rounds over all placements)")
    ap.add_argument("--step-ms", type=float, default=50.0)
    ap.add_argument("--link-gbps", type=float, default=20.0)
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--samples", default=",".join(SAMPLES),
                    help="placement samples to validate each graph on (comma-separated: random, perturbed)")
    ap.add_argument("--dispatch-ops", type=int, default=1000)
    ap.add_argument("--noise-repeats", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="10 placements, 2 repeats")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.placements, args.repeats = 10, 2
    say = (lambda m: print(m, file=sys.stderr)) if args.json else print
    load = os.getloadavg()
    say(f"host {platform.node()}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    t0 = time.perf_counter()
    doc = calibrate(2)
    cluster = cluster_from_dict(doc)
    cal = doc["calibration"]
    say(f"calibrated in {time.perf_counter() - t0:.1f} s: matmul "
        + ", ".join(f"{w['matmul_flops_per_s'] / 1e9:.1f}" for w in cal["workers"])
        + f" GFLOP/s; op overhead {doc['simulation'].get('dispatch_s', 0.0) * 1e6:.1f} µs; copy "
        f"{doc['link']['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s + {doc['link']['latency_s'] * 1e6:.1f} µs")
    out: dict = {"host": platform.node(), "load_average": load, "calibration": doc, "fidelity": {}}

    samples = [s for s in args.samples.split(",") if s]
    for spec, sample in [(s, k) for s in args.graphs.split(",") if s for k in samples]:
        g = _scaled(spec, cluster, args)
        t = time.perf_counter()
        v = validate(g, cluster, placements=args.placements, repeats=args.repeats, interleave=not args.blocked,
                     recalibrate=True, sample=sample)
        refined, halves = _refined_out_of_sample(g, cluster, v), _half_replays(g, cluster, v)
        ceiling = v.noise_stats
        out["fidelity"].setdefault(spec, {})[sample] = {
            "graph": g.name, "ops": g.num_ops, "modes": v.stats, "replay": v.replay_stats,
            "repeat_agreement": v.repeat_stats, "noise_ceiling": ceiling,
            "recalibrated": v.recalibrated_stats, "recalibrated_per_run": v.per_run_stats,
            "recalibrated_cluster": cluster_to_dict(v.recalibrated),
            "copy_bus_capacity_probes": v.bus_capacities, "copy_bus": v.bus_stats,
            "refined_out_of_sample": refined, "half_replays": halves,
            "op_time_ratio_median": float(np.nanmedian(v.op_time_ratio)),
            "unavailable": v.unavailable,
            "measured_range_s": [min(v.measured_mean), max(v.measured_mean)],
            "relative_std_median": float(np.median(np.array(v.measured_std) / np.array(v.measured_mean))),
            "seconds": time.perf_counter() - t}
        say(f"\n{g.name} ({g.num_ops} ops), {sample} sample: {len(v.sources)} placements × {args.repeats} runs, "
            f"measured {min(v.measured_mean) * 1e3:.1f}–{max(v.measured_mean) * 1e3:.1f} ms "
            f"({time.perf_counter() - t:.0f} s)")
        for mode, s in v.stats.items():
            say(_row(mode, s))
        say(_row("recalibrated", v.recalibrated_stats,
                 f"work_conserving, link measured in every round: "
                 f"{v.recalibrated.link.bandwidth_bytes_per_s / 1e9:.2f} GB/s, bus capacity "
                 f"{v.recalibrated.simulation.copy_bus_capacity:.2f}"))
        say(_row("recal. per run", v.per_run_stats, "each run on the probes before and after it, interpolated"))
        if v.bus_stats is not None:
            say(f"  {'copy bus':20s} capacity per probe " + " ".join(f"{c:.2f}" for c in v.bus_capacities)
                + f"   ({v.bus_stats['switches']} switch{'' if v.bus_stats['switches'] == 1 else 'es'} between the "
                  "shared and the full state; "
                  "benchmarks/bench_copy_bus.py)")
        say(_row("replay", v.replay_stats, f"measured durations; ops ran {np.nanmedian(v.op_time_ratio):.2f}× "
                                           "their calibrated time, median"))
        if v.repeat_stats is not None:
            say(_row("repeats", v.repeat_stats, "one run of each placement predicting another, median over pairs"))
        if ceiling is not None:
            say(f"  {'noise ceiling':20s} Spearman {ceiling['spearman_ceiling']:.3f}   (an error-free "
                f"prediction against the mean of {args.repeats} runs; split-half "
                f"{ceiling['split_half_spearman']:.3f})")
        for label, st in halves.items():
            say(_row(f"replay, {label}", st, "the other durations predicted"))
        say(_row("refined (2-fold)", refined, "work_conserving, speeds and link fitted to the other half"))
        for mode in v.unavailable:
            say(f"  {mode:20s} unavailable in the simulator")

    n = args.dispatch_ops
    chainmm = _scaled("gen:chainmm", cluster, args)
    with Executor(cluster) as ex:
        per_op = {}
        for label, chain in (("chain", True), ("independent", False)):
            m = ex.run(_zero_ops(n, chain), np.zeros(n, int), repeats=5)
            gaps = np.concatenate([np.diff(np.sort(s.op_start)) for s in m.schedules])
            per_op[label] = {"median_gap_s": float(np.median(gaps)), "makespan_per_op_s":
                             float(np.median(m.makespans)) / n}
            say(f"dispatch cost per zero-time op, {label} of {n}: median {per_op[label]['median_gap_s'] * 1e6:.1f} µs "
                f"start to start, {per_op[label]['makespan_per_op_s'] * 1e6:.1f} µs makespan / ops; goal ≤ 50 µs")
        p = make_placer("round-robin").place(chainmm, cluster, seed=0)
        m = ex.run(chainmm, p, repeats=args.noise_repeats)
        noise = m.std / m.mean
        say(f"repeat noise, {chainmm.name} round-robin, {args.noise_repeats} runs: {m.mean * 1e3:.2f} ± "
            f"{m.std * 1e3:.2f} ms = {noise:.1%} of the mean; goal ≤ 5 %")
    out.update({"dispatch_s_per_op": per_op, "repeat_noise": {"mean_s": m.mean, "std_s": m.std, "relative": noise,
                                                              "repeats": args.noise_repeats}})
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
