"""What a planner needs to predict times under a cluster's simulation mode (``docs/reference/simulation.md``).

A list scheduler (HEFT, m-ETF, m-TOPO, m-SCT, critical-path: :mod:`policies.list_scheduling`) places op by op
and estimates when each op would start and end. It is only as good as that estimate: a scheduler that plans
with ``latency + bytes / bandwidth`` on a cluster whose simulator serializes every transfer on the sender's one
channel and adds δ2 = 25 µs to each (``placeto`` mode, the K80 presets) moves gigabytes between devices for
nothing. This module is the one statement, for planners, of the rules each mode executes; the list-scheduling
kernel (:mod:`policies._listsched_kernels`) reads a :class:`PlanInputs` built here and nothing else about the
cluster. The simulator's kernels read the same cluster fields through :func:`given_transfer_times` and
:func:`op_times`, so a rule has one home.

Per mode (simulation.md's sections of the same names):

``placeto``
    An op holds its device for compute + δ1 (``op_overhead_s``; none for a zero-time op) and its output is
    usable after compute. An output needed on other devices is sent **once** (:data:`SEND_OUTPUT`) on the
    sender's one channel (:data:`CHANNEL_DEVICE`): out_bytes / the default link's bandwidth (or the largest
    given time of its edges), holding the channel that long + δ2 (``transfer_gap_s``), no latency. The
    makespan counts trailing δ1 and δ2.
``default``
    One transfer per (output, destination device) (:data:`SEND_DEVICE`) of the largest bytes among the edges
    there, on the sender's one channel, held for bytes / bandwidth + δ2; it lands latency later. δ1 and the
    makespan as in ``placeto``.
``work_conserving``
    One transfer per cross-device edge (:data:`SEND_EDGE`), latency + bytes / bandwidth or the given time;
    ``contention`` picks no channel (:data:`CHANNEL_NONE`), the sender's (:data:`CHANNEL_DEVICE`) or the pair's
    (:data:`CHANNEL_LINK`), held for the whole transfer. ``dispatch_s`` holds the device after a non-zero op.
    With ``copy_occupies_sender`` the sender copies once per destination device (:data:`SEND_DEVICE`,
    :data:`CHANNEL_SENDER`): its device is busy for the copy (bytes / bandwidth, or the link's ``copy_curve``,
    or the given time) and the copy lands latency later. The makespan is the end of the last op.

What a planner cannot know, and this model does not claim: the work-conserving ``noise`` (expected times are
used), ``choose=b_level`` (devices are modelled FIFO), ``memory_aware`` waiting and the shared copy bus (a
copy runs at full speed). Where a cluster sets one of these, a plan's estimate and its simulation differ and
``compare`` says so (:data:`engine.store.records.ESTIMATE_TOLERANCE`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.placement import compute_matrix

__all__ = [
    "CHANNEL_DEVICE", "CHANNEL_LINK", "CHANNEL_NONE", "CHANNEL_SENDER", "SEND_DEVICE", "SEND_EDGE", "SEND_OUTPUT",
    "TIE_EVENT", "TIE_OP", "TIE_PRODUCER", "PlanInputs", "given_transfer_times", "op_times", "plan_inputs",
]

#: how many transfers an output needs: one for every device that reads it, one per reading device, one per edge
SEND_OUTPUT, SEND_DEVICE, SEND_EDGE = range(3)
#: how a device orders ops whose inputs got there at the same instant: by op index (default); by the producer
#: of the last input, then op index (placeto's heap of per-edge events, sources first); by the order the
#: events that made the requests were created (work_conserving, sources first)
TIE_OP, TIE_PRODUCER, TIE_EVENT = range(3)
#: what a transfer waits for: nothing, the sender's one outgoing channel, the (sender, receiver) pair's channel,
#: the sender device itself (it makes the copy)
CHANNEL_NONE, CHANNEL_DEVICE, CHANNEL_LINK, CHANNEL_SENDER = range(4)


class PlanInputs(NamedTuple):
    """A graph's costs on a cluster under its simulation mode, as arrays the planning kernel reads."""

    hold: np.ndarray  # [n, D] how long op i keeps device d busy (inf: it cannot run there)
    compute: np.ndarray  # [n, D] from its start until its output is usable (inf: cannot run)
    edge_bytes: np.ndarray  # [m]
    edge_given: np.ndarray  # [m] the edge's own transfer time (s), NaN: by bytes
    out_bytes: np.ndarray  # [n] what one SEND_OUTPUT transfer carries
    out_untimed: np.ndarray  # [n] bool: an out-edge of the op has no given time
    out_given: np.ndarray  # [n] the largest given time among its out-edges (-1: none)
    bw: np.ndarray  # [D, D] bandwidth, B/s (placeto: the default link's for every pair); bytes / bw, as the
    #                 simulator divides (a product with 1 / bw rounds differently and flips FIFO ties)
    latency: np.ndarray  # [D, D] (placeto: 0)
    gap: float  # δ2: a channel stays busy this long after each transfer
    send: int  # SEND_*
    channel: int  # CHANNEL_*
    trailing: bool  # the makespan counts trailing δ1 / δ2 (placeto, default); else the end of the last op
    tie: int  # TIE_*


