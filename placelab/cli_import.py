"""``placelab graph import``: a user's model (code, ``.keras``, SavedModel, ``.pb``, ONNX or any graph
format) written as a ``placelab.graph/1`` file (``docs/guide/your-model.md``).

The command is the only one that runs a user's code (``FILE.py:FACTORY``), and only when it is named;
see :mod:`engine.model_import`.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from engine.errors import WriteError, quote
from engine.graph.io import save_graph
from engine.jsonio import check_write_target
from placelab.cli_common import JsonOpt, emit

__all__ = ["register"]


def import_graph(
    source: Annotated[str, typer.Argument(
        help="FILE.py:FACTORY (a function returning a torch.nn.Module or a keras.Model: runs your code), a .keras "
             "file, a SavedModel folder, a .pb, an .onnx file, or any graph file placelab reads")],
    output: Annotated[str, typer.Option("--output", "-o", help="the placelab.graph/1 file to write")],
    batch: Annotated[int | None, typer.Option(
        min=1, help="rows per step (default 32 for code and .keras, the file's own or 1 for exported graphs)")] = None,
    input_shape: Annotated[list[str] | None, typer.Option(
        "--input-shape", help="a PyTorch input's shape without the batch, e.g. 3,224,224 or 16:int64 (repeat per "
                              "input)")] = None,
    output_key: Annotated[str | None, typer.Option(
        "--output-key", help="a PyTorch output the loss reads: a key of a dict or Hugging Face output (logits) or a "
                             "tuple position (default: its loss, else its first tensor)")] = None,
    inference: Annotated[bool, typer.Option(
        "--inference", help="the forward pass only (default: one training step: forward, backward, update)")] = False,
    measure: Annotated[bool, typer.Option(
        "--measure", help="time every op on this machine's CPU (code only) instead of the GPU rooflines")] = False,
    name: Annotated[str | None, typer.Option(help="the graph's name (default: from the model)")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace an existing output file")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Import your model as a graph file: then `placelab compare FILE -c k80x2`, or open it in the app."""
    from engine.model_import import import_model
    from engine.store.summary import cost_sources

    target = check_write_target(output)
    if target.exists() and not force:
        raise WriteError(f"{output} exists: pass --force to replace it")
    g = import_model(source, batch=batch, input_shapes=input_shape or (), training=not inference,
                     measure=measure, name=name, output_key=output_key)
    save_graph(g, target)
    phases = {p: sum(1 for q in g.phase if q == p) for p in ("forward", "backward", "update")}
    info = {"graph": g.name, "ops": g.num_ops, "edges": g.num_edges, "phases": phases, "costs": cost_sources(g),
            "output": os.fspath(output)}
    text = (f"wrote {output}: graph {quote(g.name)}, {g.num_ops} ops, {g.num_edges} edges "
            f"({', '.join(f'{v} {k}' for k, v in phases.items() if v)})\n"
            "costs: " + "; ".join(f"{k}: {v}" for k, v in info["costs"].items()) + "\n"
            f"next: placelab compare {output} -c {'k80x2' if 'gpu' in g.base_kinds else 'local'} "
            "--placers single-device,m-etf,metis")
    emit(info, as_json, text)


def register(graph_app: typer.Typer) -> None:
    """Add ``import`` to the ``placelab graph`` group."""
    graph_app.command("import")(import_graph)
