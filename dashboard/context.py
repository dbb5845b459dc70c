"""The app's working context: one current graph and one current cluster for every page.

Both live in ``st.session_state`` (plain keys, not widget keys, so navigating between pages
never resets them) and are shown in the sidebar. The graph changes only through
:func:`set_graph` (the Graphs page's explicit *Use this graph* / an upload); the cluster is
the sidebar's preset plus its simulation settings (mode and the mode's numbers, read
generically from :class:`engine.cluster.SimulationSettings`, so a new mode or option shows up
without touching the app).

Widgets whose choice should survive a visit to another page register their key with
:func:`keep`; the entry script calls :func:`retain_widgets` each run, which copies their values under
plain keys that Streamlit does not drop when their page is not shown. Every key is named in
:mod:`dashboard.state`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import streamlit as st

from dashboard import state as keys
from engine.cluster import SIMULATION_MODES, SIMULATION_OPTIONS, Cluster, SimulationSettings
from engine.errors import ClusterError, one_line
from engine.graph.compgraph import CompGraph

__all__ = ["cluster_label", "current_cluster", "current_graph", "forget", "graph_label", "graph_spec", "keep",
           "retain_widgets", "set_cluster", "set_graph", "sidebar", "simulation_problem"]

_GRAPH, _LABEL, _SPEC = keys.GRAPH, keys.GRAPH_LABEL, keys.GRAPH_SPEC
_PRESET, _MODE = keys.CLUSTER, keys.SIM_MODE
_SIM_PROBLEM = keys.SIM_PROBLEM


def keep(key: str, default: Any = None, *, options: Sequence[Any] | None = None) -> str:
    """Register widget ``key`` as kept: its value survives pages where it is not drawn; returns the key.

    Streamlit drops the value of a widget not drawn in a run, so :func:`retain_widgets` copies each kept
    widget's value under a plain key (:func:`dashboard.state.kept_copy`), and this puts the copy back before
    the widget is drawn again. Without either, the widget starts at ``default`` (when not None: then draw the
    widget without its own default value, so Streamlit sees one source of its value). ``options``: a value
    (or, for a list, any item) not among them is dropped for ``default`` — a run deleted since, a placer
    no longer registered. Without a ``default`` a single value falls back to the first option, set as the value
    rather than dropped: the browser's widget is told, so it never goes on showing the value dropped while the
    page acts on another.
    """
    st.session_state.setdefault(keys.KEPT, set()).add(key)
    copy = keys.kept_copy(key)
    if key not in st.session_state:
        value = st.session_state.get(copy, default)
        if value is not None:
            st.session_state[key] = value
    if options is not None and key in st.session_state:
        value = st.session_state[key]
        allowed = list(options)
        fits = all(v in allowed for v in value) if isinstance(value, list) else value in allowed
        if not fits:
            if default is None and not isinstance(value, list) and allowed:
                default = allowed[0]
            if default is None:
                del st.session_state[key]
            else:
                st.session_state[key] = default
    return key


def forget(key: str) -> None:
    """Drop kept widget ``key``'s value and its copy (the widget starts afresh)."""
    st.session_state.pop(key, None)
    st.session_state.pop(keys.kept_copy(key), None)


def retain_widgets() -> None:
    """Copy each kept widget's value to where it survives page changes (call at the top of the entry script,
    every run: a run starts with the values the visitor last chose, also on the run that leaves their page)."""
    for key in list(st.session_state.get(keys.KEPT, ())):
        if key in st.session_state:
            st.session_state[keys.kept_copy(key)] = st.session_state[key]


def set_graph(graph: CompGraph, label: str, spec: str | None = None) -> None:
    """Make ``graph`` the current graph of every page (the one explicit way to change it)."""
    st.session_state[_GRAPH] = graph
    st.session_state[_LABEL] = label
    st.session_state[_SPEC] = spec


def current_graph() -> CompGraph | None:
    return st.session_state.get(_GRAPH)


def graph_label() -> str:
    return str(st.session_state.get(_LABEL) or "")


def graph_spec() -> str | None:
    """The spec the current graph was loaded from (None for an upload or no graph)."""
    return st.session_state.get(_SPEC)


def _preset_names() -> list[str]:
    from engine.presets import PRESETS

    return list(PRESETS)


def _settings_fields() -> list[dataclasses.Field]:
    """The simulation settings besides the mode (δ1, δ2, and whatever a mode adds)."""
    return [f for f in dataclasses.fields(SimulationSettings) if f.name != "mode"]


