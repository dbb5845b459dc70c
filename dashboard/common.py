"""What every page shares: where runs live, error handling, figure display, graph picking."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.context import current_graph, graph_spec, keep, set_graph
from dashboard.figures import apply_presentation, table_latex
from dashboard.figures.theme import EXPORT_FORMATS, export_figure, figure_html, figure_image
from engine.errors import PlacelabError, one_line
from engine.graph import CompGraph
from engine.runs import Run, RunStore

#: Base font size (px) of figures in presentation mode.
PRESENTATION_FONT = 22
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
    """The user's run store, where the app saves and trains: ``PLACELAB_RUNS_DIR``, else the CLI's default
    (``placelab.cli_common.DEFAULT_RUNS``, a per-user data folder apart from the bundled examples)."""
    from placelab.cli_common import DEFAULT_RUNS

    return Path(os.environ.get("PLACELAB_RUNS_DIR") or DEFAULT_RUNS)


def example_runs_dir() -> Path:
    """The example runs shipped with placelab, read-only (``PLACELAB_EXAMPLE_RUNS_DIR`` overrides ``<repo>/runs``)."""
    return Path(os.environ.get("PLACELAB_EXAMPLE_RUNS_DIR") or REPO_ROOT / "runs")


def run_store() -> RunStore:
    """The user's store (the only one the app writes to)."""
    return RunStore(runs_dir())


def _example_store() -> RunStore | None:
    ex, mine = example_runs_dir(), runs_dir()
    if not ex.is_dir() or (mine.exists() and ex.resolve() == mine.resolve()):
        return None
    return RunStore(ex)


def is_example(run: Run) -> bool:
    """Whether ``run`` is one of the bundled, read-only examples."""
    store = _example_store()
    return store is not None and run.path.parent.resolve() == store.root.resolve()


def list_runs(kind: str | None = None, status: str | None = None, tag: str | None = None,
              problems: list[str] | None = None) -> list[Run]:
    """The user's runs, then the bundled examples, each newest first. A run whose ``run.json`` cannot be read
    is left out; ``problems``, when given, receives one line naming each (``RunStore.list``)."""
    runs: list[Run] = []
    for store in (run_store() if runs_dir().is_dir() else None, _example_store()):
        if store is not None:
            runs += store.list(kind=kind, status=status, tag=tag)
            if problems is not None:
                problems += store.problems
    return runs


def show_error(message: object) -> None:
    """One st.error holding ``message`` as one line of at most ``MAX_LINE`` characters, its start and end
    kept and control characters escaped (``engine.errors.one_line``, as the CLI's ``error:`` line): a
    10^5-op cycle or a megabyte op name does not become a megabyte alert."""
    st.error(one_line(message))


@contextlib.contextmanager
def guard(action: str = "") -> Iterator[None]:
    """Turn a placelab error (bad input, infeasible placement, ...) or an I/O error into one st.error."""
    try:
        yield
    except PlacelabError as exc:
        show_error(f"{action}: {exc}" if action else exc)
    except OSError as exc:
        show_error(f"{action or 'File error'}: {exc.strerror or exc}")


def presentation() -> bool:
    return bool(st.session_state.get("presentation", False))


def show_figure(fig: go.Figure, *, key: str | None = None, export: bool = True,
                on_select: Callable[[], None] | None = None, selection_mode: str | tuple[str, ...] = "points") -> None:
    """Show a plotly figure (large fonts when the presentation toggle is on) with its export controls;
    ``on_select`` is called when a point (a bar) is clicked (or a box dragged, with ``selection_mode``
    holding ``"box"``), the selection in ``st.session_state[key]``."""
    if presentation():
        apply_presentation(fig, PRESENTATION_FONT)
    select = {} if on_select is None else {"on_select": on_select, "selection_mode": selection_mode}
    st.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False, "toImageButtonOptions": {
        "format": "png", "width": 1600, "height": 900, "scale": 2}}, **select)
    if export and key:
        figure_export_controls(fig, key)


def figure_export_controls(fig: go.Figure, key: str) -> None:
    """A popover to download ``fig`` as PNG/SVG/PDF (kaleido, chosen size) or HTML, with an editable title."""
    with st.popover("Export figure", icon=":material/download:"):
        title = st.text_input("Title", value=fig.layout.title.text or "", key=f"{key}_x_title")
        cols = st.columns(3)
        width = int(cols[0].number_input("width (px)", 300, 4000, 1600, 100, key=f"{key}_x_w"))
        height = int(cols[1].number_input("height (px)", 200, 3000, 900, 100, key=f"{key}_x_h"))
        font = int(cols[2].number_input("font size", 8, 48, 22, 1, key=f"{key}_x_font"))
        fmt = st.radio("Format", list(EXPORT_FORMATS), horizontal=True, key=f"{key}_x_fmt",
                       format_func=str.upper)

        def data() -> bytes:  # built on the click only: a deep copy of a 10k-op timeline costs seconds
            out = export_figure(fig, title=title, font_size=font)
            out.update_layout(width=width if fmt == "html" else None, height=height if fmt == "html" else None)
            if fmt == "html":
                return figure_html(out).encode("utf-8")
            image = figure_image(out, fmt, width=width, height=height)
            if image is None:
                raise PlacelabError("image export needs kaleido and the system chromium (make setup "
                                    "browser-deps); download HTML instead")
            return image

        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in (title or key)).strip("_")[:80] or key
        st.download_button(f"Download {fmt.upper()}", data, file_name=f"{name}.{fmt}", mime=EXPORT_FORMATS[fmt],
                           key=f"{key}_x_dl", on_click="ignore")


