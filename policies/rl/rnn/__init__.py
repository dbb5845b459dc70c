"""The RNN placer of Mirhoseini et al. 2017: :mod:`.config`, :mod:`.agent` and its seq2seq network (:mod:`.net`)."""

from policies.rl.core.config import LearnedPlacerInfo
from policies.rl.rnn.agent import RNNAgent
from policies.rl.rnn.config import RNNConfig

__all__ = ["PLACER"]

PLACER = LearnedPlacerInfo(
    "rnn", "RNN seq2seq placer (Mirhoseini et al. 2017): trains on the graph, or policy=RUN applies a trained one "
    "zero-shot", RNNConfig, RNNAgent, episodes=400)
