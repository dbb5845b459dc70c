"""Tests for engine.costmodel: roofline numbers worked out by hand from the datasheet constants."""

from __future__ import annotations

import numpy as np
import pytest

from engine.costmodel import (
    CPU_HASWELL_18C,
    DEVICE_SPECS,
    K80,
    V100,
    DeviceSpec,
    GraphBuilder,
    RooflineModel,
    op_time,
    op_times,
)


def test_compute_bound_matmul_on_v100():
    # 1e12 FLOPs, no bytes: 5 µs + 1e12 / (15.7e12 · 0.6) = 5e-6 + 0.10615711... s
    assert op_time(1e12, 0.0, V100) == pytest.approx(5e-6 + 1e12 / (15.7e12 * 0.6), rel=1e-12)
    assert op_time(1e12, 0.0, V100) == pytest.approx(0.1061621, rel=1e-6)


def test_memory_bound_op_on_k80():
    # 1.44e9 bytes at 240 GB/s · 0.6 = 144 GB/s → 10 ms; 1 MFLOP is negligible
    assert op_time(1e6, 1.44e9, K80) == pytest.approx(5e-6 + 0.01, rel=1e-12)


def test_roofline_takes_the_slower_bound():
    spec = DeviceSpec("toy", "gpu", peak_flops=100.0, mem_bandwidth=10.0, efficiency=1.0, launch_overhead_s=1.0)
    assert op_time(200.0, 10.0, spec) == 3.0  # compute 2 s > memory 1 s
    assert op_time(100.0, 50.0, spec) == 6.0  # memory 5 s > compute 1 s
    np.testing.assert_allclose(op_time(np.array([200.0, 100.0]), np.array([10.0, 50.0]), spec), [3.0, 6.0])


def test_cpu_is_the_haswell_of_mirhoseini():
    assert CPU_HASWELL_18C.peak_flops == pytest.approx(1.3248e12)
    t = op_times(1.3248e12, 0.0, gpu=K80, cpu=CPU_HASWELL_18C)
    assert t["cpu"] == pytest.approx(2e-6 + 1 / 0.5)
    assert t["gpu"] == pytest.approx(5e-6 + 1.3248e12 / (4.37e12 * 0.6))
    assert set(op_times(1.0, 1.0, cpu=None)) == {"gpu", "gpu@K80", "gpu@P100", "gpu@V100", "gpu@A100", "gpu@H100"}
    assert t["gpu@K80"] == t["gpu"] and t["gpu@V100"] == pytest.approx(5e-6 + 1.3248e12 / (15.7e12 * 0.6))
    idle = op_times(np.array([0.0, 1e9]), np.array([0.0, 0.0]), idle=np.array([True, False]))
    assert all(v[0] == 0.0 and v[1] > 0 for v in idle.values())  # an op doing no work: 0 s on every column


def test_specs_are_ordered_by_generation():
    gpus = [DEVICE_SPECS[n] for n in ("K80", "P100", "V100", "A100", "H100")]
    assert [s.peak_flops for s in gpus] == sorted(s.peak_flops for s in gpus)
    assert [s.mem_bandwidth for s in gpus] == sorted(s.mem_bandwidth for s in gpus)


def test_builder_costs_ops_and_edges():
    b = GraphBuilder("toy", RooflineModel((V100, CPU_HASWELL_18C)))
    x = b.op("x", "Input", out_bytes=4e6)
    w = b.op("w", "Variable", out_bytes=1e6, persistent_bytes=1e6)
    y = b.op("y", "MatMul", flops=1e12, out_bytes=2e6, inputs=[x, (w, 5e5)], phase="forward", scope="layer1")
    g = b.build()
    assert g.num_ops == 3 and g.base_kinds == ("gpu", "cpu")
    moved = 2e6 + 4e6 + 5e5
    assert g.op_compute(y) == pytest.approx({"gpu": op_time(1e12, moved, V100),
                                             "cpu": op_time(1e12, moved, CPU_HASWELL_18C),
                                             **{f"gpu@{m}": op_time(1e12, moved, DEVICE_SPECS[m])
                                                for m in ("K80", "P100", "V100", "A100", "H100")}})
    bare = GraphBuilder("bare", RooflineModel((V100,), models=False))
    bare.op("x", "Input", flops=1.0)
    assert bare.build().kinds == ("gpu",)
    edges = list(zip(g.edge_src.tolist(), g.edge_dst.tolist(), g.edge_bytes.tolist(), strict=True))
    assert edges == [(0, 2, 4e6), (1, 2, 5e5)]
    assert g.scope[y] == "layer1" and g.persistent_bytes[w] == 1e6
