"""Validate the simulator against the executor: many placements, executed and simulated.

The placements are those of the named placers (baselines or a learned policy, e.g.
``placeto`` with ``policy=RUN``), then, up to the number asked for (duplicates removed), one of
two samples:

* ``random`` (the default): uniformly random placements (the ``random`` placer with seeds 0,
  1, …). On a graph of many small ops these lie close together against the run-to-run noise, so
  they rank at the noise (``gen:family-cifar10``: docs/lab/2026-11-24-noise-ceiling-and-copy-bus.md).
* ``perturbed``: placements from good to random, as a learner visits them over training
  (DOPPLER App. G.1 compares its simulator with the real engine on those, Fig. 26): the k-th
  of the m remaining placements is a placer's placement (the placers in turn; without any,
  every op on the first device) with a share k / m of its ops redrawn uniformly at random
  (seed ``seed + k``), so the last ones are random.

:attr:`Validation.noise_stats` (:func:`engine.executor.fidelity.noise_ceiling`) says how well
any prediction could rank a sample's placements, given the run-to-run noise.

Every placement is executed
``repeats`` times after a warm-up on the cluster's devices (:class:`engine.executor.Executor`)
and simulated in every simulation mode the simulator offers
(:data:`engine.cluster.SIMULATION_MODES`; a mode it does not implement yet is reported as
unavailable). As in DOPPLER App. G.1, fidelity is the correlation of simulated with measured
makespans over the placements, here with relative errors too.

Each measured run is also **replayed**: simulated on ``cluster`` (its own mode and options; a
calibrated cluster's are the executor's rules) with the op and copy durations that run measured
(:func:`engine.executor.fidelity.replay_graph`). The replay's error is that of the simulator's
rules alone (dispatch order, per-op cost, copies); the rest of a mode's error comes from the
durations it predicts, which ``op_time_ratio`` (measured over predicted op time, per placement)
shows. With two or more repeats, :attr:`Validation.repeat_stats` sets the executor against
itself (one repeat predicting another): how much of a mode's error the noise could explain.
With ``refine``, :attr:`Validation.refined` is ``cluster`` with its device speeds and copy link
fitted to every measured run (:func:`engine.executor.fidelity.refine_cluster`).

With ``recalibrate``, the calibration's probes (:func:`engine.executor.calibration.measure`: per-op
overhead, copy hops per size, two workers copying at once) run once before every round and once
after the last, and :attr:`Validation.recalibrated` is ``cluster`` with the link and settings of
their median (:func:`engine.executor.calibration.recalibrated`): calibrated over the same minutes
as the measurements, not fitted to them. :attr:`Validation.per_run_predicted` goes one step finer:
each run is simulated on the cluster of each of the two probes around its round (one cluster per
probe, :func:`engine.executor.calibration.recalibrated` of that probe alone) and the two makespans
are interpolated linearly by when the run was made between the probes, so that a run made while
the machine's memory was in one state is predicted from a probe that read that state; a placement's
prediction is the mean over its runs, as its measured makespan is. If the machine switched state
once, at a uniformly random moment between the probes, the interpolation is the expected makespan.
:attr:`Validation.bus_capacities` is what each probe read
of the shared copy bus, which on the 2-core development VM switches between two states on its own
(:func:`engine.executor.calibration.describe_bus` says whether it did during the measurement). On
the 2-core development machine the calibrated copy
bandwidth moves from one benchmark run to the next, and a calibration made minutes before the
measurements can predict a graph too slow; recalibrated, that kind of error shrinks and the ranking
does not change (docs/lab/2026-11-24-executor-against-itself-and-rounds.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.cluster import SIMULATION_MODES, Cluster, cluster_to_dict
from engine.errors import PlacelabError, SimulationError, quote
from engine.executor import Executor, Measurement
from engine.executor.calibration import (
    bus_capacity,
    bus_states,
    measure,
    median_figures,
    mode_cluster,
    recalibrated,
    shared_bus_capacity,
)
from engine.executor.fidelity import (
    fidelity_stats,
    noise_ceiling,
    refine_cluster,
    repeat_agreement,
    replay_makespan,
)
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from engine.sim.schedule import Schedule
from engine.sim.simulator import Simulator
from engine.store.records import write_placement_files, write_schedule_tables
from engine.store.runs import RunStore
from policies.registry import make_placer

__all__ = ["DEFAULT_PLACERS", "SAMPLES", "Validation", "validate"]

_clock = time.monotonic
"""The clock that dates the probes and the runs (a test replaces it)."""

DEFAULT_PLACERS = ("round-robin", "heft", "m-etf", "metis", "critical-path")
SAMPLES = ("random", "perturbed")
"""The placement samples :func:`validate` draws after the placers' (module docstring)."""


