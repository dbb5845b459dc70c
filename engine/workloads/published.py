"""The published workloads shipped inside placelab: ``bench:NAME`` specs.

The nine graphs of Tarnawski et al. 2020 (*Efficient Algorithms for Device Placement of DNN
Graph Operators*, NeurIPS; MIT license, ``data/dnn_partitioning/LICENSE.txt`` next to this
module) are package data under ``engine/workloads/data/dnn_partitioning/``: BERT-24, GNMT,
Inception-v3 and ResNet-50 layer graphs for inference (``latency-inputs``) and training
(``throughput-inputs``), and BERT's three-layer operator graph. Field mapping and units:
:mod:`engine.importers.dnn_partitioning` and ``docs/reference/formats.md``.

* ``load_graph("bench:bert24_training")`` is the workload's graph (named after the file);
* ``load_cluster("bench:bert24_training")`` is the machine the file describes, with as many
  accelerators as its human-expert split needs (BERT-24 inference: 6, the file allows 5);
* :func:`expert_split_path` names the human-expert split of a workload; the ``expert`` placer
  loads it by itself for a bundled workload's graph (``placelab place bench:gnmt_training
  -c bench:gnmt_training --placer expert``). A training workload without its own split uses
  the inference split of the same model (backward nodes follow their forward nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from engine.cluster import Cluster
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.jsonio import read_json_file

__all__ = [
    "BENCH_PREFIX",
    "DATA_DIR",
    "WORKLOADS",
    "Workload",
    "bench_cluster",
    "bench_descriptions",
    "bench_graph",
    "expert_split_for",
    "expert_split_path",
    "workload",
]

BENCH_PREFIX = "bench:"
#: The bundled copy of the dnn-partitioning workloads (with their LICENSE.txt).
DATA_DIR = Path(__file__).resolve().parent / "data" / "dnn_partitioning"


@dataclass(frozen=True)
class Workload:
    """One bundled workload: its file, its expert split (if any) and a one-line description."""

    name: str
    file: str
    expert: str | None
    description: str

    @property
    def path(self) -> Path:
        return DATA_DIR / self.file

    @property
    def expert_path(self) -> Path | None:
        return DATA_DIR / "human-experts" / f"{self.expert}_expert.json" if self.expert else None


def _w(name: str, folder: str, expert: str | None, what: str) -> Workload:
    return Workload(name, f"{folder}/{name}.json", expert, what)


_LAT, _THR = "latency-inputs/LayerGraphs", "throughput-inputs/LayerGraphs"
WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    _w("bert24_inference", _LAT, "bert24_inference", "BERT-24 inference, 32 layers (Tarnawski et al. 2020)"),
    _w("gnmt_inference", _LAT, "gnmt_inference", "GNMT inference, 96 layers (Tarnawski et al. 2020)"),
    _w("inceptionv3_inference", _LAT, "inceptionv3_inference",
       "Inception-v3 inference, 326 layers (Tarnawski et al. 2020)"),
    _w("resnet50_inference", _LAT, "resnet50_inference", "ResNet-50 inference, 177 layers (Tarnawski et al. 2020)"),
    _w("bert_l-3_inference", "latency-inputs/OperatorGraphs", None,
       "BERT 3-layer inference, 235 operators (Tarnawski et al. 2020)"),
    _w("bert24_training", _THR, "bert24_training", "BERT-24 training, 64 layers (Tarnawski et al. 2020)"),
    _w("gnmt_training", _THR, "gnmt_training", "GNMT training, 192 layers (Tarnawski et al. 2020)"),
    _w("inceptionv3_training", _THR, "inceptionv3_inference",
       "Inception-v3 training, 652 layers (Tarnawski et al. 2020; inference expert split)"),
    _w("resnet50_training", _THR, "resnet50_inference",
       "ResNet-50 training, 354 layers (Tarnawski et al. 2020; inference expert split)"),
)}


def bench_descriptions() -> dict[str, str]:
    """``{"bench:NAME": description}`` for listings (CLI help, the app's Graphs page)."""
    return {f"{BENCH_PREFIX}{w.name}": w.description for w in WORKLOADS.values()}


def workload(spec: str) -> Workload:
    """The bundled workload named by ``bench:NAME`` (or ``NAME``).

    Raises
    ------
    SpecError
        For a name that is not bundled (the message lists those that are).
    """
    name = spec[len(BENCH_PREFIX):] if spec.startswith(BENCH_PREFIX) else spec
    w = WORKLOADS.get(name)
    if w is None:
        raise SpecError(f"unknown bundled workload {quote(name)} (available: {', '.join(WORKLOADS)})")
    return w


@lru_cache(maxsize=16)
def _graph(name: str) -> CompGraph:
    from engine.importers.dnn_partitioning import load_dnn_partitioning

    return load_dnn_partitioning(WORKLOADS[name].path)


def bench_graph(spec: str) -> CompGraph:
    """The graph of ``bench:NAME`` (cached: graphs are immutable)."""
    return _graph(workload(spec).name)


def bench_cluster(spec: str) -> Cluster:
    """The machine ``bench:NAME`` describes, widened to the accelerators its expert split uses."""
    from engine.importers.dnn_partitioning import dnn_partitioning_cluster

    w = workload(spec)
    doc = read_json_file(w.path, error=SpecError)
    need = 0
    if w.expert_path is not None:
        need = len(read_json_file(w.expert_path, error=SpecError).get("fpgas", []))
    c = dnn_partitioning_cluster(doc, accelerators=max(int(doc["maxFPGAs"]), need))
    return replace(c, name=f"{BENCH_PREFIX}{w.name}")


def expert_split_path(spec: str) -> Path:
    """The human-expert split file of ``bench:NAME``.

    Raises
    ------
    SpecError
        When the workload has no expert split (BERT's operator graph).
    """
    w = workload(spec)
    if w.expert_path is None:
        raise SpecError(f"bundled workload {quote(w.name)} has no human-expert split")
    return w.expert_path


def expert_split_for(graph: CompGraph) -> Path | None:
    """The expert split of the bundled workload ``graph`` is (same name and content), else ``None``."""
    w = WORKLOADS.get(graph.name)
    if w is None or w.expert_path is None:
        return None
    return w.expert_path if bench_graph(w.name).content_hash == graph.content_hash else None
