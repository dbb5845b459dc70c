"""Cluster presets for the papers' machines (CONTRACTS §2). Every number carries its source.

Device kinds are ``gpu`` and ``cpu`` (an op's compute map is keyed by kind), and every GPU
names its ``model`` (``K80``, ``P100``, ``V100``, ``H100``): a roofline-costed graph (our
generators, the TensorFlow and PyTorch importers) carries a column per model, so each preset
runs its own GPUs' times, and a graph whose file brings its own times (DOPPLER's text files,
dnn-partitioning, measured graphs) runs those on every preset (``docs/reference/costs.md``).
``speed`` is 1.0 throughout. Bandwidths are per direction.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.cluster import Cluster, Device, Link, SimulationSettings

__all__ = ["PRESETS", "preset_descriptions"]

GB = 1e9

# Placeto App. A.5 / published simulator defaults for AWS p2.8xlarge (K80):
# delta1 = 5.7 us after each op, delta2 = 25 us per transfer, 7600 bytes/us.
_K80_BANDWIDTH = 7.6e9
_PLACETO_SIM = SimulationSettings("placeto", op_overhead_s=5.7e-6, transfer_gap_s=25e-6)
# One K80 board holds two GK210 GPUs with 12 GB GDDR5 each, ~11 GB usable after ECC
# (NVIDIA Tesla K80 datasheet); Placeto §3 runs on p2.8xlarge "with 11 GB" per device.
_K80_MEMORY = 11.0 * GB


def _k80(n: int) -> Cluster:
    devices = tuple(Device(f"gpu:{i}", "gpu", _K80_MEMORY, model="K80") for i in range(n))
    what = (f"Placeto §3: {n} × Tesla K80 (p2.8xlarge)" if n < 8
            else f"{n} × Tesla K80: all of Placeto §3's p2.8xlarge")
    return Cluster(f"k80x{n}", devices, Link(_K80_BANDWIDTH), (), _PLACETO_SIM,
                   f"{what}, 11 GB each, 7.6 GB/s, placeto simulator")


def _cpu_k80(n: int) -> Cluster:
    # Mirhoseini et al. 2017 §4.1: one Intel Haswell 2300 CPU (18 cores) and 2 or 4 K80s;
    # "we allow 50 GB of RAM for all models". Host<->GPU and GPU<->GPU copies cross PCIe
    # 3.0 x16 on that machine; we use the 7.6 GB/s measured for the same GPUs by Placeto.
    devices = (Device("cpu:0", "cpu", 50.0 * GB),
               *(Device(f"gpu:{i}", "gpu", _K80_MEMORY, model="K80") for i in range(n)))
    return Cluster(f"cpu+k80x{n}", devices, Link(_K80_BANDWIDTH), (), SimulationSettings("default"),
                   f"Mirhoseini §4.1: 1 Haswell CPU (50 GB) + {n} × K80, PCIe 7.6 GB/s")


# DOPPLER §2 and App. C: the authors evaluate assignments on a work-conserving engine (an
# asynchronous event loop) and train against a simulator of it (Alg. 1); their published
# simulator serves each device FIFO with uncontended transfers: the mode's defaults.
_DOPPLER_SIM = SimulationSettings("work_conserving")


def _p100x4(memory_gb: float = 16.0, name: str = "p100x4", note: str = "") -> Cluster:
    # DOPPLER §6: four Tesla P100 with 16 GB each, every GPU directly connected to the others
    # by NVLink (App. J). P100 SXM2 NVLink 1.0: 20 GB/s per link per direction (NVIDIA Tesla
    # P100 whitepaper, 2016). 5 us per copy: order of a peer-to-peer cudaMemcpyAsync launch.
    devices = tuple(Device(f"gpu:{i}", "gpu", memory_gb * GB, model="P100") for i in range(4))
    return Cluster(name, devices, Link(20.0 * GB, 5e-6), (), _DOPPLER_SIM,
                   f"DOPPLER §6: 4 × P100 {memory_gb:g} GB{note}, NVLink all-to-all (20 GB/s per direction), "
                   "work-conserving")


def _v100x8() -> Cluster:
    # DOPPLER App. H/J: eight V100 32 GB in two groups of four, each group fully connected by
    # NVLink, four NVLinks between the groups (DGX-1V hybrid cube-mesh: GPU i <-> GPU i+4).
    # NVLink 2.0: 25 GB/s per link per direction (NVIDIA Tesla V100 whitepaper, 2017).
    # Pairs without NVLink go GPU -> PCIe 3.0 x16 -> CPU -> PCIe; ~10 GB/s effective
    # (PCIe 3.0 x16 is 15.75 GB/s raw; QPI hop and protocol overhead included).
    devices = tuple(Device(f"gpu:{i}", "gpu", 32.0 * GB, model="V100") for i in range(8))
    nvlink = Link(25.0 * GB, 5e-6)
    links = []
    for i in range(8):
        for j in range(i + 1, 8):
            same_group = (i < 4) == (j < 4)
            if same_group or j == i + 4:
                links.append((f"gpu:{i}", f"gpu:{j}", nvlink))
    return Cluster("v100x8", devices, Link(10.0 * GB, 10e-6), tuple(links), _DOPPLER_SIM,
                   "DOPPLER App. H: 8 × V100 32 GB, two NVLink groups of four + 4 cross links, PCIe otherwise, "
                   "work-conserving")


def _h100x8() -> Cluster:
    # NVIDIA H100 SXM5 80 GB (HGX H100): NVLink 4 through NVSwitch, 900 GB/s bidirectional
    # per GPU = 450 GB/s per direction between any pair (NVIDIA H100 datasheet, 2022).
    devices = tuple(Device(f"gpu:{i}", "gpu", 80.0 * GB, model="H100") for i in range(8))
    return Cluster("h100x8", devices, Link(450.0 * GB, 3e-6), (), SimulationSettings("default"),
                   "HGX H100: 8 × H100 80 GB, NVSwitch all-to-all (450 GB/s per direction)")


def _local() -> Cluster:
    # This machine, measured by the executor's calibration (issue #14): one CPU device per
    # core, matmul throughput, per-op overhead and copy bandwidth/latency between workers.
    # Calibrated on first use and cached in the user cache dir (engine.executor.calibration).
    from engine.executor.calibration import local_cluster

    return local_cluster()


_local.description = "this machine: one CPU worker per core, calibrated on first use (placelab calibrate)"

PRESETS: dict[str, Callable[[], Cluster]] = {
    "k80x2": lambda: _k80(2),
    "k80x4": lambda: _k80(4),
    # The p2.8xlarge has eight K80 GPUs (AWS; Placeto §3 ran on 2 and 4 of them): 8 devices of the same kind
    # for reproduce heldout-learning (placelab/reproduce/heldout.py).
    "k80x8": lambda: _k80(8),
    "cpu+k80x2": lambda: _cpu_k80(2),
    "cpu+k80x4": lambda: _cpu_k80(4),
    "p100x4": _p100x4,
    # DOPPLER App. H, Table 8: the same four P100s, each restricted to 8 GB of its 16 GB.
    "p100x4-8gb": lambda: _p100x4(8.0, "p100x4-8gb", " (8 of 16 GB usable, App. H Table 8)"),
    "v100x8": _v100x8,
    "h100x8": _h100x8,
    "local": _local,
}


def preset_descriptions() -> dict[str, str]:
    """Preset name -> one-line description."""
    return {name: getattr(make, "description", None) or make().description for name, make in PRESETS.items()}
