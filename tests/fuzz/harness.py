"""Fuzzing the graph importers through the CLI (issue 18), shared by the CI tests and ``benchmarks/fuzz_soak.py``.

A case is a mutation of a valid file of one format. It is fed to ``placelab graph info FILE
--json`` in a *worker* child process (``worker.py``), which runs the CLI once per case with its
stdout and stderr file descriptors captured (TensorFlow's C++ logs included). The verdict:

* ``ok``: exit 0, one JSON object with ``ops >= 1`` on stdout, nothing on stderr but the warnings
  placelab gives on purpose about an input it reads anyway (:data:`INPUT_WARNINGS`, one line each);
* ``bad input``: exit 2, nothing on stdout, exactly one ``error: ...`` line on stderr;
* anything else is a **failure**: exit 1 (internal error), a traceback, several lines, a crash
  of the worker (a signal such as 11), or no answer within the timeout (a hang).

A worker that crashes or hangs is killed and replaced, so one bad case never hides the next.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")

# ---- seeds: one valid file per format ------------------------------------------------------

PLACELAB = {"schema": "placelab.graph/1", "name": "seed", "ops": [
    {"name": "in", "type": "Placeholder", "compute": 0.0, "output_bytes": 4096},
    {"name": "mm", "type": "MatMul", "compute": {"gpu": 2e-5, "cpu": 3e-4}, "output_bytes": 8192,
     "persistent_bytes": 65536, "colocate": "layer1", "phase": "forward", "scope": "dense/mm"},
    {"name": "relu", "type": "Relu", "compute": 1e-6, "output_bytes": 8192, "temp_bytes": 128},
    {"name": "out", "type": "Softmax", "compute": 3e-6, "output_bytes": 40}],
    "edges": [{"src": "in", "dst": "mm"}, {"src": "mm", "dst": "relu", "bytes": 8192}, {"src": "relu", "dst": "out"}]}
NODE_LINK = {"directed": True, "multigraph": False, "graph": {"name": "seed", "kinds": ["gpu", "cpu"]},
             "nodes": [{"id": "a", "compute": 1e-5, "output_bytes": 100},
                       {"id": "b", "compute": {"gpu": 2e-5, "cpu": 1e-4}, "output_bytes": 200, "type": "MatMul"},
                       {"id": 3, "compute": 1e-6, "colocate": "g"}],
             "edges": [{"source": "a", "target": "b", "bytes": 100}, {"source": "b", "target": 3}]}
GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="c" for="node" attr.name="compute" attr.type="double"/>
  <key id="o" for="node" attr.name="output_bytes" attr.type="double"/>
  <key id="t" for="node" attr.name="type" attr.type="string"/>
  <key id="b" for="edge" attr.name="bytes" attr.type="double"/>
  <graph id="seed" edgedefault="directed">
    <node id="a"><data key="c">0.00001</data><data key="o">1000</data><data key="t">MatMul</data></node>
    <node id="b"><data key="c">0.00002</data><data key="o">2000</data></node>
    <node id="c"><data key="c">0.000005</data></node>
    <edge source="a" target="b"><data key="b">1000</data></edge>
    <edge source="b" target="c"/>
  </graph>
</graphml>
"""
DOPPLER_TEXT = """6
4, 5,
0,0 1 2,
1 2,3,3
2000000000000,8000000000000,einsummable
1e12, 4e12,
500000000000 2000000000000 formation,
0,0,fill
"""
DNN_PARTITIONING = {
    "maxSizePerFPGA": 1000.0, "maxFPGAs": 2, "maxCPUs": 1,
    "nodes": [{"id": 1, "name": "a", "supportedOnFpga": 1, "cpuLatency": 10.0, "fpgaLatency": 1.0,
               "isBackwardNode": False, "colorClass": 7, "size": 100.0},
              {"id": 2, "supportedOnFpga": True, "cpuLatency": 20.0, "fpgaLatency": 2.0, "isBackwardNode": 1,
               "colorClass": 7, "size": 0},
              {"id": 3, "supportedOnFpga": 0, "cpuLatency": 30.0, "fpgaLatency": 3.0, "isBackwardNode": 0,
               "colorClass": 9}],
    "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.5},
              {"sourceId": 2, "destId": 3, "cost": 2.0}]}

