"""Option types and output helpers shared by the ``placelab`` command modules."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from engine.cluster import SIMULATION_MODES, Cluster, load_cluster, parse_simulation_options
from engine.errors import SpecError
from engine.jsonio import dumps

GraphArg = Annotated[str, typer.Argument(help="graph file (any supported format) or gen:NAME?k=v")]
ClusterOpt = Annotated[str, typer.Option("--cluster", "-c", help="preset name or cluster file")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object")]
RunsDirOpt = Annotated[str, typer.Option("--runs-dir", envvar="PLACELAB_RUNS_DIR", help="run store folder")]
ModeOpt = Annotated[str | None, typer.Option(
    "--mode", help=f"simulation mode: {' | '.join(SIMULATION_MODES)} (default: the cluster's)")]
SimParamOpt = Annotated[list[str] | None, typer.Option(
    "--sim-param", help="simulation setting key=value, e.g. choose=b_level, noise=0.1, runs=10 (docs/simulation.md)")]
DEFAULT_RUNS = "runs"


def simulation_cluster(cluster: str | Cluster, mode: str | None, sim_params: list[str] | None) -> Cluster:
    """The cluster (a spec or a Cluster) with ``--mode`` / ``--sim-param`` applied: every
    simulation on it (placers, learned placers, trainers) runs with these settings, and runs
    store them with the cluster."""
    c = cluster if isinstance(cluster, Cluster) else load_cluster(cluster)
    return c.with_simulation(mode=mode, **parse_simulation_options(sim_params or []))


def emit(obj: dict[str, Any], as_json: bool, text: str) -> None:
    """Print ``obj`` as one JSON object, or ``text`` for people."""
    typer.echo(dumps(obj) if as_json else text)


def text_table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.3f} ms" if x < 10 else f"{x:.2f} s"


def fmt_bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b:.0f} B"



def parse_params(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SpecError(f"--param expects key=value, got '{pair}'")
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out