def table_downloads(table: pd.DataFrame, key: str, name: str) -> None:
    """CSV and LaTeX downloads of a table (LaTeX: booktabs, numbers to 4 significant digits)."""
    cols = st.columns([1, 1, 6])
    cols[0].download_button("CSV", lambda: table.to_csv(index=False).encode("utf-8"), file_name=f"{name}.csv",
                            mime="text/csv", key=f"{key}_csv", on_click="ignore", icon=":material/download:")
    cols[1].download_button("LaTeX", lambda: table_latex(table).encode("utf-8"), file_name=f"{name}.tex",
                            mime="application/x-tex", key=f"{key}_tex", on_click="ignore",
                            icon=":material/download:")


@st.cache_resource(max_entries=16, show_spinner=False)
def _graph_from_spec(spec: str) -> CompGraph:
    from engine.sources import load_graph

    return load_graph(spec)


def graph_from_spec(spec: str) -> CompGraph:
    """The graph of a single-graph spec (file or ``gen:``), cached across reruns and pages."""
    return _graph_from_spec(spec)


@st.cache_resource(max_entries=4, show_spinner=False)
def _graph_from_upload(digest: str, name: str, data: bytes) -> CompGraph:
    """The graph of an uploaded file, parsed under the file's own name (so the graph keeps it)."""
    from engine.sources import load_uploaded_graph

    return load_uploaded_graph(name, data)


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


def graph_picker(key: str = "graphs") -> bool:
    """Widgets that choose a graph; it becomes the app's current graph only on *Use this graph* (or an upload).

    Returns False when the last attempt failed (the error is shown; the current graph is unchanged).
    """
    from engine.sources import FORMATS, _load_importers, visitor_spec

    source = st.radio("Graph source", ["Example", "Generator spec", "Upload a file"], horizontal=True,
                      key=keep(f"{key}_source"))
    if source == "Upload a file":
        _load_importers()
        st.caption("Formats (detected from the content): " + "; ".join(f"{f.name} — {f.description}"
                                                                       for f in FORMATS))
        upload = st.file_uploader(f"Graph file (at most {MAX_UPLOAD_BYTES // 2**20} MB)", key=f"{key}_upload")
        if upload is None:
            return True
        if upload.size > MAX_UPLOAD_BYTES:
            st.error(f"{upload.name} is {upload.size / 2**20:.0f} MB, more than the "
                     f"{MAX_UPLOAD_BYTES // 2**20} MB limit.")
            return False
        data = upload.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        if st.session_state.get("ctx_upload_digest") == digest:
            return True
        ok = False
        with guard(upload.name), st.spinner(f"Parsing {upload.name} ..."):
            set_graph(_graph_from_upload(digest, upload.name, data), f"upload: {upload.name}")
            st.session_state["ctx_upload_digest"] = digest
            ok = True
        if ok:
            st.rerun()  # the sidebar, drawn before this page, shows the new graph
        return ok
    if source == "Example":
        examples = example_sources()
        choice = st.selectbox("Example graph", list(examples), key=keep(f"{key}_example"))
        spec, label = examples[choice], choice
    else:
        from engine.generators import generator_descriptions

        gens = generator_descriptions()
        st.caption("Generators: " + "; ".join(f"`gen:{n}` — {d}" for n, d in gens.items()))
        spec = st.text_input("Generator spec", value="gen:random?ops=300&seed=0", key=keep(f"{key}_spec"),
                             help="gen:NAME?key=value&... (CONTRACTS §5)").strip()
        label = spec
    same = spec == graph_spec() and current_graph() is not None
    if not st.button("Reload this graph" if same else "Use this graph", key=f"{key}_use", type="primary",
                     disabled=not spec, help="Make it the current graph of every page (shown in the sidebar)"):
        return True
    ok = False
    with guard(), st.spinner(f"Loading {spec} ..."):
        # a visitor names generator specs and listed examples only, never a file on the server
        set_graph(_graph_from_spec(visitor_spec(spec, example_sources().values())), label or spec, spec)
        ok = True
    if ok:
        st.rerun()  # the sidebar, drawn before this page, shows the new graph
    return ok


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.4g} ms"
