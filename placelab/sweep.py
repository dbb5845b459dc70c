"""Sweeps: every combination of graphs × clusters × placers × seeds as independent tasks.

A sweep is a table-building experiment (Placeto Table 1 and its like, over many graphs and
seeds). Each combination is one task of :mod:`engine.parallel.tasks` — placed and simulated in a
worker (or in this process) — and each result is stored by the driver as it arrives:

* one ``compare`` run per result (placement, schedule, metrics; tag ``sweep:<sweep id>``),
  so every result opens on the Place, Runs and Compare pages like any other;
* one ``sweep`` run whose ``sweep.csv`` indexes them: a row per combination in plan order
  (``task, graph, graph_name, cluster, placer, seed, run_id, makespan_s, lower_bound_s,
  ratio_to_lower_bound, peak_memory_bytes, oom, communication_bytes, seconds_to_place,
  error``). A placer that does not apply gets its one-line reason in ``error``.

The plan is deterministic (graphs, then clusters, placers, seeds, in the order given), and
every task carries its own seed, so a sweep gives the same results in-process and on any
number of Ray workers. On Ray, the sweep run's metrics and the summary name the nodes that ran
its tasks (``nodes``: node id, IP and task count each). Ctrl-C leaves the sweep run ``interrupted``
with the rows finished so far; :func:`resume_sweep` runs only the combinations its table does not
hold yet — on the same graphs: the sweep run stores each graph's content hash
(``parameters.graph_hashes``; older sweeps: only the digest of them all, ``graph.hash``), and a graph
that changed since (a file edited) is refused with one line, since the table would mix two versions of it.

A driver killed hard (``kill -9``) between storing a combination's run and appending its row leaves a
run tagged ``sweep:<id>`` that the table does not index (an *orphan*, its ``run.json`` possibly still
saying ``running``). :func:`resume_sweep` deletes every such run before it runs the combinations the
table lacks (the orphan's combination among them, with the same seed), so after a resume each
combination has exactly one run and one row.

**The search reference** (``search=N``, ``placelab sweep --search N``): per graph and cluster the sweep also
runs ``anneal`` (:mod:`policies.simulated_annealing`) with ``N`` evaluations, no time limit and the sweep's first
seed, as one more combination in its table (after the others; its run's parameters hold ``evaluations``), and
:func:`search_pivot` divides every other result by it: each method's makespan ÷ the search's on the same graph and
cluster ("how far is each method from a strong search?"). :func:`search_caption` states that budget; a table
showing the ratios shows it too. ``anneal`` cannot be among the placers of such a sweep: it is the reference.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.cluster import Cluster, parse_simulation_options
from engine.errors import RunError, SpecError
from engine.graph.compgraph import CompGraph
from engine.limits import MAX_COUNT, MAX_SEED, MAX_SWEEP_TASKS, check_at_most, check_seed, check_simulations
from engine.parallel.tasks import ParallelMap
from engine.sim.simulator import Simulator
from engine.specs import expand_graph_specs, load_cluster, load_graph
from engine.store.runs import Run, RunStore
from placelab.runner import PlaceFailed, PlaceResult, place_task, store_result
from policies.registry import PLACERS, make_placer
from policies.simulated_annealing import budget_text

__all__ = ["SEARCH_PLACER", "SWEEP_COLUMNS", "SweepSpec", "drop_orphans", "resume_sweep", "run_sweep", "search_caption",
           "search_pivot", "sweep_pivot", "sweep_rows"]

SWEEP_TABLE = "sweep.csv"
SWEEP_COLUMNS = ("task", "graph", "graph_name", "cluster", "placer", "seed", "run_id", "makespan_s",
                 "lower_bound_s", "ratio_to_lower_bound", "peak_memory_bytes", "oom", "communication_bytes",
                 "seconds_to_place", "error")
#: The placer of the search reference (``SweepSpec.search``).
SEARCH_PLACER = "anneal"


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep runs: each graph × cluster × placer × seed once.

    ``graphs`` are single-graph specs (paths, ``gen:``; :func:`from_specs` expands
    ``family:``), ``clusters`` preset names or files, ``mode`` and ``sim_params``
    (``key=value``) override every cluster's simulation settings as ``--mode`` / ``--sim-param``
    do for the other commands (CONTRACTS §4; ``Cluster.with_simulation``), ``budget`` is each
    placer's budget, ``search`` the evaluations of the search reference (None: none; see the module docstring).
    """

    graphs: tuple[str, ...]
    clusters: tuple[str, ...]
    placers: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    mode: str | None = None
    budget: int | None = None
    sim_params: tuple[str, ...] = ()
    search: int | None = None

    @classmethod
    def from_specs(cls, graphs: str, clusters: str, placers: str, *, seeds: int = 1, first_seed: int = 0,
                   mode: str | None = None, budget: int | None = None,
                   sim_params: list[str] | None = None, search: int | None = None) -> SweepSpec:
        """Parse the comma-separated lists of the command line.

        Raises
        ------
        SpecError
            An empty list, an unknown placer, fewer than one seed, a seed outside
            ``0 … MAX_SEED``, more than ``MAX_SWEEP_TASKS`` tasks (:mod:`engine.limits`), or a search reference
            of fewer than one or more than ``MAX_COUNT`` evaluations, or with ``anneal`` among the placers.
        """
        if seeds < 1:
            raise SpecError(f"--seeds must be at least 1, got {seeds}")
        check_seed("--seed", first_seed)
        check_at_most("--seed + --seeds − 1 (the sweep's last seed)", first_seed + seeds - 1, MAX_SEED, "MAX_SEED")
        cs, ps = _names(clusters, "--clusters"), _names(placers, "--placers")
        for p in ps:
            if p not in PLACERS:
                make_placer(p)  # raises the registry's one-line message
        if search is not None:
            if search < 1:
                raise SpecError(f"--search (the search reference's evaluations) must be at least 1, got {search}")
            check_at_most("--search", search, MAX_COUNT, "MAX_COUNT")
            if SEARCH_PLACER in ps:
                raise SpecError(f"--search runs {SEARCH_PLACER} as the reference on every graph and cluster: leave "
                                f"{SEARCH_PLACER} out of --placers")
        gs = tuple(dict.fromkeys(expand_graph_specs(graphs)))
        check_at_most("the sweep's tasks (graphs × clusters × (placers × seeds + the search reference))",
                      len(gs) * len(cs) * (len(ps) * seeds + (search is not None)), MAX_SWEEP_TASKS, "MAX_SWEEP_TASKS")
        return cls(gs, cs, ps, tuple(range(first_seed, first_seed + seeds)), mode, budget, tuple(sim_params or ()),
                   search)

    def plan(self) -> list[tuple[str, str, str, int]]:
        """Every combination ``(graph, cluster, placer, seed)``, in the order of the table; the search reference's
        (one per graph and cluster, with the first seed) last."""
        main = [(g, c, p, s) for g in self.graphs for c in self.clusters for p in self.placers for s in self.seeds]
        if self.search is None:
            return main
        return main + [(g, c, SEARCH_PLACER, self.seeds[0]) for g in self.graphs for c in self.clusters]

    def task_budget(self, placer: str) -> tuple[int | None, dict[str, Any] | None]:
        """``(budget, params)`` of a combination's placer: the search reference runs with its own evaluations."""
        if self.search is not None and placer == SEARCH_PLACER:
            return None, {"evaluations": self.search}
        return self.budget, None

    def to_parameters(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_parameters(cls, params: dict[str, Any]) -> SweepSpec:
        try:
            return cls(tuple(params["graphs"]), tuple(params["clusters"]), tuple(params["placers"]),
                       tuple(params["seeds"]), params.get("mode"), params.get("budget"),
                       tuple(params.get("sim_params") or ()), params.get("search"))
        except (KeyError, TypeError):
            raise RunError("the run's parameters do not describe a sweep") from None


def run_sweep(store: RunStore, spec: SweepSpec, *, executor: ParallelMap | None = None,
              progress: Callable[[int, int, str], None] | None = None, name: str | None = None,
              tags: list[str] | None = None) -> dict[str, Any]:
    """Run a sweep and store it (see the module docstring); returns its summary.

    Every graph and cluster is loaded, and each cluster's simulation mode checked, before any
    task runs or any run is stored, so bad input stores nothing.
    """
    store.check_writable()
    graphs, clusters = _load_inputs(spec)
    run = store.create("sweep", graph_name=f"{len(graphs)} graphs", graph_hash=_digest(graphs),
                       cluster=",".join(spec.clusters), placer=None,
                       parameters={**spec.to_parameters(),
                                   "graph_hashes": {k: g.content_hash for k, g in graphs.items()}},
                       seed=None, tags=tags or [], name=name)
    return _execute(store, run, spec, graphs, clusters, set(), executor, progress)


def resume_sweep(store: RunStore, ref: str, *, executor: ParallelMap | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Finish an interrupted (or failed) sweep run: only the combinations its table lacks run.

    Raises
    ------
    RunError
        ``ref`` is not a sweep run, it is still running, or one of its graphs changed since it started.
    """
    store.check_writable()
    run = store.load(ref)
    if run.meta.get("kind") != "sweep":
        raise RunError(f"run {run.id} is a {run.meta.get('kind')} run, not a sweep")
    if run.status == "running":
        raise RunError(f"sweep {run.id} is still running (pid {run.meta.get('pid')})")
    spec = SweepSpec.from_parameters(run.meta.get("parameters") or {})
    graphs, clusters = _load_inputs(spec)
    _check_same_graphs(run, graphs)
    done = {int(r["task"]) for r in sweep_rows(run)}
    run.update(status="running", pid=os.getpid(), error=None)  # the sweep's lock first: one resume at a time
    return _execute(store, run, spec, graphs, clusters, done, executor, progress, resuming=True)


def drop_orphans(store: RunStore, run: Run) -> list[str]:
    """Delete the runs tagged with the sweep ``run`` that its table does not index; their ids.

    A driver killed between storing a combination's run and appending its row leaves such a run;
    the combination is not in the table, so a resume runs it again (see the module docstring).

    Raises
    ------
    RunError
        An orphan is running in another process (it cannot be: only the sweep's driver stores them).
    """
    indexed = {r["run_id"] for r in sweep_rows(run) if r.get("run_id")}
    return [store.delete(r.id) for r in store.list(tag=f"sweep:{run.id}") if r.id not in indexed]


def _digest(graphs: dict[str, CompGraph]) -> str:
    return hashlib.sha256("\x00".join(g.content_hash for g in graphs.values()).encode()).hexdigest()[:16]


def _check_same_graphs(run: Run, graphs: dict[str, CompGraph]) -> None:
    """Refuse to resume a sweep whose graphs are not the ones it started on (see the module docstring)."""
    stored = (run.meta.get("parameters") or {}).get("graph_hashes")
    if isinstance(stored, dict):
        changed = [k for k, g in graphs.items() if stored.get(k) not in (None, g.content_hash)]
        what = ", ".join(f"{k} (hash {stored[k]}, now {graphs[k].content_hash})" for k in changed[:3])
        what = ("graph " if len(changed) == 1 else "graphs ") + what
        what += f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    else:  # a sweep stored before per-graph hashes: only the digest of them all
        old, new = (run.meta.get("graph") or {}).get("hash"), _digest(graphs)
        changed = [] if not old or old == new else list(graphs)
        what = f"graphs ({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}; hash {old}, now {new})"
    if changed:
        raise RunError(f"sweep {run.id} cannot resume: its {what} changed since it started, and its table "
                       "would mix two versions; run a new sweep on the graphs as they are now")


def sweep_rows(run: Run) -> list[dict[str, Any]]:
    """The rows of a sweep run's index table (empty when it holds none yet), by task."""
    if SWEEP_TABLE not in run.files():
        return []
    table = run.read_table(SWEEP_TABLE)
    rows = [dict(zip(table, values, strict=True)) for values in zip(*table.values(), strict=True)]
    for r in rows:  # the CSV cell of a bool reads back as its text
        r["oom"] = None if r["oom"] is None else r["oom"] == "True"
    return sorted(rows, key=lambda r: r["task"])


def sweep_pivot(rows: list[dict[str, Any]], value: str = "makespan_s") -> list[dict[str, Any]]:
    """One row per graph, cluster and seed, one column per placer holding ``value`` (Table 1's shape)."""
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        key = (r["graph_name"], r["cluster"], r["seed"])
        out.setdefault(key, {"graph": key[0], "cluster": key[1], "seed": key[2]})[r["placer"]] = r.get(value)
    return list(out.values())


def search_pivot(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`sweep_pivot`'s shape with ×search in the cells: each placer's makespan ÷ the search reference's
    (:data:`SEARCH_PLACER`'s row) on the same graph and cluster; None where either is missing or OOM. Empty when
    the rows hold no search reference."""
    ref = {(r["graph_name"], r["cluster"]): r["makespan_s"] for r in rows
           if r["placer"] == SEARCH_PLACER and r.get("makespan_s") and not r.get("oom")}
    if not ref:
        return []
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        if r["placer"] == SEARCH_PLACER:
            continue
        key = (r["graph_name"], r["cluster"], r["seed"])
        base, ours = ref.get(key[:2]), r.get("makespan_s")
        out.setdefault(key, {"graph": key[0], "cluster": key[1], "seed": key[2]})[r["placer"]] = (
            ours / base if base and ours is not None and not r.get("oom") else None)
    return list(out.values())


def search_caption(spec: SweepSpec) -> str | None:
    """The sentence that states the search reference's budget under a table of its ratios (None: no reference)."""
    if spec.search is None:
        return None
    return (f"search reference ({SEARCH_PLACER} column): {budget_text(spec.search, None, spec.seeds[0])}; "
            "×search: each makespan ÷ its on the same graph and cluster")


def _execute(store: RunStore, run: Run, spec: SweepSpec, graphs: dict[str, CompGraph], clusters: dict[str, Cluster],
             done: set[int], executor: ParallelMap | None, progress, *, resuming: bool = False) -> dict[str, Any]:
    plan = spec.plan()
    todo = [i for i in range(len(plan)) if i not in done]
    t0 = time.perf_counter()
    count = [len(done)]

    def finished(j: int, res: PlaceResult | PlaceFailed) -> None:
        i = todo[j]
        g, c, placer, seed = plan[i]
        if isinstance(res, PlaceResult):
            budget, params = spec.task_budget(placer)
            res = store_result(store, graphs[g], clusters[c], res, seed=seed, budget=budget, params=params,
                               kind="compare", tags=[f"sweep:{run.id}"])
        run.append_row(SWEEP_TABLE, _row(i, plan[i], graphs[g].name, res))
        count[0] += 1
        if progress:
            progress(count[0], len(plan), f"{placer} on {graphs[g].name} / {c} / seed {seed}")

    ex = executor or ParallelMap()
    with run:
        orphans = drop_orphans(store, run) if resuming else []
        if progress:
            progress(count[0], len(plan), f"{len(todo)} tasks, {ex.describe()}")
        ex.map(place_task, [(graphs[plan[i][0]], clusters[plan[i][1]], plan[i][2], plan[i][3],
                             *spec.task_budget(plan[i][2]), True) for i in todo], on_result=finished)
        rows = sweep_rows(run)
        run.write_table(SWEEP_TABLE, {k: [r[k] for r in rows] for k in SWEEP_COLUMNS})
        run.finish("done", {"tasks": len(plan), "errors": sum(1 for r in rows if r["error"]),
                            "wall_s": time.perf_counter() - t0, "executor": ex.describe(), "nodes": ex.nodes()})
    return {"run_id": run.id, "tasks": len(plan), "ran": len(todo), "wall_s": time.perf_counter() - t0,
            "results": rows, "orphans_deleted": orphans, "nodes": ex.nodes(), "search": search_caption(spec)}


def _row(task: int, combo: tuple[str, str, str, int], graph_name: str, res: PlaceResult | PlaceFailed) -> dict:
    g, c, placer, seed = combo
    row: dict[str, Any] = dict.fromkeys(SWEEP_COLUMNS)
    row.update(task=task, graph=g, graph_name=graph_name, cluster=c, placer=placer, seed=seed)
    if isinstance(res, PlaceFailed):
        row["error"] = res.error
        return row
    m = res.metrics
    row.update(run_id=res.run_id, makespan_s=m["makespan_s"], lower_bound_s=m["lower_bound_s"],
               ratio_to_lower_bound=m["ratio_to_lower_bound"], peak_memory_bytes=max(m["peak_memory_bytes"].values()),
               oom=m["oom"], communication_bytes=m["communication_bytes"], seconds_to_place=res.seconds_to_place)
    return row


def _load_inputs(spec: SweepSpec) -> tuple[dict[str, CompGraph], dict[str, Cluster]]:
    graphs = {g: load_graph(g) for g in dict.fromkeys(spec.graphs)}
    clusters = {}
    for name in dict.fromkeys(spec.clusters):
        c = load_cluster(name)
        if spec.mode or spec.sim_params:
            c = c.with_simulation(mode=spec.mode, **parse_simulation_options(list(spec.sim_params)))
        Simulator(next(iter(graphs.values())), c)  # an unavailable mode is bad input: say so before any task
        if spec.budget is not None:
            check_simulations("--budget", spec.budget, c.simulation.runs)
        if spec.search is not None:
            check_simulations("--search", spec.search, c.simulation.runs)
        clusters[name] = c
    return graphs, clusters


def _names(text: str, what: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise SpecError(f"{what} names nothing")
    return names
