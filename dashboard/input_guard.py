"""The one guard on what a visitor of the app types: graphs, runs, sizes and budgets (issue 33).

A visitor names graphs and runs, never a file or folder of the server. Allowed are generator
specs (``gen:``, within the app's sizes), bundled workloads (``bench:``), Placeto families
(``family:``), the listed examples, graphs uploaded to the app (``upload:NAME``, kept in the app's
upload folder) and runs of the app's own stores. A link to the app is typed by a visitor too: its
graph, cluster, simulation settings, placers and run ids pass the same checks. Anything else gets one
message that neither says whether a path exists nor shows a byte of it. Budgets beyond the app's limits
are refused before any work starts; every refusal is a :class:`~engine.errors.SpecError` (one line on the page).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engine.errors import PlacelabError, SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.limits import MAX_COUNT, check_seed
from engine.store.runs import Run, RunStore

__all__ = ["PATH_REFUSED", "POLICY_REFUSED", "RUNS_DIR_REFUSED", "RUN_REFUSED", "check_budget", "check_generator",
           "check_jobs", "check_mode", "check_number", "check_placers", "check_preset", "check_training", "graph_spec",
           "graphs_spec", "keep_upload", "placer_params", "shown_spec", "simulation_setting", "stored_run",
           "training_run", "uploads_dir"]

#: The one answer to a graph, file or folder the app does not serve (same for every path, existing or not).
PATH_REFUSED = ("not a graph the app serves: type gen:NAME?key=value&..., bench:NAME, family:NAME[:train|:test], "
                "a listed example or upload:NAME, not a server path (to use a file, upload it on the Graphs page)")
#: The one answer to a policy (a placer's ``policy`` parameter) named by a path.
POLICY_REFUSED = ("a policy is the id (or a unique prefix) of a training run in the app's run store (Runs page), "
                  "not a path: the app reads runs from its own store only")
#: The one answer to a run a link names (``run``, ``runs``, ``results``) by a path or by anything else no run id is.
RUN_REFUSED = ("not a run id: a link names runs by their ids in the app's run store (Runs page), never by a path: "
               "the app reads runs from its own store only")
#: The one answer to a run store (a placer's ``runs_dir`` parameter) other than the app's.
RUNS_DIR_REFUSED = "runs_dir: the app reads and writes runs in its own run store only: leave runs_dir blank"
UPLOAD_PREFIX = "upload:"
#: Simulator evaluations of a placer in the app's own thread (its budget, local search's evaluations).
APP_MAX_EVALUATIONS = 100_000
#: Training episodes of a learned placer placing in the app's own thread (the Train page: MAX_COUNT).
APP_MAX_EPISODES = 2_000
#: Restarts and list-scheduling runs of a placer.
APP_MAX_RUNS = 1_000
#: Seconds of any time limit of a placer.
APP_MAX_SECONDS = 600.0
#: Background processes (trainings, executions) alive at once in the app's store.
APP_MAX_JOBS = 4
#: Longest scaled step (ms) of an execution on this machine.
APP_MAX_STEP_MS = 10_000.0
#: Ray rollout workers of one training started from the app: this machine's cores.
APP_MAX_WORKERS = os.cpu_count() or 1
#: The app's limit of each placer parameter by name; other integers: MAX_COUNT.
PARAM_LIMITS = {"evaluations": (APP_MAX_EVALUATIONS, "APP_MAX_EVALUATIONS"),
                "max_enumerate": (APP_MAX_EVALUATIONS, "APP_MAX_EVALUATIONS"),
                "episodes": (APP_MAX_EPISODES, "APP_MAX_EPISODES"),
                "runs": (APP_MAX_RUNS, "APP_MAX_RUNS"), "start_runs": (APP_MAX_RUNS, "APP_MAX_RUNS"),
                "time_limit_s": (APP_MAX_SECONDS, "APP_MAX_SECONDS"),
                "lp_time_limit_s": (APP_MAX_SECONDS, "APP_MAX_SECONDS")}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


# -- sizes and budgets ---------------------------------------------------------------------------


def check_number(what: str, value: Any, limit: float, name: str) -> None:
    """Raise a SpecError unless ``value`` is a finite number at most ``limit`` (the constant ``name``); other
    values pass."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    if not math.isfinite(value):
        raise SpecError(f"{what} must be a finite number, got {value}")
    if value > limit:
        whose = "the app's" if name.startswith("APP_") else "placelab's"
        raise SpecError(f"{what} must be <= {limit:,} ({whose} limit {name}), got {value:,}")


