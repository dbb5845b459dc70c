"""What every page shares: where runs live, error handling, figure display, graph picking."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v1 as components

from dashboard.figures import apply_presentation
from engine.errors import PlacelabError
from engine.graph import CompGraph
from engine.runs import RunStore

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = REPO_ROOT / "examples"
#: Largest graph file the Graphs page accepts for upload (Streamlit's own default limit too).
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
#: Curated generator specs offered first among the examples.
EXAMPLE_SPECS = {
    "random DAG, 200 ops": "gen:random?ops=200&seed=1",
    "random DAG, 2,000 ops": "gen:random?ops=2000&seed=1",
}


def runs_dir() -> Path:
    """The directory holding stored runs (``PLACELAB_RUNS_DIR`` overrides ``<repo>/runs``)."""
    return Path(os.environ.get("PLACELAB_RUNS_DIR") or REPO_ROOT / "runs")


def run_store() -> RunStore:
    return RunStore(runs_dir())


@contextlib.contextmanager
def guard(action: str = "") -> Iterator[None]:
    """Turn a placelab error (bad input, infeasible placement, ...) or an I/O error into one st.error."""
    try:
        yield
    except PlacelabError as exc:
        st.error(f"{action}: {exc}" if action else str(exc))
    except OSError as exc:
        st.error(f"{action or 'File error'}: {exc.strerror or exc}")


def presentation() -> bool:
    return bool(st.session_state.get("presentation", False))


def show_figure(fig: go.Figure, *, key: str | None = None) -> None:
    """Show a plotly figure (large fonts when the presentation toggle is on)."""
    if presentation():
        apply_presentation(fig)
    st.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False})


def show_html(page: str, height: int) -> None:
    components.html(page, height=height, scrolling=False)


@st.cache_resource(max_entries=16, show_spinner=False)
def _graph_from_spec(spec: str) -> CompGraph:
    from engine.sources import load_graph

    return load_graph(spec)


def graph_from_spec(spec: str) -> CompGraph:
    """The graph of a single-graph spec (file or ``gen:``), cached across reruns and pages."""
    return _graph_from_spec(spec)


@st.cache_resource(max_entries=4, show_spinner=False)
def _graph_from_upload(digest: str, name: str, data: bytes) -> CompGraph:
    from engine.sources import load_graph

    suffix = Path(name).suffix
    with tempfile.TemporaryDirectory(prefix="placelab-upload-") as tmp:
        path = Path(tmp) / f"upload{suffix}"
        path.write_bytes(data)
        return load_graph(str(path))


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


def graph_picker(key: str = "graphs") -> None:
    """Widgets that load a graph into ``st.session_state["graph"]`` (and its source label)."""
    from engine.sources import FORMATS, _load_importers

    source = st.radio("Graph source", ["Example", "Generator spec", "Upload a file"], horizontal=True,
                      key=f"{key}_source")
    spec = None
    label = None
    if source == "Example":
        examples = example_sources()
        choice = st.selectbox("Example graph", list(examples), key=f"{key}_example")
        spec, label = examples[choice], choice
    elif source == "Generator spec":
        from engine.generators import generator_descriptions

        gens = generator_descriptions()
        st.caption("Generators: " + "; ".join(f"`gen:{n}` — {d}" for n, d in gens.items()))
        spec = st.text_input("Generator spec", value="gen:random?ops=300&seed=0", key=f"{key}_spec",
                             help="gen:NAME?key=value&... (CONTRACTS §5)").strip()
        label = spec
    else:
        _load_importers()
        st.caption("Formats (detected from the content): " + "; ".join(f"{f.name} — {f.description}"
                                                                       for f in FORMATS))
        upload = st.file_uploader(f"Graph file (at most {MAX_UPLOAD_BYTES // 2**20} MB)", key=f"{key}_upload")
        if upload is not None:
            if upload.size > MAX_UPLOAD_BYTES:
                st.error(f"{upload.name} is {upload.size / 2**20:.0f} MB, more than the "
                         f"{MAX_UPLOAD_BYTES // 2**20} MB limit.")
                return
            data = upload.getvalue()
            with guard(upload.name), st.spinner(f"Parsing {upload.name} ..."):
                g = _graph_from_upload(hashlib.sha256(data).hexdigest(), upload.name, data)
                _set_graph(g, f"upload: {upload.name}")
            return
    if not spec:
        return
    with guard(), st.spinner(f"Loading {spec} ..."):
        _set_graph(_graph_from_spec(spec), label or spec)


def _set_graph(g: CompGraph, label: str) -> None:
    if st.session_state.get("graph_label") != label or st.session_state.get("graph") is not g:
        st.session_state["graph"] = g
        st.session_state["graph_label"] = label


def current_graph() -> CompGraph | None:
    return st.session_state.get("graph")


def cluster_picker(key: str) -> str:
    """A preset select; the choice is shared between pages."""
    from engine.presets import PRESETS, preset_descriptions

    names = list(PRESETS)
    current = st.session_state.get("cluster_name", names[0])
    name = st.selectbox("Cluster", names, index=names.index(current) if current in names else 0, key=key,
                        format_func=lambda n: n, help="Cluster presets for the papers' machines (CONTRACTS §2)")
    st.session_state["cluster_name"] = name
    st.caption(preset_descriptions()[name])
    return name


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.4g} ms"
