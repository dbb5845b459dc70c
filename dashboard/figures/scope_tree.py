"""Scope hierarchy of a graph and its collapsed view for a set of expanded scopes.

The pure core of a hierarchical graph explorer (TensorBoard's graph view, Model Explorer):
ops are grouped by their ``/``-separated scope; a scope that is not expanded is drawn as one
node standing for every op below it, an expanded one shows its children (sub-scopes and its
own ops). Edges between ops become edges between the visible nodes that hold them, counted.
Only the visible nodes go to the browser, so first paint depends on what is open, not on the
graph's size.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

__all__ = ["collapsed_graph", "scope_children", "visible_node"]


def _prefixes(scope: str) -> list[str]:
    parts = [p for p in scope.split("/") if p] if scope else []
    return ["/".join(parts[:d]) for d in range(1, len(parts) + 1)]


def visible_node(scope: str, op_name: str, expanded: Collection[str]) -> str:
    """The node that shows an op: its shallowest scope prefix not in ``expanded``,
    or ``"op:<name>"`` when every prefix is expanded (or the op has no scope)."""
    for prefix in _prefixes(scope):
        if prefix not in expanded:
            return prefix
    return f"op:{op_name}"


def scope_children(scopes: Sequence[str]) -> dict[str, set[str]]:
    """Scope tree: each scope prefix (``""`` is the root) mapped to its direct sub-scopes."""
    tree: dict[str, set[str]] = {"": set()}
    for scope in scopes:
        parent = ""
        for prefix in _prefixes(scope):
            tree.setdefault(parent, set()).add(prefix)
            tree.setdefault(prefix, set())
            parent = prefix
    return tree


def collapsed_graph(scopes: Sequence[str], op_names: Sequence[str], edge_src: np.ndarray,
                    edge_dst: np.ndarray, expanded: Collection[str]
                    ) -> tuple[np.ndarray, list[str], list[tuple[int, int, int]]]:
    """Collapse a graph to the nodes visible with ``expanded`` open.

    Returns ``(node_of_op, nodes, edges)``: the visible-node index of each op, the node names
    (scope prefixes, or ``"op:<name>"``) in first-appearance order, and edges
    ``(src_node, dst_node, number_of_op_edges)`` between distinct nodes, sorted.
    """
    open_ = set(expanded)
    keys = [visible_node(s, n, open_) for s, n in zip(scopes, op_names, strict=True)]
    index: dict[str, int] = {}
    node_of_op = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    src, dst = node_of_op[np.asarray(edge_src, dtype=np.int64)], node_of_op[np.asarray(edge_dst, dtype=np.int64)]
    keep = src != dst
    k = max(len(index), 1)
    pairs, counts = np.unique(src[keep] * k + dst[keep], return_counts=True)
    edges = [(int(p // k), int(p % k), int(c)) for p, c in zip(pairs.tolist(), counts.tolist(), strict=True)]
    return node_of_op, list(index), edges
