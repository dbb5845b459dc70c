"""The bundled training runs of the learned placers (``make bundled-runs``) are runs that learned: the Train,
Compare and Runs pages open on them, and a shipped example whose policy stays uniform teaches a visitor that the
placer does not learn (issue #32: the Placeto runs made before the authors' network, and an RNN run stopped after
100 updates, were such runs). Read from each run's stored learning-health verdict (``placelab train`` computes
it: entropy against uniform, sampled runtime first against last window, best against as many random
placements)."""

import json
from pathlib import Path

RUNS = Path(__file__).resolve().parents[2] / "runs"


def _trainings() -> list[dict]:
    metas = [json.loads(p.read_text()) for p in sorted(RUNS.glob("*/run.json"))]
    return [m for m in metas if m.get("kind") == "train"]


def test_the_repository_ships_trainings_of_placeto_and_the_rnn_placer():
    assert {"placeto", "rnn"} <= {m["placer"] for m in _trainings()}


def test_every_bundled_training_learned():
    for meta in _trainings():
        health = meta["metrics"].get("learning_health") or {}
        assert meta["status"] == "done", meta["id"]
        assert health.get("verdict") == "learned", (meta["id"], health.get("summary"))
        assert health["entropy_last_ratio"] < 0.75 and health["random_ratio"] < 1.0, meta["id"]
