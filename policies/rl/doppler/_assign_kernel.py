"""Compiled ASSIGN loop (numba) for :func:`policies.rl.doppler.rollout.assign`, and the running estimate's steps.

Private: :mod:`policies.rl.doppler.rollout` (the episode) and
:class:`policies.rl.doppler.features.EstimatedSchedule` (the estimate, op by op) are the API; both run
these kernels, so the teacher, the features and the learned policies' episodes share one implementation.
Kernels are cached on disk (``cache=True``) and compiled by ``make setup`` (``placelab/warmup.py``).

The rules are those of the modules above (Yao et al. 2025, §4.1, App. E.2): a step selects an op among the
candidates (SEL's argmax, or the largest b-level without SEL), computes the device features of the running
list-scheduling estimate, picks a device (PLC's argmax over the allowed devices, or the earliest start without
PLC) and places the op at its earliest start there. ε-greedy exploration takes its draws from ``u`` (steps ×
4 uniforms: SEL's test and choice, PLC's test and choice), so an episode is a function of its inputs. Ties
in an argmax or argmin go to the lower index, as numpy's do.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_TIE = 1e-12


@njit(cache=True)
def earliest_start(v, pred_ptr, pred_idx, pred_edge, given, edge_bytes, bw_inv, latency, device, finish, free,
                   out):
    """``out`` (D,) ← when v could start on each device: its inputs have arrived and the device is free.

    An input from u arrives on u's device when u finishes, elsewhere after the edge's given transfer time
    (``given``; NaN: none) or latency + bytes / bandwidth of the link from u's device."""
    nd = free.shape[0]
    for d in range(nd):
        out[d] = free[d]
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[k]
        e = pred_edge[k]
        du = device[u]
        fu = finish[u]
        for d in range(nd):
            if d == du:
                arrive = fu
            elif given[e] == given[e]:
                arrive = fu + given[e]
            else:
                arrive = fu + edge_bytes[e] * bw_inv[du, d] + latency[du, d]
            if arrive > out[d]:
                out[d] = arrive


@njit(cache=True)
def device_features(v, pred_ptr, pred_idx, pred_edge, given, edge_bytes, bw_inv, latency, duration, device,
                    start, finish, free, load, x, est):
    """X_D of op v, raw (D × 5 into ``x``), and its earliest start per device (into ``est``), App. E.2:
    load placed on d; compute of v's predecessors on d; their earliest start and latest end on d (0 where
    none); v's earliest start on d."""
    nd = free.shape[0]
    for d in range(nd):
        x[d, 0] = load[d]
        x[d, 1] = 0.0
        x[d, 2] = np.inf
        x[d, 3] = 0.0
    for k in range(pred_ptr[v], pred_ptr[v + 1]):
        u = pred_idx[k]
        du = device[u]
        x[du, 1] += duration[u, du]
        x[du, 2] = min(x[du, 2], start[u])
        x[du, 3] = max(x[du, 3], finish[u])
    earliest_start(v, pred_ptr, pred_idx, pred_edge, given, edge_bytes, bw_inv, latency, device, finish, free, est)
    for d in range(nd):
        if x[d, 2] == np.inf:
            x[d, 2] = 0.0
        x[d, 4] = est[d]


@njit(cache=True)
def place_op(v, d, est_d, duration, device, start, finish, free, load):
    """Commit op v to device d, starting at its earliest start ``est_d`` there."""
    dur = duration[v, d]
    device[v] = d
    start[v] = est_d
    finish[v] = est_d + dur
    free[d] = est_d + dur
    load[d] += dur


@njit(cache=True)
def _zscore_columns(x, out):
    """``out`` ← each column of ``x`` as ``(x − mean) / std`` over the rows; a constant column becomes 0."""
    rows, cols = x.shape
    for j in range(cols):
        mean = 0.0
        for i in range(rows):
            mean += x[i, j]
        mean /= rows
        var = 0.0
        for i in range(rows):
            var += (x[i, j] - mean) ** 2
        sd = np.sqrt(var / rows)
        for i in range(rows):
            out[i, j] = (x[i, j] - mean) / sd if sd > 0 else 0.0


@njit(cache=True)
def _ties_max(values, allowed, out):
    """``out`` ← the allowed entries within a relative 1e-12 of the allowed maximum."""
    top = -np.inf
    for i in range(values.shape[0]):
        if allowed[i] and values[i] > top:
            top = values[i]
    bar = top - _TIE * max(1.0, abs(top))
    for i in range(values.shape[0]):
        out[i] = allowed[i] and values[i] >= bar


