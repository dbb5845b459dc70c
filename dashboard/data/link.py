"""The view in the app's link: what its query parameters hold, written each run and read back after a reload
(issue #33).

Every page: ``graph`` (a generator spec, ``bench:NAME``, ``upload:NAME`` or an example's label),
``cluster`` (a preset), ``mode`` and ``sim_<setting>`` (the sidebar's simulation settings where they differ
from the preset's own). A page adds its own (:data:`PAGE_PARAMS`):

* Place: ``placers`` and ``results`` (the placers chosen and the runs of the results in hand), ``edits`` (the
  what-if editor's edits of each result, :mod:`dashboard.data.whatif`);
* Compare: ``runs`` (the runs compared), ``left`` and ``right`` (the pair of timelines), ``schedules``
  (simulated or measured), ``moved`` (the moved ops in the graph view), ``mix`` (graphs and clusters mixed),
  ``sweep``, ``cdf`` (the runs in the CDF), ``curves`` (the training runs drawn), ``x`` and ``smoothing``
  (the learning curves');
* Runs: ``run`` (the run shown), the ``kind``, ``status`` and ``tag`` filters, ``figure``;
* Papers: ``reproduction`` and ``normalised`` (the row-normalised judgement);
* Fidelity: ``run`` and ``timeline`` (the simulation mode of its timeline).

A page checks its own against what it offers (:mod:`dashboard.widgets.link`).

A link is typed by a visitor: every value goes through :mod:`dashboard.input_guard`, the app's one guard. A
value it refuses becomes one warning line and is ignored, the rest of the link still applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dashboard import input_guard
from dashboard.data import whatif
from dashboard.data.graphs import example_sources, graph_from_spec
from dashboard.data.whatif import Edit
from engine.cluster import Cluster, SimulationSettings
from engine.errors import PlacelabError, SpecError, one_line
from engine.graph.compgraph import CompGraph
from engine.limits import exhaustion
from engine.store.runs import Run, RunStore

__all__ = [
    "CDF",
    "CLUSTER",
    "CURVES",
    "EDITS",
    "FIGURE",
    "GRAPH",
    "KIND",
    "LEFT",
    "MIX",
    "MODE",
    "MOVED",
    "NORMALISED",
    "PAGE_PARAMS",
    "PLACERS",
    "REPRODUCTION",
    "RESULTS",
    "RIGHT",
    "RUN",
    "RUNS",
    "SCHEDULES",
    "SIM",
    "SMOOTHING",
    "STATUS",
    "SWEEP",
    "TAG",
    "TIMELINE",
    "X_AXIS",
    "LinkView",
    "edits_warning",
    "ids_param",
    "read_edits",
    "read_link",
    "read_placers",
    "read_runs",
    "view_params",
]

GRAPH, CLUSTER, MODE, SIM = "graph", "cluster", "mode", "sim_"
PLACERS, RESULTS, RUNS, RUN, EDITS = "placers", "results", "runs", "run", "edits"
LEFT, RIGHT, SCHEDULES, MOVED, MIX = "left", "right", "schedules", "moved", "mix"
SWEEP, CDF, CURVES, X_AXIS, SMOOTHING = "sweep", "cdf", "curves", "x", "smoothing"
KIND, STATUS, TAG, FIGURE = "kind", "status", "tag", "figure"
REPRODUCTION, NORMALISED, TIMELINE = "reproduction", "normalised", "timeline"
#: The parameters one page reads (the others belong to every page), as the module docstring lists them.
PAGE_PARAMS = (PLACERS, RESULTS, EDITS, RUNS, RUN, LEFT, RIGHT, SCHEDULES, MOVED, MIX, SWEEP, CDF, CURVES, X_AXIS,
               SMOOTHING, KIND, STATUS, TAG, FIGURE, REPRODUCTION, NORMALISED, TIMELINE)
#: Streamlit's own parameters, never the app's.
STREAMLIT_PARAMS = ("embed", "embed_options")
#: Longest value read from a link (a longer one is refused unread).
MAX_VALUE = 4000
#: Most run ids a link names.
MAX_IDS = 32
#: What reading a link's value may raise, besides the guard's SpecError: a generator's or an importer's own
#: errors on odd parameters. Each is one warning line, never a traceback.
REFUSALS = (PlacelabError, OSError, MemoryError, RecursionError, ValueError, TypeError, OverflowError, KeyError)


@dataclass
class LinkView:
    """What a link asks for, each part checked: None where it names nothing (or was refused)."""

    graph: tuple[CompGraph, str, str] | None = None  # the graph, its label, its spec (as the app keeps it)
    cluster: str | None = None
    mode: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)  # page parameters, for their page to read
    warnings: list[str] = field(default_factory=list)


def _refused(name: str, exc: BaseException) -> str:
    return one_line(f"Ignored the link's {name}: {exhaustion(exc) or exc}")


def sidebar_settings() -> list[str]:
    """The simulation settings the sidebar shows (numbers and switches; the mode apart)."""
    return [f.name for f in dataclasses.fields(SimulationSettings)
            if f.name != "mode" and isinstance(getattr(SimulationSettings(), f.name), bool | int | float)]


def _graph(text: str) -> tuple[CompGraph, str, str]:
    """The graph a link names: an example by its label, else what a visitor may type (SpecError otherwise)."""
    examples = example_sources()
    if text in examples:
        spec, label = examples[text], text
    else:
        spec = text
        label = next((lb for lb, s in examples.items() if s == text), text)
    loaded = input_guard.graph_spec(spec, examples.values())
    return graph_from_spec(loaded), label, spec


def read_link(params: Mapping[str, str]) -> LinkView:
    """The view of a link's query parameters (name → value; the last value of a repeated name)."""
    view = LinkView()
    for name, value in params.items():
        try:
            if len(value) > MAX_VALUE:
                raise SpecError(f"longer than {MAX_VALUE:,} characters")
            if name == GRAPH:
                view.graph = _graph(value.strip())
            elif name == CLUSTER:
                view.cluster = input_guard.check_preset(value.strip())
            elif name == MODE:
                view.mode = input_guard.check_mode(value.strip())
            elif name in PAGE_PARAMS:
                view.pages[name] = value
            elif not name.startswith(SIM) and name not in STREAMLIT_PARAMS:
                raise SpecError("the app has no such parameter")
        except REFUSALS as exc:
            view.warnings.append(_refused(name[:40], exc))
    from engine.presets import PRESETS

    preset = view.cluster or next(iter(PRESETS))
    for name, value in params.items():
        if name.startswith(SIM):
            try:
                view.settings[name[len(SIM):]] = input_guard.simulation_setting(preset, view.mode, name[len(SIM):],
                                                                            value.strip()[:MAX_VALUE])
            except PlacelabError as exc:
                view.warnings.append(_refused(name[:40], exc))
    return view


