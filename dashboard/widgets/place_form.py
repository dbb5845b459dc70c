"""The Place page's form: the placers' parameters (kept across pages), and running them with a progress bar.

Each result is kept in the scratch store as it comes (:func:`dashboard.data.place.keep_result`), so the link
can name it and a reload brings it back.
"""

from __future__ import annotations

import contextlib
from typing import Any

import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data.place import HIDDEN_PARAMETERS, checked_params, keep_result, parse_param, prune_scratch
from dashboard.stores import scratch_store
from dashboard.widgets.ui import show_error
from engine.errors import PlacelabError
from engine.limits import exhaustion
from engine.sim.simulator import Simulator
from placelab.runner import place_and_simulate
from policies.registry import PLACERS, placer_parameters

__all__ = ["parameter_widgets", "placer_settings", "run_placers"]


def parameter_widgets(name: str) -> dict[str, Any]:
    """One widget per placer parameter, typed by its default; blank text means "use the default"."""
    params: dict[str, Any] = {}
    for key, default in placer_parameters(name).items():
        if key in HIDDEN_PARAMETERS:
            continue
        text_default = "" if default is None else str(default)
        wkey = keep(keys.place_param(name, key), default if isinstance(default, bool | int | float) else text_default)
        if isinstance(default, bool):
            params[key] = st.checkbox(key, key=wkey)
        elif isinstance(default, int):
            params[key] = int(st.number_input(key, step=1, key=wkey))
        elif isinstance(default, float):
            params[key] = float(st.number_input(key, format="%g", key=wkey))
        else:
            text = st.text_input(key, key=wkey, help="JSON value or text; leave blank for the default")
            if text.strip():
                params[key] = parse_param(text.strip()) if default is None or not isinstance(default, str) else text
    return params


def placer_settings(chosen: list[str]) -> dict[str, dict]:
    """Seed, budget and parameters of each chosen placer, in an expander each."""
    settings: dict[str, dict] = {}
    for name in chosen:
        with st.expander(f"Parameters of {name}"):
            cols = st.columns(2)
            seed = int(cols[0].number_input("seed", min_value=0, step=1, key=keep(keys.place_seed(name), 0)))
            budget = int(cols[1].number_input("budget (0 = placer's default)", min_value=0, step=1,
                                              key=keep(keys.place_budget(name), 0)))
            if PLACERS[name].family == "learned":
                st.caption("A learned placer with a `policy` (the id of a training run of the app's run store, "
                           "Runs page) places zero-shot. Without one it "
                           "trains on this graph here, for `episodes` (or the budget), and returns the best "
                           "placement found; for long training use the Train page, which runs in the background.")
            settings[name] = {"seed": seed, "budget": budget or None, "params": parameter_widgets(name)}
    return settings


def _keep(graph, cluster, result: dict) -> None:
    """Keep ``result`` in the scratch store (a reload brings it back); a full disk only loses that."""
    try:
        result["kept_id"] = keep_result(scratch_store(), graph, cluster, result)
    except (PlacelabError, OSError) as exc:
        show_error(f"{result['placer']}: the result is here, but it could not be kept for a reload: {exc}")


def run_placers(graph, cluster, chosen: list[str], settings: dict[str, dict]) -> None:
    """Place and simulate with each chosen placer; the results become the results in hand."""
    checked, errors = checked_params(chosen, settings)
    for line in errors:
        show_error(line)
    if errors:
        return
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
                                     params=checked[name], progress=progress)
        except (PlacelabError, TypeError, ValueError, MemoryError) as exc:
            # TypeError/ValueError: a parameter of the wrong type typed into the form
            show_error(f"{name}: {exhaustion(exc) or exc}")
            continue
        schedule = sim.run(res.placement, record_memory=True)
        results.append({"placer": name, "params": s["params"], "seed": s["seed"], "budget": s["budget"],
                        "placement": res.placement, "schedule": schedule, "metrics": res.metrics,
                        "seconds": res.seconds_to_place, "startup": getattr(res, "startup_seconds", None),
                        "run_id": None, "kept_id": None})
        _keep(graph, cluster, results[-1])
    bar.progress(1.0, text=f"Done: {len(results)} of {len(chosen)} placers")
    st.session_state[keys.PLACE_RESULTS] = {"graph": graph, "cluster": cluster, "results": results}
    with contextlib.suppress(PlacelabError, OSError):
        prune_scratch(scratch_store())