@njit(cache=True)
def _uniform_pick(flags, u):
    """The index of the ``floor(u · count)``-th set entry of ``flags`` (``count`` of them), for a uniform draw
    ``u`` ∈ [0, 1): each set entry alike likely."""
    count = 0
    for i in range(flags.shape[0]):
        if flags[i]:
            count += 1
    k = min(int(u * count), count - 1)
    for i in range(flags.shape[0]):
        if flags[i]:
            if k == 0:
                return i
            k -= 1
    return -1


@njit(cache=True)
def assign_episode(pred_ptr, pred_idx, pred_edge, succ_ptr, succ_idx, given, edge_bytes, bw_inv, latency,
                   duration, b_level, feasible, op_group, num_groups, use_sel, sel, use_plc, plc_a, plc_a0, plc_c,
                   plc_g, plc_w2, plc_b2, epsilon, u, ops, devs, device, cands, masks, xds, sel_t, plc_t):
    """One ASSIGN episode into ``ops``, ``devs`` (per step), ``device`` (per op) and the per-step records
    ``cands``, ``masks``, ``xds`` (z-scored X_D), ``sel_t`` and ``plc_t`` (the teacher's choices).

    ``use_sel`` / ``use_plc`` False: the critical-path rule decides instead of the policy. PLC's score of
    device d for op v is ``w2 · LeakyReLU(A x_d + a0 + C[v] + Σ_{w on d} G[w]) + b2`` (the split first layer
    of :meth:`policies.rl.doppler.net.PlcPolicy.act_weights`)."""
    n, nd = duration.shape
    hidden = plc_a0.shape[0]
    remaining = np.empty(n, np.int64)
    cand = np.zeros(n, np.bool_)
    for v in range(n):
        remaining[v] = pred_ptr[v + 1] - pred_ptr[v]
        cand[v] = remaining[v] == 0
    start = np.zeros(n)
    finish = np.zeros(n)
    free = np.zeros(nd)
    load = np.zeros(nd)
    for v in range(n):
        device[v] = -1
    group_dev = np.full(num_groups, -1, np.int64)
    acc = np.zeros((nd, hidden))
    x = np.empty((nd, 5))
    xz = np.empty((nd, 5))
    est = np.empty(nd)
    mask = np.empty(nd, np.bool_)
    neg_est = np.empty(nd)
    for t in range(n):
        # SEL: the op
        v = -1
        if use_sel and epsilon > 0 and u[t, 0] < epsilon:
            v = _uniform_pick(cand, u[t, 1])
        else:
            for w in range(n):
                if cand[w] and (v < 0 or (sel[w] > sel[v] if use_sel else b_level[w] > b_level[v])):
                    v = w
        device_features(v, pred_ptr, pred_idx, pred_edge, given, edge_bytes, bw_inv, latency, duration, device,
                        start, finish, free, load, x, est)
        gv = op_group[v]
        for d in range(nd):
            if group_dev[gv] >= 0:
                mask[d] = d == group_dev[gv]
            else:
                mask[d] = feasible[v, d] and duration[v, d] < np.inf
        _zscore_columns(x, xz)
        # PLC: the device
        d_pick = 0
        if not use_plc:
            best = np.inf
            for d in range(nd):
                if mask[d] and est[d] < best:
                    best = est[d]
                    d_pick = d
        elif epsilon > 0 and u[t, 2] < epsilon:
            d_pick = _uniform_pick(mask, u[t, 3])
        else:
            best = -np.inf
            for d in range(nd):
                if not mask[d]:
                    continue
                score = 0.0
                for h in range(hidden):  # x_d's affine term first, then the others, as PlcPolicy adds them
                    pre = 0.0
                    for j in range(5):
                        pre += xz[d, j] * plc_a[h, j]
                    pre = pre + plc_a0[h] + plc_c[v, h] + acc[d, h]
                    score += (pre if pre > 0 else 0.01 * pre) * plc_w2[h]
                score += plc_b2
                if score > best:
                    best = score
                    d_pick = d
        # the records of this step (the teacher's targets: largest b-level, earliest start)
        for w in range(n):
            cands[t, w] = cand[w]
        for d in range(nd):
            masks[t, d] = mask[d]
            for j in range(5):
                xds[t, d, j] = xz[d, j]
            neg_est[d] = -est[d] if mask[d] else -np.inf
        _ties_max(b_level, cand, sel_t[t])
        _ties_max(neg_est, mask, plc_t[t])
        # place v on d_pick at its earliest start
        ops[t] = v
        devs[t] = d_pick
        place_op(v, d_pick, est[d_pick], duration, device, start, finish, free, load)
        group_dev[gv] = d_pick
        if use_plc:
            for h in range(hidden):
                acc[d_pick, h] += plc_g[v, h]
        cand[v] = False
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[k]
            remaining[w] -= 1
            if remaining[w] == 0:
                cand[w] = True
