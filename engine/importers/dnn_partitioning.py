"""Workloads of Tarnawski et al. 2020 (*Efficient Algorithms for Device Placement of DNN Graph
Operators*, NeurIPS): graphs, the matching cluster, and the human-expert splits.

Unit mapping (evidence in ``docs/reference/formats.md``)
----------------------------------------------
* ``fpgaLatency`` / ``cpuLatency`` are **milliseconds**: times × :data:`LATENCY_UNIT_S`
  (1e-3) are the op's compute seconds on kind ``gpu`` ("FPGA" is any accelerator; the layer
  graphs carry GPU profiles) and kind ``cpu``. An op with ``supportedOnFpga`` false has no
  ``gpu`` time (it cannot run there).
* ``edges[].cost`` is the time (ms) to move the source's output between accelerator and CPU
  memory: it becomes the edge's ``transfer_s`` (``cost × 1e-3``), so a simulated transfer
  takes exactly the file's ``cost`` on any cluster, in every mode. The edge's bytes (for
  memory) come through the reference bandwidth :data:`REFERENCE_BANDWIDTH` (2 GiB/s):
  ``bytes = cost × 1e-3 × REFERENCE_BANDWIDTH``; the cluster of
  :func:`dnn_partitioning_cluster` links every pair at that bandwidth too. Evidence: in every
  ``latency-inputs`` file ``edges[].size / edges[].cost = 2^31 / 1000`` bytes per ms, i.e. the
  costs were computed as the edge's bytes over 2 GiB/s, in milliseconds, so there the bytes we
  derive equal the file's ``size``. (The ``throughput-inputs`` costs are 1000× smaller for the
  same sizes; we keep the costs, which are what the paper's algorithms optimize.)
* ``size`` (bytes of accelerator memory) → ``persistent_bytes``; each op's ``output_bytes``
  is the bytes of its outgoing edges (one cost per source node in these files; 0 for sinks).
* ``isBackwardNode`` → phase ``backward`` / ``forward``; a ``colorClass`` shared by two or more
  nodes → colocation group ``color<k>`` (a class of one node constrains nothing).
* Op names are the node ids as strings (the expert splits refer to ids); the file's ``name``
  becomes the op's ``scope``.

Expert splits
-------------
``human-experts/*.json`` lists ``fpgas[i].nodes`` → device ``gpu:i`` and ``cpus[i].nodes`` →
``cpu:i``. A node the split does not list follows the nodes of its colocation group: in the
training graphs every backward node shares its ``colorClass`` with exactly one forward node
(``node77grad`` with ``node77``), so an inference split places a training graph ("backward
nodes follow their forward nodes", data README).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.errors import ClusterError, GraphError, PlacementError, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import register_format
from engine.jsonio import read_json_file
from engine.limits import MAX_DEVICES, check_at_most
from engine.placement import Placement, check_placement

__all__ = [
    "CPU_MEMORY_BYTES",
    "LATENCY_UNIT_S",
    "REFERENCE_BANDWIDTH",
    "dnn_partitioning_cluster",
    "graph_from_dnn_partitioning",
    "load_dnn_partitioning",
    "load_expert_placement",
]

#: Seconds per unit of ``cpuLatency`` / ``fpgaLatency`` / ``cost`` (milliseconds).
LATENCY_UNIT_S = 1e-3
#: Reference accelerator <-> CPU bandwidth (bytes/s) that turns an edge's ``cost`` into bytes:
#: 2 GiB/s, the bandwidth the latency-inputs costs were computed with (size / cost = 2^31 / 1000).
REFERENCE_BANDWIDTH = float(2**31)
#: CPU memory in :func:`dnn_partitioning_cluster`: the paper bounds only accelerator memory;
#: 1 TiB exceeds the total ``size`` of every shipped workload (largest: 38.8 GB).
CPU_MEMORY_BYTES = float(2**40)

_DETECT_KEYS = (b'"supportedOnFpga"', b'"fpgaLatency"', b'"maxSizePerFPGA"', b'"sourceId"')


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _float(x: int | float) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _flag(node: dict, key: str, nid: int, source: str) -> bool:
    v = node.get(key, False)
    if isinstance(v, bool) or (_is_int(v) and v in (0, 1)):
        return bool(v)
    raise GraphError(f"{source}: node {nid}: {quote(key)} must be true/false or 0/1, got {quote(v)}"[:200])


def _num(node: dict, key: str, what: str, *, default: float | None = None) -> float:
    v = node.get(key, default)
    if v is None:
        raise GraphError(f"{what} has no {quote(key)}")
    if not _is_number(v):
        raise GraphError(f"{what}: {quote(key)} must be a number, got {quote(v)}"[:200])
    return _float(v)


def graph_from_dnn_partitioning(doc: Any, *, source: str = "graph") -> CompGraph:
    """Build a :class:`CompGraph` from a parsed dnn-partitioning document (units above).

    Raises
    ------
    GraphError
        For a missing or malformed ``nodes`` / ``edges`` list, a duplicate node id, an edge to
        an unknown id, a wrong type, and every check of :class:`CompGraph` (cycles, negative
        numbers, ...). The message names the node or edge.
    """
    if not isinstance(doc, dict):
        raise GraphError(f"{source}: expected a JSON object with 'nodes' and 'edges' (dnn-partitioning)")
    nodes, edges = doc.get("nodes"), doc.get("edges", [])
    if not isinstance(nodes, list) or not nodes:
        raise GraphError(f"{source}: 'nodes' must be a non-empty list")
    if not isinstance(edges, list):
        raise GraphError(f"{source}: 'edges' must be a list")
    n = len(nodes)
    index: dict[int, int] = {}
    gpu = np.full(n, np.nan)
    cpu = np.empty(n)
    size = np.empty(n)
    phase: list[str | None] = [None] * n
    color: list[int | None] = [None] * n
    scope = [""] * n
    for i, nd in enumerate(nodes):
        if not isinstance(nd, dict) or not _is_int(nd.get("id")):
            raise GraphError(f"{source}: node #{i} must be an object with an integer 'id'")
        nid = nd["id"]
        if nid in index:
            raise GraphError(f"{source}: duplicate node id {nid} (nodes #{index[nid]} and #{i})")
        index[nid] = i
        what = f"{source}: node {nid}"
        cpu[i] = _num(nd, "cpuLatency", what) * LATENCY_UNIT_S
        if _flag(nd, "supportedOnFpga", nid, source):
            gpu[i] = _num(nd, "fpgaLatency", what) * LATENCY_UNIT_S
        size[i] = _num(nd, "size", what, default=0.0)
        phase[i] = "backward" if _flag(nd, "isBackwardNode", nid, source) else "forward"
        c = nd.get("colorClass")
        if c is not None and not _is_int(c):
            raise GraphError(f"{what}: 'colorClass' must be an integer, got {quote(c)}"[:200])
        color[i] = c
        name = nd.get("name")
        if name is not None and not isinstance(name, str):
            raise GraphError(f"{what}: 'name' must be a string, got {quote(name)}"[:200])
        scope[i] = name or ""
    m = len(edges)
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    ebytes = np.empty(m)
    etime = np.empty(m)
    out_bytes = np.zeros(n)
    for e, ed in enumerate(edges):
        if not isinstance(ed, dict) or not _is_int(ed.get("sourceId")) or not _is_int(ed.get("destId")):
            raise GraphError(f"{source}: edge #{e} must be an object with integer 'sourceId' and 'destId'")
        s, d = ed["sourceId"], ed["destId"]
        if s not in index or d not in index:
            raise GraphError(f"{source}: edge {s} -> {d} refers to unknown node id {s if s not in index else d}")
        src[e], dst[e] = index[s], index[d]
        etime[e] = _num(ed, "cost", f"{source}: edge {s} -> {d}") * LATENCY_UNIT_S
        ebytes[e] = etime[e] * REFERENCE_BANDWIDTH
        if not ebytes[e] <= out_bytes[src[e]]:  # NaN propagates, to be rejected by CompGraph
            out_bytes[src[e]] = ebytes[e]
    counts = Counter(c for c in color if c is not None)
    colocate = [f"color{c}" if c is not None and counts[c] > 1 else None for c in color]
    name = os.path.splitext(source)[0] if source.endswith(".json") else source
    return CompGraph(name, [str(nd["id"]) for nd in nodes], compute_any=np.full(n, np.nan),
                     compute_by_kind=np.column_stack([gpu, cpu]), kinds=("gpu", "cpu"),
                     output_bytes=out_bytes, persistent_bytes=size, edge_src=src, edge_dst=dst,
                     edge_bytes=ebytes, edge_transfer_s=etime, colocate=colocate, phase=phase, scope=scope)


def load_dnn_partitioning(path: str | os.PathLike) -> CompGraph:
    """Load a dnn-partitioning workload file (``latency-inputs`` / ``throughput-inputs``)."""
    doc = read_json_file(path, error=GraphError)
    return graph_from_dnn_partitioning(doc, source=quote(os.path.basename(os.fspath(path)), bare=True))


def dnn_partitioning_cluster(doc_or_path: dict | str | os.PathLike, *, accelerators: int | None = None,
                             cpus: int | None = None) -> Cluster:
    """The machine a dnn-partitioning workload describes.

    ``maxFPGAs`` accelerators ``gpu:0..`` of ``maxSizePerFPGA`` bytes each, then ``maxCPUs``
    CPUs ``cpu:0..`` of :data:`CPU_MEMORY_BYTES`; every pair linked at
    :data:`REFERENCE_BANDWIDTH` with no latency (so a transfer takes the file's edge ``cost``);
    ``default`` simulation mode with zero overheads. ``accelerators`` / ``cpus`` override the
    file's counts (the BERT-24 inference expert split uses 6 accelerators, the file allows 5).

    Raises
    ------
    ClusterError
        When the counts or the memory are missing or not positive.
    """
    if isinstance(doc_or_path, dict):
        doc, name = doc_or_path, "dnn-partitioning"
    else:
        doc = read_json_file(doc_or_path, error=ClusterError)
        name = f"dnn-partitioning:{Path(doc_or_path).stem}"
    if not isinstance(doc, dict):
        raise ClusterError(f"{name}: expected a JSON object with maxFPGAs, maxCPUs and maxSizePerFPGA")
    n_acc = doc.get("maxFPGAs") if accelerators is None else accelerators
    n_cpu = doc.get("maxCPUs") if cpus is None else cpus
    memory = doc.get("maxSizePerFPGA")
    for what, v in (("maxFPGAs", n_acc), ("maxCPUs", n_cpu)):
        if not _is_int(v) or v < 0:
            raise ClusterError(f"{name}: {quote(what)} must be an integer >= 0, got {quote(v)}")
    if n_acc + n_cpu == 0:
        raise ClusterError(f"{name}: the workload allows no accelerator and no CPU")
    check_at_most(f"{name}: maxFPGAs + maxCPUs", n_acc + n_cpu, MAX_DEVICES, "MAX_DEVICES", ClusterError)
    if not _is_number(memory):
        raise ClusterError(f"{name}: 'maxSizePerFPGA' must be a number of bytes, got {quote(memory)}")
    devices = (*(Device(f"gpu:{i}", "gpu", float(memory)) for i in range(n_acc)),
               *(Device(f"cpu:{i}", "cpu", CPU_MEMORY_BYTES) for i in range(n_cpu)))
    return Cluster(name, devices, Link(REFERENCE_BANDWIDTH, 0.0), (), SimulationSettings("default", 0.0, 0.0),
                   f"Tarnawski et al. 2020: {n_acc} accelerators of {float(memory) / 1e9:g} GB, {n_cpu} CPUs, "
                   f"{REFERENCE_BANDWIDTH / 2**30:g} GiB/s links")


def load_expert_placement(path: str | os.PathLike, graph: CompGraph, cluster: Cluster) -> Placement:
    """A human-expert split (``fpgas[i].nodes`` → ``gpu:i``, ``cpus[i].nodes`` → ``cpu:i``).

    Nodes the split does not list follow their colocation group (backward nodes follow their
    forward nodes); the result is checked against the graph's constraints.

    Raises
    ------
    PlacementError
        For a malformed file, a node listed twice on different devices, an id the graph does
        not have, a device the cluster does not have, or a node left unplaced.
    """
    p = os.fspath(path)
    base = quote(os.path.basename(p), bare=True)
    doc = read_json_file(p, error=PlacementError)
    if not isinstance(doc, dict):
        raise PlacementError(f"{base}: expected a JSON object with 'fpgas' and 'cpus'")
    devs = np.full(graph.num_ops, -1, dtype=np.int64)
    for key, kind in (("fpgas", "gpu"), ("cpus", "cpu")):
        parts = doc.get(key, [])
        if not isinstance(parts, list):
            raise PlacementError(f"{base}: {quote(key)} must be a list")
        for j, part in enumerate(parts):
            nodes = part.get("nodes") if isinstance(part, dict) else None
            if not isinstance(nodes, list):
                raise PlacementError(f"{base}: {key}[{j}] needs a 'nodes' list")
            if not nodes:
                continue
            dname = f"{kind}:{j}"
            d = cluster.index.get(dname)
            if d is None:
                raise PlacementError(f"{base} uses device {quote(dname)}, which cluster {quote(cluster.name)} does "
                                     f"not have")
            for nid in nodes:
                i = graph.index.get(str(nid)) if _is_int(nid) else None
                if i is None:
                    raise PlacementError(f"{base} places node {quote(nid)}, which graph {quote(graph.name)} does not "
                                         f"have")
                if devs[i] >= 0 and devs[i] != d:
                    raise PlacementError(f"{base} places node {nid} on both {quote(cluster.devices[devs[i]].name)} "
                                         f"and {quote(dname)}")
                devs[i] = d
    group = graph.colocation_ids
    head = {}
    for i in np.flatnonzero((devs >= 0) & (group >= 0)).tolist():
        head.setdefault(int(group[i]), int(devs[i]))
    for i in np.flatnonzero(devs < 0).tolist():
        if group[i] >= 0 and int(group[i]) in head:
            devs[i] = head[int(group[i])]
    missing = np.flatnonzero(devs < 0)
    if len(missing):
        raise PlacementError(f"{base} does not place op {quote(graph.op_names[missing[0]])} of {quote(graph.name)} "
                             f"({len(missing)} op(s) unplaced)")
    placement = Placement(devs)
    check_placement(graph, cluster, placement)
    return placement


def _is_dnn_partitioning(head: bytes) -> bool:
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return h[:1] == b"{" and b'"nodes"' in h and any(k in h for k in _DETECT_KEYS)


register_format("dnn-partitioning", "Tarnawski et al. 2020 workload JSON (latencies in ms, FPGA = gpu)",
                _is_dnn_partitioning, load_dnn_partitioning)
