"""GDP (Zhou et al. 2019): its hyper-parameters, each with the source of its default (torch-free).

Sources: the DOPPLER paper, which ran GDP as a baseline ("DOPPLER §6.1"), and the DOPPLER authors' GDP
code and configs (github.com/xinyuyao/Doppler at 87dda0d: ``scheduler/gdp_agent.py``, ``run_placement.py``,
``config_files/run_gdp/*.json``), which give the network and its sizes. The GDP paper (arXiv 1910.01578)
could not be read beyond its abstract, so none of its sections is cited (docs/guide/learned-placers.md,
"Sources").
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.limits import MAX_BATCH, MAX_NET_DEPTH, MAX_NET_WIDTH
from policies.rl.core.config import LearnedConfig, param

__all__ = ["ACTING", "OLD_PROB", "STAGES", "GdpConfig"]

STAGES = ("imitation", "sim")
ACTING = ("epsilon-greedy", "sample")
OLD_PROB = ("policy", "behaviour")

_CODE = "xinyuyao/Doppler@87dda0d"


@dataclass
class GdpConfig(LearnedConfig):
    """GDP's hyper-parameters; each field's metadata cites its default's source."""

    groups: int | None = param(None, "op groups to place (None: every op its own group)",
                               f"the DOPPLER authors' GDP places every node of the graph in one pass "
                               f"({_CODE} run_placement.py:214-216)", low=1)
    stage: str = param("sim", "imitation: Stage I, the critical-path teacher's device per op (DOPPLER eq. 9); "
                       "sim: Stage II, PPO on the simulator's makespans",
                       f"DOPPLER §5 and §6.1 (GDP run like DOPPLER: {_CODE} config_files/run_gdp/"
                       "imitation_learning.json, rl_simulation_learning.json)", choices=STAGES)
    hidden: int = param(64, "width of the GraphSAGE embeddings and of the attention layers",
                        f"{_CODE} scheduler/gdp_agent.py:164 (hidden_dim=64)",
                        low=1, high=MAX_NET_WIDTH)
    sage_layers: int = param(1, "GraphSAGE layers (max-pool aggregation over predecessors and successors)",
                             f"{_CODE} scheduler/gdp_agent.py:47-64 runs one layer", low=1,
                             high=MAX_NET_DEPTH)
    layers: int = param(1, "attention layers of the placement network (each: attention, residual, norm, "
                        "feed-forward 4×hidden, residual, norm)",
                        f"{_CODE} scheduler/gdp_agent.py:87-100 builds one", low=1, high=MAX_NET_DEPTH)
    heads: int = param(4, "attention heads (must divide hidden)", f"{_CODE} scheduler/gdp_agent.py:165",
                       low=1, high=MAX_NET_WIDTH)
    segment: int = param(8, "segment length of the segment-level recurrence (each segment attends to itself and "
                         "to the previous one's states, without gradient)",
                         f"Transformer-XL's segment memory, as {_CODE} scheduler/gdp_agent.py:115, 166 builds it "
                         "(mem_length=8)",
                         low=1, high=MAX_NET_WIDTH)
    positions: bool = param(True, "add a sinusoidal encoding of each group's position in the placement order to "
                            "its embedding (Vaswani et al. 2017)",
                            "ours: Transformer-XL, which the authors' GDP follows, encodes (relative) positions; their "
                            f"code has none ({_CODE} scheduler/gdp_agent.py:103-151), and without one the shards of a "
                            "chainmm layer, alike in every feature, get alike logits (docs/lab/2026-11-26-gdp.md)")
    type_buckets: int = param(64, "op-type embedding rows; a type's name is hashed into one (no vocabulary: a "
                              "graph never seen places as it is)",
                              "ours: the DOPPLER authors' GDP one-hot-encodes the op type, over the 8 types of their "
                              f"graphs ({_CODE} utils.py:60)", low=1, high=MAX_NET_WIDTH)
    superposition: bool = param(True, "GDP's parameter superposition: every placement layer's input is "
                                "multiplied by a learned function of the graph's mean embedding",
                                "ours in form: GDP's abstract names a superposition network for training over "
                                "graphs; the DOPPLER authors' GDP has none, it trains one graph "
                                f"({_CODE} scheduler/gdp_agent.py:68-151)")
    acting: str = param("epsilon-greedy", "epsilon-greedy: each op's argmax device, a uniform one with "
                        "probability ε; sample: each op's device sampled from the policy",
                        f"DOPPLER §6.1 (ε 0.2 → 0 for DOPPLER and GDP); {_CODE} scheduler/gdp_agent.py:189-196. "
                        "acting=sample samples from the policy", choices=ACTING)
    baseline_window: int = param(0, "episodes the advantage's baseline averages (0: all previous ones)",
                                 "DOPPLER §4.1 and the authors' GDP: the running mean of all previous makespans; "
                                 "a window is ours, an option", low=0, high=100_000)
    old_prob: str = param("policy", "the probability PPO's ratio divides by: policy (π_old of the chosen device, as "
                          "the authors' code takes its log-probabilities) or behaviour (the ε-greedy choice's own "
                          "probability, (1 − ε)·[argmax] + ε / feasible devices: importance weighting)",
                          "ours: deviation 2 of policies/rl/gdp/agent.py (the authors' code divides by the policy's, "
                          f"{_CODE} scheduler/gdp_agent.py:199); with acting=sample both are π_old",
                          choices=OLD_PROB)
    epsilon: float = param(0.2, "ε of epsilon-greedy acting in Stage II, decayed linearly to epsilon_final",
                           f"DOPPLER §6.1; {_CODE} config_files/run_gdp/rl_simulation_learning.json:6",
                           low=0.0, high=1.0)
    epsilon_final: float = param(0.0, "ε at the end of decay_episodes",
                                 f"DOPPLER §6.1; {_CODE} run_placement.py:129, 196 (decays to 0)",
                                 low=0.0, high=1.0)
    epsilon_imitation: float = param(1.0, "ε at the start of Stage I (only what the curve records: the imitation "
                                     "loss does not depend on the placement sampled)",
                                     "DOPPLER §5 gives none; the authors' GDP imitation config sets 1.0 "
                                     f"({_CODE} config_files/run_gdp/imitation_learning.json:6)", low=0.0, high=1.0)
    decay_episodes: int | None = param(None, "episodes over which ε decays (None: the training's episode budget)",
                                       f"DOPPLER §6.1; {_CODE} run_placement.py:129 (over num_episode)", low=1)
    batch: int = param(1, "episodes per update",
                       f"{_CODE} run_placement.py:159-165, 258 (one episode, then its update)", low=1,
                       high=MAX_BATCH)
    ppo_epochs: int = param(4, "PPO sample reuse: each update's loss is the clipped surrogate of its own episodes "
                            "and of the previous ppo_epochs − 1 updates' (1: the plain policy gradient)",
                            "ours: PPO (our reading of GDP, unchecked against its text), whose epochs per batch are "
                            "3–10 in Schulman et al. 2017 §6; the authors' GDP code updates once per episode "
                            "(REINFORCE)", low=1, high=64)
    ppo_clip: float = param(0.2, "PPO's clip ε of the probability ratio",
                            "ours: Schulman et al. 2017 §6 (ε = 0.2, their best)", low=0.0, high=1.0)
    lr: float = param(1e-4, "Adam learning rate, decayed linearly to lr_final (equal by default: constant)",
                      f"DOPPLER §6.1 (initial value for GDP); {_CODE} config_files/run_gdp/"
                      "rl_simulation_learning.json:4", low=1e-12)
    lr_final: float = param(1e-4, "learning rate at the end of the budget",
                            "the authors' code, not DOPPLER §6.1's text (1e-4 → 1e-7 for GDP; --param lr_final=1e-7):"
                            f" the decay is assigned to the optimiser's `lr` attribute ({_CODE} "
                            "scheduler/gdp_agent.py:221-222), which Adam never reads, so it steps at 1e-4",
                            low=0.0)
    entropy: float = param(1e-2, "entropy weight β (the mean over op groups of the device choice's entropy)",
                           "DOPPLER §6.1 (\"1e-2 for all RL methods\"); the authors' GDP config has 0 "
                           f"({_CODE} config_files/run_gdp/rl_simulation_learning.json:10)", low=0.0)
    entropy_final: float = param(1e-2, "entropy weight at the end of the budget", "DOPPLER §6.1 (one value)",
                                 low=0.0)
    clip_grad: float = param(0.0, "gradient-norm clip (0: no clipping)",
                             f"{_CODE} scheduler/gdp_agent.py:245-247 (backward, then the Adam step, unclipped)",
                             low=0.0)
    reward_unit_s: float = param(1e-3, "the time unit of the advantage (running mean − makespan, s)",
                                 f"{_CODE} run_placement.py:243-250: the simulator's milliseconds "
                                 "(DOPPLER §4.1)", low=1e-12)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hidden % self.heads:
            raise ValueError(f"parameter 'heads' must divide hidden ({self.hidden}), got {self.heads}")