def _reads(mode: str, name: str) -> bool:
    """Whether simulation mode ``mode`` reads setting ``name``."""
    return name not in SIMULATION_OPTIONS or mode in SIMULATION_OPTIONS[name][2]


def current_cluster() -> Cluster:
    """The sidebar's preset with its simulation settings as chosen there (the preset's own by default).

    Settings the chosen mode does not read are left out; settings the engine refuses (``runs`` beyond
    MAX_SIM_RUNS, ...) leave the preset's own, and the sidebar says why (:func:`simulation_problem`).
    """
    from engine.presets import PRESETS

    names = _preset_names()
    name = st.session_state.get(_PRESET)
    base = PRESETS[name if name in names else names[0]]()
    sim = base.simulation
    mode = st.session_state.get(_MODE)
    mode = mode if mode in SIMULATION_MODES else sim.mode
    st.session_state[_SIM_PROBLEM] = None
    try:
        changes: dict[str, Any] = {}
        for f in _settings_fields():
            value = st.session_state.get(keys.sim_setting(f.name))
            if value is not None and value != getattr(sim, f.name) and _reads(mode, f.name):
                changes[f.name] = type(getattr(sim, f.name))(value)
        return base if mode == sim.mode and not changes else base.with_simulation(mode, **changes)
    except (ClusterError, OverflowError, ValueError) as exc:
        st.session_state[_SIM_PROBLEM] = one_line(exc)
        return base


def simulation_problem() -> str | None:
    """Why the sidebar's simulation settings were refused at the last :func:`current_cluster` (None: they apply)."""
    return st.session_state.get(_SIM_PROBLEM)


def cluster_label(cluster: Cluster) -> str:
    """``k80x2`` or ``k80x2 (work_conserving)`` when the mode differs from the preset's."""
    from engine.presets import PRESETS

    preset = PRESETS.get(cluster.name)
    if preset is not None and preset().simulation == cluster.simulation:
        return cluster.name
    return f"{cluster.name} ({cluster.simulation.mode})"


def _on_preset_change() -> None:
    """A new preset brings its own simulation settings: forget the previous preset's."""
    for key in [_MODE, *(keys.sim_setting(f.name) for f in _settings_fields())]:
        st.session_state.pop(key, None)


def set_cluster(preset: str | None, mode: str | None = None, settings: dict[str, Any] | None = None) -> None:
    """Choose ``preset`` (the sidebar's first when None) with simulation ``mode`` and ``settings`` (the
    preset's own where not given), as the sidebar would (a link's cluster). Call before the sidebar is drawn."""
    names = _preset_names()
    st.session_state[_PRESET] = preset if preset in names else names[0]
    _on_preset_change()
    if mode is not None:
        st.session_state[_MODE] = mode
    for name, value in (settings or {}).items():
        st.session_state[keys.sim_setting(name)] = value


def sidebar() -> None:
    """The sidebar's context box: the current graph (with a link to change it) and the cluster choice."""
    from engine.presets import PRESETS, preset_descriptions

    with st.sidebar:
        st.markdown("**Current graph**")
        g = current_graph()
        if g is None:
            st.caption("none yet — choose one on the Graphs page")
        else:
            st.caption(f"{g.name} · {g.num_ops:,} ops · {graph_label()}")
        names = _preset_names()
        if st.session_state.get(_PRESET) not in names:
            st.session_state[_PRESET] = names[0]
        st.selectbox("Cluster", names, key=_PRESET, on_change=_on_preset_change,
                     help="Cluster presets for the papers' machines (CONTRACTS §2); every page uses this one")
        st.caption(preset_descriptions()[st.session_state[_PRESET]])
        sim = PRESETS[st.session_state[_PRESET]]().simulation
        with st.expander("Simulation settings"):
            if st.session_state.get(_MODE) not in SIMULATION_MODES:
                st.session_state[_MODE] = sim.mode
            st.selectbox("Simulation mode", SIMULATION_MODES, key=_MODE,
                         help="How the simulator schedules (CONTRACTS §4); the preset's own is preselected")
            for f in _settings_fields():
                key = keys.sim_setting(f.name)
                default = getattr(sim, f.name)
                if key not in st.session_state:
                    st.session_state[key] = default
                off = not _reads(st.session_state[_MODE], f.name)
                if isinstance(default, bool):
                    st.checkbox(f.name, key=key, disabled=off)
                elif isinstance(default, int):
                    st.number_input(f.name, key=key, step=1, disabled=off)
                elif isinstance(default, float):
                    st.number_input(f.name, key=key, min_value=0.0, format="%g", disabled=off)
            current_cluster()
            if simulation_problem():
                st.error(f"{simulation_problem()}; the preset's own settings apply.")
