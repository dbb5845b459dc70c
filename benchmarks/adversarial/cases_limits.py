"""Cases of the classes ``limits`` (counts, budgets, repeats, sizes, times), ``exhaustion`` (sizes that ask for
more memory than there is), ``seeds`` and ``nonsense`` (settings that used to give exit 0 and a wrong answer)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial

from .fixtures import (
    CLUSTER,
    FLOAT_VALUES,
    INT_BAD,
    INT_VALUES,
    LOCAL_PLACEMENT,
    TEXT_SEEDS,
    Case,
    G,
    K,
    cluster_with,
    graph_doc,
    jdump,
    makespan_sane,
    some,
)


def limits() -> Iterator[Case]:
    """Every count, budget, repeat, time and scale option at 2^63 - 1, 2^63, 2^31, -1, 0, NaN, +-inf, text;
    products of values each within its own limit."""
    case = partial(Case, "limits")
    tr = ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "batch=2"]
    int_options = [
        ("place local-search", ["place", G, "-c", K, "--placer", "local-search"], "--budget"),
        ("place critical-path", ["place", G, "-c", K, "--placer", "critical-path"], "--budget"),
        ("compare", ["compare", G, "-c", K, "--placers", "heft,random", "--no-save"], "--repeats"),
        ("bench simulate", ["bench", "simulate", G, "-c", K, "--placement", "pg.json"], "--repeat"),
        ("train", tr, "--episodes"),
        ("train", [*tr, "--episodes", "4"], "--max-placements"),
        ("train", [*tr, "--episodes", "4"], "--stop-window"),
        ("sweep", ["sweep", "-g", G, "-c", K, "--placers", "random"], "--seeds"),
        ("graph info", ["graph", "info", "g.json"], "--unit-depth"),
        ("eval", ["eval", "{TRAIN}", "-g", G], "--threads"),
    ]
    for i, (label, argv, opt) in enumerate(int_options):
        for v in some(INT_VALUES, i, 4):
            yield case(f"{label} {opt} {v}", [*argv, opt, v])
    for i, opt in enumerate(("--episodes", "--optimized-episodes", "--random-samples", "--test-graphs")):
        for v in some(INT_BAD, i, 2):
            yield case(f"experiment {opt} {v}", ["experiment", "--family", "cifar10", "-c", K, opt, v],
                       expect="bad")
    for v in ["-1", "3", "4096", "9223372036854775807", "nan"]:
        yield case(f"calibrate --devices {v}", ["calibrate", "-o", "cal.json", "--devices", v], expect="bad")
    for i, opt in enumerate(("--placements", "--repeats")):
        for v in some(INT_BAD, i, 2):
            yield case(f"validate {opt} {v}", ["validate", G, "-c", "local.json", opt, v], expect="bad",
                       needs=("local",))
    for v in some(INT_BAD, 2, 3):
        yield case(f"execute --repeats {v}", ["execute", "g.json", "-c", "local.json", "--placement", "p.json",
                                              "--repeats", v], expect="bad", needs=("local",))
    for v in some(FLOAT_VALUES, 0, 5):
        yield case(f"train --max-seconds {v}", [*tr, "--episodes", "4", "--max-seconds", v])
    for v in some(FLOAT_VALUES, 3, 5):
        yield case(f"train --stop-tolerance {v}", [*tr, "--episodes", "4", "--stop-tolerance", v])
    for v in ["-1", "nan", "1e308", "1e-320", "1e30"]:
        yield case(f"place --execute --time-scale {v}",
                   ["place", G, "-c", "local.json", "--placer", "round-robin", "--execute", "--repeats", "1",
                    "--time-scale", v], needs=("local",), timeout=180)
    for v in ["nan", "1e308", "1e-320", "1e30"]:
        yield case(f"execute --step-ms {v}", ["execute", G, "-c", "local.json", "--placement", "lp.json",
                                              "--repeats", "1", "--step-ms", v],
                   files={"lp.json": LOCAL_PLACEMENT},
                   needs=("local",), timeout=180)
    for v in ["nan", "1e308"]:
        yield case(f"validate --bytes-scale {v}", ["validate", G, "-c", "local.json", "--placements", "1",
                                                   "--repeats", "1", "--no-save", "--bytes-scale", v],
                   needs=("local",), timeout=180)
    yield case("compare --execute --time-scale 1e308",
               ["compare", G, "-c", "local.json", "--placers", "round-robin", "--execute", "--repeats", "1",
                "--time-scale", "1e308", "--no-save"], needs=("local",), timeout=180)
    # each value within its own limit, their product beyond any patience
    wc = ["--mode", "work_conserving", "--sim-param", "runs=10000"]
    yield case("bench --repeat 10^6 x runs 10^4",
               ["bench", "simulate", G, "-c", K, "--placement", "pg.json", "--repeat", "1000000", *wc])
    yield case("local-search budget 10^6 x runs 10^4",
               ["place", G, "-c", K, "--placer", "local-search", "--budget", "1000000", *wc])
    yield case("train --episodes 10^6 --max-seconds 3", [*tr, "--episodes", "1000000", "--max-seconds", "3"],
               expect="ok")
    yield case("train --threads 1000000", [*tr, "--episodes", "2", "--threads", "1000000"])
    yield case("train --threads 0", [*tr, "--episodes", "2", "--threads", "0"], expect="bad")
    yield case("sweep 100001 tasks", ["sweep", "-g", G, "-c", K, "--placers", "random", "--seeds", "100001"],
               expect="bad")
    yield case("sweep budget 10^6 x runs 10^4", ["sweep", "-g", G, "-c", K, "--placers", "local-search",
                                                 "--budget", "1000000", *wc])
    yield case("sweep 2 x 10^6 tasks", ["sweep", "-g", G, "-c", K, "--placers", "random,heft",
                                        "--seeds", "1000000"], expect="bad")


def exhaustion() -> Iterator[Case]:
    """Sizes that ask for more memory than there is: generators, network widths, batches, deep JSON."""
    case = partial(Case, "exhaustion")
    gens = [
        "gen:random?ops=10000000&degree=1e15", "gen:random?ops=10000000&degree=1000", "gen:random?ops=1e300",
        "gen:random?ops=100000000000", "gen:random?ops=-1", "gen:random?ops=10&degree=nan",
        "gen:random?ops=10&degree=inf", "gen:random?ops=10&window=1000000000", "gen:nmt?length=1000000000",
        "gen:nmt?layers=256&length=4096", "gen:nmt?units=2147483647&vocab=2147483647",
        "gen:nmt?batch=9223372036854775807", "gen:rnnlm?steps=4096&layers=256", "gen:chainmm?gpus=1000000",
        "gen:chainmm?size=1e200", "gen:ffnn?gpus=257", "gen:llama-block?seq=2147483647",
        "gen:family-ptb?nodes=1024&units=2147483647", "gen:family-cifar10?cells=1024&channels=2147483647",
        "gen:family-nmt?index=1000000000", "gen:inception-v3?batch=-1",
    ]
    for spec in gens:
        yield case(f"graph info {spec}", ["graph", "info", spec, "--json"])
    tr = ["train", "-g", G, "-c", K, "--episodes", "2"]
    for placer, param in [("rnn", "hidden=10000000000"), ("rnn", "hidden=4097"), ("placeto", "emb=1000000"),
                          ("placeto", "rounds=1000000"), ("doppler", "hidden=10000000000"),
                          ("placeto", "groups=1000000"), ("gdp", "hidden=1000000"), ("placeto", "batch=1000000"),
                          ("placeto", "lr=1e308"), ("placeto", "passes=1000000"), ("doppler", "batch=1000000"),
                          ("rnn", "samples=1000000")]:
        yield case(f"train {placer} --param {param}", [*tr, "--placer", placer, "--param", param])
    yield case("sweep --seeds 1000000000", ["sweep", "-g", G, "-c", K, "--placers", "random",
                                            "--seeds", "1000000000"], expect="bad")
    many = {**CLUSTER, "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 1e9} for i in range(4097)]}
    yield case("cluster of 4097 devices", ["place", G, "-c", "big.json", "--placer", "round-robin", "--json"],
               files={"big.json": jdump(many)}, expect="bad")
    yield case("JSON nested 10^6 deep", ["graph", "info", "deep.json"],
               files={"deep.json": '{"schema": "placelab.graph/1", "ops": ' + "[" * 1_000_000 + "]" * 1_000_000 + "}"})
    yield case("cluster JSON nested 10^6 deep", ["place", G, "-c", "deep.json", "--placer", "heft"],
               files={"deep.json": '{"schema": "placelab.cluster/1", "devices": ' + "[" * 1_000_000 + "}"})
    yield case("doppler text header 10^12 ops", ["graph", "info", "big.txt", "--json"],
               files={"big.txt": "1000000000000\n0,\n\n\n"})
    yield case("dnn-partitioning maxFPGAs 10^12", ["place", "dnn.json", "-c", "dnn.json", "--placer",
                                                   "round-robin", "--json"],
               files={"dnn.json": jdump({**json.loads(TEXT_SEEDS["dnn-partitioning"]), "maxFPGAs": 10**12})})


PLACERS = ["enumerative", "expert", "doppler", "gdp", "placeto", "rnn", "critical-path", "heft", "m-etf", "m-topo",
           "m-sct", "metis", "kahip", "scotch", "mincut", "single-device", "cpu-only", "random", "round-robin",
           "local-search"]
CHEAP = ["critical-path", "heft", "m-etf", "m-topo", "m-sct", "metis", "kahip", "scotch", "mincut", "random",
         "round-robin", "local-search", "expert"]


def seeds() -> Iterator[Case]:
    """Seeds at and beyond 2^31 and 2^32, alone and as the last of many."""
    case = partial(Case, "seeds")
    for p in PLACERS[::2]:
        yield case(f"place {p} --seed 4294967295", ["place", G, "-c", K, "--placer", p, "--seed", "4294967295"],
                   expect="bad")
    for p in CHEAP[::2]:
        yield case(f"place {p} --seed 2147483647", ["place", G, "-c", "cpu+k80x2", "--placer", p,
                                                    "--seed", "2147483647", "--json"], check=makespan_sane)
    for p in ("placeto", "doppler"):
        yield case(f"place {p} --seed 2147483647", ["place", G, "-c", K, "--placer", p, "--seed", "2147483647",
                                                    "--budget", "2", "--json"], check=makespan_sane)
    sw = ["sweep", "-g", G, "-c", K, "--placers", "random"]
    for seeds, seed, expect in [("3", "4294967295", "bad"), ("3", "2147483646", "bad"), ("2", "2147483646", "ok"),
                                ("0", "0", "any")]:
        yield case(f"sweep --seeds {seeds} --seed {seed}", [*sw, "--seeds", seeds, "--seed", seed, "--json"],
                   expect=expect)
    for v, expect in [("2147483648", "bad"), ("2147483647", "ok")]:
        yield case(f"sim-param seed={v}", ["simulate", G, "-c", K, "--placement", "pg.json", "--mode",
                                           "work_conserving", "--sim-param", "noise=0.1", "--sim-param",
                                           f"seed={v}", "--json"], expect=expect)
    for spec in ("gen:random?ops=10&seed=4294967295", "gen:family-nmt?index=0&seed=4294967295"):
        yield case(f"graph info {spec}", ["graph", "info", spec, "--json"])
    yield case("train --seed 2147483647", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2",
                                           "--param", "batch=2", "--seed", "2147483647", "--json"], expect="ok")
    yield case("eval --seed 4294967295", ["eval", "{TRAIN}", "-g", G, "--seed", "4294967295"], expect="bad")
    yield case("compare --seed 2147483647", ["compare", G, "-c", K, "--placers", "kahip,metis,scotch,random",
                                             "--seed", "2147483647", "--no-save", "--json"], expect="ok")
    yield case("validate --seed 4294967295", ["validate", G, "-c", "local.json", "--seed", "4294967295"],
               needs=("local",), expect="bad")


def nonsense() -> Iterator[Case]:
    """Settings that used to give exit 0 and a wrong answer: simulation settings, cluster and graph values."""
    case = partial(Case, "nonsense")
    sim = ["simulate", G, "-c", K, "--placement", "pg.json", "--json"]
    wc = [*sim, "--mode", "work_conserving"]
    values = {"noise": ["1e300", "1.0000001", "-0.1", "1"],
              "runs": ["1000000000000", "10001", "0"],
              "op_overhead_s": ["1e308", "nan"], "transfer_gap_s": ["1e300"],
              "dispatch_s": ["1e300", "nan"], "copy_bus_capacity": ["0", "1e-300", "inf"],
              "choose": ["nosuch"], "memory_aware": ["maybe"], "nosuch": ["1"]}
    for key, vals in values.items():
        for v in vals:
            argv = [*(sim if key in ("op_overhead_s", "transfer_gap_s") else wc), "--sim-param", f"{key}={v}"]
            yield case(f"simulate --sim-param {key}={v}", argv, check=makespan_sane)
    for pair in ("runs", " runs = 3 "):
        yield case(f"simulate --sim-param {pair!r}", [*wc, "--sim-param", pair], check=makespan_sane)
    for key, v in [("noise", 1e300), ("runs", 10**12), ("op_overhead_s", 1e308), ("mode", "nosuch"),
                   ("runs", "ten")]:
        doc = {**CLUSTER, "simulation": {"mode": "work_conserving", key: v} if key != "mode" else {"mode": v}}
        yield case(f"cluster file simulation.{key}={v}", ["place", "g.json", "-c", "s.json", "--placer",
                                                               "round-robin", "--json"],
                   files={"s.json": jdump(doc)}, check=makespan_sane)
    for label, doc in [("device speed 1e-300", cluster_with(devices__1__speed=1e-300)),
                       ("device speed 0", cluster_with(devices__1__speed=0)),
                       ("device speed 1e300", cluster_with(devices__1__speed=1e300)),
                       ("bandwidth 1e-300", cluster_with(link__bandwidth_bytes_per_s=1e-300)),
                       ("memory 0", cluster_with(devices__1__memory_bytes=0, devices__2__memory_bytes=0))]:
        yield case(f"simulate on {label}", ["simulate", "g.json", "-c", "s.json", "--placement", "p.json",
                                            "--json"], files={"s.json": doc}, check=makespan_sane)
    for label, ops in [("compute 1e-320", [{"name": "a", "compute": 1e-320}, {"name": "b", "compute": 1e-320}]),
                       ("compute 1e99 x2", [{"name": "a", "compute": 1e99}, {"name": "b", "compute": 1e99}]),
                       ("bytes 1e300", [{"name": "a", "compute": 1, "output_bytes": 1e300},
                                        {"name": "b", "compute": 1}])]:
        yield case(f"place on a graph of {label}", ["place", "x.json", "-c", K, "--placer", "heft", "--json"],
                   files={"x.json": jdump(graph_doc(ops, [{"src": "a", "dst": "b"}]))}, check=makespan_sane)
