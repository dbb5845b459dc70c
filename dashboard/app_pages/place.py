"""Place: run one or more registered placers on the current graph and look at the results."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.app_pages.views import graph_view_controls, show_graph_view, show_metrics, show_schedule_figures
from dashboard.common import cluster_picker, current_graph, fmt_bytes, graph_picker, guard, run_store, show_figure
from dashboard.figures import makespan_bars
from engine.errors import PlacelabError
from engine.presets import PRESETS
from engine.run_records import save_placement_run
from engine.simulator import Simulator
from policies import PLACERS, placer_descriptions
from policies.base import placer_parameters
from policies.runner import place_and_simulate

DEFAULT_PLACERS = ("single-device", "round-robin")


def _parse(text: str) -> Any:
    """A parameter typed as text: JSON when it parses (numbers, lists, true/false), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parameter_widgets(name: str) -> dict[str, Any]:
    """One widget per placer parameter, typed by its default; blank text means "use the default"."""
    params: dict[str, Any] = {}
    for key, default in placer_parameters(name).items():
        wkey = f"place_param_{name}_{key}"
        if isinstance(default, bool):
            params[key] = st.checkbox(key, value=default, key=wkey)
        elif isinstance(default, int):
            params[key] = int(st.number_input(key, value=default, step=1, key=wkey))
        elif isinstance(default, float):
            params[key] = float(st.number_input(key, value=default, format="%g", key=wkey))
        else:
            text = st.text_input(key, value="" if default is None else str(default), key=wkey,
                                 help="JSON value or text; leave blank for the default")
            if text.strip():
                params[key] = _parse(text.strip()) if default is None or not isinstance(default, str) else text
    return params


def _run_placers(graph, cluster_name: str, chosen: list[str], settings: dict[str, dict]) -> None:
    cluster = PRESETS[cluster_name]()
    bar = st.progress(0.0, text="Starting ...")
    results, sim = [], Simulator(graph, cluster)
    for i, name in enumerate(chosen):
        s = settings[name]

        def progress(done: int, total: int, message: str, i: int = i, name: str = name) -> None:
            frac = (i + (done / total if total else 0.0)) / len(chosen)
            bar.progress(min(max(frac, 0.0), 1.0), text=f"{name}: {message}")

        bar.progress(i / len(chosen), text=f"Placing with {name} ...")
        try:
            res = place_and_simulate(graph, cluster, name, seed=s["seed"], budget=s["budget"],
                                     params=s["params"], progress=progress)
        except (PlacelabError, TypeError, ValueError) as exc:
            # TypeError/ValueError: a parameter of the wrong type typed into the form
            st.error(f"{name}: {exc}")
            continue
        schedule = sim.run(res.placement, record_memory=True)
        results.append({"placer": name, "params": s["params"], "seed": s["seed"], "budget": s["budget"],
                        "placement": res.placement, "schedule": schedule, "metrics": res.metrics,
                        "seconds": res.seconds_to_place, "run_id": None})
    bar.progress(1.0, text=f"Done: {len(results)} of {len(chosen)} placers")
    st.session_state["place_results"] = {"graph": graph, "cluster": cluster, "results": results}


def _results_table(results: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{
        "placer": r["placer"],
        "makespan (ms)": r["metrics"]["makespan_s"] * 1e3,
        "lower bound (ms)": r["metrics"]["lower_bound_s"] * 1e3,
        "ratio to lower bound": r["metrics"]["ratio_to_lower_bound"],
        "peak memory": fmt_bytes(max(r["metrics"]["peak_memory_bytes"].values())),
        "OOM": r["metrics"]["oom"],
        "communication": fmt_bytes(r["metrics"]["communication_bytes"]),
        "seconds to place": r["seconds"],
        "run": r["run_id"] or "",
    } for r in results])


def _save(state: dict, r: dict) -> None:
    g, c = state["graph"], state["cluster"]
    with guard("Save as run"):
        run = save_placement_run(run_store(), g, c, r["placement"], r["schedule"], placer=r["placer"],
                                 parameters={**r["params"], "budget": r["budget"]}, seed=r["seed"],
                                 seconds_to_place=r["seconds"], tags=["app"])
        r["run_id"] = run.id
        st.success(f"Saved as run {run.id}")


def page() -> None:
    st.title("Place")
    g = current_graph()
    with st.expander("Graph" + (f": {g.name} ({g.num_ops:,} ops)" if g is not None else ""), expanded=g is None):
        graph_picker("place")
    g = current_graph()
    if g is None:
        st.info("Load a graph first (here or on the Graphs page).")
        return
    cluster_name = cluster_picker("place_cluster")
    names = list(PLACERS)
    descriptions = placer_descriptions()
    defaults = [n for n in DEFAULT_PLACERS if n in names] or names[:1]
    chosen = st.multiselect("Placers", names, default=defaults, key="place_placers",
                            format_func=lambda n: f"{n} — {descriptions[n]}")
    settings: dict[str, dict] = {}
    for name in chosen:
        with st.expander(f"Parameters of {name}"):
            cols = st.columns(2)
            seed = int(cols[0].number_input("seed", value=0, min_value=0, step=1, key=f"place_seed_{name}"))
            budget = int(cols[1].number_input("budget (0 = placer's default)", value=0, min_value=0, step=1,
                                              key=f"place_budget_{name}"))
            if PLACERS[name].family == "learned":
                st.caption("A learned placer with a `policy` (a training run id) places zero-shot. Without one it "
                           "trains on this graph here, for `episodes` (or the budget), and returns the best "
                           "placement found; for long training use the Train page, which runs in the background.")
            settings[name] = {"seed": seed, "budget": budget or None, "params": parameter_widgets(name)}
    if st.button("Run placers", type="primary", disabled=not chosen, key="place_run"):
        _run_placers(g, cluster_name, chosen, settings)
    state = st.session_state.get("place_results")
    if not state or state["graph"] is not g:
        return
    results = state["results"]
    if not results:
        return
    cluster = state["cluster"]
    st.subheader(f"Results on {cluster.name}")
    st.dataframe(_results_table(results), hide_index=True)
    show_figure(makespan_bars([{"label": r["placer"], **r["metrics"]} for r in results]), key="place_bars")
    tabs = st.tabs([r["placer"] for r in results])
    for i, (tab, r) in enumerate(zip(tabs, results, strict=True)):
        with tab:
            show_metrics(r["metrics"], r["seconds"])
            if r["run_id"]:
                st.caption(f"Stored as run {r['run_id']}")
            elif st.button("Save as run", key=f"place_save_{i}"):
                _save(state, r)
            show_schedule_figures(r["schedule"], g, cluster, key=f"place_{i}")
            color_by, max_ops = graph_view_controls(f"place_{i}", placed=True, num_ops=g.num_ops)
            show_graph_view(g, r["placement"].devices, cluster, color_by=color_by, max_ops=max_ops)

