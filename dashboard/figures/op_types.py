"""Colour by op type in the graph views: the type a node of many ops stands for, and the types given a colour.

A collapsed scope holds ops of many types, and counting them paints it by its bookkeeping: a Keras layer
holds more variables, reads and assigns than convolutions, so on ``gen:nasnet`` most scopes read
"Variable". The rule here looks at the work instead, with the cost model's times (the fastest kind,
:meth:`~engine.graph.compgraph.CompGraph.min_compute`):

* **A node's type** (:func:`dominant_types`) is the type with the most compute among its ops; ties go to
  the type with more ops, then to the first name in alphabetical order. When none of its ops has any
  compute (a scope holding only variables), the most common type.
* **The categories** (:func:`type_colors`) are the types of the nodes shown — nothing else is coloured
  or listed — ranked by the compute of the nodes they stand for, then by how many nodes: the first
  ``len(PALETTE)`` take the palette's colours, any further ones share one grey, ``other (n types)``.
  Types whose shown nodes carry no compute at all (variables, constants, shape bookkeeping — zero time
  in the cost model, a measured property rather than a list of names) share one pale grey,
  ``no compute: Variable, …``, so the colours go to the types doing the work. When nothing shown
  carries compute (a graph read without costs), every type ranks by node count instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from dashboard.figures.colors import PALETTE
from dashboard.figures.graph_labels import natural_key

__all__ = ["NO_COMPUTE_COLOR", "OTHER_COLOR", "dominant_types", "type_colors"]

#: Types past the palette.
OTHER_COLOR = "#7f7f7f"
#: Types whose shown nodes carry no compute.
NO_COMPUTE_COLOR = "#d0d4d8"
#: At most this many no-compute types are named in their legend entry.
_NAMED = 3


def dominant_types(op_types: Sequence[str], compute: np.ndarray, node_of_op: np.ndarray, k: int) -> list[str]:
    """Per node ``0..k-1``, the type of its ops (``node_of_op``) with the most ``compute`` (by count when
    the node's ops have none); ``""`` for a node without ops or with untyped ops only."""
    if k == 0 or len(node_of_op) == 0:
        return [""] * k
    names, code = np.unique(np.array([t or "" for t in op_types], dtype=str), return_inverse=True)
    pair = np.asarray(node_of_op, dtype=np.int64) * len(names) + code
    uniq, inv = np.unique(pair, return_inverse=True)
    work = np.bincount(inv, weights=np.asarray(compute, dtype=float), minlength=len(uniq))
    count = np.bincount(inv, minlength=len(uniq))
    node, kind = uniq // len(names), uniq % len(names)
    order = np.lexsort((kind, -count, -work, node))  # by node; in a node most work, then most ops, then name
    first = order[np.r_[True, node[order][1:] != node[order][:-1]]]
    out = [""] * k
    for i in first.tolist():
        out[int(node[i])] = str(names[kind[i]])
    return out


def type_colors(node_type: Sequence[str], node_compute: np.ndarray) -> tuple[list[str], dict[str, str]]:
    """A colour per node and the legend (label → colour) for nodes of types ``node_type`` carrying
    ``node_compute`` seconds each; the rule is the module's."""
    work: dict[str, float] = {}
    for t, c in zip(node_type, np.asarray(node_compute, dtype=float).tolist(), strict=True):
        work[t] = work.get(t, 0.0) + c
    nodes = Counter(node_type)
    busy = [t for t in work if work[t] > 0] or list(work)
    ranked = sorted(busy, key=lambda t: (-work[t], -nodes[t], natural_key(t)))
    color = {t: PALETTE[i] if i < len(PALETTE) else OTHER_COLOR for i, t in enumerate(ranked)}
    legend = {t or "(none)": color[t] for t in ranked[:len(PALETTE)]}
    if len(ranked) > len(PALETTE):
        legend[f"other ({len(ranked) - len(PALETTE)} types)"] = OTHER_COLOR
    idle = sorted((t for t in work if t not in color), key=lambda t: (-nodes[t], natural_key(t)))
    if idle:
        named = ", ".join(t or "(none)" for t in idle[:_NAMED]) + (", …" if len(idle) > _NAMED else "")
        legend[f"no compute: {named}"] = NO_COMPUTE_COLOR
        color.update(dict.fromkeys(idle, NO_COMPUTE_COLOR))
    return [color[t] for t in node_type], legend
