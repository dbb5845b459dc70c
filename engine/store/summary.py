"""Summaries of graphs and runs shown by the CLI and the app (one source for both)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.graph.dag import critical_path, parallelism_profile
from engine.grouping.contract import colocation_groups
from engine.grouping.rules import mirhoseini_groups, unit_groups
from engine.sim.objectives import lower_bound
from engine.sim.simulator import Simulator
from engine.store.runs import Run

__all__ = ["graph_summary", "run_summary"]


def cost_sources(g: CompGraph) -> dict[str, str]:
    """Where each device kind's times of ``g`` come from, one phrase a kind: ``"K80 roofline, with
    columns for K80, P100, V100, A100, H100"`` for a roofline-costed graph (its ``kind`` column is
    the model whose column it equals), ``"the source's own times"`` otherwise
    (``docs/reference/costs.md``)."""
    out = {}
    for kind in g.base_kinds or ("any",):
        models = g.models(kind)
        own = g.compute_for_kind(kind)
        basis = next((m for m in models if np.array_equal(g.compute_on(kind, m), own, equal_nan=True)), None)
        if not models:
            out[kind] = "one set of times, the same on every model"
        else:
            out[kind] = (f"{basis} roofline" if basis else "the source's own times") + \
                f", with columns for {', '.join(models)}"
    return out


def device_columns(g: CompGraph, cluster: Cluster) -> dict[str, str]:
    """The compute column each device of ``cluster`` reads from ``g`` (``gpu@V100``, or its kind)."""
    return {d.name: g.column_for(d.kind, d.model) for d in cluster.devices}


def graph_summary(g: CompGraph, cluster: Cluster | None = None, unit_depth: int | None = None) -> dict[str, Any]:
    """``placelab graph info``: size, compute (s), critical path (s), memory (bytes), parallelism.

    Group counts: ``groups`` — TF colocation sets (every other op alone); ``rule_groups`` —
    Mirhoseini §3.3's rule on top of them (:func:`engine.grouping.rules.mirhoseini_groups`);
    ``unit_groups`` — Mirhoseini §4.1's layer units (:func:`engine.grouping.rules.unit_groups` with
    ``unit_depth``), the groups the papers' Table 1 counts.

    ``total_compute_s`` and ``critical_path_s`` use each op's fastest device kind; with a
    cluster, also the makespan lower bound and whether the graph fits one device's memory
    (persistent bytes plus all outputs and temps at once: a conservative test).
    """
    fastest = g.min_compute()
    prof = parallelism_profile(g)
    per_kind = {k: float(np.nansum(g.compute_for_kind(k))) for k in g.base_kinds}
    if not np.isnan(g.compute_any).all():
        per_kind.setdefault("any", float(np.nansum(g.compute_any)))
    info: dict[str, Any] = {
        "name": g.name,
        "ops": g.num_ops,
        "edges": g.num_edges,
        "groups": int(colocation_groups(g).max()) + 1,
        "rule_groups": int(mirhoseini_groups(g).max()) + 1,
        "unit_groups": int(unit_groups(g, unit_depth).max()) + 1,
        "total_compute_s": float(fastest.sum()),
        "critical_path_s": critical_path(g).length_s,
        "compute_by_kind_s": per_kind,
        "costs": cost_sources(g),
        "persistent_bytes": float(g.persistent_bytes.sum()),
        "output_bytes": float(g.output_bytes.sum()),
        "memory_known": g.memory_known,  # False: the source gives no memory sizes (DOPPLER text files)
        "transfer_times_given": g.has_transfer_times,
        "temp_bytes_max": float(g.temp_bytes.max()),
        "levels": len(prof),
        "max_width": int(prof.max()),
        "parallelism_profile": prof.tolist(),
    }
    if cluster is not None:
        need = info["persistent_bytes"] + info["output_bytes"] + info["temp_bytes_max"]
        info.update(cluster=cluster.name, lower_bound_s=lower_bound(g, cluster),
                    fits_one_device=bool(need <= cluster.memory.max()), device_columns=device_columns(g, cluster),
                    **single_device_peak(g, cluster))
    return info


def single_device_peak(g: CompGraph, cluster: Cluster) -> dict[str, Any]:
    """The simulated peak memory of the whole graph on one device: the largest device that can run every
    op (``single_device``, ``single_device_peak_bytes``, ``single_device_memory_bytes``; None where no
    device can). The conservative
    ``fits_one_device`` test holds every output at once; a simulation frees an output after its last
    consumer, so this peak is what one device really needs (CONTRACTS §4 memory rules)."""
    sim = Simulator(g, cluster)
    able = [d for d in range(cluster.num_devices) if np.isfinite(sim.constraints.cost[:, d]).all()]
    if not able:
        return {"single_device": None, "single_device_peak_bytes": None, "single_device_memory_bytes": None}
    d = max(able, key=lambda j: (cluster.memory[j], -j))
    peak = sim.run(np.full(g.num_ops, d, dtype=np.int64)).peak_memory[d]
    return {"single_device": cluster.devices[d].name, "single_device_peak_bytes": float(peak),
            "single_device_memory_bytes": float(cluster.memory[d])}


def run_summary(run: Run) -> dict[str, Any]:
    """The row a run gets in ``placelab runs list`` and the app's run table."""
    m = run.meta
    metrics = m.get("metrics") or {}
    return {
        "id": run.id,
        "name": m.get("name", run.id),
        "kind": m.get("kind"),
        "status": run.status,
        "created": m.get("created"),
        "graph": (m.get("graph") or {}).get("name"),
        "cluster": m.get("cluster"),
        "placer": m.get("placer"),
        "seed": m.get("seed"),
        "tags": m.get("tags", []),
        "makespan_s": metrics.get("makespan_s"),
        "lower_bound_s": metrics.get("lower_bound_s"),
        "oom": metrics.get("oom"),
    }
