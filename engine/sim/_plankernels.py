"""Compiled pieces of the planner's estimator (:mod:`engine.sim.estimator`): when an output is on another device.

Private; used by the list-scheduling kernel (``policies/_listsched_kernels.py``). The rules are the ones
:class:`engine.sim.estimator.PlanInputs` encodes for the cluster's simulation mode. A transfer is *committed* (it
takes its channel, its arrival is recorded) when both ends are known: at once when the producer is placed, for
consumers whose colocation unit is already committed (*eager*, as the simulator sends an output the moment it is
ready), else when the consumer is placed (*lazy*: its channel may by then be promised to later outputs, so the
estimate is later than the simulator's). Before that, data-ready times are estimates with the channels as they
are. Kernels are cached on disk (``cache=True``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine.sim.estimator import (
    CHANNEL_DEVICE,
    CHANNEL_NONE,
    CHANNEL_SENDER,
    SEND_DEVICE,
    SEND_EDGE,
    SEND_OUTPUT,
    TIE_OP,
    TIE_PRODUCER,
)

__all__ = ["Topology", "Transfers", "arrival", "dest", "group_time", "inputs_on", "send_eagerly", "tie",
           "transfers"]




class Topology(NamedTuple):
    """A graph's adjacency (CSR): consumers of op i are ``succ_idx[succ_ptr[i]:succ_ptr[i + 1]]`` along
    ``succ_edge``; producers likewise."""

    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    succ_edge: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    pred_edge: np.ndarray


class Transfers(NamedTuple):
    """The transfer state of one pass: when each channel is free, each committed transfer's arrival (-1: none
    yet) per output, per (output, device) and per edge (with the device it went to), and the latest arrival."""

    chan_free: np.ndarray  # [D * D]
    sent_op: np.ndarray  # [n]
    sent_dev: np.ndarray  # [n, D]
    sent_edge: np.ndarray  # [m]
    sent_edge_dst: np.ndarray  # [m] int64
    last: np.ndarray  # [1]
    seq: np.ndarray  # [n + 1] int64: the order ops were placed in; seq[n] counts them


def transfers(n: int, m: int, nd: int) -> Transfers:
    """A fresh :class:`Transfers` for ``n`` ops, ``m`` edges and ``nd`` devices."""
    return Transfers(np.zeros(nd * nd), np.full(n, -1.0), np.full((n, nd), -1.0), np.full(max(m, 1), -1.0),
                     np.full(max(m, 1), -1, np.int64), np.zeros(1), np.zeros(n + 1, np.int64))


@njit(cache=True, _nrt=False)
def dest(x, dev, unit_dev, op_unit):
    """Op ``x``'s device if it is placed or its unit committed, else -1."""
    return dev[x] if dev[x] >= 0 else unit_dev[op_unit[x]]


@njit(cache=True, _nrt=False)
def group_time(p, a, b, e, cur, commit, tp, pi, dev, unit_dev, op_unit):
    """``(channel seconds, extra flight seconds)`` of the transfer of ``p``'s output from device ``a`` to ``b`` that
    serves edge ``e`` to op ``cur`` (:mod:`engine.sim.estimator`; the rules of simulation.md: placeto takes out_bytes
    / the default bandwidth or the largest given time of its remote edges; default the largest bytes among the
    edges to ``b`` and the largest given time there, latency in flight unless a given time dominates;
    work-conserving the edge's own time, or with sender copies the longest among the edges to ``b``, latency in
    flight). The edges it serves are those to consumers placed (or committed) there; an estimate (not
    ``commit``) reads placeto's over all out-edges and the others' from edge ``e`` alone, so that estimating a
    high fan-out op's input for each of its consumers costs O(1), not O(fan-out)."""
    if pi.send == SEND_EDGE:
        g = pi.edge_given[e]
        t = g if g == g else pi.edge_bytes[e] / pi.bw[a, b] + pi.latency[a, b]
        return t, 0.0
    untimed, bnt, dgt = False, 0.0, -1.0
    if not commit and pi.send == SEND_OUTPUT:
        untimed, dgt = pi.out_untimed[p], pi.out_given[p]
    elif not commit:
        g = pi.edge_given[e]
        if g == g:
            dgt = g
        else:
            untimed, bnt = True, pi.edge_bytes[e]
    else:
        for k in range(tp.succ_ptr[p], tp.succ_ptr[p + 1]):
            x = tp.succ_idx[k]
            dx = dest(x, dev, unit_dev, op_unit)
            if x != cur and (dx < 0 or dx == a or (pi.send == SEND_DEVICE and dx != b)):
                continue
            ek = tp.succ_edge[k]
            g = pi.edge_given[ek]
            if g == g:
                dgt = max(dgt, g)
            else:
                untimed = True
                bnt = max(bnt, pi.edge_bytes[ek])
    if pi.send == SEND_OUTPUT:
        x = pi.out_bytes[p] / pi.bw[a, b] if untimed else 0.0
        return max(x, dgt), pi.latency[a, b]
    x = bnt / pi.bw[a, b] if untimed else 0.0
    if pi.channel == CHANNEL_SENDER:
        return max(x, dgt), pi.latency[a, b]
    lat = pi.latency[a, b] if untimed else 0.0
    if dgt > x + lat:  # the simulator's rule for a transfer serving timed and untimed edges
        return dgt, 0.0
    if dgt > x:
        return dgt, lat - (dgt - x)
    return x, lat


