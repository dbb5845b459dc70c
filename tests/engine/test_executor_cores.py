"""Which cores the executor pins its workers to (engine.executor.cores): topologies written by hand."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from engine.executor.cores import default_cores, parse_cpu_list, sibling_groups, spread_cores


def smt(pairs: list[tuple[int, ...]]) -> dict[int, frozenset[int]]:
    return {c: frozenset(p) for p in pairs for c in p}


def test_parse_cpu_list():
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("5") == {5}
    assert parse_cpu_list("0,8") == {0, 8}


def test_adjacent_siblings_workers_go_to_distinct_physical_cores_away_from_core_0():
    # 16 vCPUs, siblings (0,1), (2,3), ... (the numbering of the VM whose cpus 0-1 gave 29 % noise)
    topo = smt([(2 * i, 2 * i + 1) for i in range(8)])
    assert spread_cores(range(16), 2, topo) == [2, 4]
    assert spread_cores(range(16), 8, topo) == [2, 4, 6, 8, 10, 12, 14, 0]
    # more workers than physical cores: second threads, in the same order
    assert spread_cores(range(16), 10, topo) == [2, 4, 6, 8, 10, 12, 14, 0, 3, 5]


def test_split_numbering_siblings():
    topo = smt([(i, i + 8) for i in range(8)])  # siblings i and i+8
    assert spread_cores(range(16), 3, topo) == [1, 2, 3]
    assert spread_cores(range(16), 9, topo) == [1, 2, 3, 4, 5, 6, 7, 0, 9]


def test_no_smt_two_cores_uses_both():
    assert spread_cores([0, 1], 2, smt([(0,), (1,)])) == [1, 0]
    assert spread_cores([0, 1], 3, smt([(0,), (1,)])) == [1, 0]  # no more than there are


def test_only_the_allowed_cpus_are_used():
    topo = smt([(2 * i, 2 * i + 1) for i in range(4)])
    assert spread_cores([1, 3, 5], 2, topo) == [3, 5]  # cpu 1 is core 0's sibling: last


@given(st.integers(1, 12), st.integers(1, 3), st.integers(1, 40))
def test_spread_is_a_permutation_prefix_with_one_per_physical_core_first(physical, threads, n):
    cpus = list(range(physical * threads))
    topo = smt([tuple(p + physical * t for t in range(threads)) for p in range(physical)])
    picked = spread_cores(cpus, n, topo)
    assert len(picked) == min(n, len(cpus)) and len(set(picked)) == len(picked) and set(picked) <= set(cpus)
    first = picked[:physical]
    assert len({topo[c] for c in first}) == len(first)  # no two workers share a core while another is free
    if physical > 1 and n < physical:
        assert 0 not in picked


def test_this_machine():
    allowed = os.sched_getaffinity(0)
    picked = default_cores(len(allowed))
    assert sorted(picked) == sorted(allowed)
    groups = sibling_groups(allowed)
    assert all(c in groups[c] for c in allowed)
