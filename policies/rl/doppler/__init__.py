"""DOPPLER (Yao et al. 2025): :mod:`.config`, :mod:`.agent`, its dual policy network (:mod:`.net`), the
graph features (:mod:`.features`) and the ASSIGN rollout (:mod:`.rollout`)."""

from policies.rl.core.config import LearnedPlacerInfo
from policies.rl.doppler.agent import DopplerAgent
from policies.rl.doppler.config import DopplerConfig

__all__ = ["PLACER"]

PLACER = LearnedPlacerInfo(
    "doppler", "DOPPLER dual policy (Yao et al. 2025): SEL picks an op, PLC its device; "
    "stage=imitation|sim|real, variant=sel-only|plc-only", DopplerConfig, DopplerAgent, episodes=400)