TEXT_SEEDS: dict[str, bytes] = {
    "placelab": json.dumps(PLACELAB, indent=1).encode(),
    "node-link": json.dumps(NODE_LINK, indent=1).encode(),
    "graphml": GRAPHML.encode(),
    "doppler-text": DOPPLER_TEXT.encode(),
    "dnn-partitioning": json.dumps(DNN_PARTITIONING, indent=1).encode(),
}

_MAKE_TF_SEEDS = """
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras, tensorflow as tf
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
fn = tf.function(lambda x: model(x)).get_concrete_function(tf.TensorSpec([None, 8]))
with open(os.path.join(sys.argv[1], "mlp.pb"), "wb") as f:
    f.write(fn.graph.as_graph_def(add_shapes=True).SerializeToString())
model.export(os.path.join(sys.argv[1], "sm"), verbose=False)
model.save(os.path.join(sys.argv[1], "mlp.keras"))
import numpy as np
from onnx import TensorProto, helper, numpy_helper
w = [numpy_helper.from_array(np.ones(s, np.float32), n) for n, s in (("w1", (8, 16)), ("b1", (16,)), ("w2", (16, 4)))]
nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="dense/gemm"),
         helper.make_node("Relu", ["h"], ["r"], name="dense/relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="head/matmul")]
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], initializer=w)
with open(os.path.join(sys.argv[1], "mlp.onnx"), "wb") as f:
    f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
"""


def make_tf_seeds(folder: Path) -> dict[str, bytes]:
    """A GraphDef, a Keras SavedModel and a ``.keras`` file of a small MLP, made by TensorFlow in a child
    process, and an ONNX file of one (``onnx.helper``)."""
    proc = subprocess.run([sys.executable, "-c", _MAKE_TF_SEEDS, str(folder)], capture_output=True, text=True,
                          timeout=600, env=_env())
    if proc.returncode != 0:
        raise RuntimeError(f"could not make the TensorFlow seeds: {proc.stderr[-400:]}")
    return {"tf-graphdef": (folder / "mlp.pb").read_bytes(),
            "tf-savedmodel": (folder / "sm" / "saved_model.pb").read_bytes(),
            "keras": (folder / "mlp.keras").read_bytes(), "onnx": (folder / "mlp.onnx").read_bytes()}


# ---- mutations -------------------------------------------------------------------------------

#: Values that broke importers before: overflow, negative, non-finite, huge counts.
EXTREMES = [b"1e308", b"-1", b"nan", b"NaN", b"Infinity", b"-0", b"99999999999999999999", b"1e-320",
            b"0", b"null", b"true", b'""', b"[]", b"{}", b"\xff\xfe", b"\x00", b"1000000000"]
_NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def mutate(seed: bytes, ops: list[tuple]) -> bytes:
    """Apply mutation ``ops`` in order; each is ``(kind, a, b, blob)`` with ``a``, ``b`` in [0, 1)."""
    data = bytearray(seed)
    for kind, a, b, blob in ops:
        n = len(data)
        i = min(int(a * (n + 1)), n)
        j = min(i + int(b * 64) + 1, n)
        if kind == "flip" and n:
            data[min(i, n - 1)] ^= 1 << int(b * 8)
        elif kind == "insert":
            data[i:i] = blob
        elif kind == "delete":
            del data[i:j]
        elif kind == "duplicate":
            data[i:i] = data[i:j]
        elif kind == "truncate":
            del data[i:]
        elif kind == "number":  # replace the k-th number by an extreme value
            spans = [m.span() for m in _NUMBER.finditer(bytes(data))]
            if spans:
                s, e = spans[int(a * len(spans))]
                data[s:e] = EXTREMES[int(b * len(EXTREMES))]
        elif kind == "splice":  # repeat a chunk many times (deep nesting, long names, many ops)
            data[i:i] = bytes(data[i:j]) * (1 + int(b * 200))
    return bytes(data)


