"""DOPPLER's ASSIGN episode (Yao et al. 2025, Fig. 2, §4.1) in numpy: one op and one device per step.

The networks run once per episode (§4.3); a step then costs a few small vector operations:
SEL's scores are static per episode, and PLC's first layer splits into per-op, per-device and
per-placed-op terms (:meth:`policies.rl.doppler.net.PlcPolicy.act_weights`). Where a policy
is not given, its critical-path rule decides (the teacher, and the ablations of Table 3):
SEL → the candidate with the largest b-level, PLC → the device where the op starts earliest
under the running estimate; ties go to the lower index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.rl.doppler.features import DopplerGraph, EstimatedSchedule, zscore

__all__ = ["AssignEpisode", "assign"]

_TIE = 1e-12


@dataclass
class AssignEpisode:
    """One episode: per step t, the op and device chosen and (when recorded) the states.

    cand (T × n) and dev_mask (T × D): the candidates and allowed devices; x_d (T × D × 5)
    the z-scored device features; sel_target / plc_target the teacher's choices (§5 eq. 9).
    """

    ops: np.ndarray
    devs: np.ndarray
    op_device: np.ndarray
    op_group: np.ndarray
    cand: np.ndarray | None = None
    dev_mask: np.ndarray | None = None
    x_d: np.ndarray | None = None
    sel_target: np.ndarray | None = None
    plc_target: np.ndarray | None = None

    def group_devices(self, num_groups: int) -> np.ndarray:
        """The device of every op group (all members of a group share it)."""
        out = np.zeros(num_groups, dtype=np.int64)
        out[self.op_group] = self.op_device
        return out


def _ties_max(values: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Boolean mask of the allowed entries within a relative 1e-12 of the allowed maximum."""
    top = values[allowed].max()
    return allowed & (values >= top - _TIE * max(1.0, abs(top)))


def assign(dg: DopplerGraph, op_feasible: np.ndarray, op_group: np.ndarray, sel: np.ndarray | None,
            plc: dict[str, np.ndarray] | None, rng: np.random.Generator, epsilon: float, *,
            record: bool) -> AssignEpisode:
    """Run ASSIGN. ``sel``: SEL's scores per op (None: largest b-level); ``plc``: PLC's split
    weights (None: earliest start). ε-greedy on each learned policy with probability ``epsilon``."""
    g = dg.graph
    n, nd = dg.duration.shape
    remaining = np.diff(g.pred.ptr).astype(np.int64)
    cand = remaining == 0
    est = EstimatedSchedule(dg)
    group_dev = np.full(int(op_group.max()) + 1 if n else 0, -1, dtype=np.int64)
    ops = np.empty(n, dtype=np.int64)
    devs = np.empty(n, dtype=np.int64)
    if record:
        cands = np.zeros((n, n), dtype=bool)
        masks = np.zeros((n, nd), dtype=bool)
        xds = np.zeros((n, nd, 5), dtype=np.float32)
        sel_t = np.zeros((n, n), dtype=bool)
        plc_t = np.zeros((n, nd), dtype=bool)
    acc = np.zeros((nd, len(plc["a0"]))) if plc is not None else None
    for t in range(n):
        cidx = np.flatnonzero(cand)
        if sel is None:
            v = int(cidx[np.argmax(dg.b_level[cidx])])
        elif epsilon > 0 and rng.random() < epsilon:
            v = int(cidx[rng.integers(len(cidx))])
        else:
            v = int(cidx[np.argmax(sel[cidx])])
        x, est_v = est.features(v)
        gv = op_group[v]
        if group_dev[gv] >= 0:
            mask = np.zeros(nd, dtype=bool)
            mask[group_dev[gv]] = True
        else:
            mask = op_feasible[v] & np.isfinite(dg.duration[v])
        xz = zscore(x)
        if plc is None:
            d = int(np.argmin(np.where(mask, est_v, np.inf)))
        elif epsilon > 0 and rng.random() < epsilon:
            allowed = np.flatnonzero(mask)
            d = int(allowed[rng.integers(len(allowed))])
        else:
            pre = xz @ plc["A"].T + plc["a0"] + plc["C"][v] + acc
            score = np.where(pre > 0, pre, 0.01 * pre) @ plc["w2"] + plc["b2"][0]
            d = int(np.argmax(np.where(mask, score, -np.inf)))
        if record:
            cands[t] = cand
            masks[t] = mask
            xds[t] = xz
            sel_t[t] = _ties_max(dg.b_level, cand)
            plc_t[t] = _ties_max(-np.where(mask, est_v, np.inf), mask)
        ops[t], devs[t] = v, d
        est.place(v, d, est_v[d])
        group_dev[gv] = d
        if acc is not None:
            acc[d] += plc["G"][v]
        cand[v] = False
        succ = g.succ.idx[g.succ.ptr[v]:g.succ.ptr[v + 1]]
        np.subtract.at(remaining, succ, 1)
        cand[succ[remaining[succ] == 0]] = True
    ro = AssignEpisode(ops, devs, est.device.copy(), op_group)
    if record:
        ro.cand, ro.dev_mask, ro.x_d, ro.sel_target, ro.plc_target = cands, masks, xds, sel_t, plc_t
    return ro
