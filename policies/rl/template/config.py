"""The toy placer's hyper-parameters (every learned placer's fields come from ``LearnedConfig``)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.limits import MAX_NET_WIDTH
from policies.rl.core.config import LearnedConfig, param


@dataclass
class TemplateConfig(LearnedConfig):
    """One field per knob, each with its default's source (here: ours, the toy has no paper)."""

    buckets: int = param(8, "topological-position buckets a group is described by", "ours: the toy's one feature",
                         low=1, high=MAX_NET_WIDTH)
    samples: int = param(8, "placements sampled per update; their mean reward is the baseline",
                         "ours: as Mirhoseini §3.1's K samples", low=2)
    lr: float = param(0.1, "Adam learning rate, decayed linearly to lr_final", "ours: a linear policy", low=1e-12)
    lr_final: float = param(0.01, "learning rate at the end of the budget", "ours: lr / 10", low=0.0)
    clip_grad: float = param(0.0, "gradient-norm clip (0: no clipping)", "ours: none needed", low=0.0)
