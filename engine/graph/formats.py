"""The graph-format registry: a leaf that importers register with (CONTRACTS §5).

Each format is a ``detect(head: bytes) -> bool`` test on the first bytes of a file and a
``load(path) -> CompGraph``; formats are tried in registration order. Importers never
execute code from the file (no unpickling). Finding the importers (importing
:mod:`engine.importers`) and turning a spec string into a graph is the job of
:mod:`engine.specs`, one layer above; this module imports nothing that registers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.graph.compgraph import CompGraph
from engine.graph.io import GRAPH_SCHEMA, load_graph_json

__all__ = ["FORMATS", "GraphFormat", "register_format"]


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
