"""the RNN placer of Mirhoseini et al. 2017: its hyper-parameters, each with the source of its default (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.limits import MAX_BATCH, MAX_NET_WIDTH
from policies.rl.core.config import LearnedConfig, param

__all__ = ['RNNConfig']


@dataclass
class RNNConfig(LearnedConfig):
    """The RNN placer's hyper-parameters; each field's metadata cites its default's source."""

    hidden: int = param(512, "bi-LSTM width, both directions together", "Placeto App. A.7: \"hidden size of 512 "
                        "units\" for the RNN baseline", low=2, high=MAX_NET_WIDTH)
    type_dim: int = param(32, "op-type embedding size", "ours: Mirhoseini §3.2 \"tunable embedding vector\", size "
                          "not given", low=1, high=MAX_NET_WIDTH)
    device_dim: int = param(32, "device embedding fed to the next decoder step", "ours: Mirhoseini §3.2, size not "
                            "given", low=1, high=MAX_NET_WIDTH)
    attention: int = param(64, "Bahdanau attention units", "ours: not given; the scores cost K·groups²·units per "
                           "update, so below the hidden size", low=1, high=MAX_NET_WIDTH)
    shape_len: int = param(8, "outgoing tensor sizes kept per group", "Mirhoseini §3.2 \"fixed-size zero-padded "
                           "list\" (length not given)", low=0, high=MAX_NET_WIDTH)
    samples: int = param(8, "K placements per update", "Mirhoseini §3.4: 4 or 8 workers per controller", low=1,
                         high=MAX_BATCH)
    baseline_decay: float = param(0.95, "decay of the moving-average baseline B", "ours: Mirhoseini §3.1 gives "
                                  "none", low=0.0, high=0.999999)
    baseline_init: str = param("first", "B's first value: the mean reward of the graph's first update, or the "
                               "failing signal", "ours: deviation 6 (Mirhoseini §3.1 starts at the failing signal)",
                               choices=("first", "failing"))
    failing_grace_steps: int = param(5000, "updates after which failing placements are skipped",
                                     "Mirhoseini §3.1 (\"after 5,000 steps\")", low=0)
    normalize_advantages: bool = param(True, "divide the advantages by the standard deviation of the update's "
                                       "rewards", "ours: deviation 5 of the module docstring")
    max_groups: int | None = param(None, "adjacency one-hot length (None: the most groups among the training "
                                   "graphs)", "Mirhoseini §3.2", low=1)
    vocab: list[str] | None = param(None, "op types with an embedding (None: those of the training graphs)",  # noqa: RUF009 -- a field()
                                    "Mirhoseini §3.2")
