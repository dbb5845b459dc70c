"""The papers' tables and figures, one command each: ``placelab reproduce NAME [--quick]``.

* :mod:`placelab.reproduce.core` — what a reproduction declares (steps, build, paper table);
* :mod:`placelab.reproduce.registry` — the list of reproduction modules, each with its ``REPRODUCTIONS``;
* :mod:`placelab.reproduce.papers` — the papers' numbers (``papers/*.json``) and the joined table;
* :mod:`placelab.reproduce.runner` — runs the steps and stores the run (CONTRACTS §7);
* :mod:`placelab.reproduce.reading` — helpers that read the commands' outputs;
* :mod:`placelab.reproduce.published` — running on the graphs a paper's authors published (``--graphs-dir``);
* one module per paper with its declarations: ``placeto``, ``mirhoseini``, ``doppler``; and ``heldout``, which
  no paper has: the learned placers on held-out graphs, judged against a goal.
"""
