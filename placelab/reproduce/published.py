"""A reproduction on the graphs its paper's authors published: ``placelab reproduce NAME --graphs-dir DIR``.

A reproduction that declares :class:`~placelab.reproduce.core.PublishedGraphs` (DOPPLER's: the
files of the authors' ``compute_graph/`` folder) can run its steps on those files instead of our
generated graphs. :func:`resolve` looks in ``DIR`` for each row's file names, preferred first, and
says one line per name: found and used (with its sha256 and op count), found but not used (a
preferred one is there), or not found. Then:

* a row whose files are all missing — or for which the authors published none — **falls back to our
  generated graph**: the table stays whole, and every cell of that row says so in its note ("on our
  gen:ffnn: …"), as do the run's notes and its record of the graphs;
* a file that is there but malformed stops the reproduction with its one-line error, and so does a
  ``DIR`` that holds none of the files (most likely the wrong folder);
* a warning the file's importer gives (DOPPLER's corrupted ``16,6`` entry) is said once, as one of
  those lines, and not again by each step that loads the file in this process (steps handed to Ray
  workers with ``--workers`` may repeat it in their own output).

Each file is read by its format's importer with its default options — for DOPPLER's text files the
authors' own units (``engine/importers/doppler_text.py``). A file under one of the authors' names but in
another format (a placelab JSON file named ``chain_mm_112nodes.txt``) is refused with one line, never
recorded as theirs; a malformed file of their format gets the importer's error, which names the line.
The steps name the file by its path; the stored commands show it as ``$GRAPHS/NAME``, and the run's
parameters record, per row, the file's name and sha256 (or our spec), never the folder: such a run can
be shared without the authors' files, which placelab does not bundle.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.errors import GraphError, SpecError, quote
from engine.graph.formats import FORMATS
from engine.jsonio import read_file_bytes
from engine.specs import detect_format, load_graph
from placelab.reproduce.core import (
    Build,
    Cell,
    PublishedGraph,
    PublishedGraphs,
    Reproduction,
    Step,
)
from placelab.reproduce.registry import all_reproductions

__all__ = ["GRAPHS_VAR", "GraphSources", "GraphUse", "graph_records", "graphs_label", "resolve"]

#: How the stored commands name the folder given to ``--graphs-dir``.
GRAPHS_VAR = "$GRAPHS"


@dataclass(frozen=True)
class GraphUse:
    """The graph one row runs on: the authors' ``file`` (with its sha256 and op count), or ``ours``, and why."""

    row: str
    ours: str
    file: str | None = None
    sha256: str | None = None
    ops: int | None = None
    why: str = ""

    def record(self) -> dict[str, Any]:
        """The entry stored in the run's parameters (``graphs``)."""
        if self.file is None:
            return {"row": self.row, "source": "ours", "spec": self.ours, **({"why": self.why} if self.why else {})}
        return {"row": self.row, "source": "authors", "file": self.file, "sha256": self.sha256, "ops": self.ops,
                "replaces": self.ours}


@dataclass(frozen=True)
class GraphSources:
    """The outcome of :func:`resolve`: the folder, each row's graph, the lines to say, the warnings said."""

    directory: str
    uses: tuple[GraphUse, ...]
    lines: tuple[str, ...]
    said: tuple[str, ...] = ()

    def _paths(self) -> dict[str, str]:
        return {u.ours: os.path.join(self.directory, u.file) for u in self.uses if u.file}

    def substitute(self, step: Step) -> Step:
        """The step with every argument that names a replaced graph of ours naming the authors' file."""
        paths = self._paths()
        return replace(step, argv=tuple(paths.get(a, a) for a in step.argv))

    def hide(self, text: str) -> str:
        """``text`` with the folder written as :data:`GRAPHS_VAR` (for the stored commands)."""
        return text.replace(os.path.join(self.directory, ""), f"{GRAPHS_VAR}/")

    def mark(self, built: Build) -> Build:
        """The build with the fallback rows' cells marked and a note naming every row's graph."""
        ours = {u.row: u for u in self.uses if u.file is None}

        def marked(c: Cell) -> Cell:
            on = [ours[r] for r in c.row.split(" -> ") if r in ours]
            text = "; ".join(f"on our {u.ours}: {u.why}" for u in on)
            return replace(c, note=f"{text}; {c.note}" if text and c.note else text or c.note)

        used = "; ".join(f"{u.row}: {u.file} (sha256 {(u.sha256 or '')[:12]})" if u.file else f"{u.row}: our {u.ours}"
                         for u in self.uses)
        note = f"Graphs: the authors' files where found, in their own units — {used}."
        return Build([marked(c) for c in built.cells], built.figures, [*built.notes, note])

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """While the steps run: the importers' warnings already said (``said``) are not said again."""
        with warnings.catch_warnings():
            for message in self.said:
                warnings.filterwarnings("ignore", message=re.escape(message))
            yield