def given_transfer_times(graph: CompGraph, cluster: Cluster) -> np.ndarray:
    """Each edge's fixed transfer time (s; NaN: latency + bytes / bandwidth): the graph's ``transfer_s``, and in
    work-conserving mode with ``copy_occupies_sender`` the link's measured ``copy_curve`` for the others."""
    given = graph.edge_transfer_s
    s = cluster.simulation
    if s.mode == "work_conserving" and s.copy_occupies_sender and cluster.link.copy_curve:
        given = np.where(np.isnan(given), cluster.link.copy_seconds(graph.edge_bytes), given)
    return given


def op_overhead(cluster: Cluster) -> float:
    """How long a device stays busy after an op with non-zero time: δ1 (placeto, default) or ``dispatch_s``."""
    s = cluster.simulation
    return float(s.dispatch_s if s.mode == "work_conserving" else s.op_overhead_s)


def op_times(graph: CompGraph, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """``(hold, compute)`` per op and device (s; NaN: cannot run): compute = ``compute_matrix``, hold = compute
    plus the mode's per-op overhead where compute is non-zero."""
    cm = compute_matrix(graph, cluster)
    return cm + np.where(cm > 0, op_overhead(cluster), 0.0), cm


def plan_inputs(graph: CompGraph, cluster: Cluster, feasible: np.ndarray | None = None) -> PlanInputs:
    """The :class:`PlanInputs` of ``graph`` on ``cluster`` in its simulation mode; ``feasible`` [n, D] (bool)
    marks where each op may go (others get inf), default everywhere it has a time."""
    s = cluster.simulation
    hold, compute = op_times(graph, cluster)
    ok = ~np.isnan(compute) if feasible is None else feasible & ~np.isnan(compute)
    hold = np.ascontiguousarray(np.where(ok, hold, np.inf))
    compute = np.ascontiguousarray(np.where(ok, compute, np.inf))
    nd = cluster.num_devices
    if s.mode == "placeto":
        bw = np.full((nd, nd), float(cluster.link.bandwidth_bytes_per_s))
        lat = np.zeros((nd, nd))
        send, channel = SEND_OUTPUT, CHANNEL_DEVICE
    else:
        bw, lat = cluster.bandwidth, cluster.latency
        if s.mode == "default":
            send, channel = SEND_DEVICE, CHANNEL_DEVICE
        elif s.copy_occupies_sender:
            send, channel = SEND_DEVICE, CHANNEL_SENDER
        else:
            send = SEND_EDGE
            channel = {"none": CHANNEL_NONE, "per_device": CHANNEL_DEVICE, "per_link": CHANNEL_LINK}[s.contention]
    # every array a fresh, writable copy: whether a cluster's or a graph's arrays are read-only varies (presets,
    # placeto's own bandwidth matrix, a copy curve), and each variant would make numba compile the planning kernel
    # once more (about 20 s) instead of loading the one placelab.warmup compiled
    bw = np.array(bw, dtype=np.float64, order="C")
    lat = np.array(lat, dtype=np.float64, order="C")
    given = np.array(given_transfer_times(graph, cluster), dtype=np.float64, order="C")
    timed = ~np.isnan(given)
    out_untimed = np.zeros(graph.num_ops, dtype=bool)
    out_untimed[graph.edge_src[~timed]] = True
    out_given = np.full(graph.num_ops, -1.0)
    np.maximum.at(out_given, graph.edge_src[timed], given[timed])
    return PlanInputs(
        hold=hold, compute=compute, edge_bytes=np.array(graph.edge_bytes, dtype=np.float64, order="C"),
        edge_given=given, out_bytes=np.array(graph.output_bytes, dtype=np.float64, order="C"),
        out_untimed=out_untimed, out_given=out_given, bw=bw, latency=lat,
        gap=float(s.transfer_gap_s) if s.mode != "work_conserving" else 0.0, send=send, channel=channel,
        trailing=s.mode != "work_conserving",
        tie={"placeto": TIE_PRODUCER, "default": TIE_OP}.get(s.mode, TIE_EVENT))
