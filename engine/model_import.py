"""A user's own model as a graph: ``module.py:factory`` code, Keras ``.keras`` files, SavedModel folders,
TensorFlow ``.pb`` files, ONNX files and every registered graph format (``placelab graph import``).

* ``path/to/models.py:factory`` imports the user's file and calls ``factory()``: a ``torch.nn.Module``
  or a Keras model. This runs the user's code, on their machine, and only when they ask for it
  (``placelab graph import``); no other command, and never the app, runs code from a file.
  A PyTorch module needs its inputs' shapes (``input_shapes``, without the batch dimension; one per
  positional input, ``"3,224,224"`` or ``"16:int64"`` for token ids, filled with zeros); a Keras model
  knows its own. The factory may also return ``(model, [example inputs])`` for a PyTorch module, whose
  output may be a tensor, a tuple, a dict or a Hugging Face ``ModelOutput`` (``output_key`` picks the one
  the loss reads; default: its own ``loss``, else its first tensor).
* ``.keras`` files are loaded with Keras' safe mode (no Python code in the file is run:
  ``keras.saving.load_model(..., safe_mode=True)``).
* A SavedModel folder or a ``.pb`` GraphDef holds its exported graph, normally an inference graph:
  it is imported as such, its unknown dimensions set to ``batch`` (the file's own training ops, if it
  saved any, stay).
* Any other file is read by the format registry (``engine.specs.load_graph``): ONNX, placelab JSON,
  networkx, GraphML, DOPPLER text, dnn-partitioning.

PyTorch modules, Keras models and ONNX files become one training step (forward, backward, SGD
update) by default, or the forward pass with ``training=False``; ``measure=True`` times every op on
this machine (the measured importers, ``engine/importers/pytorch_measured.py`` and
``tensorflow_measured.py``) instead of the roofline (``docs/reference/costs.md``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from engine.errors import GraphError, SpecError, first_line, quote
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict, graph_to_dict
from engine.limits import MAX_INPUT_ELEMENTS, check_at_most
from engine.quiet import quiet_tensorflow_start
from engine.specs import load_graph

__all__ = ["import_model", "parse_input_shape"]

_DTYPES = ("float32", "float64", "int64", "int32")


def parse_input_shape(text: str) -> tuple[tuple[int, ...], str]:
    """``"3,224,224"`` → ``((3, 224, 224), "float32")``; ``"16:int64"`` → ``((16,), "int64")``; ``""`` is a
    scalar per row."""
    dims, _, dtype = text.partition(":")
    dtype = dtype or "float32"
    if dtype not in _DTYPES:
        raise SpecError(f"input shape {quote(text)}: dtype must be one of {', '.join(_DTYPES)}")
    try:
        shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise SpecError(f"input shape {quote(text)}: dimensions must be whole numbers, e.g. 3,224,224") from None
    if any(d < 1 for d in shape):
        raise SpecError(f"input shape {quote(text)}: every dimension must be >= 1")
    return shape, dtype


def _input_specs(input_shapes: Sequence[str], batch: int) -> list[tuple[tuple[int, ...], str]]:
    """Each ``--input-shape`` parsed, its tensor of ``batch`` rows at most :data:`~engine.limits.MAX_INPUT_ELEMENTS`
    elements (``1000000000,1000000000`` failed inside torch)."""
    out = []
    for text in input_shapes:
        shape, dtype = parse_input_shape(text)
        check_at_most(f"input shape {quote(text)} with batch {batch}: its elements", batch * math.prod(shape),
                      MAX_INPUT_ELEMENTS, "MAX_INPUT_ELEMENTS")
        out.append((shape, dtype))
    return out


@contextlib.contextmanager
def _user_code(source: str) -> Iterator[None]:
    """While the user's code runs (its import, its factory, its model's forward pass in the trace): what it
    prints goes to stderr, so stdout holds only the command's result (``--json``: one JSON object), and a
    ``sys.exit(N)`` in it is one line (exit 2), not a silent exit N.

    The prints go to a copy of file descriptor 2 taken now: :func:`~engine.quiet.quiet_tensorflow_start` sends
    descriptor 2 itself to /dev/null while the user's module is imported."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (captured): write to it
        err, opened = sys.stderr, False
    else:
        sys.stderr.flush()
        err = os.fdopen(os.dup(fd), "w", encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
                        errors="backslashreplace", buffering=1)
        opened = True
    try:
        with contextlib.redirect_stdout(err):
            yield
    except SystemExit as exc:
        raise GraphError(f"{quote(source)} called sys.exit({quote(exc.code)}) instead of returning a model") from None
    finally:
        if opened:
            err.close()


def _factory(source: str) -> Any:
    """Import ``path.py`` and call its ``factory`` (user code: see the module docstring)."""
    path, _, attr = source.rpartition(":")
    if not os.path.isfile(path):
        raise SpecError(f"{path}: no such Python file (expected FILE.py:FACTORY)")
    if not attr.isidentifier():
        raise SpecError(f"{source}: {quote(attr)} is not a Python name (expected FILE.py:FACTORY)")
    name = f"placelab_user_model_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # the file may import its neighbours
    try:
        with quiet_tensorflow_start():  # a Keras model's code imports TensorFlow: not its start-up lines
            spec.loader.exec_module(module)
            factory = getattr(module, attr, None)
            if not callable(factory):
                raise SpecError(f"{path} defines no function {quote(attr)}")
            return factory()
    except SpecError:
        raise
    except Exception as exc:  # the user's code: one line, never a traceback
        raise GraphError(f"{source} failed: {type(exc).__name__}: {first_line(exc, '')}") from None
    finally:
        sys.path.remove(os.path.dirname(os.path.abspath(path)))


