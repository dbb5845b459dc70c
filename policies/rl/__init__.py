"""Learned placers: the REINFORCE training framework, Placeto and the RNN placer of Mirhoseini et al.

Layout (torch is imported only by the modules that need it, never by this package):

* :mod:`policies.rl.task` — a graph prepared for learning: op groups, group features,
  reachability, feasible devices, and the reward (numpy + the simulator);
* :mod:`policies.rl.reinforce` — baselines, schedules, stopping rule and budgets (numpy);
* :mod:`policies.rl.placeto_net`, :mod:`policies.rl.placeto` — Placeto's GNN and agent;
* :mod:`policies.rl.rnn_net`, :mod:`policies.rl.rnn` — the seq2seq placer and its agent;
* :mod:`policies.rl.trainer` — the training loop shared by both (logging, checkpoints, resume);
* :mod:`policies.rl.experiment` — Placeto §4.2 generalization experiment.

The registry entries (``placeto``, ``rnn``) live in :mod:`policies.learned`.
"""
