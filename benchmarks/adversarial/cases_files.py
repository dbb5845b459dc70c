"""Cases of the classes ``formats`` (graph files of every format), ``clusters`` (cluster files),
``placements`` (placement files) and ``paths`` (special files as inputs)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from functools import partial
from typing import Any

from .fixtures import (
    CLUSTER,
    DELETE,
    ESC,
    PLACEMENT,
    TEXT_SEEDS,
    Case,
    Fixtures,
    G,
    K,
    Special,
    cluster_with,
    graph_doc,
    jdump,
    makespan_sane,
    malicious_pickle,
    no_pwned,
    some,
    zip_bytes,
)


def formats() -> Iterator[Case]:
    """Malformed and edge-case files of every graph format; code run by a model file; graph import of code."""
    case = partial(Case, "formats")
    op = lambda n, **kw: {"name": n, "compute": 1e-3, **kw}  # noqa: E731
    placelab = {
        "zero ops": graph_doc([]), "one op": graph_doc([op("a")]),
        "duplicate op names": graph_doc([op("a"), op("a")]),
        "self-loop": graph_doc([op("a")], [{"src": "a", "dst": "a"}]),
        "compute string": graph_doc([{"name": "a", "compute": "fast"}]),
        "compute 1e308 x2": graph_doc([{"name": "a", "compute": 1e308}, {"name": "b", "compute": 1e308}]),
        "compute kind nan": graph_doc([{"name": "a", "compute": {"gpu": "NaN"}}]),
        "name empty": graph_doc([op("")]), "ops a dict": {**graph_doc([]), "ops": {"a": 1}},
        "phase bogus": graph_doc([op("a", phase="sideways")]),
        "unicode names": graph_doc([op("变量/权重"), op("\U0001f600")], [{"src": "变量/权重", "dst": "\U0001f600"}]),
    }
    for label, doc in placelab.items():
        text = json.dumps(doc).replace('"NaN"', "NaN")
        yield case(f"placelab: {label}", ["graph", "info", "x.json", "--json"], files={"x.json": text})
    yield case("placelab: place on unicode names", ["place", "x.json", "-c", K, "--placer", "heft", "--json"],
               files={"x.json": jdump(placelab["unicode names"])}, expect="ok", check=makespan_sane)
    yield case("empty file", ["graph", "info", "x.json", "--json"], files={"x.json": b""})
    yield case("whitespace file", ["graph", "info", "x.json", "--json"], files={"x.json": b" \n\t\n"})
    for i, fmt in enumerate(("placelab", "node-link", "graphml", "doppler-text", "dnn-partitioning")):
        seed = TEXT_SEEDS[fmt]
        generic = {"BOM": b"\xef\xbb\xbf" + seed, "truncated": seed[: len(seed) // 2],
                   "CRLF": seed.replace(b"\n", b"\r\n"), "UTF-16": seed.decode().encode("utf-16"),
                   "NUL byte": seed[:40] + b"\x00" + seed[40:], "trailing garbage": seed + b"}}}garbage"}
        for label in some(list(generic), i, 2)[i % 2:][:2]:
            yield case(f"{fmt}: {label}", ["graph", "info", f"x.{_ext(fmt)}", "--json"],
                       files={f"x.{_ext(fmt)}": generic[label]})
        for label, old, new in _number_swaps(fmt)[i % 5:][:1]:
            yield case(f"{fmt}: {label}", ["graph", "info", f"x.{_ext(fmt)}", "--json"],
                       files={f"x.{_ext(fmt)}": seed.replace(old, new, 1)})
    nl = json.loads(TEXT_SEEDS["node-link"])
    for label, doc in [("undirected", {**nl, "directed": False}), ("multigraph", {**nl, "multigraph": True}),
                       ("cycle", {**nl, "edges": [*nl["edges"], {"source": 3, "target": "a"}]}),
                       ("node without id", {**nl, "nodes": [{"compute": 1}]}),
                       ("links key", {k: v for k, v in {**nl, "links": nl["edges"]}.items() if k != "edges"})]:
        yield case(f"node-link: {label}", ["graph", "info", "x.json", "--json"], files={"x.json": jdump(doc)})
    gml = TEXT_SEEDS["graphml"].decode()
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;'
              '&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;'
              '&lol2;">]><graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="directed">'
              '<node id="&lol3;"/></graph></graphml>')
    xxe = ('<?xml version="1.0"?><!DOCTYPE g [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="directed">'
           '<node id="&x;"/></graph></graphml>')
    for label, text in [("billion laughs", laughs), ("external entity", xxe),
                        ("undirected", gml.replace('edgedefault="directed"', 'edgedefault="undirected"')),
                        ("cycle", gml.replace('<edge source="b" target="c"/>',
                                              '<edge source="b" target="c"/><edge source="c" target="a"/>')),
                        ("compute as string type", gml.replace('attr.type="double"', 'attr.type="string"', 1)
                         .replace(">0.00001<", ">fast<")),
                        ("hyperedge", gml.replace("</graph>", '<hyperedge><endpoint node="a"/></hyperedge></graph>')),
                        ("deep elements", "<graphml>" + "<a>" * 100_000 + "</a>" * 100_000 + "</graphml>")]:
        yield case(f"graphml: {label}", ["graph", "info", "x.graphml", "--json"], files={"x.graphml": text})
    dt = TEXT_SEEDS["doppler-text"].decode()
    for label, text in [("glued 16,6", dt.replace("1 2,3,3", "16,6 2,3,3")),
                        ("count too big", dt.replace("6\n", "60\n", 1)),
                        ("count negative", dt.replace("6\n", "-6\n", 1)),
                        ("missing lines", "\n".join(dt.splitlines()[:3])),
                        ("cycle", dt.replace("0,0 1 2,", "0,5 1 2,")), ("letters", dt.replace("4, 5,", "x, y,"))]:
        yield case(f"doppler-text: {label}", ["graph", "info", "x.txt", "--json"], files={"x.txt": text})
    dp = json.loads(TEXT_SEEDS["dnn-partitioning"])
    for label, doc in [("maxFPGAs 0", {**dp, "maxFPGAs": 0, "maxCPUs": 0}),
                       ("edge to unknown", {**dp, "edges": [*dp["edges"], {"sourceId": 1, "destId": 99, "cost": 1}]}),
                       ("cycle", {**dp, "edges": [*dp["edges"], {"sourceId": 3, "destId": 1, "cost": 1}]}),
                       ("latency string", {**dp, "nodes": [{**dp["nodes"][0], "cpuLatency": "slow"},
                                                           *dp["nodes"][1:]]}),
                       ]:
        yield case(f"dnn-partitioning: {label}", ["place", "x.json", "-c", "x.json", "--placer", "round-robin",
                                                  "--json"], files={"x.json": jdump(doc)}, check=makespan_sane)
    for fmt, name in (("tf-graphdef", "x.pb"), ("onnx", "x.onnx"), ("keras", "x.keras")):
        for label, make in [("valid", lambda fx, f=fmt: fx.tf(f)), ("truncated", lambda fx, f=fmt: fx.tf(f)[:200]),
                            ("one bit flipped", lambda fx, f=fmt: _flip(fx.tf(f)))]:
            yield case(f"{fmt}: {label}", ["graph", "info", name, "--json"], files={name: make}, needs=("tf",),
                       timeout=180, expect="ok" if label == "valid" else "any")
    for label, make in [("saved_model.pb random", lambda fx: os.urandom(500)),
                        ("saved_model.pb valid", lambda fx: fx.tf("tf-savedmodel"))]:
        yield case(f"savedmodel: {label}", ["graph", "info", "sm", "--json"], files={"sm/saved_model.pb": make},
                   needs=("tf",), timeout=180)
    lam = zip_bytes({"metadata.json": '{"keras_version": "3.0.0"}', "config.json": json.dumps(
        {"module": "keras.layers", "class_name": "Lambda",
         "config": {"name": "l", "function": {"class_name": "__lambda__", "config": {
             "code": base64.b64encode(b"import os; os.system('touch pwned')").decode(), "defaults": None,
             "closure": None}}}}), "model.weights.h5": b""})
    yield case("keras: Lambda layer with code", ["graph", "info", "x.keras", "--json"], files={"x.keras": lam},
               check=no_pwned, timeout=180)
    yield case("keras: empty zip", ["graph", "info", "x.keras", "--json"], files={"x.keras": zip_bytes({})},
               timeout=180)
    yield case("onnx: external data /etc/passwd", ["graph", "info", "x.onnx", "--json"],
               files={"x.onnx": _onnx_external}, needs=("tf",), timeout=180)
    for label, data in [("PNG", b"\x89PNG\r\n\x1a\n" + os.urandom(64)), ("pickle", malicious_pickle()),
                        ("a .py file", b"import os\nos.system('touch pwned')\n")]:
        yield case(f"unknown format: {label}", ["graph", "info", "x.bin", "--json"], files={"x.bin": data},
                   check=no_pwned)
    for label, src, text in [("missing file", "nosuch.py:f", None), ("syntax error", "m.py:f", "def f(:\n"),
                             ("factory raises", "m.py:f", "def f():\n    raise ValueError('x\\ny\\nz')\n"),
                             ("factory returns an int", "m.py:f", "def f():\n    return 1\n"),
                             ]:
        yield case(f"graph import code: {label}", ["graph", "import", src, "-o", "out.json"],
                   files={"m.py": text} if text else {}, expect="bad", timeout=180)


def _ext(fmt: str) -> str:
    return {"graphml": "graphml", "doppler-text": "txt"}.get(fmt, "json")


def _number_swaps(fmt: str) -> list[tuple[str, bytes, bytes]]:
    """The seed's first number after the header replaced by extreme values."""
    anchor = {"placelab": b"0.0", "node-link": b"1e-05", "graphml": b"0.00001", "doppler-text": b"2000000000000",
              "dnn-partitioning": b"10.0"}[fmt]
    return [(f"number {v.decode()}", anchor, v) for v in (b"1e308", b"-1", b"NaN", b"1e999", b"99999999999999999999")]


