"""The Train page's form: a learned placer, its graphs and hyper-parameters, and *Start training*, which
launches ``placelab train … --save`` in the background (:mod:`dashboard.background`). Every field is kept
across pages."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import streamlit as st

from dashboard import state as keys
from dashboard.background import launch_training, ray_address, train_command
from dashboard.context import current_cluster, current_graph, graph_spec, keep
from dashboard.data.graphs import example_sources
from dashboard.data.training import KEY_PARAMETERS, SUGGESTED_GRAPHS, command_text
from dashboard.input_guard import check_training, graphs_spec, keep_upload
from dashboard.widgets.ui import guard
from engine.store.runs import RunStore

__all__ = ["start_form"]


def _use_suggestion() -> None:
    if st.session_state.get(keys.TRAIN_SUGGESTION):
        st.session_state[keys.TRAIN_GRAPHS] = st.session_state[keys.TRAIN_SUGGESTION]


def _parameter_widget(container: Any, placer: str, f: Any) -> Any:
    """One widget for config field ``f``, typed by its annotation, with its meaning and source as help."""
    meta, annotation = f.metadata, str(f.type)
    default = f.default_factory() if f.default is dataclasses.MISSING else f.default
    label, text = f.name.replace("_", " "), f"{meta['doc']} — default {default!r}: {meta['source']}"
    if meta.get("choices"):
        options = list(meta["choices"])
        return container.selectbox(label, options, key=keep(keys.train_param(placer, f.name), default,
                                                             options=options), help=text)
    if annotation.startswith("bool"):
        return container.checkbox(label, key=keep(keys.train_param(placer, f.name), default), help=text)
    if annotation.startswith(("int", "float")):
        key = keep(keys.train_param(placer, f.name), default)
        cast = int if annotation.startswith("int") else float
        low, high = (None if b is None else cast(b) for b in (meta.get("low"), meta.get("high")))
        first = {} if key in st.session_state else {"value": None}  # no value yet: blank, "auto"
        value = container.number_input(label, min_value=low, max_value=high, step=1 if cast is int else None,
                                       format=None if cast is int else "%g", placeholder="auto", key=key, help=text,
                                       **first)
        return None if value is None else cast(value)
    raw = container.text_input(label, placeholder="auto", help=text + " (JSON; blank: auto)",
                               key=keep(keys.train_param(placer, f.name),
                                        "" if default is None else json.dumps(default))).strip()
    return json.loads(raw) if raw else None


def _hyper_parameters(placer: str) -> dict[str, Any]:
    """Widgets for the placer's registered config fields; returns those that differ from its defaults."""
    from policies.rl.registry import config_fields, make_config

    fields = config_fields(placer)
    defaults = make_config(placer, {}).to_dict()
    key_fields = [f for f in fields if f.name in KEY_PARAMETERS]
    values: dict[str, Any] = {}
    for i, f in enumerate(key_fields):
        if i % 4 == 0:
            cols = st.columns(4)
        values[f.name] = _parameter_widget(cols[i % 4], placer, f)
    with st.expander("All hyper-parameters"):
        cols = st.columns(4)
        for i, f in enumerate(f for f in fields if f.name not in KEY_PARAMETERS):
            values[f.name] = _parameter_widget(cols[i % 4], placer, f)
    return {k: v for k, v in values.items() if v != defaults.get(k)}


def _current_spec() -> str | None:
    """The current graph's spec (an upload: ``upload:NAME``, saved in the app's upload folder); None if none."""
    g = current_graph()
    if g is None or graph_spec():
        return graph_spec()
    with guard("Cannot keep the uploaded graph for training"):
        return keep_upload(g)
    return None