def check_generator(spec: str) -> None:
    """Refuse a ``gen:`` spec, before it is built, unless every parameter is within the app's ceiling of the
    bound its generator declares (``engine.workloads.card.generator``; ``engine.limits.Bound``), and ops × degree
    of ``gen:random`` within the app's :data:`~engine.limits.GENERATED_EDGES`; a Keras model is read from the graph
    cache when it is there (no ``cache=false``). An unknown generator or parameter gets the engine's own message."""
    from engine.generators import check_parameters, spec_arguments
    from engine.limits import GENERATED_EDGES

    name, values = spec_arguments(spec)
    check_parameters(name, values, app=True)
    if values.get("cache") is False:  # a NASNet-Large is minutes of building each time
        raise SpecError(f"gen:{name}: cache=false is for the command line: the app reads built graphs from its cache")
    if name == "random":
        edges = values["ops"] * values["degree"]
        if edges > GENERATED_EDGES.ceiling(app=True):
            raise SpecError(f"gen:random: ops × degree = {edges:.3g} edges is beyond the app's limit of "
                            f"{GENERATED_EDGES.ceiling(app=True):,}")


def check_budget(placer: str, budget: int | None) -> None:
    """Refuse a placer's budget beyond the app's: training episodes (learned) or simulator evaluations."""
    from policies.registry import PLACERS

    if budget is None:
        return
    if PLACERS[placer].family == "learned":
        check_number("budget (episodes)", budget, APP_MAX_EPISODES, "APP_MAX_EPISODES")
    else:
        check_number("budget", budget, APP_MAX_EVALUATIONS, "APP_MAX_EVALUATIONS")


def check_jobs(root: Path) -> None:
    """Refuse another background process while :data:`APP_MAX_JOBS` of the store's are alive."""
    from dashboard.background import list_jobs

    alive = sum(job.alive for job in list_jobs(root))
    if alive >= APP_MAX_JOBS:
        raise SpecError(f"{alive} background jobs are running, the app's limit (APP_MAX_JOBS): stop one or wait "
                        "for one to end")


def check_training(episodes: int, workers: int, root: Path) -> None:
    """Refuse a training the app should not start: episodes beyond MAX_COUNT (the CLI's limit), more rollout
    workers than cores, or one job too many."""
    check_number("episodes", episodes, MAX_COUNT, "MAX_COUNT")
    check_number("rollout workers", workers, APP_MAX_WORKERS, "APP_MAX_WORKERS")
    check_jobs(root)


# -- graphs ------------------------------------------------------------------------------------


def uploads_dir() -> Path:
    """Where the app keeps uploaded graphs for its background jobs: hidden in its run store."""
    from dashboard.stores import runs_dir

    return runs_dir() / ".uploads"


def keep_upload(graph: CompGraph) -> str:
    """Save an uploaded graph in the app's upload folder (once per content); its spec ``upload:NAME``."""
    from engine.graph.io import save_graph

    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", graph.name).strip("._-")[:60] or "graph"
    name = f"{stem}-{graph.content_hash[:12]}"
    path = uploads_dir() / f"{name}.json"
    if not path.is_file() or path.is_symlink():
        path.parent.mkdir(parents=True, exist_ok=True)
        save_graph(graph, path)
    return UPLOAD_PREFIX + name


def _upload_path(name: str) -> Path:
    """The file of ``upload:NAME``: a plain file directly inside the upload folder, else PATH_REFUSED."""
    if not _NAME.fullmatch(name):
        raise SpecError(PATH_REFUSED)
    folder = uploads_dir()
    path = folder / f"{name}.json"
    try:
        inside = path.resolve().parent == folder.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside or path.is_symlink() or not path.is_file():
        raise SpecError(PATH_REFUSED)
    return path