def _is_torch_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _is_keras_model(obj: Any) -> bool:
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(obj, keras.Model)


def _torch_inputs(input_shapes: Sequence[str], batch: int) -> list[Any]:
    import torch

    if not input_shapes:
        raise SpecError("a PyTorch module needs the shape of each input: --input-shape 3,224,224 (no batch "
                        "dimension; repeat for several inputs, add :int64 for token ids)")
    out = []
    for shape, dtype in _input_specs(input_shapes, batch):
        kind = getattr(torch, dtype)
        out.append(torch.randn(batch, *shape, dtype=kind) if kind.is_floating_point
                   else torch.zeros(batch, *shape, dtype=kind))
    return out


def _from_torch(module: Any, inputs: list[Any], training: bool, measure: bool, name: str | None,
                output_key: str | None) -> CompGraph:
    if measure:
        if not training:
            raise SpecError("--measure times a training step; leave out --inference")
        from engine.importers._torch_outputs import training_loss
        from engine.importers.pytorch_measured import measure_torch_step

        loss = training_loss(output_key, model=quote(type(module).__name__))
        return measure_torch_step(module, inputs, loss_fn=loss, name=name)
    from engine.importers.pytorch_graph import graph_from_torch

    return graph_from_torch(module, inputs, training=training, name=name, output_key=output_key)


def _from_keras(model: Any, batch: int, training: bool, measure: bool, name: str | None) -> CompGraph:
    from engine.importers.tensorflow_graph import graph_from_keras

    if measure:
        if not training:
            raise SpecError("--measure times a training step; leave out --inference")
        from engine.importers._tf_keras import batch_shape
        from engine.importers.tensorflow_measured import measure_tf_step

        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(batch_shape(t, batch)).astype(np.float32) for t in model.inputs]
        return measure_tf_step(model, xs if len(xs) > 1 else xs[0], name=name)
    return graph_from_keras(model, batch, name=name, training=training)


def import_model(source: str, *, batch: int | None = None, input_shapes: Sequence[str] = (), training: bool = True,
                 measure: bool = False, name: str | None = None, output_key: str | None = None) -> CompGraph:
    """The graph of ``source`` (module docstring). ``batch`` defaults to 32 for code and ``.keras`` files,
    1 for exported graphs (SavedModel, ``.pb``) and ONNX files, whose fixed dimensions stay. ``output_key``
    names the output of a PyTorch module the loss reads (:func:`engine.importers.pytorch_graph.graph_from_torch`)."""
    if batch is not None and batch < 1:
        raise SpecError("--batch must be >= 1")
    code_file, colon, _ = source.rpartition(":")
    if colon and code_file.endswith(".py"):
        _input_specs(input_shapes, batch or 32)  # a shape beyond the limits: refused before the user's code runs
        with _user_code(source):
            obj = _factory(source)
            example = None
            if isinstance(obj, tuple) and len(obj) == 2 and _is_torch_module(obj[0]):
                obj, example = obj
            if _is_torch_module(obj):
                inputs = list(example) if example is not None else _torch_inputs(input_shapes, batch or 32)
                return _from_torch(obj, inputs, training, measure, name, output_key)
            if output_key is not None:
                raise SpecError("--output-key picks an output of a PyTorch module; leave it out for this model")
            if _is_keras_model(obj):
                return _from_keras(obj, batch or 32, training, measure, name)
        raise GraphError(f"{source} returned an object of type {quote(type(obj).__name__)}, not a torch.nn.Module or a "
                         "keras.Model")
    if measure:
        raise SpecError("--measure needs the model's code (FILE.py:FACTORY): a file's ops cannot be run here")
    if output_key is not None:
        raise SpecError("--output-key picks an output of a PyTorch module (FILE.py:FACTORY); leave it out for a file")
    if source.endswith(".keras"):
        if not os.path.isfile(source):
            raise SpecError(f"{source}: no such file")
        from engine.importers.keras_files import load_keras_file

        return load_keras_file(source, batch_size=batch or 32, training=training, name=name)
    saved = os.path.join(source, "saved_model.pb")
    if os.path.isdir(source) and not os.path.isfile(saved):
        raise SpecError(f"{source} is a folder without saved_model.pb: give a SavedModel folder or a file")
    if os.path.isfile(saved) or source.endswith(".pb"):
        from engine.importers.tensorflow_files import load_graphdef, load_saved_model

        if os.path.isfile(saved):
            return _renamed(load_saved_model(source, batch_size=batch or 1), name)
        return _renamed(load_graphdef(source, batch_size=batch or 1), name)
    if source.endswith(".onnx"):
        from engine.importers.onnx_graph import graph_from_onnx

        return graph_from_onnx(source, batch=batch, training=training, name=name)
    return _renamed(load_graph(source), name)


def _renamed(g: CompGraph, name: str | None) -> CompGraph:
    """``g`` under ``name`` (None: as it is)."""
    return g if not name else graph_from_dict({**graph_to_dict(g), "name": name})