def _graph_suggestions() -> dict[str, str]:
    """The graphs box follows the current graph until the visitor types another; the suggestions, it first."""
    spec = _current_spec()
    default = spec or next(iter(SUGGESTED_GRAPHS))
    keep(keys.TRAIN_GRAPHS)  # what the visitor typed, back from another page, before it is compared
    if st.session_state.get(keys.TRAIN_GRAPHS) in (None, st.session_state.get(keys.TRAIN_GRAPHS_DEFAULT)):
        st.session_state[keys.TRAIN_GRAPHS] = default
    st.session_state[keys.TRAIN_GRAPHS_DEFAULT] = default
    g = current_graph()
    current = {} if spec is None or g is None else {spec: f"the current graph, {g.name} ({g.num_ops:,} ops)"}
    return current | {s: d for s, d in SUGGESTED_GRAPHS.items() if s not in current}


def start_form(store: RunStore) -> None:
    from policies.rl.core.reinforce import Budget
    from policies.rl.core.request import build_request
    from policies.rl.registry import learned_placers

    st.subheader("New training run")
    placers = learned_placers()
    cols = st.columns(2)
    placer = cols[0].selectbox("Learned placer", list(placers), key=keep(keys.TRAIN_PLACER, options=list(placers)),
                               format_func=lambda n: placers[n].description.split(":")[0])
    cluster = current_cluster().name
    cols[1].text_input("Cluster (sidebar)", value=cluster, disabled=True, key=keys.TRAIN_CLUSTER_SHOWN,
                       help="Training uses the sidebar's cluster preset with the preset's simulation settings")
    suggestions = _graph_suggestions()
    cols = st.columns([3, 2])
    graphs = cols[0].text_input("Graphs", key=keys.TRAIN_GRAPHS,
                                help="Graph specs, comma-separated: gen:NAME?k=v, bench:NAME, family:nmt|ptb|cifar10"
                                     "[:train|:test] (CONTRACTS §5), an example or upload:NAME (the current graph "
                                     "when uploaded); not a path on the server").strip()
    cols[1].selectbox("Suggestions", list(suggestions), index=None, key=keys.TRAIN_SUGGESTION,
                      placeholder="pick one to fill in Graphs", on_change=_use_suggestion,
                      format_func=lambda s: f"{s} — {suggestions.get(s, '')}")
    params = _hyper_parameters(placer)
    cols = st.columns(5, vertical_alignment="bottom")
    episodes = int(cols[0].number_input("episodes", min_value=1, step=100, key=keep(keys.TRAIN_EPISODES, 500),
                                        help="Episode budget; the run also stops when its reward settles "
                                             "(within 2 % over 1000 episodes, Placeto App. A.7)"))
    seed = int(cols[1].number_input("seed", min_value=0, step=1, key=keep(keys.TRAIN_SEED, 0)))
    name = cols[2].text_input("run name (optional)", key=keep(keys.TRAIN_NAME, "")).strip()
    workers = int(cols[3].number_input("rollout workers", min_value=0, step=1, key=keep(keys.TRAIN_WORKERS, 0),
                                       help="0: roll out in the training process; N: on N Ray workers "
                                            "(README, Sweeps and Ray)"))
    command = train_command(placer, graphs, cluster, episodes=episodes, params=params, seed=seed, name=name or None,
                            runs_dir=store.root, workers=workers)
    with st.expander("Command line"):
        st.code(command_text(command), language="bash")
    if cols[4].button("Start training", type="primary", key=keys.TRAIN_START):
        with guard("Cannot start training"), st.spinner("Checking the graphs ..."):
            check_training(episodes, workers, store.root)
            request = build_request(placer, graphs_spec(graphs, example_sources().values()), current_cluster(),
                                    params=params, seed=seed, budget=Budget(episodes=episodes), store=store.root,
                                    runs_dir=str(store.root), name=name or None, workers=workers or None,
                                    address=ray_address() if workers else None)
            job = launch_training(store.root, request, label=name or f"{placer} on {graphs}")
            st.success(f"Started training {job.label} (process {job.pid}); it appears below once its graphs "
                       "are loaded.")
