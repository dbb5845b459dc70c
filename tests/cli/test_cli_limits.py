"""Limits (issue #34, reliability second pass): every count, budget, repeat, size and seed is bounded.

Each case used to hang, exhaust memory, crash a library or print nonsense; now it exits 2 with one
``error: ...`` line naming the limit (``engine/limits.py``), checked before any work starts — so each
test is fast: a check that came after the work would make it hang here.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest
from cli_run import run_cli
from test_cli_errors import CLUSTER, assert_bad_input

from engine.errors import SpecError
from engine.generators import random_dag
from engine.importers.doppler_text import graph_from_doppler_text
from engine.limits import (
    MAX_BATCH,
    MAX_COUNT,
    MAX_INPUT_ELEMENTS,
    MAX_NET_WIDTH,
    MAX_NOISE,
    MAX_SECONDS,
    MAX_SEED,
    MAX_SIM_RUNS,
    MAX_STEP_SECONDS,
    MAX_THREADS,
    MAX_WORKERS,
    WORKERS_PER_CPU,
)
from engine.presets import PRESETS

SMALL = "gen:random?ops=12&seed=1"


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path


def test_limit_values():
    """The documented values (docs/reference/contracts.md, "Limits")."""
    assert (MAX_SEED, MAX_COUNT, MAX_SIM_RUNS, MAX_NOISE, MAX_NET_WIDTH) == (2**31 - 1, 10**6, 10**4, 1.0, 4096)
    assert (MAX_BATCH, MAX_THREADS) == (1024, 1024)
    assert (MAX_SECONDS, MAX_STEP_SECONDS, MAX_WORKERS, WORKERS_PER_CPU) == (30 * 24 * 3600, 3600, 1024, 4)
    assert MAX_INPUT_ELEMENTS == 2**30


# ---- 1. unbounded values used to run until killed -------------------------------------------------

HANGS = {
    "simulation runs": (["simulate", SMALL, "-c", "k80x2", "--placement", "x.json", "--mode", "work_conserving",
                         "--sim-param", "runs=1000000000000"],
                        ["simulation.runs must be <= 10,000", "MAX_SIM_RUNS", "got 1,000,000,000,000"]),
    "local-search budget": (["place", SMALL, "-c", "k80x2", "--placer", "local-search",
                             "--budget", "9223372036854775807"],
                            ["--budget must be <= 1,000,000", "MAX_COUNT"]),
    "critical-path budget": (["place", SMALL, "-c", "k80x2", "--placer", "critical-path", "--budget", "2000000000"],
                             ["--budget must be <= 1,000,000", "MAX_COUNT"]),
    "bench repeat": (["bench", "simulate", SMALL, "-c", "k80x2", "--placement", "x.json", "--repeat", "100000000000"],
                     ["--repeat must be <= 1,000,000", "MAX_COUNT"]),
    "placer parameter": (["place", SMALL, "-c", "k80x2", "--placer", "local-search",
                          "--param", "evaluations=100000000000"], ["--param evaluations must be <= 1,000,000"]),
    "train episodes": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--episodes", "10000000000"],
                       ["--episodes must be <= 1,000,000", "MAX_COUNT"]),
    # issue 54: a wall-time budget of 31,700 years, or 2^63 s, was accepted
    "train seconds": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--max-seconds", "1e12"],
                      ["--max-seconds must be <= 2,592,000 (placelab's limit MAX_SECONDS), got 1e+12"]),
    "train seconds 2^63": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--max-seconds",
                            str(2**63)], ["--max-seconds must be <= 2,592,000", "MAX_SECONDS"]),
    "resume seconds": (["train", "--resume", "nope", "--max-seconds", "1e12"], ["--max-seconds must be <= 2,592,000"]),
    # issue 54: a local Ray runtime of 100,000 CPUs ran 90 s, then "internal error ... node timed out"
    "compare workers": (["compare", SMALL, "-c", "k80x2", "--placers", "random", "--workers", "100000"],
                        ["--workers must be <= 1,024 (placelab's limit MAX_WORKERS), got 100,000"]),
    "train workers on a cluster": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--address",
                                    "127.0.0.1:1", "--workers", "100000"], ["--workers must be <= 1,024"]),
    # issue 54: steps executed for 10^27 s
    "execute step": (["validate", SMALL, "-c", "k80x2", "--step-ms", "1e30", "--no-save"],
                     ["--step-ms must be <= 3,600,000", "MAX_STEP_SECONDS"]),
    "execute time scale": (["place", SMALL, "-c", "k80x2", "--placer", "round-robin", "--execute", "--time-scale",
                            "1e30"], ["one device's share of the executed step", "must be <= 3,600",
                                      "MAX_STEP_SECONDS"]),
    # issue 54: torch failed inside (internal error); refused before the user's code runs (model.py is not there)
    "import input shape": (["graph", "import", "model.py:f", "-o", "g.json", "--input-shape", "1000000000,1000000000"],
                           ["input shape '1000000000,1000000000' with batch 32", "must be <= 1,073,741,824",
                            "MAX_INPUT_ELEMENTS", "got 32,000,000,000,000,000,000"]),
    # each value within its own limit, their product 10^10 simulations (benchmarks/adversarial_pass.py, limits)
    "bench repeat × runs": (["bench", "simulate", SMALL, "-c", "k80x2", "--placement", "x.json", "--repeat",
                             "1000000", "--mode", "work_conserving", "--sim-param", "runs=10000"],
                            ["--repeat × simulation.runs must be <= 1,000,000", "MAX_COUNT", "got 10,000,000,000"]),
    "budget × runs": (["place", SMALL, "-c", "k80x2", "--placer", "local-search", "--budget", "1000000",
                       "--mode", "work_conserving", "--sim-param", "runs=10000"],
                      ["budget × simulation.runs must be <= 1,000,000", "got 10,000,000,000"]),
    "sweep budget × runs": (["sweep", "-g", SMALL, "-c", "k80x2", "--placers", "local-search", "--budget", "1000000",
                             "--mode", "work_conserving", "--sim-param", "runs=10000"],
                            ["--budget × simulation.runs must be <= 1,000,000"]),
    # an update rolls out its whole batch whatever --episodes says: a million episodes for --episodes 2
    **{f"{placer} {key}": (["train", "--placer", placer, "-g", SMALL, "-c", "k80x2", "--episodes", "2", "--param",
                            f"{key}=1000000"], [f"parameter '{key}' must be in [1, 1024]"])
       for placer, key in (("placeto", "batch"), ("placeto", "passes"), ("doppler", "batch"), ("gdp", "batch"),
                           ("rnn", "samples"))},
}


def test_simulation_runs_in_a_cluster_file(env, capsys):
    doc = {**CLUSTER, "simulation": {"mode": "work_conserving", "runs": 10**12}}
    (env / "c.json").write_text(json.dumps(doc))
    for argv in (["simulate", SMALL, "-c", "c.json", "--placement", "x.json"],
                 ["place", SMALL, "-c", "c.json", "--placer", "random"]):
        assert_bad_input(*run_cli(capsys, *argv), "simulation.runs must be <= 10,000", "MAX_SIM_RUNS")


# ---- 2. exhaustion: refused up front where it can be foreseen, else exit 2 all the same ---------------

EXHAUSTION = {
    "degree 1e15": (["graph", "info", "gen:random?ops=10000000&degree=1e15"],
                    ["gen:random: degree 1e+15 is too large", "beyond the limit of 50,000,000"]),
    "degree 1000": (["graph", "info", "gen:random?ops=10000000&degree=1000"],
                    ["ops × degree = 1e+10 edges", "beyond the limit of 50,000,000"]),
    "rnn hidden 1e10": (["train", "--placer", "rnn", "-g", SMALL, "-c", "k80x2", "--param", "hidden=10000000000"],
                        ["--param hidden must be <= 1,000,000", "MAX_COUNT"]),
    "rnn hidden 1e5": (["train", "--placer", "rnn", "-g", SMALL, "-c", "k80x2", "--param", "hidden=100000"],
                       ["parameter 'hidden' must be in [2, 4096]"]),
    "doppler edge width": (["train", "--placer", "doppler", "-g", SMALL, "-c", "k80x2", "--param",
                            "edge_hidden=5000"], ["parameter 'edge_hidden' must be in [1, 4096]"]),
    "placeto rounds": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--param", "rounds=100000"],
                       ["parameter 'rounds' must be in [0, 64]"]),
    "sweep seeds": (["sweep", "-g", SMALL, "-c", "k80x2", "--placers", "random", "--seeds", "1000000000"],
                    ["--seeds must be <= 1,000,000", "MAX_COUNT"]),
    "sweep tasks": (["sweep", "-g", SMALL, "-c", "k80x2", "--placers", "random,round-robin", "--seeds", "60000"],
                    ["the sweep's tasks", "must be <= 100,000", "MAX_SWEEP_TASKS", "got 120,000"]),
    # before: a million torch threads, thread creation failed inside torch: signal 11 or an internal error
    "torch threads": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--threads", "1000000"],
                      ["--threads must be <= 1,024 (placelab's limit MAX_THREADS), got 1,000,000"]),
}


def test_learned_config_integers_are_bounded_without_a_declared_high():
    from policies.rl.registry import make_config

    with pytest.raises(SpecError, match=r"'failing_grace_steps' must be <= 1,000,000 \(placelab's limit MAX_COUNT\)"):
        make_config("rnn", {"failing_grace_steps": MAX_COUNT + 1})


@pytest.mark.parametrize("exc, fragment", [
    (MemoryError("Unable to allocate 74.5 GiB for an array with shape (10000000000,) and data type int64"),
     "out of memory (Unable to allocate 74.5 GiB"),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you "
                  "tried to allocate 4000000000000 bytes. Error code 12 (Cannot allocate memory)"),
     "out of memory (torch could not allocate 4,000,000,000,000 bytes)"),
    (ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size."),
     "out of memory (an array larger than the address space"),
])
def test_exhaustion_not_foreseen_is_exit_2_with_one_line(env, capsys, monkeypatch, exc, fragment):
    import engine.generators as generators

    def exhausted(ops: int = 1, seed: int = 0):
        raise exc

    monkeypatch.setitem(generators.GENERATORS, "random", generators.Generator("random", exhausted, "test"))
    assert_bad_input(*run_cli(capsys, "graph", "info", SMALL), fragment, "docs/reference/contracts.md")


def test_a_dnn_partitioning_machine_of_a_trillion_devices_is_refused_before_it_is_built(env, capsys):
    # before: 10^12 Device objects were made before the cluster's own check (a hang)
    doc = {"maxSizePerFPGA": 1e9, "maxFPGAs": 10**12, "maxCPUs": 1, "nodes": [], "edges": []}
    (env / "dnn.json").write_text(json.dumps(doc))
    assert_bad_input(*run_cli(capsys, "place", SMALL, "-c", "dnn.json", "--placer", "round-robin"),
                     "maxFPGAs + maxCPUs must be <= 4,096 (placelab's limit MAX_DEVICES), got 1,000,000,000,001")


def test_other_failures_stay_internal_errors(env, capsys, monkeypatch):
    import engine.generators as generators

    def broken(ops: int = 1, seed: int = 0):
        raise RuntimeError("a bug")

    monkeypatch.setitem(generators.GENERATORS, "random", generators.Generator("random", broken, "test"))
    monkeypatch.delenv("PLACELAB_DEBUG", raising=False)
    code, _, err = run_cli(capsys, "graph", "info", SMALL)
    assert code == 1 and err.startswith("internal error: RuntimeError: a bug")


# ---- 3. seeds: one range, 0 … 2^31 − 1, for every placer ---------------------------------------------

SEEDS = {
    "kahip 2^32-1": (["place", SMALL, "-c", "k80x2", "--placer", "kahip", "--seed", "4294967295"],
                     ["--seed must be <= 2,147,483,647", "MAX_SEED"]),
    "kahip 2^31": (["place", SMALL, "-c", "k80x2", "--placer", "kahip", "--seed", str(2**31)],
                   ["--seed must be <= 2,147,483,647"]),
    "sweep first seed": (["sweep", "-g", SMALL, "-c", "k80x2", "--placers", "random", "--seeds", "3",
                          "--seed", "4294967295"], ["--seed must be <= 2,147,483,647"]),
    "sweep last seed": (["sweep", "-g", SMALL, "-c", "k80x2", "--placers", "random", "--seeds", "3",
                         "--seed", str(2**31 - 2)], ["the sweep's last seed", "got 2,147,483,648", "MAX_SEED"]),
    "simulation seed": (["simulate", SMALL, "-c", "k80x2", "--placement", "x.json", "--mode", "work_conserving",
                         "--sim-param", "seed=4294967295"], ["simulation.seed must be <= 2,147,483,647"]),
    "train seed": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--seed", str(2**31)],
                   ["--seed must be <= 2,147,483,647"]),
}


def test_largest_seed_places_with_kahip(env, capsys):
    pytest.importorskip("kahip")
    code, out, err = run_cli(capsys, "place", SMALL, "-c", "k80x2", "--placer", "kahip", "--seed", str(MAX_SEED),
                             "--json")
    assert code == 0, err
    assert json.loads(out)["placer"] == "kahip"


def test_seed_range_holds_for_the_python_api_too():
    from placelab.runner import place_and_simulate

    with pytest.raises(SpecError, match="seed must be <= 2,147,483,647"):
        place_and_simulate(random_dag(ops=12, seed=1), PRESETS["k80x2"](), "kahip", seed=2**31)


@pytest.mark.parametrize("case", [*HANGS, *EXHAUSTION, *SEEDS])
def test_refused_before_any_work_with_one_line_naming_the_limit(env, capsys, case):
    argv, fragments = {**HANGS, **EXHAUSTION, **SEEDS}[case]
    assert_bad_input(*run_cli(capsys, *argv), *fragments)
    assert not (env / "runs").exists()  # nothing started, nothing stored


LOCAL_WORKERS = {
    "compare": ["compare", SMALL, "-c", "k80x2", "--placers", "random"],
    "sweep": ["sweep", "-g", SMALL, "-c", "k80x2", "--placers", "random"],
    "train": ["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--episodes", "2", "--save"],
    "experiment": ["experiment", "--family", "cifar10", "-c", "k80x2", "--episodes", "2"],
    "reproduce": ["reproduce", "doppler-table2", "--quick"],
}


@pytest.mark.parametrize("command", list(LOCAL_WORKERS))
def test_a_local_ray_runtime_gets_at_most_four_cpus_per_cpu_of_this_machine(env, capsys, monkeypatch, command):
    # issue 54: Ray starts a worker process per CPU it is given; refused before Ray is started or a run stored
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert_bad_input(*run_cli(capsys, *LOCAL_WORKERS[command], "--workers", "9"),
                     "--workers (a local Ray runtime) must be <= 8", "WORKERS_PER_CPU × this machine's 2 CPUs", "got 9")
    assert not (env / "runs").exists()


# ---- 4. noise large enough to print nonsense ----------------------------------------------------------

def test_noise_beyond_its_limit_is_refused(env, capsys):
    assert_bad_input(*run_cli(capsys, "simulate", SMALL, "-c", "k80x2", "--placement", "x.json", "--mode",
                              "work_conserving", "--sim-param", "noise=1e300"),
                     "simulation.noise must be <= 1", "MAX_NOISE", "got 1e+300")


def test_noise_at_its_limit_still_simulates(env, capsys):
    code, out, err = run_cli(capsys, "place", SMALL, "-c", "k80x2", "--placer", "round-robin", "--mode",
                             "work_conserving", "--sim-param", f"noise={MAX_NOISE}", "--sim-param", "runs=20",
                             "--json")
    assert code == 0, err
    assert json.loads(out)["makespan_s"] > 0


# ---- 15. DOPPLER text: the corrupted entry of the authors' files -------------------------------------

def _published_layout(dst_line: str) -> str:
    """A synthetic graph in the published files' layout: entries separated by ', ', trailing separators;
    14 nodes, 2 of them inputs; edges 0->10, 1->10, 2->10, 3->11 unless ``dst_line`` says otherwise."""
    return "\n".join(["14", "0, 1, ", "0, 1, 2, 3, ", dst_line, *["100000000,400000000"] * 12]) + "\n"


def test_doppler_glued_entry_is_read_as_the_authors_do_with_one_warning(env, capsys):
    # "10, 10" lost ", 1" and became "10,0", as "16, 16" became "16,6" in the published files
    (env / "glued.txt").write_text(_published_layout("10,0, 10, 11, "))
    code, out, err = run_cli(capsys, "graph", "info", "glued.txt", "--json")
    assert code == 0, err
    assert json.loads(out)["edges"] == 4
    assert err.count("\n") == 1 and err.startswith("warning: "), err
    assert "line 4: entry '10,0' has no blank after its comma" in err
    assert "#0 0 -> 10, #1 1 -> 0" in err  # the edges the authors' reader makes of it


def test_doppler_glued_entry_edges_and_clean_files():
    with pytest.warns(UserWarning, match=r"line 4: entry '10,0'.*authors' reader"):
        g = graph_from_doppler_text(_published_layout("10,0, 10, 11, "), name="t")
    assert list(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True)) == [(0, 10), (1, 0), (2, 10), (3, 11)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a clean file, or for one with bare commas throughout
        graph_from_doppler_text(_published_layout("10, 10, 10, 11, "), name="t")
        graph_from_doppler_text(_published_layout("10,10,10,11,"), name="t")