def _flip(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) // 3] ^= 0x10
    return bytes(b)


def _onnx_external(fx: Fixtures) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="/etc/passwd")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=[t])
    return onnx.helper.make_model(graph).SerializeToString()


def clusters() -> Iterator[Case]:
    """Cluster files and -c values: missing keys, extreme numbers, special files, unknown names."""
    case = partial(Case, "clusters")
    run = ["place", "g.json", "-c", "x.json", "--placer", "round-robin", "--json"]
    variants = {
        "not JSON": "{", "empty": "", "no schema": cluster_with(schema=DELETE),
        "wrong schema": cluster_with(schema="x"),
        "no devices": cluster_with(devices=[]),
        "device without name": cluster_with(devices__1__name=DELETE),
        "duplicate names": cluster_with(devices__2__name="gpu:0"),
        "kind tpu": cluster_with(devices__1__kind="tpu", devices__2__kind="tpu"),
        "memory -1": cluster_with(devices__1__memory_bytes=-1),
        "memory 1e308": cluster_with(devices__1__memory_bytes=1e308),
        "speed nan": cluster_with(devices__1__speed="NaN!"),
        "bandwidth 0": cluster_with(link__bandwidth_bytes_per_s=0),
        "bandwidth inf": cluster_with(link__bandwidth_bytes_per_s="1e999!"),
        "latency 1e308": cluster_with(link__latency_s=1e308),
        "link missing": cluster_with(link=DELETE),
        "links unknown device": cluster_with(links=[{"between": ["gpu:0", "nope"], "bandwidth_bytes_per_s": 1e9}]),
        "links same device": cluster_with(links=[{"between": ["gpu:0", "gpu:0"], "bandwidth_bytes_per_s": 1e9}]),
        "links a dict": cluster_with(links={"a": 1}), "simulation list": cluster_with(simulation=[1]),
        "simulation unknown key": cluster_with(simulation={"mode": "default", "zzz": 1}),
        "description 1 MB": cluster_with(description="d" * 1_000_000),
        "4096 devices": jdump({**CLUSTER, "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 1e9}
                                                      for i in range(4096)]}),
    }
    for label, text in variants.items():
        yield case(f"cluster file: {label}", run, files={"x.json": text}, check=makespan_sane)
    for label, spec, files in [("nosuch", "nosuch", {}), ("empty", "", {}), ("a folder", ".", {}),
                               ("a fifo", "f", {"f": Special("fifo")}),
                               ("-> /dev/zero", "z", {"z": Special("symlink", "/dev/zero")}),
                               ("sparse 4 GB", "s.json", {"s.json": Special("sparse", 4 * 2**30)}),
                               ("bench:nosuch", "bench:nosuch", {}), ("bench machine", "bench:resnet50_inference", {}),
                               ("a graph file", "g.json", {})]:
        yield case(f"-c {label}", ["place", G, "-c", spec, "--placer", "round-robin", "--json"], files=files,
                   check=makespan_sane)


