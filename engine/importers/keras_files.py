"""Keras 3 model files (``.keras``) as a graph format: one training step, or the forward pass.

A ``.keras`` file is a zip archive of the model's configuration and weights. It is loaded with Keras'
**safe mode** (``keras.saving.load_model(..., safe_mode=True)``): Keras refuses a file whose config
would deserialise Python code (``Lambda`` layers and the like), so nothing from the file runs. The
model is then traced as :func:`engine.importers.tensorflow_graph.graph_from_keras` documents; the
weights' values are never read by placelab. Registered with the format registry, so the app's upload
and every ``GRAPH`` argument take ``.keras`` files (``model.keras?batch_size=64`` sets the batch).
"""

from __future__ import annotations

import os
import tempfile

from engine.errors import GraphError, first_line, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import register_format
from engine.quiet import quiet_tensorflow_start

__all__ = ["load_keras_file"]


def _detect_keras(head: bytes) -> bool:
    """A zip archive (``PK\\x03\\x04``) whose first entries name Keras' ``metadata.json`` or ``config.json``."""
    return head.startswith(b"PK\x03\x04") and (b"metadata.json" in head or b"config.json" in head)


def load_keras_file(path: str | os.PathLike, *, batch_size: int = 32, training: bool = True,
                    name: str | None = None) -> CompGraph:
    """The graph of the model in ``path`` (module docstring): one training step of ``batch_size`` rows,
    or its forward pass with ``training=False``."""
    p = os.fspath(path)
    with quiet_tensorflow_start():
        import keras

    keras.backend.clear_session()  # op names must not depend on what was built before (a stable hash)
    with tempfile.TemporaryDirectory(prefix="placelab-keras-") as tmp:
        if not p.endswith(".keras"):  # Keras goes by the name; a file detected by its bytes may have another
            os.symlink(os.path.abspath(p), os.path.join(tmp, "model.keras"))
        try:
            model = keras.saving.load_model(p if p.endswith(".keras") else os.path.join(tmp, "model.keras"),
                                            compile=False, safe_mode=True)
        except Exception as exc:  # Keras' own sentence: a bad archive, unsafe code, an unknown layer
            raise GraphError(f"{quote(os.path.basename(p), bare=True)}: not a Keras model file Keras loads safely "
                             f"({type(exc).__name__}: {first_line(exc, '')})") from None
    from engine.importers.tensorflow_graph import graph_from_keras

    return graph_from_keras(model, batch_size, name=name, training=training)


register_format("keras", "Keras 3 model file (.keras, loaded in safe mode; one training step, batch_size=32)",
                _detect_keras, load_keras_file)
