"""Training-step graphs of the papers' Keras image models: ``gen:inception-v3``, ``gen:nasnet``.

Each generator builds the Keras application with ``weights=None`` (nothing is downloaded)
and imports one training step with :func:`engine.importers.tensorflow_graph.graph_from_keras`
(SGD, categorical cross-entropy against a one-hot target). Building and tracing is slow
(docs/lab/2026-11-22-learned-placers-speed-and-nmt.md times NASNet-Mobile's), so the result is cached as
``placelab.graph/1`` JSON in ``$PLACELAB_CACHE`` (default ``~/.cache/placelab/graphs/``),
one file per generator, parameters, importer version and TensorFlow/Keras versions; pass
``cache=false`` to rebuild. Delete the directory to clear the cache. The cache is bounded: at most
:data:`~engine.limits.GRAPH_CACHE_MAX_ENTRIES` graphs and :data:`~engine.limits.GRAPH_CACHE_MAX_BYTES`
bytes; after each graph it stores, the least recently used (built or read) go. Building clears the
Keras session first (``keras.backend.clear_session``) so that op names do not depend on
what was built before.

Sizes: Mirhoseini et al. 2017 and Placeto count ops of TF1 graphs, which include the constants and
identities pruned here, so this importer's graphs have fewer ops than the papers state (the counts:
docs/lab/2026-11-26-model-size-and-test-time.md, with its addendum of 2026-11-29).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from engine.errors import GraphError, SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.limits import GENERATOR_BATCH, GRAPH_CACHE_MAX_BYTES, GRAPH_CACHE_MAX_ENTRIES
from engine.workloads.card import generator

__all__ = ["cache_dir", "cached_graph", "inception_v3", "nasnet", "trim_cache"]

#: Bump when the importer's output changes, so stale cache entries are not reused.
IMPORTER_VERSION = 3  # 3: a gpu@MODEL compute column per GPU model (docs/reference/costs.md)

# TensorFlow's C++ INFO/WARNING lines would otherwise land on every command's stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
#: The name of a cache entry (``nasnet-<16 hex digits>.json``): the only files :func:`trim_cache` deletes, so a
#: ``$PLACELAB_CACHE`` that holds other files too loses none of them.
_ENTRY = re.compile(r"[A-Za-z0-9._-]+-[0-9a-f]{16}\.json")


def cache_dir() -> Path:
    """``$PLACELAB_CACHE`` or ``~/.cache/placelab/graphs``."""
    root = os.environ.get("PLACELAB_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "placelab" / "graphs"


def _cached(key: str, build: Callable[[], CompGraph], use_cache: bool) -> CompGraph:
    if not use_cache:
        return build()
    from engine.importers.tensorflow_graph import import_tensorflow

    tf = import_tensorflow()
    import keras

    stamp = f"{key}|importer={IMPORTER_VERSION}|tf={tf.__version__}|keras={keras.__version__}"
    return cached_graph(cache_dir() / f"{key.split('?')[0]}-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.json",
                        build)


def cached_graph(path: Path, build: Callable[[], CompGraph]) -> CompGraph:
    """The graph cached at ``path`` (marked as just used), else ``build()``'s, stored there; the cache is then
    trimmed to its bounds (:func:`trim_cache`)."""
    from engine.graph.io import load_graph_json, save_graph

    if path.is_file():
        try:
            g = load_graph_json(path)
        except GraphError:  # a damaged cache entry is rebuilt
            pass
        else:
            with contextlib.suppress(OSError):
                os.utime(path)  # least recently used goes first: this one was just used
            return g
    g = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_graph(g, path)
    trim_cache(path.parent)
    return g


def trim_cache(folder: Path) -> None:
    """Keep the most recently used entries of the cache in ``folder`` — at most
    :data:`~engine.limits.GRAPH_CACHE_MAX_ENTRIES` of them, of at most :data:`~engine.limits.GRAPH_CACHE_MAX_BYTES`
    bytes in all — and delete the others (an entry larger than that is not kept either). Files that are no cache
    entry stay."""
    entries = []
    for p in folder.iterdir():
        if _ENTRY.fullmatch(p.name):
            try:
                st = p.lstat()
            except OSError:  # deleted meanwhile (another process trimming)
                continue
            if stat.S_ISREG(st.st_mode):
                entries.append((st.st_mtime_ns, p.name, st.st_size, p))
    kept = size = 0
    for _, _, nbytes, p in sorted(entries, reverse=True):  # the most recently used first
        kept, size = kept + 1, size + nbytes
        if kept > GRAPH_CACHE_MAX_ENTRIES or size > GRAPH_CACHE_MAX_BYTES:
            p.unlink(missing_ok=True)


def _train_step(make_model: Callable[[], object], batch: int, name: str) -> CompGraph:
    import keras

    from engine.importers.tensorflow_graph import graph_from_keras

    keras.backend.clear_session()
    model = make_model()
    return graph_from_keras(model, batch, optimizer="sgd", loss="categorical_crossentropy", name=name)


@generator("inception-v3", "Keras Inception-V3 training step (TF import; Mirhoseini 2017, Placeto)",
          {"batch": GENERATOR_BATCH})
def inception_v3(batch: int = 32, cache: bool = True) -> CompGraph:
    """One SGD training step of Keras ``InceptionV3`` (299×299×3 input, 1000 classes).

    ``batch`` 32 is Placeto's setting (Mirhoseini 2017 uses 64 for Inception-V3 too).
    """
    def build() -> CompGraph:
        import keras

        return _train_step(lambda: keras.applications.InceptionV3(weights=None), batch,
                           f"inception-v3-b{batch}")

    return _cached(f"inception-v3?batch={batch}", build, cache)


@generator("nasnet", "Keras NASNet training step, variant mobile|large (TF import; Placeto)",
          {"batch": GENERATOR_BATCH})
def nasnet(variant: str = "mobile", batch: int = 32, cache: bool = True) -> CompGraph:
    """One SGD training step of Keras ``NASNetMobile`` (224×224) or ``NASNetLarge`` (331×331).

    NASNet-Mobile is the default for size; Placeto places the NASNet of Zoph et al. 2018.
    """
    if variant not in ("mobile", "large"):
        raise SpecError(f"gen:nasnet: variant must be 'mobile' or 'large', got {quote(variant)}")

    def build() -> CompGraph:
        import keras

        make = keras.applications.NASNetMobile if variant == "mobile" else keras.applications.NASNetLarge
        return _train_step(lambda: make(weights=None), batch, f"nasnet-{variant}-b{batch}")

    return _cached(f"nasnet?variant={variant}&batch={batch}", build, cache)
