"""GDP (Zhou et al. 2019), as the DOPPLER authors ran it as a baseline: :mod:`.config`, :mod:`.agent`, its
network (:mod:`.net`: GraphSAGE embedding, segment-recurrent attention placement) and its inputs
(:mod:`.features`). Added through the learned-placer kit: ``policies/rl/template/`` copied, plus its
entry in :data:`policies.rl.registry.PACKAGES`."""

from policies.rl.core.config import LearnedPlacerInfo

from .agent import GdpAgent
from .config import GdpConfig

__all__ = ["PLACER"]

PLACER = LearnedPlacerInfo("gdp", "GDP (Zhou et al. 2019): GraphSAGE + segment-recurrent attention place every op "
                           "at once, PPO; stage=imitation|sim as DOPPLER ran it", GdpConfig, GdpAgent, episodes=400)
