"""Real execution on the command line: ``calibrate``, ``validate`` and ``--execute`` (issue #14).

``placelab calibrate -o cluster.json`` measures this machine into a ``placelab.cluster/1``
file (without ``-o`` it refreshes the cached ``local`` preset). ``placelab validate GRAPH -c
CLUSTER`` executes and simulates many placements and reports the simulator's fidelity per
mode. ``place`` and ``compare`` take ``--execute`` (see :func:`measuring`); ``placelab execute GRAPH
-c CLUSTER --placement FILE`` executes one given placement (the app's Place page runs it in the
background).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import numpy as np
import typer

from engine.cluster import Cluster
from engine.errors import SpecError, quote
from engine.executor import Executor, scale_graph
from engine.graph.compgraph import CompGraph
from engine.jsonio import atomic_write_text, check_write_target, dumps
from engine.limits import MAX_STEP_SECONDS, check_at_most
from engine.placement import Placement
from engine.sim.schedule import Schedule
from engine.specs import load_cluster, load_graph
from engine.store.runs import RunStore
from placelab.cli_common import USER_RUNS_DIR, ClusterOpt, GraphArg, JsonOpt, RunsDirOpt, emit, fmt_s, text_table

__all__ = ["ExecuteOpt", "RepeatsOpt", "TimeScaleOpt", "executable_graph", "execution_scale", "measuring",
           "register"]

ExecuteOpt = Annotated[bool, typer.Option(
    "--execute", help="also run the placement for real on this machine's devices and store the measurement")]
RepeatsOpt = Annotated[int, typer.Option(min=1, help="measured executions per placement (after one warm-up)")]
TimeScaleOpt = Annotated[float | None, typer.Option(
    help="multiply compute times (and sizes) by this for execution; default: a step of --step-ms")]
StepOpt = Annotated[float, typer.Option(help="with no --time-scale: scale the graph so one device's share "
                                             "of the work takes this many ms")]
BytesScaleOpt = Annotated[float | None, typer.Option(help="multiply bytes by this (default: the time scale)")]


def execution_scale(graph: CompGraph, num_devices: int, time_scale: float | None, step_ms: float = 100.0) -> float:
    """``time_scale`` when given, else the factor that makes total compute / devices take ``step_ms``; either way
    that share of one executed step is at most :data:`~engine.limits.MAX_STEP_SECONDS`."""
    share = float(graph.min_compute().sum()) / num_devices
    if time_scale is None:
        if not step_ms > 0:
            raise SpecError(f"--step-ms must be > 0, got {step_ms}")
        check_at_most("--step-ms", step_ms, MAX_STEP_SECONDS * 1000, "MAX_STEP_SECONDS × 1000")
        return step_ms * 1e-3 / share if share > 0 else 1.0
    if math.isfinite(time_scale):  # scale_graph refuses the rest
        check_at_most("one device's share of the executed step (the graph's compute × --time-scale ÷ devices, in s)",
                      share * time_scale, MAX_STEP_SECONDS, "MAX_STEP_SECONDS")
    return time_scale


def executable_graph(graph: CompGraph, num_devices: int, time_scale: float | None, step_ms: float = 100.0,
                     bytes_scale: float | None = None) -> CompGraph:
    """``graph`` scaled for execution: by ``time_scale``, or so that total compute / devices = ``step_ms``."""
    return scale_graph(graph, execution_scale(graph, num_devices, time_scale, step_ms), bytes_scale)


@contextmanager
def measuring(cluster: Cluster, repeats: int = 3, warmup: int = 1) -> Iterator[Any]:
    """Workers for ``cluster``, kept open; yields a ``measure(graph, placement)`` for the runner."""
    with Executor(cluster) as ex:
        def measure(graph: CompGraph, placement: Placement) -> tuple[Schedule, dict[str, Any]]:
            m = ex.run(graph, placement, repeats=repeats, warmup=warmup)
            return m.schedule, {"measured_makespan_s": m.mean, "measured_std_s": m.std,
                                "measured_repeats": repeats, "measured_makespans_s": m.makespans.tolist()}
        yield measure


def measured_text(metrics: dict[str, Any]) -> str:
    """One line for people: measured mean ± std over the repeats."""
    if "measured_makespan_s" not in metrics:
        return ""
    return (f"\nmeasured {fmt_s(metrics['measured_makespan_s'])} ± {fmt_s(metrics['measured_std_s'])} "
            f"over {metrics['measured_repeats']} runs")


def calibrate_cmd(output: Annotated[str | None, typer.Option(
                      "--output", "-o", help="cluster file to write (default: refresh the cached 'local' preset)")]
                  = None,
                  devices: Annotated[int | None, typer.Option(min=1, help="workers (default: per core ≤8 or per GPU)")]
                  = None,
                  kind: Annotated[str, typer.Option(help="cpu (one worker per core) or gpu (one per CUDA device)")]
                  = "cpu",
                  name: Annotated[str, typer.Option(help="cluster name in the file")] = "local",
                  as_json: JsonOpt = False) -> None:
    """Measure this machine (matmul throughput, per-op overhead, copy bandwidth/latency) into a cluster file."""
    from engine.executor.calibration import calibrate, local_cluster, local_devices

    if kind not in ("cpu", "gpu"):
        raise SpecError(f"--kind must be cpu or gpu, got {quote(kind)}")
    say = lambda msg: typer.echo(msg, err=True)  # noqa: E731
    if output is None:
        if devices is not None or kind != "cpu" or name != "local":
            raise SpecError("--devices, --kind and --name need --output (the 'local' preset is this machine's cores)")
        from engine.cluster import cluster_to_dict
        from engine.executor.calibration import local_cache_path

        doc = cluster_to_dict(local_cluster(refresh=True, progress=say))
        where = str(local_cache_path())
    else:
        check_write_target(output)  # before starting workers and minutes of measuring
        if devices is None and kind == "gpu":
            import torch

            devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if not devices:
                raise SpecError("--kind gpu: torch.cuda reports no GPU on this machine")
        doc = calibrate(devices or local_devices(), kind=kind, name=name, progress=say)
        atomic_write_text(output, dumps(doc, indent=1))
        where = output
    sim, link = doc["simulation"], doc["link"]
    copies = (f"copy {link['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s + {link['latency_s'] * 1e6:.1f} µs in flight"
              + "".join(f"; {b / 1e6:.3g} MB in {t * 1e6:.3g} µs" for b, t in link.get("copy_curve", [])[1:-1])
              + (f"; copies share one memory bus of {sim.get('copy_bus_capacity', 1.0):.2f} copies at full speed"
                 if sim.get("copy_bus_shared") else "")
              if len(doc["devices"]) > 1 else "no copies measured (one device: the link is a placeholder)")
    emit({**doc, "path": where}, as_json,
         f"wrote {where}: {len(doc['devices'])} × {kind}, op overhead {sim.get('dispatch_s', 0.0) * 1e6:.1f} µs, "
         + copies)


def validate_cmd(graph: GraphArg, cluster: ClusterOpt,
                 placements: Annotated[int, typer.Option(min=1, help="placements to execute and simulate")] = 20,
                 placers: Annotated[str | None, typer.Option(
                     help="comma-separated placers whose placements come first (default: a few baselines); "
                          "the rest are random")] = None,
                 param: Annotated[list[str] | None, typer.Option(
                     help="placer parameter PLACER.key=value (e.g. placeto.policy=RUN)")] = None,
                 repeats: RepeatsOpt = 3, time_scale: TimeScaleOpt = None, step_ms: StepOpt = 100.0,
                 bytes_scale: BytesScaleOpt = None, seed: int = 0,
                 blocked: Annotated[bool, typer.Option(
                     help="run each placement's repeats back to back (default: in rounds, every placement once "
                          "per round, so that a drift of the machine's speed spreads over all of them)")] = False,
                 recalibrate: Annotated[bool, typer.Option(
                     help="also run the calibration's probes before every round and after the last, and simulate "
                          "on CLUSTER with the link and per-op cost of their median (the 'recalibrated' row): "
                          "calibrated over the same minutes as the measurements; the 'recalibrated per run' row "
                          "simulates each run on the probes before and after it")] = False,
                 sample: Annotated[str, typer.Option(
                     help="the placements after the placers': 'random' (uniformly random) or 'perturbed' (the "
                          "placers' with a growing share of ops redrawn at random, good to random, as a learner "
                          "visits them: DOPPLER App. G.1)")] = "random",
                 save: Annotated[bool, typer.Option(help="store a run of kind 'validate'")] = True,
                 refine_out: Annotated[str | None, typer.Option(
                     "--refine-out", help="write CLUSTER refined on these runs (device speeds and copy link fitted "
                                          "to the measured durations) to this cluster file; validate it with "
                                          "another --seed")] = None,
                 runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Execute N placements and simulate them in every mode: Pearson, Spearman, relative errors."""
    from engine.executor.calibration import describe_bus, shared_bus_capacity
    from placelab.fidelity import validate

    if refine_out is not None:
        check_write_target(refine_out)  # before minutes of measuring
    c = load_cluster(cluster)
    g = executable_graph(load_graph(graph), c.num_devices, time_scale, step_ms, bytes_scale)
    names = [p.strip() for p in placers.split(",") if p.strip()] if placers else None
    v = validate(g, c, placements=placements, placers=names, placer_params=_placer_params(param or []),
                 repeats=repeats, seed=seed, store=RunStore(runs_dir) if save else None,
                 parameters={"graph_spec": graph, "time_scale": time_scale, "step_ms": step_ms},
                 progress=lambda msg: typer.echo(msg, err=True), refine=refine_out is not None,
                 interleave=not blocked, recalibrate=recalibrate, sample=sample)
    refined = ""
    if v.refined is not None:
        from engine.cluster import save_cluster

        save_cluster(v.refined, refine_out)
        refined = (f"\nrefined cluster written to {refine_out}: device speeds "
                   + ", ".join(f"{d.speed:.3g}" for d in v.refined.devices)
                   + f", copies {v.refined.link.bandwidth_bytes_per_s / 1e9:.3g} GB/s + "
                   f"{v.refined.link.latency_s * 1e6:.3g} µs")
    noise = v.noise_stats  # up to a few hundred rank correlations: read once
    out = {"graph": g.name, "cluster": c.name, "placements": len(v.sources), "repeats": repeats,
           "modes": v.stats, "replay": v.replay_stats, "repeat_agreement": v.repeat_stats,
           "noise_ceiling": noise, "sample": sample,
           "op_time_ratio_median": float(np.nanmedian(v.op_time_ratio)),
           "unavailable_modes": v.unavailable, "skipped_placers": v.skipped, "rows": v.rows(), "run_id": v.run_id,
           "refined_cluster": refine_out if v.refined is not None else None, "recalibrated": v.recalibrated_stats,
           "recalibrated_per_run": v.per_run_stats, "copy_bus": v.bus_stats,
           "copy_bus_capacity_probes": v.bus_capacities}

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    rows = [[mode, num(s["pearson"]), num(s["spearman"]), f"{s['median_rel_error']:.1%}",
             f"{s['max_rel_error']:.1%}"] for mode, s in v.stats.items()]
    rows += [[mode, "unavailable", "", "", ""] for mode in v.unavailable]
    for label, r in (("recalibrated", v.recalibrated_stats), ("recalibrated per run", v.per_run_stats),
                     ("replay", v.replay_stats),
                     ("repeats", v.repeat_stats)):
        if r is not None:
            rows.append([label, num(r["pearson"]), num(r["spearman"]), f"{r['median_rel_error']:.1%}",
                         f"{r['max_rel_error']:.1%}"])
    text = (f"{g.name} on {c.name}: {len(v.sources)} placements ({sample} sample), {repeats} runs each; measured "
            f"{fmt_s(float(np.min(v.measured_mean)))} – {fmt_s(float(np.max(v.measured_mean)))}\n"
            + text_table(rows, ["mode", "Pearson", "Spearman", "median rel. err", "max rel. err"])
            + f"\nreplay: {c.name}'s own simulation with each run's measured op and copy durations (the error "
              f"of the simulator's rules alone); ops ran {np.nanmedian(v.op_time_ratio):.2f}× their predicted "
              "time (median over placements)"
            + (f"\nrecalibrated: {c.name} with the copy link and per-op cost measured before every round and "
               f"after the last ({v.recalibrated.link.bandwidth_bytes_per_s / 1e9:.2f} GB/s + "
               f"{v.recalibrated.link.latency_s * 1e6:.1f} µs; {c.name}: {c.link.bandwidth_bytes_per_s / 1e9:.2f} GB/s)"
               if v.recalibrated is not None else "")
            + ("\nrecalibrated per run: each run simulated on the probes made before and after its round, "
               "interpolated by when it ran between them" if v.per_run_stats is not None else "")
            + (f"\ncopy bus: {describe_bus(v.bus_capacities, shared_bus_capacity(c))}" if v.bus_capacities else "")
            + ("\nrepeats: one run of each placement predicting another (median over pairs of runs); the modes "
               "predict the mean of all runs, which is steadier, so a mode can score above this row, and one far "
               "below it is limited by its model, not by the noise" if v.repeat_stats is not None else "")
            + (f"\nnoise ceiling: an error-free prediction would rank these placements at Spearman about "
               f"{noise['spearman_ceiling']:.3f} against the mean of {repeats} runs (split-half "
               f"{noise['split_half_spearman']:.3f})" if noise is not None else "")
            + refined + (f"\nsaved as run {v.run_id}" if v.run_id else ""))
    emit(out, as_json, text)


