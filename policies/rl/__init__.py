"""Learned placers: the REINFORCE framework, the registry, and one module per paper.

Layout (torch is imported only by the modules that need it, never by this package; a learned
placer's module imports it inside its functions):

* :mod:`policies.rl.registry` — the registry: a learned placer is one module that registers its
  config and its agent (what such a module must provide is in that module's docstring);
* :mod:`policies.rl.placeto` (+ :mod:`~policies.rl.placeto_net`, :mod:`~policies.rl.placeto_state`)
  — Placeto; :mod:`policies.rl.rnn` (+ :mod:`~policies.rl.rnn_net`) — the RNN placer of Mirhoseini et al.;
* :mod:`policies.rl.task` — a graph prepared for learning: op groups, group features,
  reachability, feasible devices, and the objective (from :mod:`engine.objectives`);
* :mod:`policies.rl.agent` — the agent protocol (rollout, then advantages and gradient), the per-task cache;
* :mod:`policies.rl.reinforce` — returns, baselines, schedules, stopping rule and budgets (numpy);
* :mod:`policies.rl.trainer` — the training loop (collect → update; logging, checkpoints, resume);
* :mod:`policies.rl.jobs` — training, resuming and evaluating stored runs;
  :mod:`policies.rl.run_files` — those runs' file names (torch-free, for the app);
* :mod:`policies.rl.experiment` — Placeto §4.2 generalization experiment.

:mod:`policies.learned` makes every registered learned placer a placer (``placelab place``).
"""