def _load(path: str, expected: str | None = None) -> tuple[int, list[str]]:
    """Op count of the graph file and the warnings its importer gave (raises its one-line error); ``expected``:
    the format the file must be in (:func:`_load_as`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = load_graph(path) if expected is None else _load_as(path, expected)
    return graph.num_ops, list(dict.fromkeys(str(w.message) for w in caught))


def _load_as(path: str, expected: str):
    """The graph of ``path`` read by the importer of format ``expected``: a file another format recognises is
    refused (GraphError naming both formats); one that no format recognises goes to that importer, whose error
    names the line at fault."""
    try:
        found = detect_format(path)
    except GraphError:  # unrecognized (or unreadable: the importer says so again)
        found = None
    if found is not None and found.name != expected:
        raise GraphError(f"{path} is a {found.name} graph file, not in the {expected} format the authors published "
                         "their graphs in: it cannot stand for their file")
    fmt = found or next(f for f in FORMATS if f.name == expected)
    return fmt.load(path)


def _row(g: PublishedGraph, directory: str, order_note: str,
         expected: str | None = None) -> tuple[GraphUse, list[str], list[str]]:
    lines: list[str] = []
    said: list[str] = []
    use: GraphUse | None = None
    for name in g.files:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            lines.append(f"{g.row}: {name} not found")
        elif use is not None:
            lines.append(f"{g.row}: {name} found, not used: {use.file} is preferred ({order_note})")
        else:
            digest = hashlib.sha256(read_file_bytes(path, error=GraphError)).hexdigest()
            ops, warned = _load(path, expected)
            use = GraphUse(g.row, g.ours, name, digest, ops)
            lines.append(f"{g.row}: {name} found, used (sha256 {digest[:12]}, {ops} ops)")
            said += warned
            lines += [f"{g.row}: {m}" for m in warned]
    if use is None:
        why = "the authors' file was not found" if g.files else "the authors published no file for this row"
        use = GraphUse(g.row, g.ours, why=why)
        lines.append(f"{g.row}: runs on our {g.ours} ({why}), marked so in its cells")
    return use, lines, said


def resolve(rep: Reproduction, graphs_dir: str) -> GraphSources:
    """Find reproduction ``rep``'s published graphs in ``graphs_dir`` (see the module docstring).

    Raises
    ------
    SpecError
        ``rep`` declares no published graphs, ``graphs_dir`` is not a folder, or it holds none of the files.
    GraphError
        A file that is there cannot be read (its importer's one-line error).
    """
    pub: PublishedGraphs | None = rep.published
    if pub is None:
        some = ", ".join(n for n, r in all_reproductions().items() if r.published)
        raise SpecError(f"reproduction {quote(rep.name)} has no graphs published by its authors to run on; "
                        f"--graphs-dir applies to {some}")
    directory = os.path.abspath(graphs_dir)
    if not os.path.isdir(directory):
        raise SpecError(f"--graphs-dir {graphs_dir}: " + ("not a folder" if os.path.exists(directory)
                                                          else "no such folder"))
    names = [n for g in pub.graphs for n in g.files]
    if not any(os.path.isfile(os.path.join(directory, n)) for n in names):
        raise SpecError(f"--graphs-dir {graphs_dir} holds none of the authors' graph files {rep.name} looks for "
                        f"({len(names)} names, such as {names[-1]}); they are in {pub.where}")
    uses, lines, said = [], [], []
    for g in pub.graphs:
        use, more, warned = _row(g, directory, pub.order_note, pub.format)
        uses.append(use)
        lines += more
        said += warned
    return GraphSources(directory, tuple(uses), tuple(lines), tuple(dict.fromkeys(said)))


def graph_records(rep: Reproduction, sources: GraphSources | None) -> list[dict[str, Any]]:
    """What the run's parameters record under ``graphs``: each row's graph (ours when run without a folder)."""
    if sources is not None:
        return [u.record() for u in sources.uses]
    return [GraphUse(g.row, g.ours).record() for g in rep.published.graphs] if rep.published else []


def graphs_label(parameters: Mapping[str, Any]) -> str:
    """``"authors' graphs"`` for a run on the authors' files (some or all), else ``""``."""
    graphs = parameters.get("graphs") or []
    return "authors' graphs" if any(isinstance(g, dict) and g.get("source") == "authors" for g in graphs) else ""
