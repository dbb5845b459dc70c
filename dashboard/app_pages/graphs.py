"""Graphs: load a graph (example, generator spec or file), see its summary and its structure."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboard import state as keys
from dashboard.context import cluster_label, current_cluster, current_graph, graph_label
from dashboard.data.format import fmt_bytes, fmt_ms, fmt_size
from dashboard.widgets.graph_picker import graph_picker
from dashboard.widgets.schedule import show_graph_view
from dashboard.widgets.ui import guard, show_figure
from engine.cluster import Cluster
from engine.store.summary import graph_summary


@st.cache_data(max_entries=8, show_spinner=False)
def _summary(_graph, graph_hash: str, _cluster: Cluster, cluster_key: str) -> dict:
    return graph_summary(_graph, _cluster)


def page() -> None:
    st.title("Graphs")
    with st.container(border=True):
        st.markdown("**Choose the current graph** — every page works on it until you choose another")
        ok = graph_picker()
    g = current_graph()
    if g is None:
        st.info("Choose an example, type a generator spec or upload a graph file, then *Use this graph*.")
        return
    if not ok:  # a failed load or upload: the error above, not the previous graph under it
        st.info(f"The current graph is still {g.name} ({graph_label()}).")
        return
    cluster = current_cluster()
    cluster_name = cluster_label(cluster)
    st.subheader(f"Graph: {g.name}")
    st.caption(f"Source: {graph_label()} · cluster {cluster_name} (sidebar)")
    with guard("Summary"), st.spinner("Summarizing ..."):
        info = _summary(g, g.content_hash, cluster, repr(cluster))
        cols = st.columns(4)
        cols[0].metric("Ops", f"{info['ops']:,}")
        cols[1].metric("Edges", f"{info['edges']:,}")
        cols[2].metric("Layer units", f"{info['unit_groups']:,}", help=(
            "Mirhoseini §4.1's groups: each LSTM cell, embedding lookup, attention or softmax step, each "
            "convolution branch, forward and backward together"))
        cols[3].metric("Levels / max width", f"{info['levels']:,} / {info['max_width']:,}")
        cols = st.columns(4)
        cols[0].metric("Total compute", fmt_ms(info["total_compute_s"]))
        cols[1].metric("Critical path", fmt_ms(info["critical_path_s"]))
        cols[2].metric(f"Lower bound on {cluster_name}", fmt_ms(info["lower_bound_s"]))
        cols[3].metric("Persistent memory", fmt_size(info["persistent_bytes"], info["memory_known"]))
        st.caption(f"Groups: {info['unit_groups']:,} layer units (Mirhoseini §4.1) · {info['rule_groups']:,} by the "
                   f"single-consumer rule (§3.3) · {info['groups']:,} colocation sets")
        peak = info["single_device_peak_bytes"]
        memory = ("Memory: unknown (the source gives no sizes; no placement is OOM)" if not info["memory_known"]
                  else f"Fits one device of {cluster_name} with every output held at once: "
                  f"{'yes' if info['fits_one_device'] else 'no'} · "
                  + (f"simulated on {info['single_device']} it peaks at {fmt_bytes(peak)} of "
                     f"{fmt_bytes(info['single_device_memory_bytes'])}" if peak is not None
                     else "no single device runs every op")
                  + f" · output bytes {fmt_bytes(info['output_bytes'])}")
        st.caption(memory + " · compute by kind: " + ", ".join(f"{k} {fmt_ms(v)}"
                                                               for k, v in info["compute_by_kind_s"].items()))
        st.caption("Costs: " + "; ".join(f"{k}: {v}" for k, v in info["costs"].items())
                   + f" · the devices of {cluster_name} run the "
                   + ", ".join(sorted(set(info["device_columns"].values()))) + " times")
        prof = info["parallelism_profile"]
        fig = go.Figure(go.Bar(x=list(range(len(prof))), y=prof, marker_color="#0072B2",
                               hovertemplate="level %{x}: %{y} ops<extra></extra>"))
        fig.update_layout(title="Parallelism profile (ops per topological level)", xaxis_title="level",
                          yaxis_title="ops", height=300, margin={"l": 10, "r": 10, "t": 50, "b": 40})
        show_figure(fig, key=keys.GRAPHS_PROFILE)
    st.subheader("Structure")
    show_graph_view(g, None, None, key=keys.GRAPHS_VIEW)
