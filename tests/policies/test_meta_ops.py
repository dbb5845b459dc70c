"""DOPPLER meta-ops inferred from a graph without tags (policies.meta_ops; App. A.1 / B).

The expected meta-ops are worked out by hand in the comments from the module docstring's rules:
reduce ops are the ``formation`` ops when the file types its nodes, else the ops cheaper than each
predecessor, none of which is a reduce op; a shard op's stage is 1 + its predecessors' largest, a
reduce op's is its predecessors' largest.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.generators import random_dag
from engine.importers.doppler_text import graph_from_doppler_text
from engine.workloads.doppler import chainmm
from policies.meta_ops import infer_meta_ops, meta_ops_of, reduce_mask
from tests.placelab.doppler_files import published_text


def metas(text: str) -> list[tuple]:
    g = graph_from_doppler_text(text, name="t")
    return [(m.id, m.shard_ops, m.reduce_ops) for m in infer_meta_ops(g)]


def test_typed_file_formations_are_the_reduce_ops():
    # shards 0..3 (no predecessor: stage 0), formations 10 <- 0,1 and 11 <- 2,3 (stage 0);
    # shards 4,5 <- 10 and 6,7 <- 11 (stage 1), formations 8 <- 4,5 and 9 <- 6,7 (stage 1)
    assert metas(published_text(typed=True)) == [(0, (0, 1, 2, 3), (10, 11)), (1, (4, 5, 6, 7), (8, 9))]


def test_untyped_file_finds_the_same_reduce_ops_by_cost():
    # 10 and 11 cost 1e8 < 1e12, their predecessors' cost, and none of those is a reduce op: reduces;
    # 4..7 have a reduce op as predecessor: shards. The same meta-ops as the typed twin's.
    assert metas(published_text(typed=False)) == metas(published_text(typed=True))


def test_untyped_file_with_the_glued_entry_as_the_authors_read_it():
    # edge #1 is 1 -> 0 instead of 1 -> 10: shard 0 now has predecessor 1 (same cost: a shard) at stage 1;
    # 10 <- 0 only, cheaper: a reduce at 0's stage 1; 11 <- 2,3: reduce at stage 0; 6,7 <- 11: stage 1;
    # 9 <- 6,7: stage 1; 4,5 <- 10: stage 2; 8 <- 4,5: stage 2.
    with pytest.warns(UserWarning, match="entry '10,0'"):
        got = metas(published_text(typed=False, glued=True))
    assert got == [(0, (1, 2, 3), (11,)), (1, (0, 6, 7), (9, 10)), (2, (4, 5), (8,))]


# 7 nodes, no inputs. Edges: 0->2, 1->2, 2->3, 3->4, 2->5, 4->5, 5->6. Costs and (typed) kinds:
# 0: 10 einsummable, 1: 10 einsummable, 2: 5 formation, 3: 5 einsummable, 4: 20 formation,
# 5: 1 einsummable, 6: 1 fill
TYPED = """7

0, 1, 2, 3, 2, 4, 5,
2, 2, 3, 4, 5, 5, 6,
1000000000000,4000000000000,einsummable
1000000000000,4000000000000,einsummable
500000000000,2000000000000,formation
500000000000,2000000000000,einsummable
2000000000000,8000000000000,formation
100000000000,400000000000,einsummable
100000000000,400000000000,fill
"""


def test_types_decide_where_given_and_costs_where_not():
    # typed: reduces are 2 and 4 (formation), whatever they cost. Stages: 0, 1 -> 0; 2 (reduce) -> 0;
    # 3 <- 2 -> 1; 4 (reduce) <- 3 -> 1; 5 <- 2, 4 -> 2; 6 <- 5 -> 3.
    assert metas(TYPED) == [(0, (0, 1), (2,)), (1, (3,), (4,)), (2, (5,), ()), (3, (6,), ())]
    # untyped: 2 is cheaper than 0 and 1 (a reduce); 3 costs as much as 2 (a shard); 4 costs more than 3
    # (a shard); 5 is cheaper than 4 but has the reduce 2 as predecessor (a shard); 6 costs as much as 5 (a shard).
    untyped = "\n".join(line.rsplit(",", 1)[0] if i >= 4 else line for i, line in enumerate(TYPED.splitlines()))
    g = graph_from_doppler_text(untyped, name="t")
    assert reduce_mask(g).tolist() == [False, False, True, False, False, False, False]
    # stages: 0, 1 -> 0; 2 -> 0; 3 -> 1; 4 -> 2; 5 <- 2, 4 -> 3; 6 -> 4
    assert [(m.shard_ops, m.reduce_ops) for m in infer_meta_ops(g)] == [
        ((0, 1), (2,)), ((3,), ()), ((4,), ()), ((5,), ()), ((6,), ())]


def test_tags_come_first_unless_inference_is_asked_for():
    g = chainmm()
    tagged, loose = meta_ops_of(g, "auto")
    assert len(loose) == 0 and [m.id for m in tagged] == sorted({int(s.split("/")[0][4:]) for s in g.scope})
    assert meta_ops_of(g, "tags")[0] == tagged
    inferred, _ = meta_ops_of(g, "infer")
    assert inferred == infer_meta_ops(g) and inferred != tagged
    untagged = graph_from_doppler_text(published_text(typed=True), name="t")
    assert meta_ops_of(untagged, "tags")[0] == []
    assert meta_ops_of(untagged, "auto")[0] == infer_meta_ops(untagged)
    with pytest.raises(ValueError, match="meta_ops must be one of auto, tags, infer"):
        meta_ops_of(g, "guess")


@pytest.mark.parametrize("seed", range(5))
def test_every_op_in_one_meta_op_and_every_edge_in_alg4_order(seed):
    """What Alg. 4 needs (App. B), checked edge by edge: the producer's meta-op comes first, or the
    consumer is a reduce op of the same meta-op (placed after its shards, with the rest of its set)."""
    g = random_dag(ops=120, degree=2.5, seed=seed)
    found = infer_meta_ops(g)
    where = np.full(g.num_ops, -1)
    red = np.zeros(g.num_ops, dtype=bool)
    for m in found:
        for v in (*m.shard_ops, *m.reduce_ops):
            assert where[v] == -1
            where[v] = m.id
        red[list(m.reduce_ops)] = True
    assert (where >= 0).all() and [m.id for m in found] == list(range(len(found)))
    assert red.tolist() == reduce_mask(g).tolist()
    for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True):
        assert where[u] < where[v] or (where[u] == where[v] and red[v]), (u, v)
    assert red.any() and (~red).any()  # both kinds occur: the check above is not vacuous