def placements() -> Iterator[Case]:
    """Placement files: wrong ops and devices, special files, a graph file, a run's folder."""
    case = partial(Case, "placements")
    dev = PLACEMENT["devices"]
    variants: dict[str, Any] = {
        "not JSON": "{", "{}": "{}",
        "wrong schema": jdump({"schema": "x", "devices": dev}),
        "devices a list": jdump({**PLACEMENT, "devices": ["gpu:0"]}),
        "op missing": jdump({**PLACEMENT, "devices": dict(list(dev.items())[1:])}),
        "extra op": jdump({**PLACEMENT, "devices": {**dev, "zz": "gpu:0"}}),
        "unknown device": jdump({**PLACEMENT, "devices": {**dev, "mm": "tpu:9"}}),
        "device null": jdump({**PLACEMENT, "devices": {**dev, "mm": None}}),
        "device index": jdump({**PLACEMENT, "devices": {**dev, "mm": 0}}),
        "cpu-only op on gpu": jdump({**PLACEMENT, "devices": {k: "cpu:0" for k in dev}}),
        "10^5 extra ops": jdump({**PLACEMENT, "devices": {**dev, **{f"x{i}": "gpu:0" for i in range(100_000)}}}),
        "a folder": Special("dir"), "a fifo": Special("fifo"), "-> /dev/zero": Special("symlink", "/dev/zero"),
        "sparse 4 GB": Special("sparse", 4 * 2**30),
        "a graph file": TEXT_SEEDS["placelab"],
    }
    for label, data in variants.items():
        yield case(f"simulate --placement {label}", ["simulate", "g.json", "-c", "c.json", "--placement",
                                                     "x.json", "--json"], files={"x.json": data},
                   check=makespan_sane)
    for label in ("unknown device", "a fifo"):
        yield case(f"bench simulate --placement {label}", ["bench", "simulate", "g.json", "-c", "c.json",
                                                           "--placement", "x.json"],
                   files={"x.json": variants[label]})
        yield case(f"execute --placement {label}", ["execute", "g.json", "-c", "local.json", "--placement",
                                                    "x.json"], files={"x.json": variants[label]},
                   needs=("local",), expect="bad")
    yield case("simulate a run's placement folder", ["simulate", G, "-c", K, "--placement", "runs/{PLACE}",
                                                     "--json"], store=("PLACE",))




