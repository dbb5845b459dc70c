"""First paint of graph views on graphs of 1k to 30k ops: the library comparison behind the explorer.

For each graph, seconds from "draw this" to a painted picture in the system chromium (headless,
``/usr/bin/chromium``), Python build included; medians of ``--repeats`` runs:

* ``pyvis all ops``      — vis-network (pyvis), every op, our precomputed layered layout.
* ``pyvis aggregated``   — the same page with ops grouped (what pyvis showed above 1,500 ops).
* ``cytoscape all ops``  — streamlit-cytoscape's bundled Cytoscape.js, every op, preset layout.
* ``explorer``           — the app's explorer: Cytoscape.js on the scope-collapsed graph
  (:mod:`dashboard.figures.explorer`), first view as the app opens it, layered positions from Python.
* ``explorer, dagre``    — the same view laid out in the browser by the component's bundled dagre.
* ``model explorer``     — Google's ai-edge-model-explorer (Flask server + its web app) on the
  graph as custom-graph JSON with scopes as namespaces; only with ``--model-explorer-path DIR``
  (a directory the package was ``pip install --target``-ed into; it is not a placelab dependency).

The Cytoscape pages are driven the way Streamlit drives the component (a render message to its
iframe), so no Streamlit server is in the timing. Usage:
``python benchmarks/bench_graph_view.py [--repeats 3] [--limit 120] [--model-explorer-path DIR]``;
a view slower than ``--limit`` seconds is tried once and printed as ``> LIMIT``.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from dashboard.figures import placement_graph_html
from dashboard.figures.explorer import explorer_elements
from dashboard.figures.graph_view import _positions
from dashboard.figures.scope_tree import hierarchy_scopes, initial_expanded
from dashboard.widgets.explorer import FIRST_VIEW_NODES
from engine.graph.compgraph import CompGraph
from engine.graph.dag import levels
from engine.specs import load_graph

SPECS = ("gen:random?ops=1000&seed=1", "gen:nmt", "gen:nasnet", "gen:random?ops=30000&seed=1")
BUDGET = FIRST_VIEW_NODES  # the first view as the app opens it
CHROMIUM = "/usr/bin/chromium"
_HOST = """<html><body style="margin:0"><iframe id="c" src="{src}" style="width:1400px;height:760px;border:0"></iframe>
<script>
window.addEventListener("message", (e) => {{
  if (e.data && e.data.type === "streamlit:componentReady") {{
    document.getElementById("c").contentWindow.postMessage({{isStreamlitMessage: true, type: "streamlit:render",
      args: window.ARGS, dfs: [], disabled: false, theme: {{base: "light", primaryColor: "#ff4b4b",
      backgroundColor: "#ffffff", secondaryBackgroundColor: "#f0f2f6", textColor: "#31333f",
      font: "sans-serif"}}}}, "*");
  }}
}});
window.ARGS = {args};
</script></body></html>"""
_PAINTED = """([n, limit]) => new Promise((resolve) => {
  const end = Date.now() + limit;
  const poll = () => {
    const cy = document.getElementById("cy")?._cyreg?.cy;
    if (cy && cy.nodes().length === n) requestAnimationFrame(() => requestAnimationFrame(() => resolve(true)));
    else if (Date.now() > end) resolve(false);
    else setTimeout(poll, 20);
  };
  poll();
})"""
#: Seconds one view may take before it is reported as "> LIMIT" (``--limit``).
LIMIT = 120.0


def cytoscape_args(elements: dict, layout: dict) -> dict:
    """The component's render arguments, as ``streamlit_cytoscape`` sends them."""
    from dashboard.widgets.explorer import STYLES

    return {"elements": elements, "style": [s.dump() for s in STYLES], "layout": layout, "height": "740px",
            "nodeActions": [], "edgeActions": [], "collapseParallelEdges": False, "priorityEdgeLabel": None,
            "metaEdgeStyle": {}, "events": [], "hideUnderscoreAttrs": True, "infopanelActions": []}


def all_ops_elements(g: CompGraph) -> dict:
    """Every op as a Cytoscape node at our layered position (level → x)."""
    xs, ys = _positions(levels(g))
    nodes = [{"data": {"id": str(i), "label": "op", "name": g.op_names[i], "_color": "#0072B2", "_size": 14,
                       "_bw": 0.5, "_bc": "#ffffff"}, "position": {"x": float(x), "y": float(y)}}
             for i, (x, y) in enumerate(zip(xs.tolist(), ys.tolist(), strict=True))]
    edges = [{"data": {"id": f"e{k}", "source": str(s), "target": str(d), "label": "edge", "_width": 1.0}}
             for k, (s, d) in enumerate(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True))]
    return {"nodes": nodes, "edges": edges}


def explorer_view(g: CompGraph, dagre: bool = False) -> tuple[dict, dict]:
    """The explorer's first view: elements of the scope-collapsed graph and its layout."""
    from dashboard.widgets.explorer import layout_for

    hierarchy, _ = hierarchy_scopes(g.scope, levels(g))
    expanded = initial_expanded(hierarchy, BUDGET)
    layout = {"name": "dagre", "rankDir": "LR", "fit": True, "animate": False} if dagre else layout_for(expanded)
    return explorer_elements(g, hierarchy, expanded).elements, layout


