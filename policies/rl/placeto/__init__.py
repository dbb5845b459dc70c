"""Placeto (Addanki et al. 2019): :mod:`.config`, :mod:`.agent`, the networks (:mod:`.sweep_net`, the
authors' code; :mod:`.net`, the §2.2 text) and their inputs (:mod:`.state`)."""

from policies.rl.core.config import LearnedPlacerInfo
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig

__all__ = ["PLACER"]

PLACER = LearnedPlacerInfo(
    "placeto", "Placeto GNN policy (Addanki et al. 2019): trains on the graph, or policy=RUN applies a trained one "
    "zero-shot", PlacetoConfig, PlacetoAgent, episodes=200)
