"""What a reproduction is: the commands it runs, the cells it reads from their outputs, the paper's numbers.

A :class:`Reproduction` declares, for the ``quick`` and the ``full`` setting, the list of
:class:`Step` s it runs — each one ``placelab`` command line (CONTRACTS §5), so what was run is
exactly what a user types to rerun one cell — and a ``build`` function that turns the commands'
JSON outputs into :class:`Cell` s (row, column, our value) and optional figure data. The paper's
numbers come from ``papers/<paper>.json`` (:mod:`placelab.reproduce.papers`); the runner
(:mod:`placelab.reproduce.runner`) runs the steps, joins our cells with the paper's and stores
one run (CONTRACTS §7). Adding a reproduction is one :func:`register` call.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["REF", "Build", "Cell", "PublishedGraph", "PublishedGraphs", "Reproduction", "SearchColumn", "Step",
           "search_column_name", "steps_for"]


#: A reference, inside a step's argument, to the run an earlier step stored: ``{run:KEY}`` (its
#: id), ``{rundir:KEY}`` (its directory), ``{placement:KEY}`` (its ``placement.json``).
REF = re.compile(r"\{(run|rundir|placement):([^{}]+)\}")


@dataclass(frozen=True)
class Step:
    """One ``placelab`` command: ``argv`` without the program name and without ``--json``.

    ``key`` names its output for the build function; ``seed`` is recorded with the command. An
    argument may reference an earlier step's run (:data:`REF`); the runner fills it in.
    """

    key: str
    argv: tuple[str, ...]
    seed: int | None = None

    def references(self) -> list[str]:
        """The keys of the steps whose runs this one's arguments name (:data:`REF`)."""
        return [m.group(2) for a in self.argv for m in REF.finditer(a)]

    def command(self) -> str:
        """The command line as a user types it."""
        import shlex

        return "placelab " + " ".join(shlex.quote(a) for a in self.argv)


@dataclass(frozen=True)
class Cell:
    """One number of our table: ``value`` in the table's unit (None when not measured), ``note`` why.

    ``std``: the standard deviation of ``value`` when it is a mean over executions (DOPPLER's tables).
    """

    row: str
    column: str
    value: float | None
    note: str = ""
    oom: bool = False
    std: float | None = None


@dataclass
class Build:
    """What a reproduction's ``build`` returns: our cells, figure data (name → JSON-able dict), notes."""

    cells: list[Cell]
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PublishedGraph:
    """One row's graph as its paper's authors published it: the row, the spec of our graph that the
    steps name (``gen:chainmm``), and the file names that stand for it, preferred first (none: the
    authors published no file for this row)."""

    row: str
    ours: str
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class PublishedGraphs:
    """The graphs a reproduction can run on instead of ours (``placelab reproduce NAME --graphs-dir DIR``,
    :mod:`placelab.reproduce.published`): where to get them, one entry per row, and why a row's first
    file name is preferred to the others when both are there. ``format``: the registered graph format
    (:mod:`engine.graph.formats`) the authors' files are in; a file of another format under one of their names
    is refused, and a malformed one is read by that format's importer, which names the line."""

    where: str
    graphs: tuple[PublishedGraph, ...]
    order_note: str = ""
    format: str | None = None


#: build(outputs by step key, run store root, quick) -> Build
BuildFn = Callable[[Mapping[str, dict[str, Any]], str, bool], Build]


@dataclass(frozen=True)
class SearchColumn:
    """How a reproduction adds the search reference as a column (``placelab reproduce NAME --search N``): ``steps(N)``
    are the commands that find its placement of each row's graph with ``anneal`` at ``N`` evaluations and measure
    it as the table's other cells are measured; ``cells(outputs, runs_dir, column)`` reads one cell per row, in the
    table's unit, named ``column`` (:func:`search_column_name`). Each row's ×search is then every cell of that row
    ÷ this one (:func:`placelab.reproduce.papers.join`)."""

    steps: Callable[[int], list[Step]]
    cells: Callable[[Mapping[str, dict[str, Any]], str, str], list[Cell]]


def search_column_name(evaluations: int, seed: int = 0) -> str:
    """The search reference's column, its budget in its name: ``Search (anneal: 20,000 evaluations, no time limit,
    seed 0)``."""
    from policies.simulated_annealing import budget_text

    return f"Search ({budget_text(evaluations, None, seed)})"


@dataclass(frozen=True)
class Reproduction:
    """A table or figure of a paper, reproduced in simulation.

    Attributes
    ----------
    name : str
        The command's NAME (``placeto-table1``).
    title : str
        One line for listings.
    paper, table : str
        The paper data file (``papers/<paper>.json``) and the table key in it.
    steps : callable
        ``steps(quick) -> list[Step]``: the commands, in order.
    build : callable
        ``build(outputs, runs_dir, quick) -> Build``.
    quick_minutes : float
        Expected wall time of ``--quick`` on the reference machine (2 CPU cores), minutes.
    reference : str, optional
        A column every row is divided by for the normalised comparison (ours/ours-reference
        against paper/paper-reference): absolute times of a simulated K80 and a measured one
        differ by the cost model, their ratios should not.
    requires : tuple of str
        Placers (registered names), modules (``module:policies.rl.doppler.agent``) or cluster presets
        (``cluster:p100x4-8gb``) the reproduction needs; when one is missing the reproduction is
        listed as not ready and refuses to run.
    exclusive : bool
        Its steps measure executions on this machine's cores: they must not run side by side
        (``--workers`` is refused).
    published : PublishedGraphs, optional
        The authors' own graph files it can run on (``--graphs-dir``) in place of our generated ones.
    search : SearchColumn, optional
        How it adds the search reference as a column with ``--search N`` (None: it cannot).
    """

    name: str
    title: str
    paper: str
    table: str
    steps: Callable[[bool], list[Step]]
    build: BuildFn
    quick_minutes: float
    reference: str | None = None
    requires: tuple[str, ...] = ()
    exclusive: bool = False
    published: PublishedGraphs | None = None
    search: SearchColumn | None = None

    def missing(self) -> list[str]:
        """The requirements this installation lacks (empty when the reproduction can run)."""
        from engine.presets import PRESETS
        from policies.registry import placer_descriptions

        placers = placer_descriptions()
        out = []
        for req in self.requires:
            if req.startswith("cluster:"):
                if req[len("cluster:"):] not in PRESETS:
                    out.append(f"cluster preset {req[len('cluster:'):]}")
            elif req.startswith("module:"):
                try:
                    importlib.import_module(req[len("module:"):])
                except ImportError:
                    out.append(req)
            elif req not in placers:
                out.append(f"placer {req}")
        return out


def steps_for(items: Sequence[tuple[str, Sequence[str]]], seed: int = 0) -> list[Step]:
    """Steps from ``(key, argv)`` pairs that all use ``seed`` (appended as ``--seed``)."""
    return [Step(k, (*argv, "--seed", str(seed)), seed) for k, argv in items]