MUTATION_KINDS = ("flip", "insert", "delete", "duplicate", "truncate", "number", "splice")


# ---- running cases in a worker -----------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    kind: str  # "ok", "bad input" or "failure"
    detail: str


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PLACELAB_DEBUG", None)
    return env


#: Warnings placelab gives on purpose about an input it reads anyway; any other stderr output of a
#: successful run (a library's ``RuntimeWarning``, ...) is a failure.
INPUT_WARNINGS = (
    # engine/importers/doppler_text.py: an entry glued by a bare comma, read as the authors' reader does
    re.compile(r"warning: .*: line [234]: entry '[^']*' has no blank after its comma, .*"),
)


def _only_input_warnings(err: str) -> bool:
    return all(any(w.fullmatch(line) for w in INPUT_WARNINGS) for line in err.splitlines())


def judge(code: int, out: str, err: str) -> Verdict:
    """The verdict on one finished CLI run (see the module docstring)."""
    if code == 0:
        try:
            info = json.loads(out)
        except ValueError:
            return Verdict("failure", f"exit 0 without one JSON object: {out[:200]!r}")
        if (not isinstance(info, dict) or not isinstance(info.get("ops"), int) or info["ops"] < 1
                or not _only_input_warnings(err)):
            return Verdict("failure", f"exit 0 but stdout {out[:120]!r}, stderr {err[:200]!r}")
        return Verdict("ok", f"{info['ops']} ops")
    if code == 2 and out == "" and err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1:
        return Verdict("bad input", err.strip())
    return Verdict("failure", f"exit {code}: {(err or out)[-300:]!r}")


class Worker:
    """A child process that runs ``placelab graph info FILE --json`` per case (see ``worker.py``)."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None
        self.folder = Path(tempfile.mkdtemp(prefix="placelab-fuzz-"))

    def _start(self) -> subprocess.Popen:
        if self.proc is not None and self.proc.poll() is not None:  # it died between cases: close its pipes
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None
        if self.proc is None:
            self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, env=_env(), cwd=self.folder)
        return self.proc

    def run(self, data: bytes, name: str = "case") -> Verdict:
        """Write ``data`` to a file named ``name`` and judge ``graph info`` on it."""
        path = self.folder / name
        path.write_bytes(data)
        proc = self._start()
        proc.stdin.write(json.dumps(str(path)).encode() + b"\n")
        proc.stdin.flush()
        poller = select.poll()  # not select.select: it refuses descriptors above 1023 (a long make fuzz gets there)
        poller.register(proc.stdout, select.POLLIN)
        ready = poller.poll(self.timeout_s * 1000)
        line = proc.stdout.readline() if ready else b""
        if not line:
            hung = proc.poll() is None
            proc.kill()
            proc.wait()
            proc.stdin.close()  # the pipes of a killed worker, or every restart leaks two descriptors
            proc.stdout.close()
            self.proc = None
            return Verdict("failure", f"no answer within {self.timeout_s:g} s (hang)" if hung
                           else f"the CLI process died with exit {proc.returncode} (a crash)")
        reply = json.loads(line)
        return judge(reply["code"], reply["out"], reply["err"])

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        for p in self.folder.iterdir():
            p.unlink()
        self.folder.rmdir()


def file_name(fmt: str) -> str:
    """A case's file name: SavedModels must be called ``saved_model.pb``; others get a neutral name."""
    return "saved_model.pb" if fmt == "tf-savedmodel" else f"case-{fmt}"
