"""Fidelity: how far the simulator is from measured execution (runs of ``placelab validate``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.common import guard, list_runs, show_figure
from dashboard.figures.fidelity import fidelity_scatter, measured_vs_simulated
from engine.cluster import cluster_from_dict
from engine.executor.calibration import describe_bus
from engine.executor.fidelity import load_measured_schedule
from engine.run_records import load_placement_run
from engine.runs import Run
from engine.simulator import Simulator


def _label(run: Run) -> str:
    m = run.meta
    return f"{m.get('name') or run.id} · {(m.get('graph') or {}).get('name') or '-'} · {m.get('cluster')}"


def page() -> None:
    st.title("Fidelity")
    st.caption("Placements executed for real on this machine's devices and simulated in each mode "
               "(DOPPLER App. G.1 reports Pearson 0.79 / Spearman 0.69 for its simulator).")
    runs = list_runs(kind="validate", status="done")
    if not runs:
        st.info("No fidelity runs yet — run `placelab calibrate -o local.json` and "
                "`placelab validate GRAPH -c local.json --placements 20`.")
        return
    run = st.selectbox("Validation run", runs, format_func=_label, key="fidelity_run")
    with guard("Cannot show this run"):
        metrics = run.meta.get("metrics", {})
        rows = [{"mode": mode, **s} for mode, s in metrics.get("fidelity", {}).items()]
        if metrics.get("recalibrated"):
            rows.append({"mode": "recalibrated", **metrics["recalibrated"]})
        if metrics.get("recalibrated_per_run"):
            rows.append({"mode": "recalibrated per run", **metrics["recalibrated_per_run"]})
        if metrics.get("replay"):
            rows.append({"mode": "replay", **metrics["replay"]})
        repeats = metrics.get("repeat_agreement")
        if repeats:  # the pair count goes in the caption, not in a column the modes leave empty
            rows.append({"mode": "repeats", **{k: v for k, v in repeats.items() if k != "repeat_pairs"}})
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        if metrics.get("replay"):
            st.caption(f"replay: {run.meta.get('cluster')}'s own simulation given each run's measured op and copy "
                       "durations — the error of the simulator's rules alone; the rest of a mode's error comes "
                       f"from the durations it predicts (ops ran {metrics['op_time_ratio_median']:.2f}× their "
                       "predicted time, median over placements).")
        if metrics.get("recalibrated"):
            st.caption(f"recalibrated: {run.meta.get('cluster')} with the copy link and per-op cost that the "
                       "calibration's probes measured before every round and after the last (their median), "
                       "simulated in its own mode: calibrated over the same minutes as the measurements."
                       + (" recalibrated per run: each run simulated on the probe before its round and on the "
                          "probe after it, interpolated by when it ran between them (one machine state can "
                          "give way to another within minutes)." if metrics.get("recalibrated_per_run") else ""))
        if metrics.get("copy_bus_capacity_probes"):
            st.caption("copy bus: " + describe_bus(metrics["copy_bus_capacity_probes"],
                                                   metrics.get("cluster_copy_bus_capacity")) + ".")
        if repeats:
            st.caption("repeats: one run of each placement predicting another run of it (median over "
                       f"{repeats['repeat_pairs']} pair(s) of runs). The modes predict the mean of all runs, "
                       "which is steadier, so a mode can score above this row; one far below it is limited by "
                       "its model, not by the noise.")
        noise = metrics.get("noise_ceiling")
        if noise:
            sample = (run.meta.get("parameters") or {}).get("sample", "random")
            st.caption(f"noise ceiling: given how much the runs of one placement differ, an error-free prediction "
                       f"would rank these placements ({sample} sample) at Spearman about "
                       f"{noise['spearman_ceiling']:.3f} against the mean of their {noise['repeats']} runs; a mode "
                       "near it is limited by the noise, not by its model.")
        for mode, why in metrics.get("unavailable_modes", {}).items():
            st.caption(f"{mode}: {why}")
        table = run.read_table("fidelity.csv")
        simulated = {c[len("simulated_"):-2]: table[c] for c in table if c.startswith("simulated_")}
        # a run-by-run prediction goes in the scatter; it has no one cluster to draw a timeline on
        per_run = simulated.pop("recalibrated_per_run", None)
        others = {"recalibrated per run": per_run} if per_run is not None else {}
        if "replayed_s" in table:
            others["replay"] = table["replayed_s"]
        show_figure(fidelity_scatter(table["measured_mean_s"], {**simulated, **others}, sources=table["source"]),
                    key="fidelity_scatter")
        pr = load_placement_run(run)
        mode = st.selectbox("Simulation mode for the timeline", list(simulated), key="fidelity_mode")
        if mode == "recalibrated":  # the run's own cluster file, in its own mode
            cluster = cluster_from_dict(run.read_json("recalibrated_cluster.json"), source=f"run {run.id}")
            sim = Simulator(pr.graph, cluster).run(pr.placement)
        else:
            sim = Simulator(pr.graph, pr.cluster, mode=mode).run(pr.placement)
        measured = load_measured_schedule(run, pr.graph, pr.cluster)
        st.subheader(f"Placement 0 ({table['source'][0]}): measured and simulated")
        show_figure(measured_vs_simulated(measured, sim, pr.graph, pr.cluster), key="fidelity_timeline")
