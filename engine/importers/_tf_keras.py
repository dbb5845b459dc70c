"""Tracing one training step of a Keras 3 model as a ``tf.function`` FuncGraph.

Private helper shared by :func:`engine.importers.tensorflow_graph.graph_from_keras` (which walks
the FuncGraph) and :func:`engine.importers.tensorflow_measured.measure_tf_step` (which also runs
it), so that both describe the same ops. The step is only traced here, never run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from engine.errors import GraphError, quote
from engine.importers._tf_ops import import_tensorflow


class _KerasStep(NamedTuple):
    """One traced training step: its FuncGraph and what the walker needs to read it."""

    graph: Any  # the tf.function's FuncGraph
    phase_of: Callable[[Any], str]
    variables: dict[str, tuple[str, int]]  # captured placeholder op name -> (variable path, bytes)
    captured: dict[str, Any]  # captured placeholder op name -> the Keras variable it stands for
    fetches: list[Any]


def _step_specs(model: Any, batch_size: int) -> list[Any]:
    """``TensorSpec``s of the step's arguments: each model input, then the target (batch
    ``batch_size`` for an unknown first dimension, 1 for any other unknown dimension)."""
    tf = import_tensorflow()
    if len(model.outputs) != 1:
        raise GraphError(f"model {quote(model.name)}: a training step is imported for one output, "
                         f"got {len(model.outputs)}")
    return [tf.TensorSpec(batch_shape(t, batch_size), dtype=t.dtype) for t in [*model.inputs, model.outputs[0]]]


def batch_shape(tensor: Any, batch_size: int) -> list[int]:
    """A Keras tensor's shape with its unknown dimensions filled: ``batch_size`` first, 1 elsewhere."""
    return [batch_size if d is None and i == 0 else (1 if d is None else int(d)) for i, d in enumerate(tensor.shape)]


def _trace_keras_step(model: Any, batch_size: int, optimizer: Any, loss: Any) -> _KerasStep:
    """Trace (never run) one training step of ``model`` as
    :func:`~engine.importers.tensorflow_graph.graph_from_keras` documents."""
    tf = import_tensorflow()
    import keras

    trainable = model.trainable_variables
    if not trainable:
        raise GraphError(f"model {quote(model.name)} has no trainable variable, so a training step would update "
                         f"nothing")
    opt = keras.optimizers.get(optimizer)
    loss_fn = keras.losses.get(loss)
    opt.build(trainable)
    *inputs, target = _step_specs(model, batch_size)
    marks: dict[str, int] = {}

    def count() -> int:
        return len(tf.compat.v1.get_default_graph().get_operations())

    @tf.function(autograph=False)
    def step(x, y):
        with tf.GradientTape() as tape:
            out = model(x if len(inputs) > 1 else x[0], training=True)
            value = loss_fn(y, out)
            value = tf.reduce_mean(value)
        marks["backward"] = count()
        grads = tape.gradient(value, trainable)
        marks["update"] = count()
        opt.apply_gradients(zip(grads, trainable, strict=True))
        marks["end"] = count()
        return value

    fg = step.get_concrete_function(inputs, target).graph
    order = {op.name: i for i, op in enumerate(fg.get_operations())}

    def phase_of(op: Any) -> str:
        i = order[op.name]
        return "forward" if i < marks["backward"] else "backward" if i < marks["update"] else "update"

    return _step(fg, phase_of, list(model.variables) + list(opt.variables))


def _step(fg: Any, phase_of: Callable[[Any], str], variables: list[Any]) -> _KerasStep:
    """The :class:`_KerasStep` of a traced FuncGraph whose captures stand for ``variables``."""
    tf = import_tensorflow()
    by_handle = {id(getattr(v, "value", v).handle): v for v in variables}
    captured = {internal.op.name: by_handle[id(external)] for external, internal in fg.captures
                if id(external) in by_handle}
    sizes = {nm: (v.path, int(np.prod(v.shape, dtype=np.int64)) * tf.as_dtype(v.dtype).size)
             for nm, v in captured.items()}
    return _KerasStep(fg, phase_of, sizes, captured, [t.op for t in fg.outputs] + list(fg.control_outputs))


def _trace_keras_forward(model: Any, batch_size: int) -> _KerasStep:
    """Trace (never run) the forward pass of ``model`` (``training=False``): every op in phase
    ``forward``, the model's variables read, none updated."""
    tf = import_tensorflow()
    *inputs, _ = _step_specs(model, batch_size)

    @tf.function(autograph=False)
    def forward(x):
        return model(x if len(inputs) > 1 else x[0], training=False)

    fg = forward.get_concrete_function(inputs).graph
    return _step(fg, lambda _op: "forward", list(model.variables))
