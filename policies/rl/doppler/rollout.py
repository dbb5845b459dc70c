"""DOPPLER's ASSIGN episode (Yao et al. 2025, Fig. 2, §4.1): one op and one device per step.

The networks run once per episode (§4.3); a step then costs a few small vector operations:
SEL's scores are static per episode, and PLC's first layer splits into per-op, per-device and
per-placed-op terms (:meth:`policies.rl.doppler.net.PlcPolicy.act_weights`). The steps run in one
compiled loop (:mod:`policies.rl.doppler._assign_kernel`). Where a policy is not given, its
critical-path rule decides (the teacher, and the ablations of Table 3): SEL → the candidate with the
largest b-level, PLC → the device where the op starts earliest under the running estimate; ties go to
the lower index. ε-greedy exploration draws four uniforms per step from the episode's generator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.rl.doppler import _assign_kernel as _k
from policies.rl.doppler.features import DopplerGraph, owned

__all__ = ["AssignEpisode", "assign"]


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


def assign(dg: DopplerGraph, op_feasible: np.ndarray, op_group: np.ndarray, sel: np.ndarray | None,
           plc: dict[str, np.ndarray] | None, rng: np.random.Generator, epsilon: float, *,
           record: bool) -> AssignEpisode:
    """Run ASSIGN. ``sel``: SEL's scores per op (None: largest b-level); ``plc``: PLC's split
    weights (None: earliest start). ε-greedy on each learned policy with probability ``epsilon``."""
    n, nd = dg.duration.shape
    num_groups = int(op_group.max()) + 1 if n else 0
    u = rng.random((n, 4)) if epsilon > 0 else np.zeros((n, 4))
    if plc is None:
        plc = {"A": np.zeros((0, 5)), "a0": np.zeros(0), "C": np.zeros((n, 0)), "G": np.zeros((n, 0)),
               "w2": np.zeros(0), "b2": np.zeros(1)}
        use_plc = False
    else:
        use_plc = True
    ops, devs, device = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    cands, masks = np.zeros((n, n), bool), np.zeros((n, nd), bool)
    xds = np.zeros((n, nd, 5), np.float32)
    sel_t, plc_t = np.zeros((n, n), bool), np.zeros((n, nd), bool)
    _k.assign_episode(*dg.kernel_arrays, owned(op_feasible, bool), owned(op_group, np.int64), num_groups,
                      sel is not None, owned(sel if sel is not None else np.zeros(n)), use_plc,
                      *(owned(plc[k]) for k in ("A", "a0", "C", "G", "w2")),
                      float(plc["b2"][0]), float(epsilon), u, ops, devs, device, cands, masks, xds, sel_t, plc_t)
    ro = AssignEpisode(ops, devs, device, op_group)
    if record:
        ro.cand, ro.dev_mask, ro.x_d, ro.sel_target, ro.plc_target = cands, masks, xds, sel_t, plc_t
    return ro
