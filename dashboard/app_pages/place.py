"""Place: run one or more registered placers on the current graph and look at the results."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.app_pages.measured import execution_panel, execution_problem, start_execution
from dashboard.app_pages.views import show_graph_view, show_metrics, show_schedule_figures
from dashboard.common import fmt_bytes, guard, run_store, show_error, show_figure, table_downloads
from dashboard.context import cluster_label, current_cluster, current_graph, keep
from dashboard.figures import makespan_bars
from engine.errors import PlacelabError
from engine.run_records import save_placement_run
from engine.simulator import Simulator
from policies import PLACERS, placer_descriptions
from policies.base import placer_parameters
from policies.runner import place_and_simulate

DEFAULT_PLACERS = ("single-device", "round-robin")
#: Session key of the last results (kept across pages until the next run).
RESULTS = "place_results"


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
        wkey = keep(f"place_param_{name}_{key}")
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


def _run_placers(graph, cluster, chosen: list[str], settings: dict[str, dict]) -> None:
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
            show_error(f"{name}: {exc}")
            continue
        schedule = sim.run(res.placement, record_memory=True)
        results.append({"placer": name, "params": s["params"], "seed": s["seed"], "budget": s["budget"],
                        "placement": res.placement, "schedule": schedule, "metrics": res.metrics,
                        "seconds": res.seconds_to_place, "startup": getattr(res, "startup_seconds", None),
                        "run_id": None})
    bar.progress(1.0, text=f"Done: {len(results)} of {len(chosen)} placers")
    st.session_state[RESULTS] = {"graph": graph, "cluster": cluster, "results": results}


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
        "start-up (s)": r.get("startup"),
        "run": r["run_id"] or "",
    } for r in results])


def default_run_name(placer: str, graph_name: str, cluster_name: str) -> str:
    """The name a saved run gets unless the user types another: ``placer · graph · cluster``."""
    return f"{placer} · {graph_name} · {cluster_name}"


def _save(state: dict, r: dict, name: str) -> None:
    if r["run_id"]:  # a second click that arrived before the rerun: already saved
        return
    g, c = state["graph"], state["cluster"]
    with guard("Save as run"):
        store = run_store()
        run = save_placement_run(store, g, c, r["placement"], r["schedule"], placer=r["placer"],
                                 parameters={**r["params"], "budget": r["budget"]}, seed=r["seed"],
                                 seconds_to_place=r["seconds"], tags=["app"],
                                 extra_metrics={} if r.get("startup") is None else {"startup_s": r["startup"]})
        if name.strip():
            store.rename(run.id, name.strip())
        r["run_id"] = run.id
        st.session_state["place_saved_message"] = f"Saved as run {run.id} ({name.strip() or run.id})"
        st.rerun()


def _execution(state: dict, r: dict, i: int) -> None:
    """Execute this placement on this machine in the background; then measured beside simulated."""
    rg, rc = state["graph"], state["cluster"]
    with st.expander("Execute on this machine: measured vs simulated", expanded=bool(r.get("exec_job"))):
        problem = execution_problem(rc)
        if problem:
            st.info(f"{problem}. Executing needs a cluster of this machine's devices: pick the `local` preset "
                    "in the sidebar (this machine's cores, calibrated on first use) and place again.")
            return
        cols = st.columns([2, 2, 2], vertical_alignment="bottom")
        repeats = int(cols[0].number_input("measured executions", min_value=1, max_value=50, value=3, step=1,
                                           key=keep(f"place_exec_repeats_{i}"), help="after one warm-up"))
        step_ms = float(cols[1].number_input(
            "scale to a step of (ms; 0 = as is)", min_value=0.0, value=100.0, step=10.0,
            key=keep(f"place_exec_step_{i}"),
            help="Times and bytes are scaled so one device's share of the compute takes this long "
                 "(a graph whose step is too short or too long to measure); 0 runs the graph's own times"))
        if cols[2].button("Execute", key=f"place_exec_{i}"):
            with guard("Execute"):
                job = start_execution(run_store(), rg, rc, r["placement"], placer=r["placer"], repeats=repeats,
                                      step_ms=step_ms or None, name=None)
                r["exec_job"] = job.id
        if r.get("exec_job"):
            execution_panel(run_store(), r["exec_job"], key=f"place_exec_view_{i}")


def page() -> None:
    st.title("Place")
    g = current_graph()
    if g is None:
        st.info("Choose a graph on the Graphs page first; every page works on that one (sidebar).")
        _show_results(None, None)
        return
    cluster = current_cluster()
    st.caption(f"On **{g.name}** ({g.num_ops:,} ops) and **{cluster_label(cluster)}** — change either in the "
               "sidebar / on the Graphs page.")
    names = list(PLACERS)
    descriptions = placer_descriptions()
    defaults = [n for n in DEFAULT_PLACERS if n in names] or names[:1]
    if "place_placers" not in st.session_state:
        st.session_state["place_placers"] = defaults
    chosen = st.multiselect("Placers", names, key=keep("place_placers"),
                            format_func=lambda n: f"{n} — {descriptions[n]}")
    settings: dict[str, dict] = {}
    for name in chosen:
        with st.expander(f"Parameters of {name}"):
            cols = st.columns(2)
            seed = int(cols[0].number_input("seed", value=0, min_value=0, step=1, key=keep(f"place_seed_{name}")))
            budget = int(cols[1].number_input("budget (0 = placer's default)", value=0, min_value=0, step=1,
                                              key=keep(f"place_budget_{name}")))
            if PLACERS[name].family == "learned":
                st.caption("A learned placer with a `policy` (a training run id) places zero-shot. Without one it "
                           "trains on this graph here, for `episodes` (or the budget), and returns the best "
                           "placement found; for long training use the Train page, which runs in the background.")
            settings[name] = {"seed": seed, "budget": budget or None, "params": parameter_widgets(name)}
    if st.button("Run placers", type="primary", disabled=not chosen, key="place_run"):
        _run_placers(g, cluster, chosen, settings)
    _show_results(g, cluster)


def _show_results(g, cluster) -> None:
    """The last results, kept until the next *Run placers* (also after the graph or cluster changed)."""
    state = st.session_state.get(RESULTS)
    if not state or not state["results"]:
        return
    results, rg, rc = state["results"], state["graph"], state["cluster"]
    if rg is not g or rc != cluster:
        st.warning(f"These results are on {rg.name} and {cluster_label(rc)}, not the current graph and cluster; "
                   "they stay here until you run placers again (save the ones you want to keep).")
    st.subheader(f"Results: {rg.name} on {cluster_label(rc)}")
    message = st.session_state.pop("place_saved_message", None)
    if message:
        st.success(message)
    table = _results_table(results)
    st.dataframe(table, hide_index=True)
    table_downloads(table, "place_table", f"results-{rg.name}-{rc.name}")
    show_figure(makespan_bars([{"label": r["placer"], "hover": r["run_id"] or "not saved", **r["metrics"]}
                               for r in results], title=f"Makespan on {rg.name} · {cluster_label(rc)}"),
                key="place_bars")
    tabs = st.tabs([r["placer"] for r in results])
    for i, (tab, r) in enumerate(zip(tabs, results, strict=True)):
        with tab:
            show_metrics(r["metrics"], r["seconds"], r.get("startup"))
            if r["run_id"]:
                st.caption(f"Stored as run `{r['run_id']}`")
            else:
                cols = st.columns([4, 1], vertical_alignment="bottom")
                name = cols[0].text_input("Run name", value=default_run_name(r["placer"], rg.name,
                                                                             cluster_label(rc)),
                                          key=f"place_name_{i}")
                if cols[1].button("Save as run", key=f"place_save_{i}"):
                    _save(state, r, name)
            _execution(state, r, i)
            show_schedule_figures(r["schedule"], rg, rc, key=f"place_{i}",
                                  title=f"{r['placer']} · {rg.name} · {cluster_label(rc)}",
                                  explorer_key=f"place_{i}_gv")
            st.markdown("**Graph explorer** — linked to the timeline above: click an op in either")
            show_graph_view(rg, r["placement"].devices, rc, key=f"place_{i}_gv", schedule=r["schedule"])
