"""A topological order of a DAG kept valid while edges are added, for pruned reachability queries.

:func:`engine.grouping.rules.merge_and_colocate` asks, before every merge, whether a node is
reachable from some others in the contracted graph; a plain search explores everything
downstream of the start nodes, which on a graph of thousands of groups is most of the graph.
With a topological order ``pos`` (every edge u → w has ``pos[u] < pos[w]``) a node t can only be
reached through nodes placed before it, so the search stops at ``pos[t]``.

A merge adds edges to the merged node, and such an edge may point backwards in the order. The
order is then repaired as in the dynamic topological sort of Pearce and Kelly ("A dynamic
topological sort algorithm for directed acyclic graphs", JEA 11, 2006): for a new edge x → y with
``pos[y] < pos[x]``, the nodes reachable from y up to ``pos[x]`` (forward set) and the nodes that
reach x down to ``pos[y]`` (backward set) take their own positions again, the backward set's
first, each set in its old order. Nothing outside the two sets moves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

__all__ = ["TopologicalOrder", "reaches"]


class TopologicalOrder:
    """Positions of a DAG's nodes (given by successor sets), kept topological by :meth:`add_edge`."""

    def __init__(self, succ: Mapping[int, set[int]], pred: Mapping[int, set[int]]) -> None:
        """Kahn's algorithm over ``succ`` / ``pred``; ValueError when the graph has a cycle."""
        indeg = {v: len(pred[v]) for v in succ}
        ready = deque(sorted(v for v, d in indeg.items() if d == 0))
        self.pos: dict[int, int] = {}
        while ready:
            v = ready.popleft()
            self.pos[v] = len(self.pos)
            for w in sorted(succ[v]):
                indeg[w] -= 1
                if indeg[w] == 0:
                    ready.append(w)
        if len(self.pos) != len(succ):
            raise ValueError("the graph has a cycle: it has no topological order")
        self._succ, self._pred = succ, pred

    def reaches(self, starts: Iterable[int], target: int) -> bool:
        """Whether ``target`` is reachable from any node in ``starts`` (a start equal to it does not count)."""
        return reaches(self._succ, starts, target, self.pos)

    def add_edge(self, x: int, y: int) -> None:
        """Repair the order after the edge x → y was added to the successor and predecessor sets
        (the graph must still be acyclic); nothing to do when it points forward already."""
        pos = self.pos
        lo, hi = pos[y], pos[x]
        if hi < lo:
            return
        forward = self._walk(y, self._succ, lambda p: p > hi)  # reachable from y, not past x
        if x in forward:
            raise ValueError(f"the edge {x} -> {y} closes a cycle")
        backward = self._walk(x, self._pred, lambda p: p < lo)  # reaching x, not before y
        moved = sorted(backward, key=pos.__getitem__) + sorted(forward, key=pos.__getitem__)
        for v, p in zip(moved, sorted(pos[v] for v in moved), strict=True):
            pos[v] = p

    def _walk(self, start: int, nbrs: Mapping[int, set[int]], outside) -> set[int]:
        """The nodes reached from ``start`` over ``nbrs`` without passing a node whose position is ``outside``."""
        seen = {start}
        stack = [start]
        while stack:
            v = stack.pop()
            for w in nbrs[v]:
                if w not in seen and not outside(self.pos[w]):
                    seen.add(w)
                    stack.append(w)
        return seen


def reaches(succ: Mapping[int, set[int]], starts: Iterable[int], target: int,
            pos: Mapping[int, int] | None = None) -> bool:
    """Whether ``target`` is reachable over ``succ`` from any node in ``starts`` (a start equal to it does not
    count); with a topological order ``pos``, only nodes placed before the target are searched."""
    bound = float("inf") if pos is None else pos[target]
    seen: set[int] = set()
    queue = deque(s for s in starts if s != target and (pos is None or pos[s] < bound))
    while queue:
        v = queue.popleft()
        if v in seen:
            continue
        seen.add(v)
        for w in succ[v]:
            if w == target:
                return True
            if w not in seen and (pos is None or pos[w] < bound):
                queue.append(w)
    return False
