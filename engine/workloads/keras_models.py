"""Training-step graphs of the papers' Keras image models: ``gen:inception-v3``, ``gen:nasnet``.

Each generator builds the Keras application with ``weights=None`` (nothing is downloaded)
and imports one training step with :func:`engine.importers.tensorflow_graph.graph_from_keras`
(SGD, categorical cross-entropy against a one-hot target). Building and tracing takes
seconds (Inception-V3: ~5 s; NASNet-Large: longer), so the result is cached as
``placelab.graph/1`` JSON in ``$PLACELAB_CACHE`` (default ``~/.cache/placelab/graphs/``),
one file per generator, parameters, importer version and TensorFlow/Keras versions; pass
``cache=false`` to rebuild. Delete the directory to clear the cache. Building clears the
Keras session first (``keras.backend.clear_session``) so that op names do not depend on
what was built before.

Sizes (batch 32, this importer; Mirhoseini et al. 2017 and Placeto count ops of TF1 graphs,
which include the constants and identities pruned here): Inception-V3 ≈ 6,050 ops
(≈ 9,900 TF nodes before pruning), NASNet-Mobile ≈ 13,500 ops (≈ 14 s to build).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from engine.errors import GraphError, SpecError
from engine.generators import register
from engine.graph import CompGraph

__all__ = ["cache_dir", "inception_v3", "nasnet"]

#: Bump when the importer's output changes, so stale cache entries are not reused.
IMPORTER_VERSION = 3  # 3: a gpu@MODEL compute column per GPU model (docs/reference/costs.md)

# TensorFlow's C++ INFO/WARNING lines would otherwise land on every command's stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def cache_dir() -> Path:
    """``$PLACELAB_CACHE`` or ``~/.cache/placelab/graphs``."""
    root = os.environ.get("PLACELAB_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "placelab" / "graphs"


def _cached(key: str, build: Callable[[], CompGraph], use_cache: bool) -> CompGraph:
    from engine.graph_io import load_graph_json, save_graph

    if not use_cache:
        return build()
    from engine.importers.tensorflow_graph import import_tensorflow

    tf = import_tensorflow()
    import keras

    stamp = f"{key}|importer={IMPORTER_VERSION}|tf={tf.__version__}|keras={keras.__version__}"
    path = cache_dir() / f"{key.split('?')[0]}-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.json"
    if path.is_file():
        try:
            return load_graph_json(path)
        except GraphError:  # a damaged cache entry is rebuilt
            pass
    g = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_graph(g, path)
    return g


def _train_step(make_model: Callable[[], object], batch: int, name: str) -> CompGraph:
    import keras

    from engine.importers.tensorflow_graph import graph_from_keras

    keras.backend.clear_session()
    model = make_model()
    return graph_from_keras(model, batch, optimizer="sgd", loss="categorical_crossentropy", name=name)


@register("inception-v3", "Keras Inception-V3 training step (TF import; Mirhoseini 2017, Placeto)")
def inception_v3(batch: int = 32, cache: bool = True) -> CompGraph:
    """One SGD training step of Keras ``InceptionV3`` (299×299×3 input, 1000 classes).

    ``batch`` 32 is Placeto's setting (Mirhoseini 2017 uses 64 for Inception-V3 too).
    """
    if batch < 1:
        raise SpecError("gen:inception-v3: batch must be >= 1")

    def build() -> CompGraph:
        import keras

        return _train_step(lambda: keras.applications.InceptionV3(weights=None), batch,
                           f"inception-v3-b{batch}")

    return _cached(f"inception-v3?batch={batch}", build, cache)


@register("nasnet", "Keras NASNet training step, variant mobile|large (TF import; Placeto)")
def nasnet(variant: str = "mobile", batch: int = 32, cache: bool = True) -> CompGraph:
    """One SGD training step of Keras ``NASNetMobile`` (224×224) or ``NASNetLarge`` (331×331).

    NASNet-Mobile is the default for size; Placeto places the NASNet of Zoph et al. 2018.
    """
    if variant not in ("mobile", "large"):
        raise SpecError(f"gen:nasnet: variant must be 'mobile' or 'large', got '{variant}'")
    if batch < 1:
        raise SpecError("gen:nasnet: batch must be >= 1")

    def build() -> CompGraph:
        import keras

        make = keras.applications.NASNetMobile if variant == "mobile" else keras.applications.NASNetLarge
        return _train_step(lambda: make(weights=None), batch, f"nasnet-{variant}-b{batch}")

    return _cached(f"nasnet?variant={variant}&batch={batch}", build, cache)
