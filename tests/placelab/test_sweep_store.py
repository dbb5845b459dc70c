"""A result whose task encoded its run files is stored byte for byte as the driver would store it."""

from engine.generators import random_dag
from engine.presets import PRESETS
from engine.store.runs import RunStore
from placelab.runner import place_task, store_result


def test_files_encoded_by_the_task_equal_the_files_stored_directly(tmp_path):
    graph, cluster = random_dag(ops=50, seed=7), PRESETS["cpu+k80x2"]()
    store = RunStore(tmp_path)
    direct = store_result(store, graph, cluster, place_task(graph, cluster, "m-etf", 0, None, None), seed=0,
                          budget=None, params=None, kind="compare")
    encoded = place_task(graph, cluster, "m-etf", 0, None, None, True)
    assert sorted(encoded.files) == ["cluster.json", "graph.json", "placement.json", "schedule_ops.csv",
                                     "schedule_transfers.csv"]
    staged = store_result(store, graph, cluster, encoded, seed=0, budget=None, params=None, kind="compare")
    assert staged.files is None
    a, b = store.load(direct.run_id), store.load(staged.run_id)
    assert a.files() == b.files()
    assert all((a.path / f).read_bytes() == (b.path / f).read_bytes() for f in a.files() if f != "run.json")
    strip = {"seconds_to_place", "startup_s"}  # timings: the first placement in a process pays the start-up
    assert {k: v for k, v in a.meta["metrics"].items() if k not in strip} == \
           {k: v for k, v in b.meta["metrics"].items() if k not in strip}
    assert (a.meta["status"], b.meta["status"]) == ("done", "done")
    assert {k: a.meta[k] for k in ("kind", "graph", "cluster", "placer", "parameters", "seed")} == \
           {k: b.meta[k] for k in ("kind", "graph", "cluster", "placer", "parameters", "seed")}