def shown_spec(spec: str) -> str:
    """A job's graph spec as the visitor knows it: each path of the upload folder as ``upload:NAME``."""
    folder = str(uploads_dir()) + os.sep
    return ",".join(UPLOAD_PREFIX + Path(p).stem if p.startswith(folder) else p for p in spec.split(","))


def graph_spec(text: str, examples: Iterable[str] = ()) -> str:
    """The spec the app loads for the single graph ``text`` a visitor typed; SpecError if it may not."""
    from engine.workloads.published import bench_descriptions

    s = text.strip()
    if s.startswith("gen:"):
        check_generator(s)
        return s
    if s in bench_descriptions() or s in set(examples):
        return s
    if s.startswith(UPLOAD_PREFIX):
        return str(_upload_path(s[len(UPLOAD_PREFIX):]))
    raise SpecError(PATH_REFUSED)


def graphs_spec(text: str, examples: Iterable[str] = ()) -> str:
    """The multi-graph spec (comma-separated, ``family:`` allowed) a background job gets for ``text``."""
    from engine.specs import expand_graph_specs

    examples = list(examples)
    out = []
    for part in (p.strip() for p in text.split(",")):
        if part.startswith("family:"):
            expand_graph_specs(part)  # the engine's message for an unknown family or split
            out.append(part)
        elif part:
            out.append(graph_spec(part, examples))
    if not out:
        expand_graph_specs(text.strip())  # "names no graph"
    return ",".join(out)


# -- runs and placer parameters ----------------------------------------------------------------


def _load_inside(store: RunStore, run_id: str, refused: str) -> Run:
    """Run ``run_id`` of ``store``; ``refused`` when its folder is a link or leads out of the store, one line when
    it cannot be read."""
    path = store.root / run_id
    if path.is_symlink() or path.resolve().parent != store.root.resolve():
        raise SpecError(refused)
    try:
        return store.load(run_id)
    except PlacelabError:
        raise SpecError(f"run {run_id} cannot be read (see the Runs page)") from None


def _stores() -> list[RunStore]:
    from dashboard.stores import example_runs_dir, runs_dir

    return [RunStore(root) for root in dict.fromkeys((runs_dir(), example_runs_dir())) if root.is_dir()]


