"""Graphs a visitor can pick: the examples, generator specs and uploads, loaded once per process."""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

from dashboard.stores import REPO_ROOT
from engine.graph.compgraph import CompGraph

__all__ = ["EXAMPLES_DIR", "EXAMPLE_SPECS", "MAX_UPLOAD_BYTES", "example_sources", "graph_from_spec",
           "graph_from_upload"]

EXAMPLES_DIR = REPO_ROOT / "examples"
#: Largest graph file the Graphs page accepts for upload (Streamlit's own default limit too).
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
#: Curated generator specs offered first among the examples.
EXAMPLE_SPECS = {
    "random DAG, 200 ops": "gen:random?ops=200&seed=1",
    "random DAG, 2,000 ops": "gen:random?ops=2000&seed=1",
}
#: Uploaded graphs kept parsed (by content): the last few.
_UPLOADS_KEPT = 4
_uploads: OrderedDict[tuple[str, str], CompGraph] = OrderedDict()
_uploads_lock = threading.Lock()


@lru_cache(maxsize=16)
def graph_from_spec(spec: str) -> CompGraph:
    """The graph of a single-graph spec (file or ``gen:``), cached across reruns, pages and sessions. A spec a
    visitor typed goes through :func:`dashboard.input_guard.graph_spec` first."""
    from engine.specs import load_graph

    return load_graph(spec)


def graph_from_upload(digest: str, name: str, data: bytes) -> CompGraph:
    """The graph of an uploaded file (``digest``: its sha256), parsed under the file's own name (so the graph
    keeps it); the last few are kept parsed."""
    from engine.specs import load_uploaded_graph

    with _uploads_lock:
        if (digest, name) in _uploads:
            _uploads.move_to_end((digest, name))
            return _uploads[digest, name]
    graph = load_uploaded_graph(name, data)
    with _uploads_lock:
        _uploads[digest, name] = graph
        while len(_uploads) > _UPLOADS_KEPT:
            _uploads.popitem(last=False)
    return graph


def example_sources() -> dict[str, str]:
    """Label → graph source: curated specs, every registered generator, the bundled published workloads
    (``bench:NAME``), files under ``examples/``."""
    from engine.generators import generator_descriptions
    from engine.workloads.published import bench_descriptions

    out = dict(EXAMPLE_SPECS)
    for name, desc in generator_descriptions().items():
        out.setdefault(f"gen:{name} — {desc}", f"gen:{name}")
    for spec, desc in bench_descriptions().items():
        out[f"{spec} — {desc}"] = spec
    if EXAMPLES_DIR.is_dir():
        for p in sorted(EXAMPLES_DIR.rglob("*")):
            if p.is_file() and not p.name.startswith(".") and p.suffix.lower() not in (".md", ".txt", ".py"):
                out[f"file: {p.relative_to(EXAMPLES_DIR)}"] = str(p)
    return out
