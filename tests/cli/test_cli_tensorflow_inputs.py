"""TensorFlow inputs (issue 18): a crafted GraphDef is one clear error, never a crash; no TF log
lines on stderr; a Keras SavedModel loads in a process other than the one that exported it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))
from protobuf_bytes import chain_with_cycle, graphdef, node  # noqa: E402

pytest.importorskip("tensorflow")
from cli_run import run_cli  # noqa: E402

from engine.errors import GraphError  # noqa: E402


def child(code_or_args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, timeout=timeout, env=env)


def test_cyclic_graphdef_is_one_error_not_a_segfault(tmp_path):
    path = tmp_path / "crafted.pb"
    path.write_bytes(chain_with_cycle(100_000))  # ~3 MB; TensorFlow's importer died with signal 11
    proc = child(["-m", "placelab.cli", "graph", "info", str(path)])
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr[-500:]
    assert proc.stderr == "error: crafted.pb has a cycle through node 'n0' (only a while loop's NextIteration " \
                          "may feed back)\n"


def test_graphdef_input_prints_no_tensorflow_log_lines(tmp_path):
    path = tmp_path / "consts.pb"
    path.write_bytes(graphdef([node("a", "NoOp"), node("b", "NoOp", ["^a"])]))
    proc = child(["-m", "placelab.cli", "graph", "info", str(path)])
    # before: two oneDNN / absl lines from TensorFlow's import preceded the error
    assert proc.stderr == "error: TF graph 'consts' has no ops left after pruning constants and identities\n"


def ns(name: str, op: str, inputs: list[str] = ()) -> SimpleNamespace:
    return SimpleNamespace(name=name, op=op, input=list(inputs))


def test_while_loop_back_edge_is_not_a_cycle():
    from engine.importers.tensorflow_files import _check_nodes

    loop = [ns("enter", "Enter", ["x"]), ns("merge", "Merge", ["enter", "next"]), ns("body", "Add", ["merge:0"]),
            ns("next", "NextIteration", ["body"]), ns("exit", "Exit", ["^merge"])]
    _check_nodes(loop, "loop.pb")  # x is a function argument / missing node: skipped
    loop[1].op, loop[3].op = "Merge", "Identity"  # the same shape without NextIteration is a real cycle
    with pytest.raises(GraphError, match=r"loop\.pb has a cycle through node 'merge'"):
        _check_nodes(loop, "loop.pb")


EXPORT = """
import sys, keras
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
model.export(sys.argv[1], verbose=False)
"""
LOAD = """
import sys, json
from collections import Counter
from engine.specs import load_graph
g = load_graph(sys.argv[1])
print(json.dumps(Counter(g.op_types)))
"""


@pytest.mark.slow
def test_keras_saved_model_loads_in_a_new_process(tmp_path):
    export = child(["-c", EXPORT, str(tmp_path / "sm")])
    assert export.returncode == 0, export.stderr[-800:]
    proc = child(["-c", LOAD, str(tmp_path / "sm" / "saved_model.pb")])  # before: "Function ... was not found"
    assert proc.returncode == 0, proc.stderr[-800:]
    types = json.loads(proc.stdout)
    assert (types["MatMul"], types["Variable"], types["Relu"]) == (2, 4, 1)
    info = child(["-m", "placelab.cli", "graph", "info", str(tmp_path / "sm" / "saved_model.pb"), "--json"])
    assert info.returncode == 0 and info.stderr == ""
    assert json.loads(info.stdout)["ops"] == sum(types.values())


def test_graphdef_with_a_malformed_shape_attribute(capsys, tmp_path):
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
        tf.nn.relu(tf.matmul(x, tf.ones([8, 4])), name="y")
    gd = g.as_graph_def(add_shapes=True)
    for nd in gd.node:
        if nd.op == "Placeholder":  # one shape where a list of shapes belongs (found by the fuzz soak)
            nd.attr["_output_shapes"].shape.CopyFrom(nd.attr["_output_shapes"].list.shape[0])
    (tmp_path / "shapes.pb").write_bytes(gd.SerializeToString())
    code, stdout, stderr = run_cli(capsys, "graph", "info", str(tmp_path / "shapes.pb"), "--json")
    # before: "internal error: TypeError: object of type 'TensorShapeProto' has no len()" (exit 1)
    assert (code, stderr) == (0, ""), stderr[-500:]
    assert json.loads(stdout)["ops"] >= 2
