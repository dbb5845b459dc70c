"""Whether the graph explorer's first view draws its labels: the zoom it fits the frame at, per graph.

The explorer (:mod:`dashboard.widgets.explorer`) opens scopes up to ``FIRST_VIEW_NODES`` visible nodes and
fits them to its frame; Cytoscape.js leaves a label out when it would be smaller than ``LABEL_MIN_PX`` on
screen. For each graph this prints the first view's node count, the extent of its laid-out positions
(:func:`dashboard.figures.explorer.explorer_elements`, with the caption slots and margins the app adds:
:func:`~dashboard.figures.explorer.framed`), the zoom at which that extent fits a frame of ``--frame W H``
px, and the on-screen size of an op's and a
scope's label at that zoom (shown when at least ``LABEL_MIN_PX``). No browser: the fit is Cytoscape's rule
(the smaller of width and height ratios), computed here. ``--budget N`` opens up to N nodes instead, to
compare first-view sizes. Usage::

    .venv/bin/python benchmarks/bench_explorer_labels.py [--budget N] [--frame 1040 620] [--specs ...] [--json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from dashboard.figures.explorer import explorer_elements, framed
from dashboard.figures.scope_tree import hierarchy_scopes, initial_expanded
from dashboard.widgets.explorer import FIRST_VIEW_NODES, LABEL_MIN_PX, LABEL_PX, STYLES
from engine.graph.dag import levels
from engine.specs import load_graph

SPECS = ("gen:random?ops=200", "gen:random?ops=2000&seed=1", "gen:chainmm", "gen:llama-block", "gen:nmt",
         "gen:inception-v3", "gen:family-cifar10")
#: The explorer's frame on a 1,500-px-wide window (the main column), height as the widget sets it.
FRAME = (1040, 620)


def first_view(spec: str, budget: int, frame: tuple[int, int]) -> dict:
    g = load_graph(spec)
    hierarchy, _ = hierarchy_scopes(g.scope, levels(g))
    view = explorer_elements(g, hierarchy, initial_expanded(hierarchy, budget))
    # the frame's corners hold the caption slots and margins: the view is fit to them with no padding
    xy = np.array([[n["position"]["x"], n["position"]["y"]] for n in framed(view.elements, frame)["nodes"]
                   if "position" in n])
    width, height = float(np.ptp(xy[:, 0])), float(np.ptp(xy[:, 1]))
    zoom = min(frame[0] / width, frame[1] / height)
    scope_px = STYLES[1].dump()["style"]["font-size"]
    return {"spec": spec, "ops": g.num_ops, "nodes": len(view.node_ids), "extent": [round(width), round(height)],
            "zoom": zoom, "op_label_px": LABEL_PX * zoom, "scope_label_px": scope_px * zoom,
            "labels_drawn": LABEL_PX * zoom >= LABEL_MIN_PX}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=FIRST_VIEW_NODES, help="nodes the first view opens up to")
    ap.add_argument("--frame", type=int, nargs=2, default=FRAME, metavar=("W", "H"), help="frame size in px")
    ap.add_argument("--specs", nargs="+", default=list(SPECS))
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    rows = [first_view(s, args.budget, tuple(args.frame)) for s in args.specs]
    if args.json:
        print(json.dumps({"budget": args.budget, "frame": args.frame, "label_min_px": LABEL_MIN_PX, "views": rows}))
        return
    print(f"first view up to {args.budget} nodes, frame {args.frame[0]}×{args.frame[1]} px; labels under "
          f"{LABEL_MIN_PX} px are left out")
    print(f"{'graph':30s} {'ops':>6s} {'nodes':>5s} {'extent':>12s} {'zoom':>6s} {'op px':>6s} {'scope px':>8s}")
    for r in rows:
        print(f"{r['spec']:30s} {r['ops']:6,d} {r['nodes']:5d} {r['extent'][0]:6d}×{r['extent'][1]:<5d} "
              f"{r['zoom']:6.2f} {r['op_label_px']:6.1f} {r['scope_label_px']:8.1f}"
              + ("" if r["labels_drawn"] else "  (op labels left out)"))


if __name__ == "__main__":
    main()