@dataclass
class Validation:
    """Measured and simulated makespans of each placement, and the fidelity per mode."""

    sources: list[str]
    placements: list[np.ndarray]
    measured_mean: list[float]
    measured_std: list[float]
    predicted: dict[str, list[float]]
    stats: dict[str, dict[str, Any]]
    unavailable: dict[str, str]
    example: Schedule
    skipped: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    replayed: list[float] = field(default_factory=list)
    op_time_ratio: list[float] = field(default_factory=list)
    refined: Cluster | None = None
    schedules: list[list[Schedule]] = field(default_factory=list)
    """Each placement's measured schedules, one per repeat."""
    recalibrated: Cluster | None = None
    """``cluster`` calibrated in rounds beside the measurements (``recalibrate``; module docstring)."""
    recalibrated_predicted: list[float] = field(default_factory=list)
    """Each placement simulated on :attr:`recalibrated`."""
    probes: list[dict[str, Any]] = field(default_factory=list)
    """The raw figures of every probe (:func:`engine.executor.calibration.measure`)."""
    per_run_predicted: list[float] = field(default_factory=list)
    """Each placement's runs simulated on the probes around them, interpolated in time (module docstring)."""

    @property
    def bus_capacities(self) -> list[float]:
        """The shared copy bus's capacity that each probe read (empty without ``recalibrate`` or on GPUs)."""
        return [bus_capacity(p["copy_alone_s"], p["copy_both_s"]) for p in self.probes
                if p.get("copy_both_s") is not None]

    @property
    def bus_stats(self) -> dict[str, Any] | None:
        """:func:`engine.executor.calibration.bus_states` of :attr:`bus_capacities`: did the machine's
        memory switch between carrying ~1 and ~2 copies at full speed during the measurement? (None
        without probes.)"""
        return bus_states(self.bus_capacities) if self.bus_capacities else None

    @property
    def recalibrated_stats(self) -> dict[str, Any] | None:
        """Fidelity of the simulation on :attr:`recalibrated` (None without ``recalibrate``)."""
        return fidelity_stats(self.measured_mean, self.recalibrated_predicted) if self.recalibrated_predicted \
            else None

    @property
    def per_run_stats(self) -> dict[str, Any] | None:
        """Fidelity of :attr:`per_run_predicted` (None without ``recalibrate``)."""
        return fidelity_stats(self.measured_mean, self.per_run_predicted) if self.per_run_predicted else None

    @property
    def replay_stats(self) -> dict[str, Any]:
        """Fidelity of the replays: the error of the simulator's rules alone (module docstring)."""
        return fidelity_stats(self.measured_mean, self.replayed)

    @property
    def run_makespans(self) -> list[list[float]]:
        """Each placement's measured makespan per repeat."""
        return [[s.makespan for s in runs] for runs in self.schedules]

    @property
    def repeat_stats(self) -> dict[str, Any] | None:
        """The executor against itself over the same placements (None with one repeat): how much of a
        mode's error the noise could explain (:func:`engine.executor.fidelity.repeat_agreement`)."""
        return repeat_agreement(self.run_makespans)

    @property
    def noise_stats(self) -> dict[str, Any] | None:
        """The Spearman correlation an error-free prediction could reach against the measured means
        (None with one repeat; :func:`engine.executor.fidelity.noise_ceiling`)."""
        return noise_ceiling(self.run_makespans)

    def rows(self) -> dict[str, list]:
        """The table stored as ``fidelity.csv``: one row per placement."""
        out: dict[str, list] = {"placement": list(range(len(self.sources))), "source": self.sources,
                                "measured_mean_s": self.measured_mean, "measured_std_s": self.measured_std}
        for mode, values in self.predicted.items():
            out[f"simulated_{mode}_s"] = values
        if self.recalibrated_predicted:
            out["simulated_recalibrated_s"] = self.recalibrated_predicted
        if self.per_run_predicted:
            out["simulated_recalibrated_per_run_s"] = self.per_run_predicted
        if self.replayed:
            out["replayed_s"] = self.replayed
            out["op_time_ratio"] = self.op_time_ratio
        return out