@njit(cache=True, _nrt=False)
def arrival(p, a, b, e, cur, commit, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail):
    """When ``p``'s output (on ``a``, usable at ``out_t[p]``) is on device ``b`` for op ``cur`` along edge
    ``e``: the committed transfer's arrival, or one started when its channel is next free; with ``commit`` the
    transfer is made (it takes the channel, its arrival is recorded)."""
    if pi.send == SEND_OUTPUT:
        if tr.sent_op[p] >= 0:
            return tr.sent_op[p]
    elif pi.send == SEND_DEVICE:
        if tr.sent_dev[p, b] >= 0:
            return tr.sent_dev[p, b]
    elif tr.sent_edge[e] >= 0 and tr.sent_edge_dst[e] == b:
        return tr.sent_edge[e]
    busy, extra = group_time(p, a, b, e, cur, commit, tp, pi, dev, unit_dev, op_unit)
    ch = a if pi.channel == CHANNEL_DEVICE else a * len(avail) + b
    ts = out_t[p]
    if pi.channel == CHANNEL_SENDER:
        ts = max(ts, avail[a])
    elif pi.channel != CHANNEL_NONE:
        ts = max(ts, tr.chan_free[ch])
    # the lands in the simulator's float order: a sender's copy lands its latency after it ends; a send on a
    # channel ``extra + busy`` after its start (_core.send); per edge its own time after it (extra 0)
    arrive = ts + busy + extra if pi.channel == CHANNEL_SENDER else ts + extra + busy
    if commit:
        if pi.channel == CHANNEL_SENDER:
            avail[a] = ts + busy
        elif pi.channel != CHANNEL_NONE:
            tr.chan_free[ch] = ts + busy + pi.gap
            tr.last[0] = max(tr.last[0], ts + busy + pi.gap)
        if pi.send == SEND_OUTPUT:
            tr.sent_op[p] = arrive
        elif pi.send == SEND_DEVICE:
            tr.sent_dev[p, b] = arrive
        else:
            tr.sent_edge[e] = arrive
            tr.sent_edge_dst[e] = b
        tr.last[0] = max(tr.last[0], arrive)
    return arrive


@njit(cache=True, _nrt=False)
def send_eagerly(i, d, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail):
    """Op ``i`` is placed on ``d``: its output goes now to every device where a consumer's unit is committed,
    as the simulator sends it the moment it is ready (per device in device order; per edge, or a sender's copies,
    in out-edge order)."""
    nd = len(avail)
    if pi.send == SEND_EDGE or pi.channel == CHANNEL_SENDER:  # in out-edge order (a sender copies so)
        for k in range(tp.succ_ptr[i], tp.succ_ptr[i + 1]):
            x = tp.succ_idx[k]
            b = dest(x, dev, unit_dev, op_unit)
            if b >= 0 and b != d:
                arrival(i, d, b, tp.succ_edge[k], x, True, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)
        return
    for b in range(nd):
        if b == d:
            continue
        for k in range(tp.succ_ptr[i], tp.succ_ptr[i + 1]):
            x = tp.succ_idx[k]
            if dest(x, dev, unit_dev, op_unit) == b:
                arrival(i, d, b, tp.succ_edge[k], x, True, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)
                break


@njit(cache=True, _nrt=False)
def inputs_on(i, d, commit, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail):
    """When every input of op ``i`` is on device ``d`` (its producers placed); with ``commit`` the transfers
    are made."""
    r = 0.0
    for k in range(tp.pred_ptr[i], tp.pred_ptr[i + 1]):
        p = tp.pred_idx[k]
        a = dev[p]
        t = out_t[p] if a == d else arrival(p, a, d, tp.pred_edge[k], i, commit, tp, pi, tr, dev, unit_dev,
                                             op_unit, out_t, avail)
        if t > r:
            r = t
    return r


@njit(cache=True, _nrt=False)
def tie(s, d, r, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail):
    """Op ``s``'s place among the ops whose inputs are all on device ``d`` at the same instant ``r``, by the
    mode's rule (:data:`engine.sim.estimator.TIE_OP` ...; ``policies._listsched_events.last_input`` orders
    work-conserving events without sender copies): the op index, or the largest producer key among the inputs
    arriving at ``r`` (placeto's, or the producers' placement order), then the op index."""
    n = len(dev)
    if pi.tie == TIE_OP:
        return float(s)
    best = -1
    for k in range(tp.pred_ptr[s], tp.pred_ptr[s + 1]):
        p = tp.pred_idx[k]
        local = dev[p] == d
        t = out_t[p] if local else arrival(p, dev[p], d, tp.pred_edge[k], s, False, tp, pi, tr, dev, unit_dev,
                                           op_unit, out_t, avail)
        if t < r:
            continue
        if pi.tie != TIE_PRODUCER:  # work-conserving with sender copies: the order its producers were placed in
            key = tr.seq[p]
        else:  # an input created within its instant (a zero-time op or transfer) comes after the ones queued
            if local:  # before it, in the order it was made (the placeto kernel's tie_now)
                now = pi.compute[p, d] == 0.0
            else:
                busy, extra = group_time(p, dev[p], d, tp.pred_edge[k], s, False, tp, pi, dev, unit_dev, op_unit)
                now = busy + extra == 0.0
            key = n + tr.seq[p] if now else p
        if key > best:
            best = key
    return float(best) * n + s
