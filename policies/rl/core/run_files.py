"""The files a learned placer's ``train`` run holds besides ``run.json`` (torch-free, for the app).

* ``policy.json`` — the placer, its config, the cluster, the training graphs' specs, budget;
* ``checkpoint.pt`` — weights, Adam state, baselines, counters, random generator;
* ``learning_curve.csv`` — one row per episode (CONTRACTS §6);
* ``stop.request`` — present while a stop is requested (the trainer removes it when it stops).
"""

from __future__ import annotations

from engine.store.runs import Run

__all__ = ["CHECKPOINT", "CURVE", "POLICY", "STOP_REQUEST", "request_stop"]

POLICY = "policy.json"
CHECKPOINT = "checkpoint.pt"
CURVE = "learning_curve.csv"
STOP_REQUEST = "stop.request"


def request_stop(run: Run) -> None:
    """Ask a training run to stop after its current update (it checkpoints and ends as interrupted)."""
    (run.path / STOP_REQUEST).write_text("stop\n", encoding="utf-8")
