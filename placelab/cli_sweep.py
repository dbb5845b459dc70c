"""``placelab sweep``: graphs × clusters × placers × seeds as independent tasks, in-process or on Ray.

Also the ``--workers`` / ``--address`` options that every command running independent tasks
shares (``compare``, ``sweep``): see :mod:`engine.parallel.tasks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from engine.errors import SpecError
from engine.store.runs import RunStore
from placelab.cli_common import USER_RUNS_DIR, JsonOpt, ModeOpt, RunsDirOpt, SimParamOpt, emit, fmt_s, text_table
from placelab.cli_learn import ProgressLine

if TYPE_CHECKING:  # imported where used: the placers' registry loads with policies (issue #57, item 4)
    from engine.parallel.tasks import ParallelMap

__all__ = ["AddressOpt", "WorkersOpt", "executor", "register"]

WorkersOpt = Annotated[int | None, typer.Option(
    help="run the tasks on a local Ray runtime with this many CPUs (default: in this process)")]
AddressOpt = Annotated[str | None, typer.Option(
    help="run the tasks on the Ray cluster at this address (auto, HOST:PORT or ray://HOST:10001; a cluster with "
         "token authentication also needs RAY_AUTH_MODE=token and its token: docs/guide/sweeps-and-ray.md)")]


def executor(workers: int | None, address: str | None) -> ParallelMap:
    """The executor the ``--workers`` / ``--address`` options ask for (in-process without either)."""
    from engine.parallel.tasks import ParallelMap

    return ParallelMap(workers=workers, address=address)


def sweep(graphs: Annotated[str | None, typer.Option(
              "--graphs", "-g", help="graph specs, comma-separated; family:NAME[:train|:test]")] = None,
          clusters: Annotated[str | None, typer.Option("--clusters", "-c", help="presets or cluster files, "
                                                       "comma-separated")] = None,
          placers: Annotated[str | None, typer.Option(help="placers, comma-separated")] = None,
          seeds: Annotated[int, typer.Option(help="seeds per combination: --seed, --seed+1, ...")] = 1,
          seed: Annotated[int, typer.Option(help="first seed")] = 0,
          mode: ModeOpt = None, sim_param: SimParamOpt = None,
          budget: Annotated[int | None, typer.Option(help="each placer's budget")] = None,
          search: Annotated[int | None, typer.Option(
              help="also run the search reference (anneal, this many evaluations, the first seed) on every graph "
                   "and cluster, and show each makespan ÷ its (×search)")] = None,
          resume: Annotated[str | None, typer.Option(help="finish the interrupted sweep run RUN")] = None,
          workers: WorkersOpt = None, address: AddressOpt = None,
          name: Annotated[str | None, typer.Option(help="run name")] = None,
          tag: Annotated[list[str] | None, typer.Option(help="run tag")] = None,
          runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Every graph × cluster × placer × seed as a task; one run per result and a sweep run indexing them."""
    from engine.parallel.ray_cluster import nodes_line
    from placelab.sweep import SEARCH_PLACER, SweepSpec, resume_sweep, run_sweep, search_pivot, sweep_pivot

    store = RunStore(runs_dir)
    ex = executor(workers, address)
    bar = ProgressLine("tasks")
    try:
        if resume:
            if graphs or clusters or placers or mode or sim_param or budget is not None or search is not None \
                    or seeds != 1:
                raise SpecError("--resume finishes a stored sweep: leave out --graphs, --clusters, --placers, "
                                "--seeds, --mode, --sim-param, --budget, --search")
            with ex:
                out = resume_sweep(store, resume, executor=ex, progress=bar)
        else:
            missing = [o for o, v in (("--graphs", graphs), ("--clusters", clusters), ("--placers", placers))
                       if not v]
            if missing:
                raise SpecError(f"sweep needs {', '.join(missing)} (or --resume RUN)")
            spec = SweepSpec.from_specs(graphs, clusters, placers, seeds=seeds, first_seed=seed, mode=mode,
                                        budget=budget, sim_params=sim_param, search=search)
            with ex:
                out = run_sweep(store, spec, executor=ex, progress=bar, name=name, tags=tag)
    finally:
        bar.close()
    table = sweep_pivot(out["results"])
    placer_names = list(dict.fromkeys(r["placer"] for r in out["results"]))
    rows = [[r["graph"], r["cluster"], str(r["seed"]), *(fmt_s(r.get(p)) for p in placer_names)] for r in table]
    errors = sum(1 for r in out["results"] if r["error"])
    where = "; ".join(filter(None, (ex.describe(), nodes_line(out["nodes"]))))
    ratios = search_pivot(out["results"])
    if ratios:
        others = [p for p in placer_names if p != SEARCH_PLACER]
        rows_x = [[r["graph"], r["cluster"], str(r["seed"]), *(_ratio(r.get(p)) for p in others)] for r in ratios]
        table_x = (f"\n\n{text_table(rows_x, ['graph', 'cluster', 'seed', *(f'{p} ×search' for p in others)])}"
                   f"\n{out['search']}")
    else:
        table_x = ""
    out["search_ratios"] = ratios
    text = (text_table(rows, ["graph", "cluster", "seed", *placer_names]) + table_x
            + f"\n{out['tasks']} tasks ({out['ran']} run now, {errors} not applicable) in {out['wall_s']:.1f} s "
              f"({where}); saved as sweep run {out['run_id']}")
    if out.get("orphans_deleted"):
        text += (f"\n{len(out['orphans_deleted'])} run(s) stored by the killed driver but missing from the "
                 "table were deleted and run again")
    emit(out, as_json, text)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the ``placelab`` app."""
    app.command()(sweep)
