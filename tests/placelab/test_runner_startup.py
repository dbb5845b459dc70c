"""Seconds to place exclude a placer's one-time start-up (JIT compilation), which is reported apart."""

from engine.generators import random_dag
from engine.presets import PRESETS
from engine.store.runs import RunStore
from placelab import runner


def test_startup_is_paid_once_and_stored_apart(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "_WARM", set())
    calls = []
    real = runner.make_placer

    def counting(name, **params):
        calls.append(name)
        return real(name, **params)

    monkeypatch.setattr(runner, "make_placer", counting)
    g, c = random_dag(ops=30, seed=1), PRESETS["k80x2"]()
    first = runner.place_and_simulate(g, c, "heft", store=RunStore(tmp_path))
    second = runner.place_and_simulate(g, c, "heft")
    # the first call builds the placer twice (warm-up on the tiny graph, then the real one); the second once
    # (each call also builds single-device, the reference of the ratio to single-device)
    assert [n for n in calls if n == "heft"] == ["heft", "heft", "heft"]
    assert calls.count("single-device") == 2
    assert first.startup_seconds > 0 and second.startup_seconds == 0.0
    stored = RunStore(tmp_path).load(first.run_id).meta["metrics"]
    assert stored["startup_s"] == first.startup_seconds
    assert stored["seconds_to_place"] == first.seconds_to_place
    # learned placers are not warmed up: their start-up is their training
    assert runner.warm_up("placeto", c) == 0.0 and "placeto" not in runner._WARM


def test_a_task_encodes_the_files_a_stored_run_writes_byte_for_byte(tmp_path):
    """A worker's encoded files (``place_task(encode=True)``) are the bytes the driver writes: the run stored from
    them and one stored from the unencoded result hold the same files, each the same bytes."""
    g, c = random_dag(ops=30, seed=2), PRESETS["k80x2"]()
    encoded = runner.place_task(g, c, "heft", 0, None, None, encode=True)
    plain = runner.place_task(g, c, "heft", 0, None, None)
    store = RunStore(tmp_path)
    a = store.load(runner.store_result(store, g, c, encoded, seed=0, budget=None, params=None, kind="place").run_id)
    b = store.load(runner.store_result(store, g, c, plain, seed=0, budget=None, params=None, kind="place").run_id)
    names = sorted(set(a.files()) - {"run.json"})
    assert names == sorted(encoded.files) and names == sorted(set(b.files()) - {"run.json"})
    assert all((a.path / n).read_bytes() == (b.path / n).read_bytes() for n in names)
    assert {"graph.json", "cluster.json", "placement.json", "schedule_ops.csv", "schedule_transfers.csv"} <= set(names)
