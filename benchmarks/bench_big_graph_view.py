"""The big graph's first view: seconds to build the explorer's figure, and screenshots of it to look at.

For each graph: its ops, the first view's nodes (scopes opened up to ``FIRST_VIEW_NODES``, as the app opens
it), and the median of ``--repeats`` builds of the explorer's elements
(:func:`dashboard.figures.explorer.explorer_elements`: collapse, labels, colours, nested layout; the
hierarchy and first view are computed once, outside the timing, as the app caches them). With
``--shots DIR`` each first view is also painted by the streamlit-cytoscape component's Cytoscape.js in
headless ``/usr/bin/chromium`` at the explorer's size in the app (``--frame 1040 620``) under the legend
the app prints above it, and saved as ``DIR/<graph>.png``; the painted view is checked: captions wider
than their slot (``CAPTION_W``) and captions not wholly in the clear area (right of the component's side
panel, left of its zoom buttons) are counted and printed. The component gets the render message
Streamlit would send (``bench_graph_view.py``'s host page), so no Streamlit server is involved.

A spec ``doppler:SPEC`` is SPEC's graph as DOPPLER's authors' files have it: ops named by their index,
no scopes, so the explorer groups it by bands of topological levels. Usage::

    .venv/bin/python benchmarks/bench_big_graph_view.py [--repeats 5] [--shots DIR] [--scale 2] [--specs ...] [--json]
"""

from __future__ import annotations

import argparse
import html
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench_graph_view import _HOST, _PAINTED, CHROMIUM, cytoscape_args

from dashboard.figures.explorer import CAPTION_W, explorer_elements, framed
from dashboard.figures.scope_tree import hierarchy_scopes, initial_expanded
from dashboard.widgets.explorer import FIRST_VIEW_NODES, layout_for
from engine.graph.compgraph import CompGraph
from engine.graph.dag import levels
from engine.specs import load_graph

SPECS = ("gen:nasnet", "gen:nmt", "gen:chainmm", "doppler:gen:chainmm", "doppler:gen:nasnet")
#: The explorer's frame on a 1,500-px-wide window (the main column), height as the widget sets it.
FRAME = (1040, 620)


def doppler_form(g: CompGraph) -> CompGraph:
    """``g`` as DOPPLER's authors' files hold a graph: ops named ``0``, ``1``, …, no scopes."""
    return CompGraph(g.name, [str(i) for i in range(g.num_ops)], compute_any=g.min_compute(),
                     output_bytes=g.output_bytes, persistent_bytes=g.persistent_bytes, edge_src=g.edge_src,
                     edge_dst=g.edge_dst, edge_bytes=g.edge_bytes, op_types=list(g.op_types),
                     scope=[""] * g.num_ops)


def graph_of(spec: str) -> CompGraph:
    return doppler_form(load_graph(spec.removeprefix("doppler:"))) if spec.startswith("doppler:") else load_graph(spec)


def build_times(g: CompGraph, repeats: int) -> tuple[list[float], object, set[str], list[str]]:
    """Seconds per build of the first view's elements, the last view, its open scopes and the hierarchy."""
    hierarchy, _ = hierarchy_scopes(g.scope, levels(g))
    expanded = initial_expanded(hierarchy, FIRST_VIEW_NODES)
    times, view = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        view = explorer_elements(g, hierarchy, expanded)
        times.append(time.perf_counter() - t0)
    return times, view, expanded, hierarchy


def _legend_html(legend: dict[str, str]) -> str:
    """The legend line the app prints above the explorer (``show_explorer``)."""
    return " ".join(f'<span style="color:{c}">●</span> {html.escape(name or "(none)")}'
                    for name, c in list(legend.items())[:14])


#: In the painted view: captions wider than their slot (model px, so at zoom 1) and captions not wholly inside the
#: frame's clear area (rendered px: right of the side panel, left of the zoom buttons, inside top and bottom).
_CHECK = """([slot, panel, buttons]) => {
  const cy = document.getElementById("cy")._cyreg.cy, w = cy.width(), h = cy.height();
  const shown = cy.nodes().filter(n => n.data("label") !== "frame" && n.style("label"));
  const opts = {includeNodes: false, includeEdges: false, includeLabels: true};
  const wide = shown.filter(n => n.data("label") !== "open" && n.boundingBox(opts).w > slot + 0.5);
  const out = shown.filter(n => { const b = n.renderedBoundingBox(opts);
    return b.x1 < panel || b.x2 > w - buttons || b.y1 < 0 || b.y2 > h; });
  return {zoom: cy.zoom(), captions: shown.length, wider_than_slot: wide.map(n => n.style("label")),
          outside: out.map(n => n.style("label"))};
}"""
#: The component's side panel (left) and zoom buttons (right), px.
_PANEL_PX, _BUTTONS_PX = 36, 40


