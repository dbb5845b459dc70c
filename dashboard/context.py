"""The app's working context: one current graph and one current cluster for every page.

Both live in ``st.session_state`` (plain keys, not widget keys, so navigating between pages
never resets them) and are shown in the sidebar. The graph changes only through
:func:`set_graph` (the Graphs page's explicit *Use this graph* / an upload); the cluster is
the sidebar's preset plus its simulation settings (mode and the mode's numbers, read
generically from :class:`engine.cluster.SimulationSettings`, so a new mode or option shows up
without touching the app).

Widgets whose choice should survive a visit to another page register their key with
:func:`keep`; the entry script calls :func:`retain_widgets` each run, which re-assigns those
keys so that Streamlit does not drop them when their page is not shown.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from engine.cluster import SIMULATION_MODES, Cluster, SimulationSettings
from engine.graph import CompGraph

__all__ = ["cluster_label", "current_cluster", "current_graph", "graph_label", "keep", "retain_widgets",
           "set_graph", "sidebar"]

_GRAPH, _LABEL, _SPEC = "ctx_graph", "ctx_graph_label", "ctx_graph_spec"
_PRESET, _MODE = "ctx_cluster", "ctx_sim_mode"
_KEPT = "ctx_kept_widgets"


def keep(key: str) -> str:
    """Register a widget key whose value should survive page changes; returns the key."""
    st.session_state.setdefault(_KEPT, set()).add(key)
    return key


def retain_widgets() -> None:
    """Re-assign every kept widget key (call at the top of the entry script, every run)."""
    for key in list(st.session_state.get(_KEPT, ())):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


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


def _setting_key(name: str) -> str:
    return f"ctx_sim_{name}"


def _settings_fields() -> list[dataclasses.Field]:
    """The simulation settings besides the mode (δ1, δ2, and whatever a mode adds)."""
    return [f for f in dataclasses.fields(SimulationSettings) if f.name != "mode"]


def current_cluster() -> Cluster:
    """The sidebar's preset with its simulation settings as chosen there (the preset's own by default)."""
    from engine.presets import PRESETS

    names = _preset_names()
    name = st.session_state.get(_PRESET)
    base = PRESETS[name if name in names else names[0]]()
    sim = base.simulation
    changes: dict[str, Any] = {}
    mode = st.session_state.get(_MODE)
    if mode in SIMULATION_MODES and mode != sim.mode:
        changes["mode"] = mode
    for f in _settings_fields():
        value = st.session_state.get(_setting_key(f.name))
        if value is not None and value != getattr(sim, f.name):
            changes[f.name] = type(getattr(sim, f.name))(value)
    if not changes:
        return base
    return dataclasses.replace(base, simulation=dataclasses.replace(sim, **changes))


def cluster_label(cluster: Cluster) -> str:
    """``k80x2`` or ``k80x2 (work_conserving)`` when the mode differs from the preset's."""
    from engine.presets import PRESETS

    preset = PRESETS.get(cluster.name)
    if preset is not None and preset().simulation == cluster.simulation:
        return cluster.name
    return f"{cluster.name} ({cluster.simulation.mode})"


def _on_preset_change() -> None:
    """A new preset brings its own simulation settings: forget the previous preset's."""
    for key in [_MODE, *(_setting_key(f.name) for f in _settings_fields())]:
        st.session_state.pop(key, None)


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
                key = _setting_key(f.name)
                default = getattr(sim, f.name)
                if key not in st.session_state:
                    st.session_state[key] = default
                if isinstance(default, bool):
                    st.checkbox(f.name, key=key)
                elif isinstance(default, int):
                    st.number_input(f.name, key=key, step=1)
                elif isinstance(default, float):
                    st.number_input(f.name, key=key, min_value=0.0, format="%g")