def paths() -> Iterator[Case]:
    """Special files as inputs: folders, fifos, symlink loops, /dev/zero, sparse 4 GB files, odd names."""
    case = partial(Case, "paths")
    specials = {
        "a folder": ("dir.json", {"dir.json": Special("dir")}), "a fifo": ("f.json", {"f.json": Special("fifo")}),
        "symlink loop": ("a.json", {"a.json": Special("symlink", "b.json"), "b.json": Special("symlink", "a.json")}),
        "-> /dev/zero": ("z.json", {"z.json": Special("symlink", "/dev/zero")}),
        "sparse 4 GB": ("s.json", {"s.json": Special("sparse", 4 * 2**30)}),
        "sparse 4 GB, a JSON head": ("s.json", {"s.json": Special("sparse", (4 * 2**30, b'{"schema": "placelab'))}),
        "newline in the name": ("a\nb.json", {"a\nb.json": TEXT_SEEDS["placelab"]}),
        "escape in the name": (f"e{ESC}.json", {f"e{ESC}.json": TEXT_SEEDS["placelab"]}),
        "unicode name": ("图 ✓.json", {"图 ✓.json": TEXT_SEEDS["placelab"]}),
        "name with ?": ("a?ops=1.json", {"a?ops=1.json": TEXT_SEEDS["placelab"]}),
        "name like a spec": ("gen:random", {"gen:random": TEXT_SEEDS["placelab"]}),
        "/dev/null": ("/dev/null", {}), "/proc/self/status": ("/proc/self/status", {}),
        "a SavedModel folder without the model": ("sm", {"sm/variables/x": b""}),
    }
    for label, (path, files) in specials.items():
        yield case(f"graph info: {label}", ["graph", "info", path, "--json"], files=files)
        if label in ("a fifo", "-> /dev/zero", "sparse 4 GB", "symlink loop"):
            yield case(f"-c {label}", ["place", G, "-c", path, "--placer", "heft"], files=files)
        if label in ("a fifo", "-> /dev/zero"):
            yield case(f"--placement {label}", ["simulate", G, "-c", K, "--placement", path], files=files)
            yield case(f"train -g {label}", ["train", "--placer", "placeto", "-g", path, "-c", K], files=files)
    yield case("graph info on a file without read permission (as root: readable)", ["graph", "info", "r.json"],
               files={"r.json": TEXT_SEEDS["placelab"]}, setup=lambda d, env: os.chmod(d / "r.json", 0))
