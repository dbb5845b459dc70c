"""Option types and output helpers shared by the ``placelab`` command modules."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from engine.errors import SpecError
from engine.jsonio import dumps

GraphArg = Annotated[str, typer.Argument(help="graph file (any supported format), gen:NAME?k=v, or bench:NAME "
                                                 "(a bundled published workload: `placelab graph list`)")]
ClusterOpt = Annotated[str, typer.Option("--cluster", "-c", help="preset name or cluster file")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object")]
RunsDirOpt = Annotated[str, typer.Option("--runs-dir", envvar="PLACELAB_RUNS_DIR", help="run store folder")]
DEFAULT_RUNS = "runs"


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
