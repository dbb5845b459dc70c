"""Where graphs come from: files in any supported format, or generator specs.

:func:`load_graph` takes a path (the format is detected from the content, never from the
file name), optionally followed by the format's import options ``PATH?key=value&...`` (the
keyword-only parameters of its loader, e.g. a DOPPLER text file's ``unit_s``), or a
generator spec ``gen:NAME[?key=value&...]`` (CONTRACTS §5). Importers
register with :func:`register_format`: a ``detect(head: bytes) -> bool`` test on the first
bytes of the file and a ``load(path) -> CompGraph``. Importers never execute code from the
file (no unpickling). ``bench:NAME`` names a published workload shipped with placelab
(:mod:`engine.workloads.published`).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engine.errors import GraphError, PlacelabError, SpecError
from engine.graph import CompGraph
from engine.graph_io import GRAPH_SCHEMA, load_graph_json
from engine.jsonio import read_file_bytes
from engine.spec_params import keyword_only_parameters, spec_kwargs

__all__ = [
    "FORMATS",
    "GraphFormat",
    "detect_format",
    "expand_graph_specs",
    "load_graph",
    "load_graphs",
    "load_uploaded_graph",
    "register_format",
    "visitor_spec",
]

_HEAD_BYTES = 4096


@dataclass(frozen=True)
class GraphFormat:
    name: str
    description: str
    detect: Callable[[bytes], bool]
    load: Callable[[str], CompGraph]


FORMATS: list[GraphFormat] = []


def register_format(name: str, description: str, detect: Callable[[bytes], bool],
                    load: Callable[[str], CompGraph]) -> None:
    """Add an importer; formats are tried in registration order."""
    FORMATS.append(GraphFormat(name, description, detect, load))


def _is_placelab_json(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and GRAPH_SCHEMA.encode() in head


register_format("placelab", f"placelab graph JSON ({GRAPH_SCHEMA})", _is_placelab_json, load_graph_json)


def _load_importers() -> None:
    import engine.importers
    from engine._discover import import_submodules

    import_submodules(engine.importers)


def detect_format(path: str | os.PathLike) -> GraphFormat:
    """The registered format of the file at ``path`` (from its first bytes)."""
    _load_importers()
    p = os.fspath(path)
    head = read_file_bytes(p, error=GraphError, head=_HEAD_BYTES)
    for fmt in FORMATS:
        if fmt.detect(head):
            return fmt
    names = ", ".join(f.name for f in FORMATS)
    raise GraphError(f"{p}: unrecognized graph format (supported: {names})")


def load_graph(spec: str | os.PathLike) -> CompGraph:
    """A graph from a file path (any registered format), a ``gen:NAME?k=v`` or a ``bench:NAME`` spec."""
    s = os.fspath(spec)
    if s.startswith("bench:"):
        from engine.workloads.published import bench_graph

        return bench_graph(s)
    if s.startswith("gen:"):
        from engine.generators import from_spec

        return from_spec(s)
    path, query = _split_options(s)
    fmt = detect_format(path)
    if not query:
        return fmt.load(path)
    options = keyword_only_parameters(fmt.load)
    where = f"{os.path.basename(path)} ({fmt.name} format)"
    return fmt.load(path, **spec_kwargs(query, options, where))


def _split_options(spec: str) -> tuple[str, str]:
    """``(path, query)`` of ``PATH?key=value&...``: import options of the file's format.

    A path that exists as written is never split (a file name may contain ``?``).
    """
    if "?" not in spec or os.path.exists(spec):
        return spec, ""
    path, _, query = spec.rpartition("?")
    return (path, query) if os.path.exists(path) else (spec, "")


def expand_graph_specs(spec: str) -> list[str]:
    """The single-graph specs a multi-graph spec stands for, in order.

    ``spec`` is a comma-separated list of graph specs (paths or ``gen:``) and Placeto
    families: ``family:NAME`` (all 32 graphs), ``family:NAME:train`` or ``family:NAME:test``
    (the fixed 16/16 split of Placeto App. A.3; see ``engine/workloads/placeto_families.py``).
    """
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if not part.startswith("family:"):
            out.append(part)
            continue
        from engine.workloads.placeto_families import family

        name, _, split = part[len("family:"):].partition(":")
        if split not in ("", "train", "test"):
            raise SpecError(f"'{part}': a family split is 'train' or 'test', got '{split}'")
        fam = family(f"family:{name}")
        out.extend(fam.train if split == "train" else fam.test if split == "test" else fam.train + fam.test)
    if not out:
        raise SpecError(f"graph spec '{spec}' names no graph")
    return out


def load_graphs(spec: str) -> list[CompGraph]:
    """Every graph of a multi-graph spec (see :func:`expand_graph_specs`)."""
    return [load_graph(s) for s in expand_graph_specs(spec)]


def visitor_spec(spec: str, examples: Iterable[str] = ()) -> str:
    """``spec`` if a visitor of the app may load it: a generator spec or one of ``examples``.

    The app's text box must not become a way to read files on the server (or to learn which
    paths exist); files reach the app only as uploads or as listed examples.

    Raises
    ------
    SpecError
        Anything else, in one sentence that does not echo whether a path exists.
    """
    s = spec.strip()
    if s.startswith("gen:") or s in set(examples):
        return s
    raise SpecError("type a generator spec gen:NAME?key=value&... (to load a file, upload it)")


def load_uploaded_graph(name: str, data: bytes) -> CompGraph:
    """A graph from an uploaded file's bytes; errors name the visitor's file, never a temp path.

    The bytes are written under a private temporary folder with the upload's base name
    (restricted to safe characters), loaded like any file, and the folder is removed.
    """
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(name or "")).lstrip(".") or "upload"
    with tempfile.TemporaryDirectory(prefix="placelab-upload-") as tmp:
        path = os.path.join(tmp, base)
        with open(path, "wb") as f:
            f.write(data)
        try:
            return load_graph(path)
        except PlacelabError as exc:
            message = str(exc).replace(path, name).replace(tmp + os.sep, "").replace(tmp, "")
            raise type(exc)(message.replace(base, name) if base != name else message) from None