def _placements(graph: CompGraph, cluster: Cluster, count: int, placers: list[str], params: dict[str, Any],
                seed: int, sample: str) -> tuple[list[str], list[np.ndarray], dict[str, str]]:
    sources, found, skipped, seen = [], [], {}, set()

    def add(name: str, p: Placement) -> None:
        key = p.devices.tobytes()
        if key not in seen and len(found) < count:
            seen.add(key)
            sources.append(name)
            found.append(p.devices.copy())

    for name in placers:
        try:
            add(name, make_placer(name, **params.get(name, {})).place(graph, cluster, seed=seed))
        except PlacelabError as exc:
            skipped[name] = str(exc)
    bases = list(zip(sources, found, strict=True)) or [("single-device", np.zeros(graph.num_ops, np.int64))]
    rest = max(count - len(found), 1)
    rand = make_placer("random")

    def draw(k: int) -> tuple[str, Placement]:
        """The k-th placement of the sample (module docstring)."""
        if sample == "random":
            return f"random#{k}", rand.place(graph, cluster, seed=seed + k)
        share = (k % rest + 1) / rest
        name, base = bases[k % len(bases)]
        rng = np.random.default_rng(seed + k)
        devices = base.copy()
        redrawn = rng.random(graph.num_ops) < share
        devices[redrawn] = rng.integers(0, cluster.num_devices, int(redrawn.sum()))
        return f"{name}~{share:.2f}", Placement(devices)

    k = 0
    while len(found) < count and k < 20 * count:
        add(*draw(k))
        k += 1
    return sources, found, skipped


def validate(graph: CompGraph, cluster: Cluster, *, placements: int = 20, placers: list[str] | None = None,
             placer_params: dict[str, dict[str, Any]] | None = None, repeats: int = 3, warmup: int = 1,
             seed: int = 0, store: RunStore | None = None, parameters: dict[str, Any] | None = None,
             progress: Callable[[str], None] | None = None, refine: bool = False,
             interleave: bool = True, recalibrate: bool = False, sample: str = "random") -> Validation:
    """Execute and simulate ``placements`` placements of ``graph`` on ``cluster``; report fidelity.

    ``graph`` must already be executable here (see :func:`engine.executor.scale_graph`).
    With ``interleave`` (the default) the repeats run in rounds, every placement once per round
    (each run after ``warmup`` unmeasured ones), so that a slow drift of the machine's speed
    spreads over all placements instead of shifting the few placements it happens to hit;
    without it each placement's runs follow each other. With ``recalibrate`` the calibration's
    probes run before every round and after the last (module docstring).
    With ``store``, a run of kind ``validate`` keeps the per-placement table
    (``fidelity.csv``), the statistics per mode as metrics, and the first placement with
    its simulated (``schedule_*.csv``) and measured (``measured_*.csv``) schedules.
    """
    say = progress or (lambda _msg: None)
    if sample not in SAMPLES:
        raise PlacelabError(f"unknown placement sample {quote(sample)}; choose one of: {', '.join(SAMPLES)}")
    names = list(DEFAULT_PLACERS if placers is None else placers)
    for name in names:  # an unknown name is bad input: refuse it before anything runs
        make_placer(name, **(placer_params or {}).get(name, {}))
    sources, devs, skipped = _placements(graph, cluster, placements, names, placer_params or {}, seed, sample)
    sims, unavailable = {}, {}
    for mode in SIMULATION_MODES:
        try:
            sims[mode] = Simulator(graph, mode_cluster(cluster, mode))
        except SimulationError as exc:
            unavailable[mode] = str(exc)
    runs: list[list[Schedule]] = [[] for _ in devs]
    probes: list[dict[str, Any]] = []
    kind = "cpu" if all(d.kind == "cpu" for d in cluster.devices) else "gpu"

    probe_at: list[float] = []  # when each probe, and each placement's every run, was made (midpoints)
    run_at: list[list[float]] = [[] for _ in devs]

    def probe() -> None:
        t0 = _clock()
        probes.append(measure(ex, kind=kind, repeats=1))
        probe_at.append((t0 + _clock()) / 2)
        raw = probes[-1]
        say(f"[probe {len(probes)}] op overhead {np.mean(raw['op_overhead_s_per_device']) * 1e6:.1f} µs"
            + (f", {raw['copy_bytes'][-1] / 1e6:.0f} MB copy {raw['copy_alone_s'] * 1e3:.2f} ms"
               if raw["copy_alone_s"] is not None else ""))

    with Executor(cluster) as ex:
        rounds, per_call = (repeats, 1) if interleave else (1, repeats)
        for r in range(rounds):
            if recalibrate:
                probe()
            for i, (src, dev) in enumerate(zip(sources, devs, strict=True)):
                t0 = _clock()
                m = ex.run(graph, dev, repeats=per_call, warmup=warmup)
                runs[i] += m.schedules
                run_at[i] += [(t0 + _clock()) / 2] * len(m.schedules)
                where = f"round {r + 1}/{rounds}, " if interleave else ""
                say(f"[{where}{i + 1}/{len(devs)}] {src}: measured "
                    + ", ".join(f"{s.makespan * 1e3:.3f}" for s in m.schedules) + " ms")
        if recalibrate:
            probe()
    means, stds, replayed, ratio = [], [], [], []
    predicted: dict[str, list[float]] = {m: [] for m in sims}
    planned = Simulator(graph, cluster)
    for i, (src, dev) in enumerate(zip(sources, devs, strict=True)):
        m = Measurement(runs[i])
        means.append(m.mean)
        stds.append(m.std)
        for mode, sim in sims.items():
            predicted[mode].append(sim.makespan(dev))
        replayed.append(replay_makespan(graph, cluster, dev, m.schedules))
        op_time = planned.run(Placement(dev)).compute_time.sum()
        ratio.append(float(np.mean([s.compute_time.sum() for s in m.schedules]) / op_time) if op_time > 0
                     else float("nan"))
        say(f"[{i + 1}/{len(devs)}] {src}: measured {m.mean * 1e3:.3f} ± {m.std * 1e3:.3f} ms, "
            + ", ".join(f"{mode} {v[-1] * 1e3:.3f} ms" for mode, v in predicted.items())
            + f", replayed {replayed[-1] * 1e3:.3f} ms")
    example = Measurement(runs[0]).schedule
    stats = {mode: fidelity_stats(means, values) for mode, values in predicted.items()}
    result = Validation(sources, devs, means, stds, predicted, stats, unavailable, example, skipped, replayed=replayed,
                        op_time_ratio=ratio, schedules=runs)
    if recalibrate:
        result.probes = probes
        result.recalibrated = recalibrated(cluster, median_figures(probes))
        in_run = Simulator(graph, result.recalibrated)
        result.recalibrated_predicted = [in_run.makespan(dev) for dev in devs]
        result.per_run_predicted = _per_run(graph, cluster, devs, probes, probe_at, run_at)
    if refine:
        result.refined = refine_cluster(cluster, graph, [(dev, s) for dev, runs_i in zip(devs, runs, strict=True)
                                                         for s in runs_i])
    if store is not None:
        result.run_id = _store(store, graph, cluster, result, {**(parameters or {}), "placements": placements,
                                                                "placers": names, "repeats": repeats,
                                                                "warmup": warmup, "interleave": interleave,
                                                                "recalibrate": recalibrate, "sample": sample},
                                seed)
    return result


