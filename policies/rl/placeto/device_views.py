"""Placeto's network scoring every device alike (``devices=shared``, the default; ours, not the paper's).

The authors' network (:mod:`policies.rl.placeto.sweep_net`) reads where each group sits as a one-hot
over the devices, with its own input weights per device, and ends in an output layer with one row
per device (``mp_progressive_nn.py:94-96``). A rule it learns for one device ("join the device
your parents are on") must be learned again for every other device, from the states where that
device happens to be the one in question. On identical devices a placement and its renaming take
the same time, and the network does not know that.

Here one copy of the authors' network scores each device from that device's view of the state:
the group columns of :func:`policies.rl.placeto.state.sweep_features` (run time, output size,
visits, current flag, start time), the one-hot replaced by a single column ("this group is on
device d"), and device d's speed and memory over the cluster's largest in two more columns. Its
D scores are the logits; the mask is applied as before. Renaming devices with equal descriptors
renames the logits (the policy is permutation-equivariant over them); devices that differ are
told apart by their descriptors and the mask. Device-to-device links are not among the
descriptors: on a cluster whose links differ (NVLink islands), devices are told apart only by
speed and memory. DOPPLER's placement policy scores devices with shared weights in the same way
(Yao et al., §4, App. E).

Why: on ``gen:chainmm`` / ``p100x4`` the authors' output layer left the trained policy's greedy
placement worse than a typical random one and its best no better than random search's; scored
this way, the same training beats random search (docs/lab/2026-11-28-placeto-chainmm-controls.md).

Cost: every state is scored D times. States of one graph go through the network once as D·S
states; a disjoint union of several graphs (:func:`policies.rl.placeto.state.union_group`) once
per device.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from policies.rl.placeto.sweep_net import GROUP_COLUMNS, SweepGroup, SweepNet

__all__ = ["VIEW_COLUMNS", "SharedDeviceSweepNet", "device_view"]

#: One device's view: the group columns, "on this device", the device's speed and memory.
VIEW_COLUMNS = GROUP_COLUMNS + 1 + 2


def device_view(x: torch.Tensor, devices: torch.Tensor, d: int) -> torch.Tensor:
    """Device ``d``'s view of features ``x`` (..., N, GROUP_COLUMNS + D): the group columns, whether
    each group is on d, and d's descriptors (``devices``, (D, 2)) in every row."""
    desc = devices[d].to(x.dtype).expand(*x.shape[:-1], devices.shape[1])
    return torch.cat([x[..., :GROUP_COLUMNS], x[..., GROUP_COLUMNS + d:GROUP_COLUMNS + d + 1], desc], dim=-1)


class SharedDeviceSweepNet(SweepNet):
    """The authors' network with one output, applied to every device's view (module docstring);
    ``forward(batch)`` gives masked device logits, shape (S, D), as :class:`SweepNet` does."""

    def __init__(self, num_devices: int, *, variant: str = "full") -> None:
        super().__init__(1, VIEW_COLUMNS, variant=variant)
        self.num_devices = num_devices

    def _group(self, g: SweepGroup) -> torch.Tensor:
        d, score = self.num_devices, super()._group
        if g.devices is None:
            raise ValueError("devices=shared needs each device's descriptors on the batch (SweepGroup.devices)")
        if g.members is None:  # S states of one graph: the D views as D·S states, device-major
            s = len(g.current)
            views = torch.cat([device_view(g.x, g.devices, k) for k in range(d)])
            stacked = replace(g, x=views, pools=g.pools.repeat(1, d, 1), current=g.current.repeat(d),
                              mask=g.mask.T.reshape(-1, 1))
            return score(stacked).view(d, s).T
        return torch.cat([score(replace(g, x=device_view(g.x, g.devices, k), mask=g.mask[:, k:k + 1]))
                          for k in range(d)], dim=1)
