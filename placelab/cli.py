"""The ``placelab`` command line (CONTRACTS §5).

Every reporting command takes ``--json`` and then prints exactly one JSON object on stdout;
progress and logs go to stderr. Bad input exits with code 2 and one line on stderr; an
unexpected failure exits 1 with one line (set ``PLACELAB_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import functools
import os
import sys
import time
import warnings
from contextlib import nullcontext, redirect_stdout
from typing import Annotated, Any

import numpy as np
import typer
import typer.main
from typer.exceptions import TyperException

from engine.errors import MAX_LINE, PlacelabError, SpecError, one_line, quote
from engine.jsonio import atomic_write_json, check_write_target
from engine.limits import check_simulations
from engine.specs import load_cluster, load_graph
from engine.store.runs import RunStore
from placelab import cli_exec, cli_import, cli_learn, cli_plot, cli_ray, cli_report, cli_reproduce, cli_sweep
from placelab.cli_common import (
    USER_RUNS_DIR,
    ClusterOpt,
    GraphArg,
    JsonOpt,
    ModeOpt,
    RunsDirOpt,
    SimParamOpt,
    emit,
    fmt_bytes,
    fmt_ratio,
    fmt_s,
    guard_numbers,
    parse_params,
    simulation_cluster,
    text_table,
)

# Start-up (issue #57, item 4): each command imports inside its body what only it needs (the simulator and the
# graph summary bring numba, policies every placer), so `--help` loads neither and `graph info` no placer;
# TensorFlow and torch load only in the commands that import a model or run a learned placer
# (tests/cli/test_cli_startup.py, benchmarks/bench_cli_startup.py).
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="placelab: device placement of neural-network graphs — simulate, place, compare.")
graph_app = typer.Typer(no_args_is_help=True, help="Inspect computation graphs, and import your own models.")
bench_app = typer.Typer(no_args_is_help=True, help="Measure speed.")
runs_app = typer.Typer(no_args_is_help=True, help="Stored runs under runs/.")


@functools.cache
def click_command() -> Any:
    """The whole CLI as one click command, its numbers guarded (:func:`guard_numbers`). Built once: typer takes
    about 0.1 s to build it from the annotations, and the tests and reproductions run many commands in one
    process (a click command keeps no state between invocations)."""
    command = typer.main.get_command(app)
    guard_numbers(command)
    return command


def run_command(argv: list[str] | None) -> int:
    """Run ``placelab ARGV`` in this process; its exit code (0 when it returns). Errors propagate as raised.

    Outside standalone mode typer answers Ctrl-C (and an explicit Exit) by *returning* the exit code,
    130 for Ctrl-C (our commands themselves return None): a Ctrl-C is raised again here as
    ``KeyboardInterrupt``, so every caller stops as the user asked.
    """
    code = click_command()(args=argv, standalone_mode=False, prog_name="placelab")
    if code == 130:
        raise KeyboardInterrupt
    return code if isinstance(code, int) else 0


app.add_typer(graph_app, name="graph")
app.add_typer(bench_app, name="bench")
app.add_typer(runs_app, name="runs")
cli_learn.register(app)
cli_exec.register(app)
cli_plot.register(app)
cli_report.register(app)
cli_sweep.register(app)
cli_ray.register(app)
cli_reproduce.register(app, run_command)
cli_import.register(graph_app)

# ---------------------------------------------------------------------------------- graph
@graph_app.command("info")
def graph_info(graph: GraphArg, cluster: Annotated[str | None, typer.Option("--cluster", "-c")] = None,
               unit_depth: Annotated[int | None, typer.Option(
                   min=1, help="scope parts that name a layer, for the layer-unit count (default: from the scopes)")]
               = None, as_json: JsonOpt = False) -> None:
    """Size, groups, compute, critical path and parallelism of a graph (and its fit on a cluster)."""
    from engine.store.summary import graph_summary

    g = load_graph(graph)
    info = graph_summary(g, load_cluster(cluster) if cluster else None, unit_depth)
    lines = [f"{info['name']}: {info['ops']} ops, {info['edges']} edges",
             f"groups: {info['groups']} colocation sets, {info['rule_groups']} by the single-consumer rule "
             f"(Mirhoseini 3.3), {info['unit_groups']} layer units (Mirhoseini 4.1)",
             f"total compute {fmt_s(info['total_compute_s'])}, critical path {fmt_s(info['critical_path_s'])}",
             (f"memory: {fmt_bytes(info['persistent_bytes'])} persistent, {fmt_bytes(info['output_bytes'])} outputs"
              if info["memory_known"] else "memory: unknown (the source gives no sizes; no placement is OOM)"),
             f"parallelism: {info['levels']} levels, widest {info['max_width']} ops",
             "costs: " + "; ".join(f"{k}: {v}" for k, v in info["costs"].items())]
    if cluster:
        columns = sorted(set(info["device_columns"].values()))
        peak = info["single_device_peak_bytes"]
        lines.append(f"on {info['cluster']}: lower bound {fmt_s(info['lower_bound_s'])}; "
                     f"its devices run the {', '.join(columns)} times")
        held = info["persistent_bytes"] + info["output_bytes"] + info["temp_bytes_max"]
        lines.append(f"one device: {fmt_bytes(held)} with every output held at once ("
                     f"{'fits' if info['fits_one_device'] else 'more than any device'})" + (
                         f"; simulated on {info['single_device']} it peaks at {fmt_bytes(peak)} of "
                         f"{fmt_bytes(info['single_device_memory_bytes'])}" if peak is not None
                         else "; no single device can run every op"))
    emit(info, as_json, "\n".join(lines))


@graph_app.command("list")
def graph_list(as_json: JsonOpt = False) -> None:
    """Graph specs that need no file: generators (gen:NAME) and bundled published workloads (bench:NAME)."""
    from engine.generators import generator_descriptions
    from engine.workloads.published import bench_descriptions

    d = {**{f"gen:{k}": v for k, v in generator_descriptions().items()}, **bench_descriptions()}
    emit(d, as_json, text_table([[k, v] for k, v in d.items()], ["spec", "description"]))


# ---------------------------------------------------------------------------------- simulate
def _sim_text(res: dict[str, Any]) -> str:
    peaks = ", ".join(f"{d} {fmt_bytes(b)}" for d, b in res["peak_memory_bytes"].items())
    oom = f"  OOM on {', '.join(res['oom_devices'])}" if res["oom"] else ""
    return (f"makespan {fmt_s(res['makespan_s'])} (lower bound {fmt_s(res['lower_bound_s'])})\n"
            f"peak memory: {peaks}{oom}")


@app.command()
def simulate(graph: GraphArg, cluster: ClusterOpt, placement: Annotated[str, typer.Option(help="placement file")],
             mode: ModeOpt = None, sim_param: SimParamOpt = None, as_json: JsonOpt = False) -> None:
    """Simulate a placement: makespan, peak memory per device, OOM, lower bound."""
    from engine.placement import load_placement
    from engine.sim.simulator import Simulator
    from engine.store.records import placement_metrics

    g, c = load_graph(graph), simulation_cluster(cluster, mode, sim_param)
    p = load_placement(placement, g, c)
    sim = Simulator(g, c)
    res = {**placement_metrics(g, c, sim.run(p)), "mode": c.simulation.mode, "simulation": c.simulation.options()}
    text = _sim_text(res)
    if sim.runs > 1:  # the mean ± std of the seeded executions (DOPPLER §6: "average of 10 executions")
        st = sim.makespan_stats(p)
        res.update(makespan_mean_s=st.mean, makespan_std_s=st.std, runs=sim.runs)
        text += f"\n{sim.runs} runs: makespan {fmt_s(st.mean)} ± {fmt_s(st.std)}"
    emit(res, as_json, text)


# ---------------------------------------------------------------------------------- place
@app.command()
def place(graph: GraphArg, cluster: ClusterOpt,
          placer: Annotated[str, typer.Option(help="placer name (see `placelab placers`)")],
          seed: int = 0, budget: Annotated[int | None, typer.Option(help="placer's budget")] = None,
          param: Annotated[list[str] | None, typer.Option(help="placer parameter key=value")] = None,
          save: Annotated[bool, typer.Option(help="store the result as a run")] = False,
          output: Annotated[str | None, typer.Option("--output", "-o", help="write the placement file")] = None,
          mode: ModeOpt = None, sim_param: SimParamOpt = None,
          execute: cli_exec.ExecuteOpt = False, repeats: cli_exec.RepeatsOpt = 3,
          time_scale: cli_exec.TimeScaleOpt = None,
          runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Run a placer, simulate its placement, optionally save it as a run (and execute it: --execute)."""
    from placelab.runner import place_and_simulate

    if output is not None:  # `-o ''` is refused, not ignored
        check_write_target(output)
    g, c = load_graph(graph), simulation_cluster(cluster, mode, sim_param)
    if execute:
        g = cli_exec.executable_graph(g, c.num_devices, time_scale)
    with cli_exec.measuring(c, repeats) if execute else nullcontext() as measure:
        res = place_and_simulate(g, c, placer, seed=seed, budget=budget, params=parse_params(param or []),
                                 store=RunStore(runs_dir) if save else None, measure=measure)
    if output is not None:
        atomic_write_json(output, res.placement.to_dict(g, c))
    out = {**res.metrics, "placer": placer, "seconds_to_place": res.seconds_to_place,
           "placement": res.placement.to_mapping(g, c)}
    if res.run_id:
        out["run_id"] = res.run_id
    out.update({k: v for k, v in res.metrics.items() if k.startswith("measured_")})
    text = f"{placer}: {_sim_text(res.metrics)}\nplaced in {res.seconds_to_place:.3f} s"
    if res.metrics.get("placer_note"):
        text += f"\n{res.metrics['placer_note']}"
    text += cli_exec.measured_text(res.metrics)
    if res.run_id:
        text += f"\nsaved as run {res.run_id}"
    emit(out, as_json, text)