def time_cytoscape(page, tmp: Path, build: Callable[[], tuple[dict, dict]], limit: float = LIMIT) -> float:
    from streamlit_cytoscape import component

    src = (Path(component.__file__).parent / "frontend" / "build" / "index.html").as_uri()
    t0 = time.perf_counter()
    elements, layout = build()
    host = tmp / "host.html"
    host.write_text(_HOST.format(src=src, args=json.dumps(cytoscape_args(elements, layout))), encoding="utf-8")
    page.goto(host.as_uri())
    frame = page.frames[1] if len(page.frames) > 1 else page.wait_for_event("frameattached")
    frame.wait_for_load_state()
    if not frame.evaluate(_PAINTED, [len(elements["nodes"]), limit * 1e3]):
        return float("inf")
    return time.perf_counter() - t0


def time_pyvis(page, tmp: Path, g: CompGraph, max_ops: int, limit: float = LIMIT) -> float:
    t0 = time.perf_counter()
    path = tmp / "view.html"
    path.write_text(placement_graph_html(g, None, color_by="op type", max_ops=max_ops), encoding="utf-8")
    page.goto(path.as_uri(), timeout=limit * 1e3)
    page.locator("#mynetwork canvas").wait_for(timeout=limit * 1e3)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return time.perf_counter() - t0


def model_explorer_json(g: CompGraph) -> dict:
    """Model Explorer's custom-graph JSON: one node per op, its scope as the namespace (layers)."""
    incoming: list[list[dict]] = [[] for _ in range(g.num_ops)]
    for s, d in zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True):
        incoming[d].append({"sourceNodeId": str(s), "sourceNodeOutputId": "0",
                            "targetNodeInputId": str(len(incoming[d]))})
    nodes = [{"id": str(i), "label": g.op_types[i] or "op", "namespace": g.scope[i] or "", "incomingEdges": incoming[i],
              "attrs": [{"key": "name", "value": g.op_names[i]}]} for i in range(g.num_ops)]
    return {"label": g.name, "graphs": [{"id": g.name, "nodes": nodes}]}


def time_model_explorer(page, tmp: Path, g: CompGraph, me_path: str, port: int,
                        limit: float = LIMIT) -> float:
    t0 = time.perf_counter()
    path = tmp / f"{g.name}.json"
    path.write_text(json.dumps(model_explorer_json(g)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.append({me_path!r}); "
                             "from model_explorer.cmdline import main; main()", str(path), "--no_open_in_browser",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://localhost:{port}"
        while True:
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        data = urllib.parse.quote(json.dumps({"models": [{"url": str(path)}]}))
        page.goto(f"{url}/?data={data}")
        page.locator("webgl-renderer canvas").first.wait_for(timeout=limit * 1e3)
        page.get_by_text("op node count").first.wait_for(timeout=limit * 1e3)
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model-explorer-path", default=None, help="where ai-edge-model-explorer was pip-installed")
    ap.add_argument("--specs", nargs="*", default=list(SPECS))
    ap.add_argument("--limit", type=float, default=LIMIT, help="seconds before a view counts as too slow")
    ap.add_argument("--views", nargs="*", default=None, help="only these views (names as printed)")
    args = ap.parse_args()
    lim = args.limit
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                     "--allow-file-access-from-files"])
        print(f"{'graph':30} {'ops':>7} {'view':18} {'nodes':>6} {'first paint s':>14}")
        for spec in args.specs:
            g = load_graph(spec)
            elements, _ = explorer_view(g)
            views: list[tuple[str, int, Callable]] = [
                ("pyvis aggregated", -1, lambda pg, g=g: time_pyvis(pg, tmp, g, 1500, lim)),
                ("explorer", len(elements["nodes"]), lambda pg, g=g: time_cytoscape(
                    pg, tmp, lambda: explorer_view(g), lim)),
                ("explorer, dagre", len(elements["nodes"]), lambda pg, g=g: time_cytoscape(
                    pg, tmp, lambda: explorer_view(g, dagre=True), lim)),
                ("cytoscape all ops", g.num_ops, lambda pg, g=g: time_cytoscape(
                    pg, tmp, lambda: (all_ops_elements(g), {"name": "preset", "fit": True, "animate": False}), lim)),
                ("pyvis all ops", g.num_ops, lambda pg, g=g: time_pyvis(pg, tmp, g, 10**9, lim)),
            ]
            if args.model_explorer_path:
                views.append(("model explorer", g.num_ops, lambda pg, g=g: time_model_explorer(
                    pg, tmp, g, args.model_explorer_path, _free_port(), lim)))
            for name, nodes, run in views:
                if args.views and name not in args.views:
                    continue
                times = []
                for _ in range(args.repeats):
                    page = browser.new_page(viewport={"width": 1400, "height": 800})
                    try:
                        times.append(run(page))
                    except PlaywrightTimeout:
                        times.append(float("inf"))
                    page.close()
                    if times[-1] == float("inf"):
                        break  # too slow: one try says so
                shown = "" if nodes < 0 else f"{nodes:,}"
                t = statistics.median(times)
                paint = f"{t:14.2f}" if t != float("inf") else f"{'> ' + format(lim, 'g'):>14}"
                print(f"{spec:30} {g.num_ops:7,} {name:18} {shown:>6} {paint}", flush=True)
        browser.close()


if __name__ == "__main__":
    main()