def shoot(page, tmp: Path, view, expanded: set[str], frame: tuple[int, int], path: Path) -> dict:
    """Paint ``view`` in the component, as the app frames it, save a screenshot at ``path``, and return what
    :data:`_CHECK` finds in it."""
    from streamlit_cytoscape import component

    src = (Path(component.__file__).parent / "frontend" / "build" / "index.html").as_uri()
    elements = framed(view.elements)
    args = cytoscape_args(elements, layout_for(expanded))
    args["height"] = f"{frame[1]}px"
    host = _HOST.format(src=src, args=json.dumps(args)).replace(
        "width:1400px;height:760px", f"width:{frame[0]}px;height:{frame[1] + 20}px").replace(
        '<body style="margin:0">', '<body style="margin:0;font-family:sans-serif;font-size:14px">'
        f'<div style="padding:6px 4px;width:{frame[0]}px">{_legend_html(view.legend)}</div>')
    (tmp / "host.html").write_text(host, encoding="utf-8")
    page.goto((tmp / "host.html").as_uri())
    child = page.frames[1] if len(page.frames) > 1 else page.wait_for_event("frameattached")
    child.wait_for_load_state()
    if not child.evaluate(_PAINTED, [len(elements["nodes"]), 120e3]):
        raise RuntimeError(f"{path.name}: not painted in 120 s")
    page.wait_for_timeout(500)  # the component's fit on its first resize (debounced 100 ms)
    page.screenshot(path=str(path), full_page=True)
    return child.evaluate(_CHECK, [CAPTION_W, _PANEL_PX, _BUTTONS_PX])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--specs", nargs="+", default=list(SPECS))
    ap.add_argument("--shots", type=Path, default=None, help="save a screenshot of each first view here")
    ap.add_argument("--frame", type=int, nargs=2, default=FRAME, metavar=("W", "H"), help="explorer size in px")
    ap.add_argument("--scale", type=float, default=2.0, help="screenshot pixels per CSS px (2: a high-DPI screen)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    rows, views = [], []
    for spec in args.specs:
        g = graph_of(spec)
        times, view, expanded, _ = build_times(g, args.repeats)
        rows.append({"spec": spec, "ops": g.num_ops, "nodes": len(view.node_ids), "scopes_open": len(expanded),
                     "build_s": statistics.median(times), "build_runs_s": times})
        views.append((spec, view, expanded))
    if args.shots is not None:
        from playwright.sync_api import sync_playwright

        args.shots.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                         "--allow-file-access-from-files"])
            for (spec, view, expanded), row in zip(views, rows, strict=True):
                name = spec.replace("gen:", "").replace(":", "-").replace("?", "-").replace("&", "-")
                page = browser.new_page(viewport={"width": args.frame[0] + 40, "height": args.frame[1] + 80},
                                        device_scale_factor=args.scale)
                row.update(shoot(page, Path(tmp), view, expanded, tuple(args.frame), args.shots / f"{name}.png"))
                page.close()
                row["shot"] = str(args.shots / f"{name}.png")
            browser.close()
    if args.json:
        print(json.dumps({"repeats": args.repeats, "first_view_nodes": FIRST_VIEW_NODES, "views": rows}))
        return
    print(f"first view up to {FIRST_VIEW_NODES} nodes; build = explorer_elements, median of {args.repeats}")
    print(f"{'graph':24s} {'ops':>7s} {'nodes':>5s} {'open':>5s} {'build s':>8s}  runs")
    for r in rows:
        print(f"{r['spec']:24s} {r['ops']:7,d} {r['nodes']:5d} {r['scopes_open']:5d} {r['build_s']:8.3f}  "
              + " ".join(f"{t:.3f}" for t in r["build_runs_s"]))
    for r in rows:
        if "shot" in r:
            print(f"{r['spec']}: zoom {r['zoom']:.2f}, {r['captions']} captions, {len(r['wider_than_slot'])} wider "
                  f"than {CAPTION_W:g} px {r['wider_than_slot'][:3]}, {len(r['outside'])} outside the clear area "
                  f"{r['outside'][:3]} → {r['shot']}")


if __name__ == "__main__":
    main()