def execute_cmd(graph: GraphArg, cluster: ClusterOpt,
                placement: Annotated[str, typer.Option(help="placement file (placelab.placement/1)")],
                repeats: RepeatsOpt = 3, time_scale: TimeScaleOpt = None, step_ms: StepOpt = 100.0,
                placer: Annotated[str, typer.Option(help="the placer that made the placement (stored with the run)")]
                = "placement file",
                name: Annotated[str | None, typer.Option(help="name of the stored run")] = None,
                tag: Annotated[list[str] | None, typer.Option(help="tag of the stored run (repeatable)")] = None,
                save: Annotated[bool, typer.Option(help="store a run (kind 'place') with both schedules")] = False,
                runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Execute a placement file on this machine's devices and simulate it: measured beside simulated makespan."""
    from engine.placement import load_placement
    from engine.sim.simulator import Simulator
    from engine.store.records import placement_metrics, save_placement_run

    c, g0 = load_cluster(cluster), load_graph(graph)
    scale = execution_scale(g0, c.num_devices, time_scale, step_ms)
    g = scale_graph(g0, scale)
    p = load_placement(placement, g, c)
    simulated = Simulator(g, c).run(p, record_memory=True)
    with measuring(c, repeats) as measure:
        measured, measured_metrics = measure(g, p)
    metrics = {**placement_metrics(g, c, simulated), **measured_metrics, "time_scale": scale}
    out = {**metrics, "graph": g.name, "cluster": c.name, "placer": placer}
    if save:
        store = RunStore(runs_dir)
        run = save_placement_run(store, g, c, p, simulated, placer=placer,
                                 parameters={"graph_spec": graph, "time_scale": scale, "repeats": repeats},
                                 seed=None, seconds_to_place=0.0, tags=["executed", *(tag or [])],
                                 extra_metrics={**measured_metrics, "time_scale": scale}, measured=measured)
        if name:
            store.rename(run.id, name)
        out["run_id"] = run.id
    emit(out, as_json, f"{g.name} on {c.name} (time scale {scale:.4g}): simulated {fmt_s(simulated.makespan)}"
         + measured_text(metrics) + (f"\nsaved as run {out['run_id']}" if save else ""))


def _placer_params(pairs: list[str]) -> dict[str, dict[str, Any]]:
    from placelab.cli_common import parse_params

    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        placer, dot, rest = pair.partition(".")
        if not dot or not placer:
            raise SpecError(f"--param expects PLACER.key=value, got {quote(pair)}")
        out.setdefault(placer, {}).update(parse_params([rest]))
    return out


def register(app: typer.Typer) -> None:
    """Add ``calibrate``, ``validate`` and ``execute`` to the ``placelab`` app."""
    app.command("calibrate")(calibrate_cmd)
    app.command("execute")(execute_cmd)
    app.command("validate")(validate_cmd)
