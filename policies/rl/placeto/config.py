"""Placeto (Addanki et al. 2019): its hyper-parameters, each with the source of its default (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from engine.limits import MAX_BATCH, MAX_NET_DEPTH, MAX_NET_WIDTH
from policies.rl.core.config import LearnedConfig, param

__all__ = ['DEVICE_SCORING', 'NETWORKS', 'VARIANTS', 'PlacetoConfig']

#: §4.3's ablations besides the full network (see :mod:`policies.rl.placeto.net`).
VARIANTS = ("full", "simple-partitioner", "simple-aggregator")
#: The two networks: the authors' code (default) and the paper's §2.2 text.
NETWORKS = ("authors", "paper")
#: How the authors' network scores the devices: one copy for all (default, ours) or one output row each.
DEVICE_SCORING = ("shared", "separate")


@dataclass
class PlacetoConfig(LearnedConfig):
    """Placeto's hyper-parameters; each field's metadata cites its default's source."""

    #: runs trained before the authors' network, and before devices were scored alike
    STORED_DEFAULTS: ClassVar[dict[str, Any]] = {"network": "paper", "devices": "separate"}

    network: str = param("authors", "authors: the authors' code (one sweep each way, sums, Glorot; "
                         "placeto/sweep_net.py); paper: the §2.2 text (k rounds, means; placeto/net.py)",
                         "Placeto's code: mp_progressive_nn.py:44-96, nn_primitives.py:140-184", choices=NETWORKS)
    devices: str = param("shared", "network=authors: shared — one copy of the network scores each device "
                         "from that device's view (whether each group is on it, its speed and memory), so renaming "
                         "identical devices renames the probabilities (placeto/device_views.py); separate — the "
                         "authors' output layer, one row per device",
                         "ours: deviation 7 (the authors: mp_progressive_nn.py:94-96)", choices=DEVICE_SCORING)
    passes: int = param(1, "n: each group re-placed n times per episode", "Placeto App. A.7 (n = 1 or 2)", low=1,
                        high=MAX_BATCH)
    rounds: int = param(4, "network=paper: k message-passing rounds", "Placeto §2.2 (k a tunable hyper-parameter; "
                        "4 or 8)", low=0, high=MAX_NET_DEPTH)
    emb: int = param(8, "network=paper: node embedding size |E|", "Placeto App. A.7", low=1,
                     high=MAX_NET_WIDTH)
    hidden: int = param(8, "network=paper: hidden units d of every f, g, l, h (two layers)", "Placeto App. A.7",
                        low=1, high=MAX_NET_WIDTH)
    head: int = param(16, "network=paper: hidden units of the two-layer policy head", "Placeto App. A.7", low=1,
                      high=MAX_NET_WIDTH)
    variant: str = param("full", "network: full, or a §4.3 ablation", "Placeto §4.3", choices=VARIANTS)
    reward: str = param("intermediate", "intermediate: r_t = R(p_t) − R(p_t+1); terminal: −R(p_T) at the end",
                        "Placeto §2.1, App. A.4 (intermediate: lower variance, Fig. 8a)",
                        choices=("intermediate", "terminal"))
    baseline_window: int = param(10, "k episodes averaged by the per-step baseline", "Placeto App. A.7; the "
                                 "authors' hyperparameters.txt:7", low=1)
    normalize_advantages: bool = param(True, "divide the advantages by their standard deviation over the update",
                                       "ours: deviation 3 of the module docstring")
    discount: float = param(0.5, "γ of the returns (0: each action is credited with its own runtime change only; "
                            "1: with the rest of the episode's)", "ours: deviation 1 (the paper's App. A.1 Eq. 1 and "
                            "the authors' progressive_placer_test.py:168 use 1)", low=0.0, high=1.0)
    batch: int = param(8, "episodes per update, rolled out together", "Placeto App. A.7: 8 synchronous workers",
                       low=1, high=MAX_BATCH)
    init: str = param("fixed-random", "initial placement: one random placement drawn once per graph and kept "
                      "(fixed-random), every group on its first feasible device (single), or a fresh random one "
                      "per episode (random)", "Placeto's code: progressive_placer.py:163, 178-187 (drawn once, before "
                      "the episode loop)", choices=("fixed-random", "single", "random"))
    order: str = param("topological", "order in which the groups are visited", "Placeto §2.1",
                       choices=("topological", "random"))
    lr: float = param(3e-3, "Adam learning rate, decayed linearly to lr_final",
                      "ours: deviation 4 (App. A.7 and the authors' hyperparameters.txt:6: 1e-3 → 1e-4)", low=1e-12)
    lr_final: float = param(3e-4, "learning rate at the end of the budget", "ours: lr / 10, as A.7's range",
                            low=0.0)
    entropy: float = param(3e-3, "entropy weight β, decayed linearly to entropy_final",
                           "ours: deviation 4 (App. A.7 tunes it per model)", low=0.0)
    entropy_final: float = param(1e-4, "entropy weight at the end of the budget", "Placeto App. A.7 (\"a low value\")",
                                 low=0.0)
