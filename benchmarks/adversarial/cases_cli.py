"""Cases of the classes ``names`` (unknown names) and ``usage`` (commands without a subcommand, help, missing
arguments)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from .fixtures import Case, G, K


def names() -> Iterator[Case]:
    """Unknown and malformed names: placers, clusters, runs, families, stages, modes, graph specs."""
    case = partial(Case, "names")
    for label, argv in [
        ("placer nosuch", ["place", G, "-c", K, "--placer", "nosuch"]),
        ("placer empty", ["place", G, "-c", K, "--placer", ""]),
        ("placer 'heft '", ["place", G, "-c", K, "--placer", "heft "]),
        ("placer list", ["place", G, "-c", K, "--placer", "heft,random"]),
        ("compare --placers nosuch,heft", ["compare", G, "-c", K, "--placers", "nosuch,heft"]),
        ("sweep --placers nosuch", ["sweep", "-g", G, "-c", K, "--placers", "nosuch"]),
        ("sweep -c nosuch", ["sweep", "-g", G, "-c", "k80x2,nosuch", "--placers", "heft"]),
        ("train --placer heft", ["train", "--placer", "heft", "-g", G, "-c", K]),
        ("train without --placer", ["train", "-g", G, "-c", K]),
        ("train --stage nosuch", ["train", "--placer", "doppler", "-g", G, "-c", K, "--stage", "nosuch"]),
        ("train --reward nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--reward", "nosuch"]),
        ("train --reward measured on k80x2", ["train", "--placer", "placeto", "-g", G, "-c", K,
                                              "--reward", "measured"]),
        ("train --param nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "nosuch=1"]),
        ("train --param network=nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "network=x"]),
        ("train -g family:nosuch", ["train", "--placer", "placeto", "-g", "family:nosuch", "-c", K]),
        ("train -g family:nmt:nosuch", ["train", "--placer", "placeto", "-g", "family:nmt:nosuch", "-c", K]),
        ("eval nosuch", ["eval", "nosuch", "-g", G]),
        ("eval a place run", ["eval", "{PLACE}", "-g", G]),
        ("train --resume nosuch", ["train", "--resume", "nosuch"]),
        ("train --init-from nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--init-from", "nosuch"]),
        ("experiment --family nosuch", ["experiment", "--family", "nosuch", "-c", K]),
        ("calibrate --kind nosuch", ["calibrate", "-o", "c2.json", "--kind", "nosuch"]),
        ("calibrate --kind gpu", ["calibrate", "-o", "c2.json", "--kind", "gpu"]),
        ("validate --sample nosuch", ["validate", G, "-c", K, "--sample", "nosuch"]),
        ("validate on k80x2", ["validate", G, "-c", K, "--placements", "1"]),
        ("place --param nosuch", ["place", G, "-c", K, "--placer", "heft", "--param", "nosuch=1"]),
        ("place --param policy=nosuch", ["place", G, "-c", K, "--placer", "placeto", "--param", "policy=nosuch"]),
        ("place --mode nosuch", ["place", G, "-c", K, "--placer", "heft", "--mode", "nosuch"]),
        ("place --mode PLACETO", ["place", G, "-c", K, "--placer", "heft", "--mode", "PLACETO"]),
    ]:
        yield case(label, argv, expect="bad")
    for spec in ("gen:nosuch", "bench:nosuch", "gen:", "gen:random?ops", "gen:random?=5", "gen:random?ops=5&ops=6",
                 "gen:random?ops=5&&", "gen:random?ops=0x10", "", "nosuch.json", "gen:random?ops=5#frag", "family:nmt"):
        yield case(f"graph spec {spec!r}", ["graph", "info", spec, "--json"])


def usage() -> Iterator[Case]:
    """Commands without a subcommand (help, exit 2), --help, missing and extra arguments."""
    case = partial(Case, "usage")
    for argv in ([], ["graph"], ["bench"], ["runs"], ["ray"]):
        yield case("placelab " + " ".join(argv) if argv else "placelab", argv, expect="usage")
    for argv in (["--help"], ["place", "--help"], ["graph", "import", "--help"]):
        yield case(" ".join(argv), argv, expect="ok")
    for argv in (["nosuch"], ["--nosuch"], ["place"], ["graph", "info"], ["simulate", G], ["place", G, "-c"],
                 ["graph", "nosuch"], ["place", G, "-c", K, "--placer", "heft", "--json", "extra"],
                 ["help"]):
        yield case(" ".join(argv) or "(none)", argv, expect="bad")
