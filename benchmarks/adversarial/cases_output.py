"""Cases of the classes ``one-line`` (megabytes, warnings and long arguments in one line), ``outputs`` (output
paths), ``escapes`` (terminal escapes) and ``json`` (``--json`` of every command that has it)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from .fixtures import (
    CLUSTER,
    ESC,
    LOCAL_PLACEMENT,
    PLACEMENT,
    TEXT_SEEDS,
    Case,
    G,
    K,
    Special,
    chain,
    jdump,
    makespan_sane,
    renamed,
)


def one_line() -> Iterator[Case]:
    """Errors that must stay one line: megabyte inputs, 100 KB arguments, newlines, warnings."""
    case = partial(Case, "one-line")
    big = chain(100_000, cycle=True)
    yield case("graph info on a 10^5-op cycle", ["graph", "info", "cyc.json"], files={"cyc.json": big},
               expect="bad")
    yield case("place on a 10^5-op cycle", ["place", "cyc.json", "-c", K, "--placer", "heft"],
               files={"cyc.json": big}, expect="bad")
    long = "x" * 1_000_000
    yield case("cycle of 1 MB op names", ["graph", "info", "c.json"],
               files={"c.json": chain(3, lambda i: f"{long}{i}", cycle=True)}, expect="bad")
    long = "x" * 100_000  # an argument: at most 128 KiB (Linux's MAX_ARG_STRLEN)
    for label, argv in [
        ("unknown placer 100 KB", ["place", G, "-c", K, "--placer", long]),
        ("unknown cluster 100 KB", ["place", G, "-c", long, "--placer", "heft"]),
        ("--param key 100 KB", ["place", G, "-c", K, "--placer", "heft", "--param", f"{long}=1"]),
        ("--sim-param key 100 KB", ["simulate", G, "-c", K, "--placement", "pg.json", "--sim-param", f"{long}=1"]),
        ("runs show 100 KB id", ["runs", "show", long]),
        ("graph path 5000 chars", ["graph", "info", "a" * 5000 + ".json"]),
        ("--placers list of 10^4", ["compare", G, "-c", K, "--placers", ",".join(["nosuch"] * 10_000)]),
        ("-g list of 10^4 missing files", ["train", "--placer", "placeto", "-c", K,
                                           "-g", ",".join(f"m{i}.json" for i in range(10_000))]),
    ]:
        yield case(label, argv, expect="bad")
    yield case("placement naming an unknown 1 MB op", ["simulate", "g.json", "-c", "c.json", "--placement",
                                                       "x.json"],
               files={"x.json": jdump({"schema": "placelab.placement/1",
                                       "devices": {**PLACEMENT["devices"], long: "gpu:0"}})})
    yield case("op name with newlines in a cycle", ["graph", "info", "n.json"],
               files={"n.json": chain(2, lambda i: f"line one\nline two\r\n{i}", cycle=True)}, expect="bad")
    doppler = "reading=app_e&flops_per_s="
    for v in ("1e-300", "0", "nan", "1e300"):
        yield case(f"doppler {doppler}{v}", ["graph", "info", f"d.txt?{doppler}{v}"],
                   files={"d.txt": TEXT_SEEDS["doppler-text"]})
    for q in ("reading=nosuch", "unit_s=1e-320", "unit_s=1e308", "reading", "unit_s=1e308&unit_s=1"):
        yield case(f"doppler ?{q}", ["graph", "info", f"d.txt?{q}", "--json"],
                   files={"d.txt": TEXT_SEEDS["doppler-text"]})
    for argv in (["reproduce", "nosuch", "--quick"], ["reproduce", ""], ["reproduce", ESC]):
        yield case(" ".join(argv), argv, expect="bad")
    yield case("reproduce --list --json", ["reproduce", "--list", "--json"], expect="ok")
    for label, out in [("missing folder", "nosuch/c.json"), ("empty", ""), ("a folder", "."), ("a fifo", "f")]:
        yield case(f"calibrate -o {label}", ["calibrate", "-o", out], files={"f": Special("fifo")},
                   expect="bad", check=None)
    yield case("run --name with newlines", ["place", G, "-c", K, "--placer", "heft", "--save",
                                            "--name", "a\nb\nc", "--json"])
    yield case("runs list of a run named with newlines", ["runs", "list"], store=("PLACE",),
               setup=renamed("a\nb\x1b[2J"), expect="ok")


OUT_PATHS = {
    "empty": "", "a folder": ".", "missing folder": "nosuch/x.json", "a fifo": "fifo", "link to a fifo": "lfifo",
    "link to a folder": "ldir", "dangling link": "dangling", "trailing slash": "x.json/", "name 300 chars": "a" * 300,
    "path 5000 chars": "a/" * 2500 + "x", "newline in name": "a\nb.json", "escape in name": f"o{ESC}.json",
    "under a file": "g.json/x.json", "stdout dash": "-", "the input graph": "g.json", "/dev/full": "/dev/full",
}
OUT_FILES = {"fifo": Special("fifo"), "lfifo": Special("symlink", "fifo"), "ldir": Special("symlink", "."),
             "dangling": Special("symlink", "nowhere/x")}


def outputs() -> Iterator[Case]:
    """Output paths (-o, --refine-out): empty, folders, fifos, links, long names, /dev/full."""
    case = partial(Case, "outputs")
    for i, (label, path) in enumerate(OUT_PATHS.items()):
        if i % 4 != 3:
            yield case(f"place -o {label}", ["place", G, "-c", K, "--placer", "heft", "-o", path],
                       files=OUT_FILES)
        if i % 3 == 1:
            yield case(f"export-trace -o {label}", ["runs", "export-trace", "{PLACE}", "-o", path],
                       store=("PLACE",), files=OUT_FILES)
    for label in ("empty", "a fifo", "name 300 chars", "under a file"):
        yield case(f"graph import -o {label}", ["graph", "import", "g.json", "-o", OUT_PATHS[label]],
                   files=OUT_FILES)
    for label in ("missing folder", "a fifo"):
        yield case(f"validate --refine-out {label}", ["validate", G, "-c", "local.json", "--placements", "1",
                                                      "--repeats", "1", "--no-save", "--refine-out",
                                                      OUT_PATHS[label]],
                   files=OUT_FILES, needs=("local",), expect="bad", timeout=180)
    yield case("graph import over an existing file", ["graph", "import", "g.json", "-o", "c.json"], expect="bad")


def escapes() -> Iterator[Case]:
    """Terminal escapes in names, specs and run metadata: never raw on stdout or stderr."""
    case = partial(Case, "escapes")
    name = lambda i: f"op{i}{ESC}"  # noqa: E731
    files = {"e.json": chain(3, name), "ec.json": jdump({**CLUSTER, "name": f"cl{ESC}",
                                                         "devices": [{**dv, "name": dv["name"] + ESC}
                                                                     for dv in CLUSTER["devices"]]}),
             "ecyc.json": chain(3, name, cycle=True)}
    for label, argv in [
        ("graph info", ["graph", "info", "e.json"]), ("graph info -c", ["graph", "info", "e.json", "-c", "ec.json"]),
        ("place", ["place", "e.json", "-c", K, "--placer", "heft"]),
        ("place on escaped cluster", ["place", "e.json", "-c", "ec.json", "--placer", "round-robin"]),
        ("compare", ["compare", "e.json", "-c", K, "--placers", "heft,random", "--no-save"]),
        ("cycle error", ["graph", "info", "ecyc.json"]),
        ("unknown placer", ["place", "e.json", "-c", K, "--placer", f"p{ESC}"]),
        ("unknown cluster", ["place", "e.json", "-c", f"c{ESC}", "--placer", "heft"]),
        ("gen spec", ["graph", "info", f"gen:random?ops=5&name={ESC}"]),
        ("missing file", ["graph", "info", f"nofile{ESC}.json"]),
        ("placement unknown device", ["simulate", "e.json", "-c", K, "--placement", "ep.json"]),
        ("train progress", ["train", "--placer", "placeto", "-g", "e.json", "-c", K, "--episodes", "2"]),
        ("--name", ["place", "e.json", "-c", K, "--placer", "heft", "--save", "--name", ESC, "--tag", ESC]),
        ("runs show", ["runs", "show", "{PLACE}"]),
        ("sweep", ["sweep", "-g", "e.json", "-c", K, "--placers", "random"]),
        ("bench simulate", ["bench", "simulate", "e.json", "-c", K, "--placement", "ep.json"]),
        ("--param value", ["place", G, "-c", K, "--placer", "heft", "--param", f"x={ESC}"]),
        ("--sim-param value", ["simulate", G, "-c", K, "--placement", "pg.json", "--mode", "work_conserving",
                               "--sim-param", f"choose={ESC}"]),
        ("eval graph", ["eval", "{TRAIN}", "-g", "e.json"]),
        ("doppler text name", ["graph", "info", f"d{ESC}.txt"]),
    ]:
        extra = {"ep.json": jdump({"schema": "placelab.placement/1",
                                   "devices": {name(i): f"gpu:{i % 3}{ESC}" for i in range(3)}}),
                 f"d{ESC}.txt": TEXT_SEEDS["doppler-text"]}
        yield case(label, argv, files={**files, **extra},
                   setup=renamed(f"run{ESC}") if label == "runs show" else None)


def json_output() -> Iterator[Case]:
    """--json of every command that has it: one strict JSON object; with errors: one line."""
    case = partial(Case, "json")
    cmds = [
        ["placers"], ["clusters"], ["graph", "list"], ["graph", "info", G, "-c", K],
        ["graph", "info", "g.json", "-c", "c.json"], ["graph", "info", "bench:resnet50_inference"],
        ["simulate", G, "-c", K, "--placement", "pg.json"],
        ["simulate", G, "-c", K, "--placement", "pg.json", "--mode", "work_conserving", "--sim-param", "noise=0.5",
         "--sim-param", "runs=5"],
        ["place", G, "-c", K, "--placer", "heft"], ["place", G, "-c", K, "--placer", "m-sct"],
        ["place", G, "-c", "cpu+k80x2", "--placer", "m-sct", "--mode", "work_conserving"],
        ["place", "gen:chainmm?gpus=2", "-c", "p100x4", "--placer", "enumerative"],
        ["place", G, "-c", K, "--placer", "heft", "--save", "-o", "out.json"],
        ["compare", G, "-c", K, "--placers", "m-sct,heft,metis"],
        ["compare", G, "-c", K, "--placers", "m-sct,m-etf", "--mode", "work_conserving", "--no-save"],
        ["bench", "simulate", G, "-c", K, "--placement", "pg.json", "--repeat", "2"],
        ["runs", "list"], ["runs", "show", "{PLACE}"], ["runs", "show", "{TRAIN}"],
        ["runs", "export-trace", "{PLACE}", "-o", "t.json"], ["runs", "delete", "{PLACE}"],
        ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2", "--param", "batch=2"],
        ["train", "--placer", "rnn", "-g", G, "-c", K, "--episodes", "2"],
        ["train", "--placer", "doppler", "-g", G, "-c", K, "--episodes", "2"],
        ["train", "--placer", "gdp", "-g", G, "-c", K, "--episodes", "2"],
        ["train", "--resume", "{TRAIN}", "--episodes", "4"],
        ["eval", "{TRAIN}", "-g", f"{G},g.json", "-c", K],
        ["sweep", "-g", G, "-c", K, "--placers", "random,m-sct", "--seeds", "2"],
        ["reproduce", "--list"], ["ray", "stop"], ["graph", "import", "g.json", "-o", "imp.json"],
    ]
    for argv in cmds:
        yield case(" ".join(argv)[:90], [*argv, "--json"], expect="ok", check=makespan_sane)
    yield case("graph import onnx", ["graph", "import", "m.onnx", "-o", "imp.json", "--json"], expect="ok",
               files={"m.onnx": lambda fx: fx.tf("onnx")}, needs=("tf",), timeout=180)
    yield case("graph import keras", ["graph", "import", "m.keras", "-o", "imp.json", "--json"], expect="ok",
               files={"m.keras": lambda fx: fx.tf("keras")}, needs=("tf",), timeout=240)
    yield case("calibrate --json", ["calibrate", "-o", "cal.json", "--devices", "1", "--json"], expect="ok",
               timeout=180)
    yield case("execute --json", ["execute", G, "-c", "local.json", "--placement", "lp.json", "--repeats", "1",
                                  "--json"], expect="ok", needs=("local",), timeout=180,
               files={"lp.json": LOCAL_PLACEMENT})
    yield case("validate --json", ["validate", G, "-c", "local.json", "--placements", "2", "--repeats", "1",
                                   "--json"], expect="ok", needs=("local",), timeout=240)
    yield case("experiment --json", ["experiment", "--family", "cifar10", "-c", K, "--episodes", "2",
                                     "--optimized-episodes", "1", "--random-samples", "1", "--test-graphs", "1",
                                     "--param", "batch=2", "--json"], expect="ok", timeout=300)
    for argv in (["simulate", G, "-c", K, "--placement", "nosuch.json"], ["place", G, "-c", K, "--placer", "nosuch"],
                 ["runs", "show", "nosuch"], ["graph", "info", "gen:nosuch"], ["train", "--placer", "heft"],
                 ["compare", G, "-c", K, "--placers", "m-sct,nosuch"]):
        yield case(f"error: {' '.join(argv)[:70]}", [*argv, "--json"], expect="bad")
