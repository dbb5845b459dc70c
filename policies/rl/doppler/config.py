"""DOPPLER (Yao et al. 2025): its hyper-parameters, each with the source of its default (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import quote
from engine.limits import MAX_BATCH, MAX_NET_DEPTH, MAX_NET_WIDTH
from policies.rl.core.config import LearnedConfig, param

__all__ = ['STAGES', 'VARIANTS', 'DopplerConfig', 'stage_reward']

STAGES = ("imitation", "sim", "real")
VARIANTS = ("full", "sel-only", "plc-only")


@dataclass
class DopplerConfig(LearnedConfig):
    """DOPPLER's hyper-parameters; each field's metadata cites its default's source."""

    groups: int | None = param(None, "op groups to place (None: every op its own group)",
                               "DOPPLER §4.1: one MDP step per op of the graph", low=1)
    stage: str = param("sim", "imitation: Stage I (eq. 9); sim: Stage II, REINFORCE on the simulator (eq. 10); "
                       "real: Stage III, the makespan measured by a real executor", "DOPPLER §5", choices=STAGES)
    variant: str = param("full", "full, or an ablation: sel-only (PLC → earliest-start device), plc-only "
                         "(SEL → largest b-level)", "DOPPLER §6.2 Q2, Table 3", choices=VARIANTS)
    hidden: int = param(128, "width of the MPNN embeddings and of the feature projections",
                        "DOPPLER §4.2 (authors' setup: 128)", low=1, high=MAX_NET_WIDTH)
    rounds: int = param(6, "K message-passing rounds with shared weights", "DOPPLER §4.2 eq. 2 (authors' setup: 6)",
                        low=0, high=MAX_NET_DEPTH)
    edge_hidden: int = param(128, "hidden width of NNConv's edge network",
                             "the authors' code (§4.2 does not give it): dgllife MPNNGNN(edge_hidden_feats=hidden1), "
                             "hidden1 = 128 (xinyuyao/Doppler@87dda0d scheduler/rl_agent.py:15, 26, 99, 107)", low=1,
                             high=MAX_NET_WIDTH)
    head: int = param(64, "hidden width of the SEL and PLC heads (4·hidden → head → 1)",
                      "DOPPLER §4.2 eq. 3–7 (authors' setup: 512 → 64 → 1)", low=1,
                      high=MAX_NET_WIDTH)
    lr: float = param(1e-4, "Adam learning rate, decayed linearly to lr_final (equal by default: constant)",
                      "DOPPLER §6.1 (initial value); the authors' code trains at it: Adam(lr=learning_rate) "
                      "(xinyuyao/Doppler@87dda0d scheduler/rl_agent.py:201-204), learning_rate 0.0001 in "
                      "config_files/run_doppler/rl_simulation_learning.json:4", low=1e-12)
    lr_final: float = param(1e-4, "learning rate at the end of the budget",
                            "the authors' code, not §6.1's text (\"1e-4 linearly decreasing to 1e-7 works best for "
                            "all versions of DOPPLER\"; --param lr_final=1e-7): the code's decay to 0 "
                            "(run_placement.py:59) is assigned to the optimisers' `lr` attribute "
                            "(scheduler/rl_agent.py:336-338), which Adam never reads (it reads param_groups), so "
                            "its steps stay at 1e-4", low=0.0)
    clip_grad: float = param(0.0, "gradient-norm clip (0: no clipping)",
                             "the authors' code (§6.1 gives no clip): backward() then the Adam step, unclipped "
                             "(xinyuyao/Doppler@87dda0d scheduler/rl_agent.py:381-382, 413-414); the shared 1.0 "
                             "fired on every update, so an update's size no longer depended on its advantage "
                             "(issue #32)", low=0.0)
    entropy: float = param(0.0, "entropy weight β (Stages II and III; Stage I's loss has none)",
                           "the authors' code, not §6.1's text (\"1e-2 for all RL methods\"; --param entropy=1e-2 "
                           "entropy_final=1e-2): entropy_weight 0.0 in xinyuyao/Doppler@87dda0d "
                           "config_files/run_doppler/rl_simulation_learning.json:10 and rl_real_sys_learning.json:10; "
                           "measured on the Table 2 graphs, 1e-2 let Stage II's greedy placement drift up "
                           "(docs/lab/2026-11-29-doppler-stage2-discount-entropy.md)", low=0.0)
    entropy_final: float = param(0.0, "entropy weight at the end of the budget",
                                 "the authors' code: one constant entropy_weight (rl_simulation_learning.json:10)",
                                 low=0.0)
    discount: float = param(1.0, "γ: step t of an episode's T steps gets γ^(T−1−t)·A (1: every step the episode's "
                            "advantage A)", "DOPPLER §4.1 eq. 10 (A on every step); the authors' code puts A on the "
                            "last step and discounts it with 0.99 (xinyuyao/Doppler@87dda0d "
                            "scheduler/rl_agent.py:334, 352-356): --param discount=0.99; measured on the Table 2 "
                            "graphs, 0.99 made Stage II's greedy placement collapse (≥ 1.1× its start) in 3 of 10 "
                            "trainings, 1 in none of 10 (docs/lab/2026-11-29-doppler-stage2-discount-entropy.md)",
                            low=0.0, high=1.0)
    epsilon: float = param(0.2, "ε of the ε-greedy policies (Stages II, III), decayed linearly to epsilon_final",
                           "DOPPLER §6.1", low=0.0, high=1.0)
    epsilon_final: float = param(0.0, "ε at the end of decay_episodes", "DOPPLER §6.1", low=0.0, high=1.0)
    epsilon_imitation: float = param(1.0, "ε at the start of Stage I (the learner's rollouts)",
                                     "ours: issue #13 (§5 does not give it)", low=0.0, high=1.0)
    decay_episodes: int | None = param(None, "episodes over which ε decays (None: the training's episode budget, "
                                       "over which the learning rate decays to lr_final too)",
                                       "DOPPLER §6.1: both decay linearly over the 4k–8k episodes of a training",
                                       low=1)
    batch: int = param(1, "episodes per update", "ours: the paper does not batch episodes", low=1, high=MAX_BATCH)
    baseline_window: int = param(0, "episodes the advantage's baseline averages (0: all previous ones)",
                                 "DOPPLER §4.1: the running mean of all previous makespans; a window is ours, an "
                                 "option (measured on held-out graphs: docs/lab/2026-11-29-heldout-learning-why.md)",
                                 low=0, high=100_000)
    reward_unit_s: float = param(1e-3, "the time unit of the reward −makespan (s)",
                                 "DOPPLER §4.1: R = −ExecTime in the authors' simulator's milliseconds; against "
                                 "β = 1e-2 the advantages must be on that scale (in lower-bound units, ~1/200 of "
                                 "it, the entropy bonus flattened SEL and chainmm's greedy makespan rose 259 → "
                                 "740 ms in 50 Stage II episodes)", low=1e-12)
    greedy_search: bool = param(True, "every ε-greedy episode also evaluates the greedy (ε = 0) placement of "
                                "the same network outputs: the best placement found counts the argmax policy",
                                "ours: §6.1 reports the best placement found; the greedy one costs one "
                                "simulation, no network call")
    handoff: bool = param(True, "Stage I ends with the last weights whose greedy placement reached the critical-path "
                          "teacher's makespan on every graph of its rollout (the final weights when none did), so "
                          "Stage II starts from a policy as good as its teacher",
                          "ours: §5 gives no end criterion for Stage I; measured on llama-layer, the final weights "
                          "of 200 imitation episodes can sit above the teacher's makespan")

    def reward_kind(self, asked: str | None) -> str:
        """The stage fixes the makespans (§5): Stages I and II train on the simulator, Stage III on
        measured makespans; another ``asked`` is refused (ValueError)."""
        kind = stage_reward(self.stage)
        if asked is not None and asked != kind:
            raise ValueError(f"DOPPLER's stage {quote(self.stage)} trains on {kind} makespans (§5), not {asked} ones: "
                             f"{'use --stage real' if asked == 'measured' else 'leave out --reward'} for Stage III")
        return kind


def stage_reward(stage: str) -> str:
    """What a stage's makespans come from (§5): ``measured`` by the executor in Stage III
    (``real``), ``simulated`` in Stages I and II."""
    return "measured" if stage == "real" else "simulated"
