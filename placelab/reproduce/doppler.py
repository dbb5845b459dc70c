"""DOPPLER (Yao et al. 2025): Tables 2, 3, 4, 8 and 9 on the App. D graphs.

The four sharded graphs (``gen:chainmm``, ``gen:ffnn``, ``gen:llama-block``, ``gen:llama-layer``)
on 4 P100s (``p100x4``; Table 8: ``p100x4-8gb``, each GPU limited to 8 of its 16 GB) or 8 V100s
in two NVLink groups (``v100x8``, Table 9), all in work-conserving mode (the presets' own, §6).
Every method first finds a placement with the deterministic simulator — ``place`` for the
baselines (critical path: best of 50, §6.1; the EnumerativeOptimizer, App. B; one GPU),
``train`` for Placeto and DOPPLER — and that placement is then executed ``EXECUTIONS`` = 10
times with log-normal duration noise σ = ``NOISE`` (``simulate --sim-param noise=… runs=10``):
the cell is their mean ± std, as the paper's real-engine cells are (§6.1: "the average of 10
executions").

DOPPLER is trained as §5 says, through the CLI: Stage I (``--stage imitation``, the
critical-path teacher, at a constant learning rate ``IMITATION_LR``; it hands over the last
weights whose greedy placement reached the teacher's makespan, ``handoff``) then Stage II
(``--init-from`` Stage I, REINFORCE in simulation);
DOPPLER-SEL and -PLC (Table 3) are Stage II with ``variant=sel-only`` / ``plc-only``. The full
setting follows §6.1: 4k Stage II episodes for CHAINMM and FFNN, 8k for the Llama graphs, and
the same for Placeto; Stage I gets a quarter of that (the paper does not give Stage I's budget;
ours). Table 4 (transfer): the policy trained on the source graph placed on the target without
training (zero-shot, ``place --placer doppler --param policy=RUN``), then fine-tuned there with
``train --init-from`` for 2k episodes, and from that run for 2k more (the 4k-shot column). In
every DOPPLER training ε decays linearly over that training's own episodes (§6.1: 0.2 → 0;
Stage I from 1).

On the authors' own graphs (``--graphs-dir DIR``, :mod:`placelab.reproduce.published`): each row's file of
:data:`AUTHORS_FILES` (Table 9: :data:`AUTHORS_FILES_8GPU`) replaces our ``gen:`` graph in every step, read in
the authors' units (``engine/importers/doppler_text.py``); a row without a file runs on ours, marked.

GDP (Zhou et al. 2019, ``policies/rl/gdp``) is trained as the DOPPLER authors ran it (§6.1;
github.com/xinyuyao/Doppler at 87dda0d, ``config_files/run_gdp/``): an imitation stage
(``--stage imitation``, the same critical-path teacher, at the constant learning rate
``GDP_IMITATION_LR`` of their GDP imitation config) then a simulation stage (``--init-from`` it,
ε 0.2 → 0, learning rate 1e-4), with DOPPLER's Stage I and Stage II budgets (§6.1 gives every
RL method the same 4k / 8k episodes). The paper's Tables 8 and 9 have no GDP column, and ours have
none either.

Deviations: the paper's numbers are real-engine executions; ours are the simulator's, and the
noise model is ours (docs/reference/simulation.md). DOPPLER-SYS (Stage III, training on the real engine)
needs an executor, so our DOPPLER-SYS column is the simulation-trained policy (the same as our
DOPPLER-SIM). The three variants start Stage II from one shared Stage I (its teacher is the same
for all three; the variant replaces a policy by its rule in Stage II). GDP's imitation stage is
ours: the authors' GDP code ignores its imitation weight and starts its simulation stage afresh
(``policies/rl/gdp/agent.py``, deviation 10). Table 4's Placeto and DOPPLER-SYS columns are Table 2's
(run ``doppler-table2``).

``--search N`` (Tables 2, 3, 8 and 9; :func:`search_column`): one more column, the search reference ``anneal`` at
``N`` evaluations and seed ``SEED`` on each row's graph, its placement executed as every method's is, and each
cell's ×search. Not in the paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placelab.reproduce.core import (
    Build,
    Cell,
    PublishedGraph,
    PublishedGraphs,
    Reproduction,
    SearchColumn,
    Step,
)
from placelab.reproduce.reading import execution_cell

#: This module's reproductions (listed in :mod:`placelab.reproduce.registry`).
REPRODUCTIONS: list[Reproduction] = []

__all__ = ["AUTHORS_FILES", "AUTHORS_FILES_8GPU", "EXECUTIONS", "FULL", "GRAPHS", "NOISE", "QUICK", "TRANSFER_PAIRS",
           "Budgets", "authors_graphs", "execute_step", "method_steps", "search_column"]

GRAPHS = {"CHAINMM": "gen:chainmm", "FFNN": "gen:ffnn", "LLAMA-BLOCK": "gen:llama-block",
          "LLAMA-LAYER": "gen:llama-layer"}
#: The DOPPLER authors' own graph files, named in their README's "Compute Graphs" (xinyuyao/Doppler@87dda0d
#: ``compute_graph/``), for ``placelab reproduce … --graphs-dir DIR``: per row the ``gdp_`` twin first — the same
#: graph with op types, its edge lists intact where the file as published has a corrupted entry — then that file.
AUTHORS_FILES = {"CHAINMM": ("gdp_chain_mm_112nodes.txt", "chain_mm_112nodes.txt"),
                 "FFNN": ("gdp_ffnn_192nodes.txt", "ffnn_192nodes.txt"),
                 "LLAMA-BLOCK": ("gdp_transformer_block_215nodes.txt", "transformer_block_215nodes.txt"),
                 "LLAMA-LAYER": ("gdp_full_transformer_layer_261nodes.txt", "full_transformer_layer_261nodes.txt")}
#: Their 8-GPU graphs (Table 9): the two transformer graphs only; CHAINMM and FFNN have none.
AUTHORS_FILES_8GPU = {"CHAINMM": (), "FFNN": (), "LLAMA-BLOCK": ("8gpu_transformer_block.txt",),
                      "LLAMA-LAYER": ("8gpu_full_transformer.txt",)}
_AUTHORS_WHERE = ("github.com/xinyuyao/Doppler, folder compute_graph/ (it has no license file: placelab does not "
                  "bundle them)")


def authors_graphs(files: Mapping[str, tuple[str, ...]] = AUTHORS_FILES) -> PublishedGraphs:
    """The authors' files that stand for :data:`GRAPHS` (``--graphs-dir``, :mod:`placelab.reproduce.published`)."""
    return PublishedGraphs(_AUTHORS_WHERE, tuple(PublishedGraph(row, spec, files[row]) for row, spec in GRAPHS.items()),
                           "a gdp_ file is the same graph with op types, its edge lists intact", format="doppler-text")


