"""Hostile cluster files and execution scales (issue 54, item 4): each is one ``error:`` line and exit 2 from
``placelab simulate`` and ``placelab place``, before any work.

Device counts of 0, 4,097 and 10^6 (the count is checked before a single device is built), memory, speeds and
bandwidths that are NaN, infinite, zero, negative or not numbers, and ``--time-scale 2^63``.
"""

from __future__ import annotations

import functools
import json

import pytest
from cli_run import run_cli
from test_cli_errors import CHAIN, CLUSTER, assert_bad_input

from engine import cluster as cluster_module
from engine.limits import MAX_DEVICES

COMMANDS = {
    "simulate": ["simulate", "graph.json", "-c", "c.json", "--placement", "p.json"],
    "place": ["place", "graph.json", "-c", "c.json", "--placer", "round-robin"],
}


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "runs"))
    (tmp_path / "graph.json").write_text(json.dumps(CHAIN))
    (tmp_path / "p.json").write_text(json.dumps({"schema": "placelab.placement/1",
                                                 "devices": {"a": "gpu:0", "b": "gpu:0", "c": "gpu:1"}}))
    return tmp_path


@functools.cache
def devices_text(count: int) -> str:
    """A cluster file of ``count`` devices, written as text (a million in a fraction of a second)."""
    devices = ",".join(f'{{"name":"gpu:{i}","kind":"gpu","memory_bytes":1e9}}' for i in range(count))
    return ('{"schema":"placelab.cluster/1","name":"many","link":{"bandwidth_bytes_per_s":1e9},'
            f'"devices":[{devices}]}}')


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("count", "says"), [
    (0, "c.json: 'devices' must be a non-empty list"),
    (MAX_DEVICES + 1, f"cluster 'many' has {MAX_DEVICES + 1} devices, more than the {MAX_DEVICES} placelab simulates"),
    (10**6, f"cluster 'many' has 1000000 devices, more than the {MAX_DEVICES} placelab simulates"),
], ids=["0", "4097", "10^6"])
def test_a_device_count_out_of_range_is_refused_before_any_device_is_built(env, capsys, monkeypatch, command, count,
                                                                            says):
    (env / "c.json").write_text(devices_text(count))
    built = []
    real = cluster_module.Device
    monkeypatch.setattr(cluster_module, "Device", lambda *a, **k: built.append(1) or real(*a, **k))
    assert_bad_input(*run_cli(capsys, *COMMANDS[command]), says)
    assert built == []


def _set(path: str, value):
    """CLUSTER with the field at ``path`` (``devices.0.speed``, ``link.bandwidth_bytes_per_s``) set to ``value``."""
    doc = json.loads(json.dumps(CLUSTER))
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[last] = value
    return doc


FIELDS = {
    "memory": ("devices.0.memory_bytes", "device 'gpu:0': memory_bytes"),
    "speed": ("devices.0.speed", "device 'gpu:0': speed"),
    "bandwidth": ("link.bandwidth_bytes_per_s", "link: bandwidth_bytes_per_s"),
}
#: JSON has no NaN or infinity: written as Python's json writes them, the file is no JSON at all.
NOT_JSON = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [0, -1, -1e-9, "1e9", None])
def test_a_zero_negative_or_non_numeric_value_is_refused(env, capsys, command, field, value):
    path, what = FIELDS[field]
    (env / "c.json").write_text(json.dumps(_set(path, value)))
    assert_bad_input(*run_cli(capsys, *COMMANDS[command]), f"{what} must be a finite number > 0, got {value!r}")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [*NOT_JSON, "1e999", "-1e999"])
def test_nan_and_infinity_are_refused(env, capsys, command, field, value):
    path, _what = FIELDS[field]
    marker = 123456.789  # a finite number only here, replaced by the hostile text
    text = json.dumps(_set(path, marker)).replace(repr(marker), value)
    (env / "c.json").write_text(text)
    assert_bad_input(*run_cli(capsys, *COMMANDS[command]), "c.json is not valid JSON")


@pytest.mark.parametrize("scale", ["9223372036854775808", "2^63"])
@pytest.mark.parametrize("command", [
    ["place", "graph.json", "-c", "c.json", "--placer", "round-robin", "--execute"],
    ["validate", "graph.json", "-c", "c.json"],
])
def test_a_time_scale_of_two_to_the_63_is_refused_before_any_execution(env, capsys, command, scale):
    (env / "c.json").write_text(json.dumps(CLUSTER))
    code, out, err = run_cli(capsys, *command, "--repeats", "1", "--time-scale", scale)
    assert_bad_input(code, out, err, "--time-scale")
    if scale.isdigit():
        assert "MAX_STEP_SECONDS" in err