def read_placers(text: str) -> list[str]:
    """The placers a link's ``placers`` names (SpecError for one not registered)."""
    return input_guard.check_placers(text.split(","))


def read_edits(text: str) -> tuple[dict[int, list[Edit]], list[str]]:
    """The what-if edits of each result the link's ``edits`` holds, and what was refused in it, one line each
    (:func:`dashboard.data.whatif.read_edits`; whether an edit fits its result is checked when it is replayed:
    :func:`edits_warning` makes all of it one warning)."""
    return whatif.read_edits(text)


def edits_warning(problems: list[str]) -> str | None:
    """The one warning line of the link's ``edits`` that were refused (the first, and how many more), or None."""
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return _refused(EDITS, SpecError(problems[0] + more))


def read_runs(text: str, stores: Iterable[RunStore], kinds: Iterable[str] = (), *,
              name: str) -> tuple[list[Run], list[str]]:
    """The runs the link's parameter ``name`` (``run``, ``runs`` or ``results``) names in ``text``, each an exact id
    of ``stores`` of one of ``kinds``; a warning line naming the parameter for each refused (and one for ids
    beyond :data:`MAX_IDS`)."""
    stores, kinds = list(stores), tuple(kinds)
    ids = [i.strip() for i in text.split(",") if i.strip()]
    runs, warnings = [], []
    if len(ids) > MAX_IDS:
        warnings.append(f"Ignored the link's {name} after the first {MAX_IDS} run ids")
    for ref in dict.fromkeys(ids[:MAX_IDS]):
        try:
            runs.append(input_guard.stored_run(ref, stores, kinds))
        except PlacelabError as exc:
            warnings.append(_refused(name, exc))
    return runs, warnings


def graph_text(spec: str | None, label: str) -> str | None:
    """How a link names the current graph: its spec, or an example file's label (never a server path)."""
    if not spec:
        return None
    if spec.startswith(("gen:", "bench:", "upload:")):
        return spec
    return label if example_sources().get(label) == spec else None


def view_params(spec: str | None, label: str, cluster: Cluster) -> dict[str, str]:
    """The page-independent parameters of the view: the current graph (by ``spec`` and ``label``) and
    ``cluster`` (its preset, with the mode and settings that differ from the preset's own)."""
    from engine.presets import PRESETS

    out: dict[str, str] = {}
    text = graph_text(spec, label)
    if text:
        out[GRAPH] = text
    out[CLUSTER] = cluster.name
    preset = PRESETS[cluster.name]().simulation if cluster.name in PRESETS else SimulationSettings()
    sim = cluster.simulation
    if sim.mode != preset.mode:
        out[MODE] = sim.mode
    for name in sidebar_settings():
        value = getattr(sim, name)
        if value != getattr(preset, name):
            out[SIM + name] = str(value).lower() if isinstance(value, bool) else repr(value)
    return out


def ids_param(ids: Iterable[str | None]) -> str:
    """Run ids as one parameter value."""
    return ",".join(i for i in ids if i)