def _per_run(graph: CompGraph, cluster: Cluster, devs: list[np.ndarray], probes: list[dict[str, Any]],
             probe_at: list[float], run_at: list[list[float]]) -> list[float]:
    """Each placement's mean over its runs of the makespan simulated on the cluster of each probe,
    interpolated linearly between the probes made before and after the run (module docstring)."""
    sims = [Simulator(graph, recalibrated(cluster, raw)) for raw in probes]
    return [float(np.mean(np.interp(at, probe_at, [sim.makespan(dev) for sim in sims])))
            for dev, at in zip(devs, run_at, strict=True)]


def _store(store: RunStore, graph: CompGraph, cluster: Cluster, v: Validation, parameters: dict[str, Any],
           seed: int) -> str:
    run = store.create("validate", graph_name=graph.name, graph_hash=graph.content_hash, cluster=cluster.name,
                       placer=None, parameters=parameters, seed=seed, tags=["fidelity"])
    with run:
        first = Placement(v.placements[0])
        write_placement_files(run, graph, cluster, first, Simulator(graph, cluster).run(first))
        write_schedule_tables(run, graph, cluster, v.example, "measured")
        run.write_table("fidelity.csv", v.rows())
        run.write_json("placements.json", {"sources": v.sources, "devices": [d.tolist() for d in v.placements]})
        if v.recalibrated is not None:
            run.write_json("recalibrated_cluster.json", {**cluster_to_dict(v.recalibrated),
                                                         "calibration": {"probes": v.probes}})
        run.finish("done", {"fidelity": v.stats, "replay": v.replay_stats, "repeat_agreement": v.repeat_stats,
                            "noise_ceiling": v.noise_stats, "recalibrated": v.recalibrated_stats,
                            "recalibrated_per_run": v.per_run_stats,
                            "copy_bus_capacity_probes": v.bus_capacities or None,
                            "cluster_copy_bus_capacity": shared_bus_capacity(cluster),
                            "op_time_ratio_median": float(np.nanmedian(v.op_time_ratio)),
                            "unavailable_modes": v.unavailable, "skipped_placers": v.skipped,
                            "placements": len(v.sources), "makespan_s": v.measured_mean[0],
                            "measured_makespan_s": v.measured_mean[0]})
    return run.id
