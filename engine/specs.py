"""Spec strings to objects: the layer above the data model (DESIGN "data flow").

A graph spec is a path (the format is detected from the content, never from the file name),
optionally followed by the format's import options ``PATH?key=value&...`` (the keyword-only
parameters of its loader, e.g. a DOPPLER text file's ``unit_s``), a generator spec
``gen:NAME[?key=value&...]`` (CONTRACTS §5), ``bench:NAME`` (a published workload shipped
with placelab, :mod:`engine.workloads.published`) or, in lists, ``family:NAME[:train|:test]``.
A cluster spec is a preset name (:mod:`engine.presets`), a ``placelab.cluster/1`` file or
``bench:NAME``. Formats live in the leaf registry :mod:`engine.graph.formats`; this module finds
the importers that fill it.
"""

from __future__ import annotations

import os
import re
import tempfile

from engine.cluster import Cluster, cluster_from_dict
from engine.errors import PATH_LIMIT, ClusterError, GraphError, PlacelabError, SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import FORMATS, GraphFormat
from engine.jsonio import read_file_bytes, read_json_file
from engine.presets import PRESETS
from engine.spec_params import keyword_only_parameters, spec_kwargs

__all__ = [
    "check_graph_spec",
    "detect_format",
    "expand_graph_specs",
    "load_cluster",
    "load_graph",
    "load_graphs",
    "load_uploaded_graph",
]

_HEAD_BYTES = 4096


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
    raise GraphError(f"{quote(p, PATH_LIMIT, bare=True)}: unrecognized graph format (supported: {names})")


def load_graph(spec: str | os.PathLike) -> CompGraph:
    """A graph from a file path (any registered format), a ``gen:NAME?k=v`` or a ``bench:NAME`` spec."""
    return _resolve(os.fspath(spec), build=True)


def check_graph_spec(spec: str) -> None:
    """Raise the one-sentence error :func:`load_graph` would for ``spec`` where it can be told without building
    the graph: a ``gen:`` spec's generator and its parameters (within their bounds), a ``bench:`` name, a file's
    format and its import options. What only building finds (a model that fails to import) surfaces when the
    graph is loaded."""
    _resolve(spec, build=False)


def _resolve(s: str, *, build: bool) -> CompGraph | None:
    """:func:`load_graph` (``build``) or :func:`check_graph_spec`: one reading of a spec for both."""
    if s.startswith("bench:"):
        from engine.workloads.published import bench_graph, workload  # lazy: reads bundled files

        if build:
            return bench_graph(s)
        workload(s)  # an unknown name: the message lists the bundled ones
        return None
    if s.startswith("gen:"):
        from engine.generators import check_parameters, from_spec, spec_arguments  # lazy: generator modules are many

        if build:
            return from_spec(s)
        check_parameters(*spec_arguments(s))
        return None
    path, query = _split_options(s)
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "saved_model.pb")):
        path = os.path.join(path, "saved_model.pb")  # a SavedModel folder: its graph file
    fmt = detect_format(path)
    options = {}
    if query:
        where = f"{quote(os.path.basename(path), bare=True)} ({fmt.name} format)"
        options = spec_kwargs(query, keyword_only_parameters(fmt.load), where)
    return fmt.load(path, **options) if build else None


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
            raise SpecError(f"{quote(part)}: a family split is 'train' or 'test', got {quote(split)}")
        fam = family(f"family:{name}")
        out.extend(fam.train if split == "train" else fam.test if split == "test" else fam.train + fam.test)
    if not out:
        raise SpecError(f"graph spec {quote(spec)} names no graph")
    return out


def load_graphs(spec: str) -> list[CompGraph]:
    """Every graph of a multi-graph spec (see :func:`expand_graph_specs`)."""
    return [load_graph(s) for s in expand_graph_specs(spec)]


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


def load_cluster(spec: str | os.PathLike | Cluster) -> Cluster:
    """A cluster by preset name (see :mod:`engine.presets`), from a ``placelab.cluster/1`` file, from a
    dnn-partitioning workload file (the machine it describes: ``maxFPGAs`` accelerators and ``maxCPUs``
    CPUs, :func:`engine.importers.dnn_partitioning.dnn_partitioning_cluster`), or ``bench:NAME``: the
    machine of a bundled published workload (:mod:`engine.workloads.published`).
    A :class:`Cluster` is returned as it is, so callers may pass one wherever a spec goes."""
    if isinstance(spec, Cluster):
        return spec
    s = os.fspath(spec)
    if s.startswith("bench:"):
        from engine.workloads.published import bench_cluster  # lazy: reads bundled files

        return bench_cluster(s)
    if s in PRESETS:
        return PRESETS[s]()
    if not os.path.exists(s):
        raise ClusterError(f"unknown cluster {quote(s)}: not a preset ({', '.join(PRESETS)}) nor a file")
    doc = read_json_file(s, error=ClusterError)
    if isinstance(doc, dict) and doc.get("schema") is None and isinstance(doc.get("nodes"), list):
        from engine.importers.dnn_partitioning import dnn_partitioning_cluster  # a workload file: its machine

        return dnn_partitioning_cluster(doc)
    return cluster_from_dict(doc, source=quote(os.path.basename(s), bare=True))
