"""Learned placers: the shared REINFORCE kit in ``core/``, then one package per placer.

Layout (torch is imported only inside the functions that need it, never by a package):

* ``core/`` — what every learned placer shares:
  :mod:`~policies.rl.core.agent` (the :class:`~policies.rl.core.agent.Agent` base class: what a placer
  writes, and hooks with do-nothing defaults), :mod:`~policies.rl.core.config` (config fields that cite
  their sources; a placer's card), :mod:`~policies.rl.registry` (the explicit list of placers),
  :mod:`~policies.rl.core.task` (a graph grouped and featurised for learning), :mod:`~policies.rl.core.reinforce`
  (returns, baselines, schedules, budgets), :mod:`~policies.rl.core.trainer` (collect → update; checkpoints,
  resume), :mod:`~policies.rl.core.workers` (rollouts on Ray), :mod:`~policies.rl.core.training_runs` (stored
  trainings and evaluations), :mod:`~policies.rl.core.health` (the learning-health verdict's rule; its
  record and words: :mod:`~policies.rl.core.health_record`, :mod:`~policies.rl.core.health_words`; its
  inputs: :mod:`~policies.rl.core.training_health`, :mod:`~policies.rl.core.random_search`,
  :mod:`~policies.rl.core.stored_health`),
  :mod:`~policies.rl.core.measured` (rewards from the executor), :mod:`~policies.rl.core.experiment`
  (Placeto §4.2's generalization experiment);
* ``placeto/``, ``rnn/``, ``doppler/``, ``gdp/`` — the papers' placers, each ``config.py``, ``agent.py`` and its
  networks and inputs;
* ``template/`` — a complete toy placer to copy when adding a fourth (not registered).

:mod:`policies.learned` makes every registered learned placer a placer (``placelab place``).
"""
