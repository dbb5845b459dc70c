"""No import circle anywhere in placelab, not even one closed by an import inside a function.

The layer contracts in ``pyproject.toml`` (run by ``make lint`` with import-linter) fix which
top-level package and which engine sub-layer may import which; this test covers the rest: no
two modules of the same layer import each other, directly or through others. grimp, the
graph builder under import-linter, records every import statement, function bodies included.
"""

from __future__ import annotations

import sys

import grimp
import networkx as nx

PACKAGES = ("engine", "policies", "placelab", "dashboard")


def import_circles(*packages: str) -> list[list[str]]:
    """Each set of modules that import one another (a strongly connected component > 1), sorted."""
    graph = grimp.build_graph(*packages)
    g = nx.DiGraph()
    for m in graph.modules:
        g.add_node(m)
        g.add_edges_from((m, t) for t in graph.find_modules_directly_imported_by(m))
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def test_placelab_has_no_import_circle():
    assert import_circles(*PACKAGES) == []


def test_a_circle_closed_inside_a_function_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "circ"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from circ import b\n")
    (pkg / "b.py").write_text("def f():\n    from circ.c import g\n    return g\n")
    (pkg / "c.py").write_text("def g():\n    import circ.a\n    return circ.a\n")
    (pkg / "d.py").write_text("import circ.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert import_circles("circ") == [["circ.a", "circ.b", "circ.c"]]
    finally:
        sys.modules.pop("circ", None)