def _run_ids(store: RunStore) -> list[str]:
    try:
        return sorted(p.name for p in store.root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def training_run(ref: str) -> Run:
    """The training run ``ref`` (id or unique prefix) of the app's stores (the user's, then the examples)."""
    ref = str(ref).strip()
    if not _NAME.fullmatch(ref):
        raise SpecError(POLICY_REFUSED)
    found = [(s, ref) for s in _stores() if ref in _run_ids(s)][:1]
    found = found or [(s, i) for s in _stores() for i in _run_ids(s) if i.startswith(ref)]
    if not found:
        raise SpecError(f"no run of the app's run store has the id {quote(ref)} (ids are on the Runs page)")
    if len(found) > 1:
        raise SpecError(f"run prefix {quote(ref)} is ambiguous: it matches {', '.join(i for _, i in found[:5])}")
    store, run_id = found[0]
    run = _load_inside(store, run_id, POLICY_REFUSED)
    kind = run.meta.get("kind")
    if kind != "train":
        raise SpecError(f"run {run_id} is a {kind} run: a policy comes from a training run")
    return run


def _looks_like_path(value: str) -> bool:
    return any(c in value for c in "/\\") or value.startswith(("~", ".")) or value.startswith(UPLOAD_PREFIX)


def _path_param(key: str, value: Any) -> Any:
    """The value passed for a placer parameter that names a run, a store or a file."""
    from dashboard.stores import runs_dir
    from engine.workloads.published import bench_descriptions

    blank = value is None or str(value).strip() == ""
    if key == "policy":
        return None if blank else str(training_run(str(value)).path)
    if key == "runs_dir":
        if not blank and str(value).strip() != "runs":
            raise SpecError(RUNS_DIR_REFUSED)
        return str(runs_dir())
    if blank or str(value).strip() in bench_descriptions():  # split: a bundled workload's expert split
        return None if blank else str(value).strip()
    raise SpecError(f"{key}: {PATH_REFUSED}")


#: Placer parameters that name a run, a run store or a file.
PATH_PARAMS = ("policy", "runs_dir", "split")


def placer_params(placer: str, seed: int, budget: int | None, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` of ``placer`` as the app runs them: paths refused or resolved in the app's stores, numbers
    within the app's limits (SpecError otherwise, before any work)."""
    from policies.registry import placer_parameters

    check_seed("seed", seed)
    check_budget(placer, budget)
    out = {}
    for key, value in params.items():
        if key in PATH_PARAMS:
            out[key] = _path_param(key, value)
        elif isinstance(value, str) and _looks_like_path(value):
            raise SpecError(f"{key}: {PATH_REFUSED}")
        else:
            limit = PARAM_LIMITS.get(key) or ((MAX_COUNT, "MAX_COUNT") if isinstance(value, int) else (math.inf, ""))
            check_number(key, abs(value) if isinstance(value, int | float) else value, *limit)
            out[key] = value
    if "runs_dir" in placer_parameters(placer):
        out["runs_dir"] = _path_param("runs_dir", out.get("runs_dir"))
    return out


# -- the view in a link (dashboard/data/link.py) -----------------------------------------------


def check_preset(name: str) -> str:
    """A cluster preset of the sidebar named in a link."""
    from engine.presets import PRESETS

    if name not in PRESETS:
        raise SpecError(f"no cluster preset is named {quote(name)} (presets: {', '.join(PRESETS)})")
    return name


def check_mode(mode: str) -> str:
    """A simulation mode named in a link."""
    from engine.cluster import SIMULATION_MODES

    if mode not in SIMULATION_MODES:
        raise SpecError(f"simulation mode must be one of {', '.join(SIMULATION_MODES)}, got {quote(mode)}")
    return mode


def simulation_setting(preset: str, mode: str | None, name: str, text: str) -> bool | int | float:
    """The value of simulation setting ``name`` typed as ``text`` for ``preset`` in ``mode``: of the setting's
    type and accepted by the engine (``Cluster.with_simulation``); SpecError otherwise."""
    import dataclasses

    from engine.cluster import SimulationSettings
    from engine.errors import ClusterError
    from engine.presets import PRESETS

    fields = {f.name: f for f in dataclasses.fields(SimulationSettings) if f.name != "mode"}
    default = getattr(SimulationSettings(), name, None) if name in fields else None
    if not isinstance(default, bool | int | float):
        raise SpecError(f"{quote(name)} is no simulation setting of the sidebar")
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            value: bool | int | float = text.lower() in ("true", "1")
        else:
            value = type(default)(text)
        check_number(name, value, math.inf, "")
        PRESETS[preset]().with_simulation(mode, **{name: value})
    except (ValueError, OverflowError):
        raise SpecError(f"{name} must be a {type(default).__name__}, got {quote(text)}") from None
    except ClusterError as exc:
        raise SpecError(str(exc)) from None
    return value


def check_placers(names: Iterable[str]) -> list[str]:
    """Registered placers named in a link (in their order, once each)."""
    from policies.registry import PLACERS

    out = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    unknown = [n for n in out if n not in PLACERS]
    if unknown:
        raise SpecError(f"no placer is named {quote(unknown[0])} (placers: {', '.join(PLACERS)})")
    return out


def stored_run(ref: str, stores: Iterable[RunStore], kinds: Iterable[str] = ()) -> Run:
    """The run whose id is exactly ``ref`` in one of ``stores`` (the app's own: the scratch store of results
    in hand, the user's, the examples), of one of ``kinds`` (any when empty); SpecError otherwise, saying
    nothing of a path."""
    ref = str(ref).strip()
    if not _NAME.fullmatch(ref):
        raise SpecError(RUN_REFUSED)
    for store in stores:
        if not (store.root / ref).is_dir():
            continue
        run = _load_inside(store, ref, RUN_REFUSED)
        kinds = tuple(kinds)
        if kinds and run.meta.get("kind") not in kinds:
            raise SpecError(f"run {ref} is a {run.meta.get('kind')} run, not a {' or '.join(kinds)} run")
        return run
    raise SpecError(f"no run of the app's run store has the id {quote(ref)} (ids are on the Runs page)")
