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

from dashboard.figures.graph_labels import natural_key

__all__ = ["ancestors", "collapsed_graph", "hierarchy_scopes", "initial_expanded", "scope_children", "visible_node"]

#: Fraction of ops that must carry a scope for the graph's own scopes to be the hierarchy.
SCOPED_FRACTION = 0.9
#: Up to this many ops without a scope sit at the top one by one; more go into :data:`NO_SCOPE`.
LOOSE_OPS = 20
NO_SCOPE = "(no scope)"
#: Synthetic hierarchy of an unscoped graph: this many bands of topological levels, each cut again.
_BANDS = 40


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
                    edge_dst: np.ndarray, expanded: Collection[str], edge_weight: np.ndarray | None = None
                    ) -> tuple[np.ndarray, list[str], list[tuple[int, int, int, float]]]:
    """Collapse a graph to the nodes visible with ``expanded`` open.

    Returns ``(node_of_op, nodes, edges)``: the visible-node index of each op, the node names
    (scope prefixes, or ``"op:<name>"``) in first-appearance order, and edges
    ``(src_node, dst_node, number_of_op_edges, summed_weight)`` between distinct nodes, sorted;
    ``edge_weight`` (one per op edge, e.g. bytes) defaults to 1, so the weight is then the count.
    """
    open_ = set(expanded)
    keys = [visible_node(s, n, open_) for s, n in zip(scopes, op_names, strict=True)]
    index: dict[str, int] = {}
    node_of_op = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    src, dst = node_of_op[np.asarray(edge_src, dtype=np.int64)], node_of_op[np.asarray(edge_dst, dtype=np.int64)]
    keep = src != dst
    k = max(len(index), 1)
    pairs, inverse, counts = np.unique(src[keep] * k + dst[keep], return_inverse=True, return_counts=True)
    weight = np.ones(len(keep)) if edge_weight is None else np.asarray(edge_weight, dtype=float)
    sums = np.bincount(inverse, weights=weight[keep], minlength=len(pairs))
    edges = [(int(p // k), int(p % k), int(c), float(w))
             for p, c, w in zip(pairs.tolist(), counts.tolist(), sums.tolist(), strict=True)]
    return node_of_op, list(index), edges


def ancestors(scope: str) -> list[str]:
    """Every scope prefix of ``scope``, outermost first (what must be expanded to show its ops)."""
    return _prefixes(scope)


def hierarchy_scopes(scopes: Sequence[str], levels: np.ndarray) -> tuple[list[str], bool]:
    """The scope path per op that the explorer nests by, and whether it is the graph's own.

    When at least :data:`SCOPED_FRACTION` of ops carry a layer scope, those scopes (ops without
    one sit at the top, or in one ``(no scope)`` group when more than :data:`LOOSE_OPS`).
    Otherwise a synthetic two-level hierarchy of topological-level bands — ``levels 0–99``
    holding ``levels 0–9``, … — so an unscoped graph of any size still opens as a few dozen
    nodes (DOPPLER and Placeto graphs come without layer names). A band that would hold a single
    sub-band, itself (a graph of at most :data:`_BANDS` levels, where each band is one level, or a last
    band of one level), is one level deep: ``level 3``, not ``level 3/level 3``, which drew two boxes
    both titled ``level 3 (open)``.
    """
    unscoped = sum(1 for s in scopes if not s)
    if len(scopes) - unscoped >= SCOPED_FRACTION * max(len(scopes), 1):
        if unscoped <= LOOSE_OPS:
            return list(scopes), True
        return [s or NO_SCOPE for s in scopes], True
    lv = np.asarray(levels, dtype=np.int64)
    top = int(lv.max()) + 1 if len(lv) else 1
    coarse = max(1, -(-top // _BANDS))  # levels per band, ceil
    fine = max(1, -(-coarse // 10))
    def band(lo: int, hi: int) -> str:
        return f"level {lo}" if lo == hi else f"levels {lo}–{hi}"

    out = []
    for v in lv.tolist():
        b, f = v - v % coarse, v - v % fine
        outer, inner = band(b, min(b + coarse, top) - 1), band(f, min(f + fine, b + coarse, top) - 1)
        out.append(outer if inner == outer else f"{outer}/{inner}")
    return out, False


def initial_expanded(scopes: Sequence[str], budget: int) -> set[str]:
    """Scopes to open on first view: breadth first, the scope with most ops first (ties in natural order,
    ``block_2`` before ``block_10``), while the visible nodes stay within ``budget`` (the overview
    TensorBoard opens at, but filled to a size)."""
    tree = scope_children(scopes)
    count: dict[str, int] = {}
    own: dict[str, int] = {}  # ops sitting directly in a scope (drawn one node each when it opens)
    for scope in scopes:
        own[scope] = own.get(scope, 0) + 1
        for prefix in _prefixes(scope):
            count[prefix] = count.get(prefix, 0) + 1
    visible = len(tree[""]) + own.get("", 0)
    opened: set[str] = set()

    def order(s: str) -> tuple:
        return -count[s], natural_key(s)

    frontier = sorted(tree[""], key=order)
    while frontier:
        scope = frontier.pop(0)
        grow = len(tree[scope]) + own.get(scope, 0) - 1
        if visible + grow > budget:
            continue
        opened.add(scope)
        visible += grow
        frontier = sorted(frontier + list(tree[scope]), key=order)
    return opened
