"""A toy learned placer to copy: the smallest complete one (config, agent, card), trained in a test.

To add a learned placer: copy this folder to ``policies/rl/<name>/``, change the card's name and
description below (the card is the only place the name is written: the trainer, the stored runs and
the learning-health check take it from there), and list the package in :data:`policies.rl.registry.PACKAGES`
(``from policies.rl import <name>`` and its entry in the tuple). Imports inside the folder are relative, so the copy
works as it is; then replace the toy's policy with your paper's (``agent.py``), cite every
config default's source (``config.py``) and move the network into ``net.py`` as it grows.
"""

from policies.rl.core.config import LearnedPlacerInfo

from .agent import TemplateAgent
from .config import TemplateConfig

__all__ = ["PLACER"]

PLACER = LearnedPlacerInfo("template", "a toy learned placer: a linear softmax over topological position buckets",
                           TemplateConfig, TemplateAgent, episodes=200)