@app.command()
def compare(graph: GraphArg, cluster: ClusterOpt,
            placers: Annotated[str | None, typer.Option(
                help="comma-separated placers (default: every placer but the learned ones, which train)")] = None,
            seed: int = 0, save: Annotated[bool, typer.Option(help="store each result as a run")] = True,
            mode: ModeOpt = None, sim_param: SimParamOpt = None,
            execute: cli_exec.ExecuteOpt = False, repeats: cli_exec.RepeatsOpt = 3,
            time_scale: cli_exec.TimeScaleOpt = None,
            workers: cli_sweep.WorkersOpt = None, address: cli_sweep.AddressOpt = None,
            runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Run several placers on one graph and cluster; a table like Placeto Table 1 (measured too: --execute).

    Per placer: the simulated makespan, its own estimate (est.), ×single-device and ×lower bound."""
    from engine.sim.objectives import lower_bound
    from placelab.runner import compare as run_compare

    names = [p.strip() for p in placers.split(",") if p.strip()] if placers is not None else default_compare_placers()
    if names == []:
        raise SpecError(f"--placers names no placer: {quote(placers)}")
    if execute and (workers or address):
        raise SpecError("--execute runs the placements on this machine's devices, one at a time: "
                        "it cannot be combined with --workers or --address")
    g, c = load_graph(graph), simulation_cluster(cluster, mode, sim_param)
    if execute:
        g = cli_exec.executable_graph(g, c.num_devices, time_scale)
    with cli_exec.measuring(c, repeats) if execute else nullcontext() as measure, \
            cli_sweep.executor(workers, address) as ex:
        results = run_compare(g, c, names, seed=seed, store=RunStore(runs_dir) if save else None,
                              progress=lambda msg: typer.echo(msg, err=True), measure=measure, executor=ex)
    rows = [[r["placer"], fmt_s(r.get("makespan_s")), fmt_s(r.get("predicted_makespan_s")),
             *([fmt_ratio(r.get("ratio_to_single_device")), fmt_ratio(r.get("ratio_to_lower_bound"))]
               if r.get("makespan_s") is not None else ["-", "-"]),
             fmt_bytes(max(r["peak_memory_bytes"].values())) if r.get("peak_memory_bytes") else "-",
             ("yes" if r["oom"] else "no") if "oom" in r else "-",
             fmt_bytes(r["communication_bytes"]) if "communication_bytes" in r else "-",
             f"{r['seconds_to_place']:.2f} s" if r.get("seconds_to_place") is not None else "-",
             *([fmt_s(r.get("measured_makespan_s"))] if execute else []),
             r.get("error") or "; ".join(x for x in (r.get("run_id"), r.get("placer_note"), r.get("estimate_warning"))
                                         if x)]
            for r in results]
    header = ["placer", "makespan", "est.", "×single", "×LB", "peak mem", "OOM", "comm", "time",
              *(["measured"] if execute else []), "run / note"]
    lb = lower_bound(g, c)
    single = next((r["single_device_makespan_s"] for r in results if "single_device_makespan_s" in r), None)
    budgets = [r["search_budget"] for r in results if r.get("search_budget")]
    emit({"graph": g.name, "cluster": c.name, "lower_bound_s": lb, "single_device_makespan_s": single,
          "results": results}, as_json,
         f"{g.name} on {c.name} (lower bound {fmt_s(lb)}, single-device {fmt_s(single)})\n"
         + text_table(rows, header) + ("\nsearch budgets: " + "; ".join(budgets) if budgets else ""))
    if not as_json:  # in JSON, each such row's estimate_warning says it
        for r in results:
            if r.get("estimate_warning"):
                typer.echo(_estimate_line(r), err=True)


def _estimate_line(row: dict[str, Any]) -> str:
    """compare's stderr line for a placer whose own estimate is far off its simulated makespan."""
    from engine.store.records import ESTIMATE_TOLERANCE

    return (f"warning: {row['placer']}: its own estimate ({fmt_s(row['predicted_makespan_s'])}) is more than "
            f"{ESTIMATE_TOLERANCE * 100:g} % off the simulated makespan ({fmt_s(row['makespan_s'])}): "
            f"{row['estimate_warning']}")


def default_compare_placers() -> list[str]:
    """``compare``'s placers when ``--placers`` is not given: every registered placer but the learned ones, which
    train with their default budgets (minutes to hours each); a note on stderr names those left out."""
    from policies.registry import PLACERS

    learned = [name for name, info in PLACERS.items() if info.family == "learned"]
    typer.echo(f"note: comparing every placer but the learned ones ({', '.join(learned)}), which train for minutes "
               "to hours each; name them in --placers to include them", err=True)
    return [name for name in PLACERS if name not in learned]


# ---------------------------------------------------------------------------------- bench
@bench_app.command("simulate")
def bench_simulate(graph: GraphArg, cluster: ClusterOpt, placement: Annotated[str, typer.Option()],
                   repeat: Annotated[int, typer.Option(min=1)] = 20, mode: ModeOpt = None,
                   sim_param: SimParamOpt = None, as_json: JsonOpt = False) -> None:
    """Median seconds per simulation of one placement (prepared simulator, warm)."""
    from engine.placement import load_placement
    from engine.sim.simulator import Simulator

    g, c = load_graph(graph), simulation_cluster(cluster, mode, sim_param)
    check_simulations("--repeat", repeat, c.simulation.runs)
    p = load_placement(placement, g, c)
    sim = Simulator(g, c)
    makespan = sim.makespan(p)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sim.makespan(p)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    res = {"makespan_s": makespan, "seconds_per_simulation": med, "ops_per_second": g.num_ops / med,
           "repeat": repeat, "ops": g.num_ops, "mode": c.simulation.mode}
    emit(res, as_json, f"{g.num_ops} ops: {med * 1e3:.3f} ms per simulation (median of {repeat}), "
                       f"{g.num_ops / med / 1e6:.2f} M ops/s; makespan {fmt_s(makespan)}")


# ---------------------------------------------------------------------------------- listings
@app.command()
def placers(as_json: JsonOpt = False) -> None:
    """Registered placers with one-line descriptions."""
    from policies.registry import placer_descriptions

    d = placer_descriptions()
    emit(d, as_json, text_table([[k, v] for k, v in d.items()], ["placer", "description"]))


@app.command()
def clusters(as_json: JsonOpt = False) -> None:
    """Cluster presets with one-line descriptions."""
    from engine.presets import preset_descriptions

    d = preset_descriptions()
    emit(d, as_json, text_table([[k, v] for k, v in d.items()], ["cluster", "description"]))


@runs_app.command("list")
def runs_list(runs_dir: RunsDirOpt = USER_RUNS_DIR, kind: str | None = None, tag: str | None = None,
              as_json: JsonOpt = False) -> None:
    """Stored runs, newest first."""
    from engine.store.summary import run_summary

    store = RunStore(runs_dir)
    runs = store.list(kind=kind, tag=tag)
    summaries = [run_summary(r) for r in runs]
    for problem in store.problems:
        _say("warning: ", problem)
    rows = [[s["id"], s["kind"], s["status"], s["graph"], s["cluster"], s["placer"] or "-",
             fmt_s(s["makespan_s"])] for s in summaries]
    emit({"runs": summaries}, as_json,
         text_table(rows, ["run", "kind", "status", "graph", "cluster", "placer", "makespan"]) if rows else "no runs")


@runs_app.command("show")
def runs_show(run: str, runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """One run's metadata and metrics."""
    r = RunStore(runs_dir).load(run)
    meta = {**r.meta, "files": r.files()}
    emit(meta, as_json, "\n".join(f"{k}: {v}" for k, v in meta.items()))


@runs_app.command("export-trace")
def runs_export_trace(run: str, output: Annotated[str, typer.Option("--output", "-o")],
                      runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Write the run's timeline as Chrome Trace Event JSON (open it in ui.perfetto.dev)."""
    from engine.store.records import export_trace

    check_write_target(output)
    info = export_trace(RunStore(runs_dir).load(run), output)
    emit(info, as_json, f"wrote {info['events']} trace events to {output}")


@runs_app.command("delete")
def runs_delete(run: str, runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Delete a stored run."""
    rid = RunStore(runs_dir).delete(run)
    emit({"deleted": rid}, as_json, f"deleted {rid}")


# ---------------------------------------------------------------------------------- entry point
#: Warnings kept for the end of a successful command (more are counted, not kept).
_MAX_WARNINGS = 20


def _say(prefix: str, message: object, suffix: str = "") -> None:
    """One line on stderr, at most ``MAX_LINE`` characters, control characters escaped (``engine.errors.one_line``)."""
    typer.echo(f"{prefix}{one_line(message, MAX_LINE - len(prefix) - len(suffix))}{suffix}", err=True)


def _needs_subcommand(argv: list[str]) -> bool:
    """Whether ``placelab ARGV`` names a command group and nothing after it (``placelab``, ``placelab graph``)."""
    group = app
    for arg in argv:
        group = next((g.typer_instance for g in group.registered_groups if g.name == arg), None)
        if group is None:  # a command, an option or a typo: typer handles it
            return False
    return True


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one-line errors, exit 2 for bad input, never a traceback.

    Every error is one line of at most ``engine.errors.MAX_LINE`` characters with control characters
    escaped. Python warnings raised while the command runs (a library's numpy ``RuntimeWarning``, ...) are
    held back: dropped when the command fails (its error stays the only line), shown one line each after
    it succeeds. A command group named without a command (``placelab``, ``placelab graph``) prints its help
    on stderr and exits 2: stdout stays for results.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    help_only = _needs_subcommand(args)
    held: list[str] = []  # the first _MAX_WARNINGS warnings' messages; then only a count
    more = 0

    def hold(message: Warning | str, *_: Any, **__: Any) -> None:  # warnings.showwarning, held back
        nonlocal more
        if len(held) < _MAX_WARNINGS:
            held.append(str(message))
        else:
            more += 1

    with warnings.catch_warnings():
        warnings.showwarning = hold
        try:
            with redirect_stdout(sys.stderr) if help_only else nullcontext():
                code = run_command(args)
        except typer.Exit as exc:
            code = exc.exit_code
        except typer.Abort:
            code = 130
        except TyperException as exc:  # usage errors: missing option, unknown command, bad value
            message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            if help_only:  # no_args_is_help: rich has printed the help (on stderr, above); plain click carries it
                if message.strip():
                    typer.echo(message, err=True)
            elif message.strip():
                _say("error: ", message)
            sys.exit(2)
        except PlacelabError as exc:
            _say("error: ", exc)
            sys.exit(2)
        except KeyboardInterrupt:
            code = 130
        except Exception as exc:
            if os.environ.get("PLACELAB_DEBUG"):
                raise
            _say(f"internal error: {type(exc).__name__}: ", exc, " (set PLACELAB_DEBUG=1 for details)")
            sys.exit(1)
    if code == 130:
        typer.echo("interrupted", err=True)
    else:
        for message in held:
            _say("warning: ", message)
        if more:
            typer.echo(f"warning: {more} more warnings", err=True)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    # ``python -m placelab.cli`` (the app's background jobs): run the module as imported, not this ``__main__``
    # copy, whose functions Ray would pickle by value into its workers, without the names their annotations use
    from placelab.cli import main as _main

    _main()
