"""The on-disk cache of built Keras graphs (``engine/workloads/keras_models.py``) is bounded (issue 54): at most
GRAPH_CACHE_MAX_ENTRIES entries of GRAPH_CACHE_MAX_BYTES bytes in all, the least recently used evicted first,
so links naming ever new batches cannot fill the server's disk. Small limits here; no Keras model is built."""

from __future__ import annotations

import os

import pytest

from engine.generators import random_dag
from engine.graph.io import save_graph
from engine.workloads import keras_models
from engine.workloads.keras_models import cached_graph, trim_cache


def entry(folder, n: int):
    """The path of cache entry ``n`` (named as the cache names its entries)."""
    return folder / f"nasnet-{n:016x}.json"


def graph(n: int):
    return random_dag(ops=4, seed=n, name=f"g{n}")


def never():
    raise AssertionError("a cached graph was built again")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of entries 1, 2, 3 used in that order (oldest first), and a file of the user's that is no entry."""
    monkeypatch.setattr(keras_models, "GRAPH_CACHE_MAX_ENTRIES", 3)
    monkeypatch.setattr(keras_models, "GRAPH_CACHE_MAX_BYTES", 10**9)
    for n in (1, 2, 3):
        save_graph(graph(n), entry(tmp_path, n))
        os.utime(entry(tmp_path, n), (1000 * n, 1000 * n))
    (tmp_path / "notes.txt").write_text("mine")
    os.utime(tmp_path / "notes.txt", (1, 1))
    return tmp_path


def names(folder) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_the_least_recently_used_entry_goes_when_the_count_is_reached(cache):
    assert cached_graph(entry(cache, 1), never).name == "g1"  # a hit: entry 1 is now the most recently used
    assert cached_graph(entry(cache, 4), lambda: graph(4)).name == "g4"
    assert names(cache) == {entry(cache, n).name for n in (1, 3, 4)} | {"notes.txt"}  # 2 was the least recently used
    assert cached_graph(entry(cache, 4), never).name == "g4"  # kept: read back, not built


def test_the_bytes_are_bounded_too(cache, monkeypatch):
    sizes = {n: entry(cache, n).stat().st_size for n in (1, 2, 3)}
    monkeypatch.setattr(keras_models, "GRAPH_CACHE_MAX_BYTES", sizes[3] + sizes[2])
    trim_cache(cache)
    assert names(cache) == {entry(cache, 3).name, entry(cache, 2).name, "notes.txt"}
    monkeypatch.setattr(keras_models, "GRAPH_CACHE_MAX_BYTES", 100)  # no graph fits
    cached_graph(entry(cache, 5), lambda: graph(5))
    assert names(cache) == {"notes.txt"}  # the graph is returned, not kept; the user's file stays


def test_a_damaged_entry_is_rebuilt_and_other_files_are_left_alone(cache, monkeypatch):
    monkeypatch.setattr(keras_models, "GRAPH_CACHE_MAX_ENTRIES", 1)
    entry(cache, 3).write_text("{ damaged")
    (cache / "nasnet-0000000000000009.json").mkdir()  # named like an entry, but a folder: not deleted
    assert cached_graph(entry(cache, 3), lambda: graph(3)).name == "g3"
    assert names(cache) == {entry(cache, 3).name, "nasnet-0000000000000009.json", "notes.txt"}