#: Table 4's rows, (source, target); the quick setting runs the first two.
TRANSFER_PAIRS = (("FFNN", "LLAMA-BLOCK"), ("CHAINMM", "LLAMA-LAYER"), ("CHAINMM", "LLAMA-BLOCK"),
                  ("FFNN", "LLAMA-LAYER"))
NOISE = 0.05  #: σ of the log-normal duration noise of the repeated executions (ours; docs/reference/simulation.md)
EXECUTIONS = 10  #: executions per placement (DOPPLER §6.1)
SEED = 0
_MS = 1e3  # DOPPLER's tables are in ms


@dataclass(frozen=True)
class Budgets:
    """Episode budgets of one setting: Stage II (per graph; GDP's simulation stage too), Stage I (GDP's
    imitation stage too), Placeto, one k-shot segment."""

    stage2: Mapping[str, int]
    imitation: Mapping[str, int]
    placeto: Mapping[str, int]
    kshot: int
    pairs: int


_PAPER = {"CHAINMM": 4000, "FFNN": 4000, "LLAMA-BLOCK": 8000, "LLAMA-LAYER": 8000}  # §6.1
FULL = Budgets(_PAPER, {r: n // 4 for r, n in _PAPER.items()}, _PAPER, kshot=2000, pairs=4)
QUICK = Budgets(dict.fromkeys(_PAPER, 200), dict.fromkeys(_PAPER, 200), dict.fromkeys(_PAPER, 50), kshot=50, pairs=2)
#: Stage I's learning rate, constant (ours: §5 gives none, and §6.1's RL rate is too small for imitation;
#: the measurement: docs/lab/2026-11-23-doppler-table2-full.md)
IMITATION_LR = 1e-3
#: GDP's imitation learning rate, constant: the DOPPLER authors' GDP imitation config (xinyuyao/Doppler@87dda0d
#: config_files/run_gdp/imitation_learning.json:4, learning_rate 0.001)
GDP_IMITATION_LR = 1e-3

#: Placeto as the DOPPLER authors ran it for their tables: one op per step in topological order, no grouping
#: (xinyuyao/Doppler@87dda0d scheduler/placeto_agent.py:248-250, ``node_selection`` returns ``topo_sort[curr_step]``).
#: Our default groups (§3.3 rule + Merge-and-Colocate to 128) would merge these graphs' ops where the authors did not.
PLACETO_AS_DOPPLER_RAN_IT = ("--param", "grouping=ops")

#: method → how its placement is found: ("place", placer) or ("train", placer, variant)
METHODS = {"critical-path": ("place", "critical-path"), "enumerative": ("place", "enumerative"),
           "single-device": ("place", "single-device"), "placeto": ("train", "placeto", ""),
           "doppler": ("train", "doppler", "full"), "doppler-sel": ("train", "doppler", "sel-only"),
           "doppler-plc": ("train", "doppler", "plc-only"), "gdp": ("train", "gdp", "")}


def _budget(quick: bool) -> Budgets:
    return QUICK if quick else FULL


def _train_argv(placer: str, g: str, cluster: str, episodes: int, *extra: str) -> tuple[str, ...]:
    """``train`` for exactly ``episodes`` episodes (no stopping rule); DOPPLER's and GDP's ε decays over them (§6.1)."""
    decay = ("--param", f"decay_episodes={episodes}") if placer in ("doppler", "gdp") else ()
    return ("train", "--placer", placer, "-g", g, "-c", cluster, "--episodes", str(episodes), "--stop-window", "0",
            "--threads", "1", *extra, *decay, "--save", "--seed", str(SEED))


def execute_step(key: str, found: str, g: str, cluster: str) -> Step:
    """Execute the placement step ``found`` stored ``EXECUTIONS`` times with noise (mean ± std)."""
    return Step(key, ("simulate", g, "-c", cluster, "--placement", f"{{placement:{found}}}",
                      "--sim-param", f"noise={NOISE}", "--sim-param", f"runs={EXECUTIONS}"))


def method_steps(method: str, row: str, cluster: str, quick: bool) -> list[Step]:
    """The steps that find ``method``'s placement of graph ``row`` and execute it (keys ``find/…``, ``exec/…``).

    DOPPLER's Stage II starts from the graph's Stage I run (key ``stage1/ROW``), which the caller
    adds once per graph with :func:`stage1_step`; GDP's simulation stage from its imitation run (key
    ``gdp-stage1/ROW``, :func:`gdp_stage1_step`).
    """
    g, b = GRAPHS[row], _budget(quick)
    find = f"find/{method}/{row}"
    how = METHODS[method]
    if how[0] == "place":
        argv: tuple[str, ...] = ("place", g, "-c", cluster, "--placer", how[1], "--save", "--seed", str(SEED))
    elif how[1] == "placeto":
        argv = _train_argv("placeto", g, cluster, b.placeto[row], *PLACETO_AS_DOPPLER_RAN_IT)
    elif how[1] == "gdp":
        argv = _train_argv("gdp", g, cluster, b.stage2[row], "--init-from", f"{{run:gdp-stage1/{row}}}")
    else:
        argv = _train_argv("doppler", g, cluster, b.stage2[row], "--init-from", f"{{run:stage1/{row}}}",
                           "--param", f"variant={how[2]}")
    return [Step(find, argv, SEED), execute_step(f"exec/{method}/{row}", find, g, cluster)]


def stage1_step(row: str, cluster: str, quick: bool) -> Step:
    """DOPPLER Stage I (imitation of the critical-path teacher, eq. 9) on graph ``row``."""
    return Step(f"stage1/{row}", _train_argv("doppler", GRAPHS[row], cluster, _budget(quick).imitation[row],
                                             "--stage", "imitation", "--param", f"lr={IMITATION_LR}",
                                             "--param", f"lr_final={IMITATION_LR}"), SEED)


def gdp_stage1_step(row: str, cluster: str, quick: bool) -> Step:
    """GDP's imitation stage (the critical-path teacher's device per op) on graph ``row``, as the DOPPLER
    authors' ``config_files/run_gdp/imitation_learning.json`` sets it up (ours: its loss, deviation 10)."""
    return Step(f"gdp-stage1/{row}", _train_argv("gdp", GRAPHS[row], cluster, _budget(quick).imitation[row],
                                                 "--stage", "imitation", "--param", f"lr={GDP_IMITATION_LR}",
                                                 "--param", f"lr_final={GDP_IMITATION_LR}"), SEED)


def search_column(cluster: str) -> SearchColumn:
    """The search reference's column on ``cluster`` (``placelab reproduce … --search N``): per row of :data:`GRAPHS`,
    ``anneal`` with ``N`` evaluations finds a placement (``find/search/ROW``) that is executed as the methods' are
    (``exec/search/ROW``)."""

    def steps(evaluations: int) -> list[Step]:
        out: list[Step] = []
        for row, g in GRAPHS.items():
            find = f"find/search/{row}"
            argv = ("place", g, "-c", cluster, "--placer", "anneal", "--param", f"evaluations={evaluations}", "--save",
                    "--seed", str(SEED))
            out += [Step(find, argv, SEED), execute_step(f"exec/search/{row}", find, g, cluster)]
        return out

    def cells(out: Mapping[str, dict[str, Any]], runs_dir: str, column: str) -> list[Cell]:
        return [_method_cell(out, runs_dir, "search", row, column) for row in GRAPHS]

    return SearchColumn(steps, cells)


def _method_cell(out: Mapping[str, dict[str, Any]], runs_dir: str, method: str, row: str, column: str,
                 at: str | None = None) -> Cell:
    at = at or row
    return execution_cell(row, column, out.get(f"exec/{method}/{at}"), out.get(f"find/{method}/{at}"), scale=_MS,
                          runs_dir=runs_dir)


def _table(cluster: str, columns: Mapping[str, str]):
    """Steps and build of a table whose columns are methods (column → :data:`METHODS` key)."""
    methods = list(dict.fromkeys(columns.values()))

    def steps(quick: bool) -> list[Step]:
        out: list[Step] = []
        for row in GRAPHS:
            if any(METHODS[m][1] == "doppler" for m in methods):
                out.append(stage1_step(row, cluster, quick))
            if "gdp" in methods:
                out.append(gdp_stage1_step(row, cluster, quick))
            for m in methods:
                out += method_steps(m, row, cluster, quick)
        return out

    def build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
        cells = [_method_cell(out, runs_dir, m, row, col) for row in GRAPHS for col, m in columns.items()]
        return Build(cells, notes=[_setting_note(quick), _NOTE])

    return steps, build


_NOTE = ("Ours: each method's best placement found in simulation, executed 10 times with log-normal duration noise "
         f"σ = {NOISE} (mean ± std, ms); paper: real engine, mean ± std of 10 executions. Our DOPPLER-SYS is the "
         "simulation-trained policy (no real-engine Stage III), the same as our DOPPLER-SIM.")


def _per_graph(budget: Mapping[str, int]) -> str:
    if len(set(budget.values())) == 1:
        return f"{next(iter(budget.values()))}"
    return ", ".join(f"{n} ({row})" for row, n in budget.items())


def _setting_note(quick: bool) -> str:
    b = _budget(quick)
    return (f"{'Quick' if quick else 'Full'} setting: DOPPLER Stage I {_per_graph(b.imitation)} then Stage II "
            f"{_per_graph(b.stage2)} episodes per graph (GDP: imitation, then simulation, the same); "
            f"Placeto {_per_graph(b.placeto)}"
            + (" (paper §6.1: 4k for CHAINMM/FFNN, 8k for the Llama graphs)." if quick else " (§6.1)."))


# quick minutes: the CPU time of two quick runs each, the larger rounded up to half a minute, plus a minute for
# GDP's column in table 2 (the runs' times: docs/lab/2026-11-23-doppler-quick.md, addendum of 2026-11-29)
_CP = {"Critical path": "critical-path", "EnumOpt": "enumerative"}
_ONE = {"1 GPU": "single-device"}
for _name, _tab, _cluster, _columns, _minutes in (
        ("doppler-table2", "table2", "p100x4",
         {**_CP, "Placeto": "placeto", "GDP": "gdp", "DOPPLER-SIM": "doppler", "DOPPLER-SYS": "doppler",
          "DOPPLER-SEL": "doppler-sel", "DOPPLER-PLC": "doppler-plc"}, 6.5),
        ("doppler-table8", "table8", "p100x4-8gb",
         {**_ONE, **_CP, "Placeto": "placeto", "DOPPLER-SYS": "doppler"}, 3.5),
        ("doppler-table9", "table9", "v100x8", {**_ONE, **_CP, "DOPPLER-SYS": "doppler"}, 3.0)):
    _steps, _build = _table(_cluster, _columns)
    REPRODUCTIONS.append(Reproduction(
        _name, f"DOPPLER {_tab.replace('table', 'Table ')}: the App. D graphs on {_cluster}, "
        "mean ± std of 10 noisy executions", "doppler", _tab, _steps, _build,
        quick_minutes=_minutes, reference="Critical path",
        requires=("doppler", *(("gdp",) if "GDP" in _columns else ()), f"cluster:{_cluster}"),
        published=authors_graphs(AUTHORS_FILES_8GPU if _cluster == "v100x8" else AUTHORS_FILES),
        search=search_column(_cluster)))

_t3_steps, _t3_build = _table("p100x4", {"SYS": "doppler", "SEL": "doppler-sel", "PLC": "doppler-plc"})
REPRODUCTIONS.append(Reproduction(
    "doppler-table3", "DOPPLER Table 3: DOPPLER vs its SEL-only / PLC-only ablations on p100x4",
    "doppler", "table3", _t3_steps, _t3_build, quick_minutes=5.0, reference="SYS",
    requires=("doppler", "cluster:p100x4"), published=authors_graphs(), search=search_column("p100x4")))


# ------------------------------------------------------------------------------------ Table 4
def _pairs(quick: bool) -> tuple[tuple[str, str], ...]:
    return TRANSFER_PAIRS[:_budget(quick).pairs]


def table4_steps(quick: bool, cluster: str = "p100x4") -> list[Step]:
    """Source trainings (Stage I + II), zero-shot placements, two k-shot segments, target baselines."""
    pairs, b = _pairs(quick), _budget(quick)
    out: list[Step] = []
    for src in dict.fromkeys(s for s, _ in pairs):
        out += [stage1_step(src, cluster, quick), method_steps("doppler", src, cluster, quick)[0]]
    for src, dst in pairs:
        pair, g = f"{src} -> {dst}", GRAPHS[dst]
        policy = f"find/doppler/{src}"
        zero = ("place", g, "-c", cluster, "--placer", "doppler", "--param", f"policy={{rundir:{policy}}}", "--save",
                "--seed", str(SEED))
        out.append(Step(f"find/zero-shot/{pair}", zero, SEED))
        out.append(Step(f"find/k1/{pair}", _train_argv("doppler", g, cluster, b.kshot, "--init-from",
                                                        f"{{run:{policy}}}"), SEED))
        out.append(Step(f"find/k2/{pair}", _train_argv("doppler", g, cluster, b.kshot, "--init-from",
                                                        f"{{run:find/k1/{pair}}}"), SEED))
        out += [execute_step(f"exec/{m}/{pair}", f"find/{m}/{pair}", g, cluster) for m in ("zero-shot", "k1", "k2")]
    for dst in dict.fromkeys(d for _, d in pairs):
        out += [s for m in _CP.values() for s in method_steps(m, dst, cluster, quick)]
    return out


def table4_build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    cells: list[Cell] = []
    for src, dst in _pairs(quick):
        pair = f"{src} -> {dst}"
        for col, m in (("Zero-shot", "zero-shot"), ("2k-shot", "k1"), ("4k-shot", "k2")):
            cells.append(_method_cell(out, runs_dir, m, pair, col))
        cells += [_method_cell(out, runs_dir, m, pair, col, at=dst) for col, m in _CP.items()]
    b = _budget(quick)
    return Build(cells, notes=[
        _setting_note(quick) + f" Fine-tuning: {b.kshot} episodes for the 2k-shot column, {b.kshot} more (from it) "
        "for the 4k-shot column" + (f" (paper: 2k and 4k); the first {b.pairs} pairs only." if quick else "."),
        "Placeto and DOPPLER-SYS on the targets are Table 2's cells: run doppler-table2.", _NOTE])


REPRODUCTIONS.append(Reproduction(
    "doppler-table4", "DOPPLER Table 4: transfer — zero-shot and k-shot fine-tuning on a new graph",
    "doppler", "table4", table4_steps, table4_build, quick_minutes=1.5, reference="Critical path",
    requires=("doppler", "cluster:p100x4"), published=authors_graphs()))
