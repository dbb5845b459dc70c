"""The papers' numbers and the joined table (placelab.reproduce.papers), and every declared reproduction."""

import math

import pytest

from placelab.reproduce.core import Cell
from placelab.reproduce.papers import PAPERS_DIR, agreement, join, paper_table, paper_value
from placelab.reproduce.registry import all_reproductions


def test_paper_value_forms():
    assert paper_value(1.5) == (1.5, None, False)
    assert paper_value([122.5, 4.0]) == (122.5, 4.0, False)
    assert paper_value("OOM") == (None, None, True)
    assert paper_value(None) == (None, None, False)


@pytest.mark.parametrize(("ratio", "label"), [(1.0, "agree"), (1.1, "agree"), (0.9, "agree"), (1.2, "close"),
                                              (0.76, "close"), (1.3, "differ"), (None, "n/a"), (math.nan, "n/a")])
def test_agreement_thresholds(ratio, label):
    assert agreement(ratio) == label


def test_agreement_on_oom():
    assert agreement(None, True, True) == "agree"
    assert agreement(1.0, True, False) == "differ"
    assert agreement(1.0, False, True) == "differ"
    assert agreement(None, False, True, measured=False) == "n/a"  # a cell we could not measure


def test_join_ratios_and_normalisation(tiny_reproduction):
    cells = [Cell("tiny / 2 GPUs", "Single", 1.0), Cell("tiny / 2 GPUs", "Round robin", 3.0),
             Cell("tiny / 2 GPUs", "Learned", 5.0, oom=True), Cell("tiny / 2 GPUs", "Extra", 7.0)]
    rows = {r["column"]: r for r in join(cells, "tiny", "t1", reference="Single")}
    assert list(rows) == ["Single", "Round robin", "Learned", "Extra"]  # the paper's order, ours after
    # by hand: 1/2 = 0.5; 3/4 = 0.75; normalised: (3/1) / (4/2) = 1.5
    assert rows["Single"]["ratio"] == 0.5 and rows["Single"]["rel_ratio"] == 1.0
    assert rows["Round robin"]["ratio"] == 0.75 and rows["Round robin"]["paper_std"] == 0.5
    assert rows["Round robin"]["ours_rel"] == 3.0 and rows["Round robin"]["paper_rel"] == 2.0
    assert rows["Round robin"]["rel_ratio"] == 1.5
    assert rows["Learned"]["paper"] == "OOM" and rows["Learned"]["ratio"] is None
    assert rows["Learned"]["note"].startswith("OOM")
    assert rows["Extra"]["paper"] is None and rows["Extra"]["unit"] == ""


def test_normalisation_divides_only_columns_in_the_reference_unit(tiny_reproduction, monkeypatch):
    from placelab.reproduce import papers

    doc = papers._paper("tiny")
    doc["tables"]["t1"]["units"]["Learned"] = "placements"
    doc["tables"]["t1"]["rows"]["tiny / 2 GPUs"]["Learned"] = 100
    rows = {r["column"]: r for r in join([Cell("tiny / 2 GPUs", "Single", 1.0), Cell("tiny / 2 GPUs", "Learned", 50.0)],
                                         "tiny", "t1", reference="Single")}
    assert rows["Learned"]["ratio"] == 0.5 and rows["Learned"]["rel_ratio"] is None
    assert rows["Learned"]["ours_rel"] is None and rows["Learned"]["paper_rel"] is None


def test_join_marks_cells_not_reproduced(tiny_reproduction):
    rows = join([], "tiny", "t1")
    assert [r["note"] for r in rows] == ["not reproduced"] * 3
    assert all(r["ours"] is None and r["ratio"] is None for r in rows)


def test_every_paper_file_cites_each_table():
    files = sorted(PAPERS_DIR.glob("*.json"))
    assert {f.stem for f in files} == {"placeto", "mirhoseini", "doppler", "heldout"}
    for f in files:
        import json

        doc = json.loads(f.read_text())
        assert doc["paper"]
        for name, t in doc["tables"].items():
            # a held-out table (heldout.json) has a goal instead of the paper's rows
            assert t["citation"] and bool(t["rows"]) != bool(t.get("goal")), (f.stem, name)
            for row, cols in t["rows"].items():
                assert set(cols) <= set(t["units"]), (f.stem, name, row)


def test_doppler_numbers_copied_from_the_paper():
    t = paper_table("doppler", "table2")
    assert paper_value(t["rows"]["FFNN"]["DOPPLER-SYS"]) == (47.4, 0.7, False)
    assert paper_value(paper_table("doppler", "table9")["rows"]["LLAMA-BLOCK"]["EnumOpt"]) == (109.6, 4.2, False)
    assert paper_value(paper_table("placeto", "table1")["rows"]["NMT / 4 GPUs"]["Expert"])[2]


def test_every_reproduction_fills_only_cells_of_its_paper_table():
    """With no outputs, every cell a build makes is an error cell of a (row, column) the paper has."""
    reps = all_reproductions()
    assert {"placeto-table1", "placeto-fig5", "placeto-ablations", "mirhoseini-table2", "doppler-table2",
            "doppler-table3", "doppler-table4", "doppler-table8", "doppler-table9"} <= set(reps)
    for rep in reps.values():
        t = paper_table(rep.paper, rep.table)
        cells = rep.build({}, "/nonexistent", True).cells
        assert cells, rep.name
        for c in cells:
            assert c.value is None and c.note, (rep.name, c)
            # fig5 adds ratios the paper states no number for; doppler-table2 sets Table 3's SEL/PLC beside it
            extra = rep.name == "placeto-fig5" or (rep.name == "doppler-table2"
                                                   and c.column in ("DOPPLER-SEL", "DOPPLER-PLC"))
            if t.get("goal"):  # held out: no paper rows, every column's unit declared
                assert c.column in t["units"], (rep.name, c.column)
                continue
            assert extra or c.column in t["rows"][c.row], (rep.name, c.row, c.column)
        assert rep.steps(True) and rep.steps(False)
        assert all(s.argv[0] in ("compare", "train", "experiment", "place", "simulate", "validate")
                   for s in rep.steps(True))
        assert len({s.key for s in rep.steps(False)}) == len(rep.steps(False)), rep.name
        if rep.reference:
            assert any(rep.reference in cols for cols in t["rows"].values())


def test_placeto_reproductions_set_only_the_variant_and_the_reward():
    """Fig. 5 and the §4.3 steps train with Placeto's defaults on every family (the nmt override
    discount=0 was dropped on 2026-11-28); only the ablations' variant and reward are set, and
    those are parameters Placeto's config takes."""
    from placelab.cli_common import parse_params
    from placelab.reproduce import registry
    from policies.rl.registry import make_config

    for quick in (True, False):
        steps = {s.key: list(s.argv) for name in ("placeto-fig5", "placeto-ablations")
                 for s in registry.get(name).steps(quick)}
        params = {k: [a[i + 1] for i, x in enumerate(a) if x == "--param"] for k, a in steps.items()}
        assert params.pop("variant/simple aggregator (nmt test)") == ["variant=simple-aggregator"]
        assert params.pop("variant/simple partitioner (nmt test)") == ["variant=simple-partitioner"]
        assert params.pop("reward/intermediate") == ["reward=intermediate"]
        assert params.pop("reward/terminal") == ["reward=terminal"]
        assert set(params) == {"variant/full", "placeto/nmt", "placeto/ptb", "placeto/cifar10",
                               "rnn/nmt", "rnn/ptb", "rnn/cifar10"}
        assert all(v == [] for v in params.values())
    config = make_config("placeto", parse_params(["variant=simple-aggregator", "reward=terminal"]))
    assert (config.variant, config.reward) == ("simple-aggregator", "terminal")


def test_table1_gives_each_learned_placer_the_papers_placements_and_nmt_32_groups():
    """Full setting: each train step's placement budget is the paper's count for its row and placer
    (Table 1's last two columns), placements sampled as the paper counts them — one per episode
    (docs/budgets.md) —, with no episode limit of ours besides the stopping rule and 900 s; the NMT
    rows' steps, and only those, group into 32 (both placers)."""
    from placelab.cli_common import parse_params
    from placelab.reproduce import registry
    from policies.rl.registry import make_config

    def arg(argv, flag):
        return [argv[i + 1] for i, x in enumerate(argv) if x == flag]

    rows = paper_table("placeto", "table1")["rows"]
    full = [s for s in registry.get("placeto-table1").steps(False) if s.argv[0] == "train"]
    assert len(full) == 12
    for s in full:
        placer, row = s.key.split("/", 1)
        col = "Placeto placements" if placer == "placeto" else "RNN-based placements"
        assert arg(s.argv, "--max-placements") == [str(rows[row][col])], s.key
        assert not arg(s.argv, "--episodes") and arg(s.argv, "--max-seconds") == ["900"], s.key
        assert arg(s.argv, "--param") == (["groups=32"] if row.startswith("NMT") else []), s.key
    assert arg(next(s for s in full if s.key == "placeto/NMT / 2 GPUs").argv, "--max-placements") == ["20400"]
    for s in registry.get("placeto-table1").steps(True):
        assert not arg(s.argv, "--max-placements"), s.key
    for placer in ("placeto", "rnn"):
        assert make_config(placer, parse_params(["groups=32"])).groups == 32


def test_table1_placement_cells_are_placements_sampled_until_the_best(tmp_path):
    """A train step's placement cell is the placements sampled (one per episode) when its best was found,
    not the placements its intermediate rewards simulated; a run stored before they were counted
    leaves the cell empty and says why."""
    from engine.store.runs import RunStore
    from placelab.reproduce.reading import train_cells

    store = RunStore(tmp_path)

    def stored(best: dict) -> dict:
        run = store.create("train", graph_name="g", graph_hash="h", cluster="k80x2", placer="placeto",
                           parameters={}, seed=0)
        run.finish("done", {"best_by_graph": {"g": {"makespan_s": 0.5, "oom": False, **best}}})
        return {"run_id": run.id, "episodes": 40, "placements_evaluated": 2600}

    now = stored({"placements_sampled": 37, "placements_evaluated": 2405})
    runtime, count = train_cells("NMT / 2 GPUs", now, str(tmp_path), "Placeto", "Placeto placements")
    assert runtime.value == 0.5 and count.value == 37.0
    assert count.note.startswith("40 episodes, 2600 placements evaluated; placements sampled until the best")
    old = stored({"placements_evaluated": 2405})
    _, count = train_cells("NMT / 2 GPUs", old, str(tmp_path), "Placeto", "Placeto placements")
    assert count.value is None and "not recorded" in count.note


def test_mirhoseini_table2_trains_the_rnn_placer_on_the_papers_grouping():
    """Mirhoseini §3.3 / §4.1 group each LSTM cell, embedding lookup, attention and softmax step (and each
    Inception branch): every RNN training of mirhoseini-table2, in both settings, groups so
    (grouping=units), not by the RNN placer's default (Placeto's 128 Merge-and-Colocate groups, which
    placeto-table1 keeps). Counted by hand on small versions of the generators: RNNLM of 3 steps, per
    step a lookup, 2 cells and a softmax step, plus the variables' scopes (embedding, 2 layers, softmax)
    and the loss: 4 × 3 + 5 = 17; NMT of length 3, per step 2 lookups, 4 cells, attention and softmax,
    plus 10 variable scopes: 8 × 3 + 10 = 34; the default groups both into 128."""
    from engine.presets import PRESETS
    from engine.workloads.recurrent import nmt, rnnlm
    from placelab.cli_common import parse_params
    from placelab.reproduce import registry
    from policies.rl.core.task import task_for
    from policies.rl.registry import make_config

    for quick in (True, False):
        trains = [s for s in registry.get("mirhoseini-table2").steps(quick) if s.argv[0] == "train"]
        assert len(trains) == 6 and all(s.key.startswith("rnn/") for s in trains)
        for s in trains:
            params = parse_params([s.argv[i + 1] for i, x in enumerate(s.argv) if x == "--param"])
            assert params == {"grouping": "units"}, s.key
    units, default = make_config("rnn", {"grouping": "units"}), make_config("rnn", {})
    c = PRESETS["cpu+k80x2"]()
    small = [(rnnlm(steps=3, units=8, batch=2, vocab=10), 17), (nmt(length=3, units=8, batch=2, vocab=10), 34)]
    for g, groups in small:
        assert task_for(g, c, units).num_groups == groups
        assert task_for(g, c, default).num_groups == 128
    for s in registry.get("placeto-table1").steps(False):
        assert "grouping=units" not in s.argv, s.key


def test_fig5_cells_by_hand_and_the_rows_a_partial_run_left_out():
    from placelab.reproduce import registry

    per = [{"zero_shot_s": 1.0, "optimized_s": 0.8, "random_s": 2.0},
           {"zero_shot_s": 3.0, "optimized_s": 3.0, "random_s": 2.0}]
    out = {"placeto/nmt": {"per_graph": per}, "rnn/ptb": {"error": "boom"}, "rnn/cifar10": {"per_graph": []}}
    cells = {(c.row, c.column): c for c in registry.get("placeto-fig5").build(out, "/nonexistent", False).cells}
    # per-graph ratios 1.25 and 1.0 (median 1.125); 0.5 and 1.5 (median 1.0)
    assert cells[("Placeto / nmt", "Zero-Shot / Optimized")].value == pytest.approx(1.125)
    assert cells[("Placeto / nmt", "Zero-Shot / Random")].value == pytest.approx(1.0)
    assert cells[("Placeto / ptb", "Zero-Shot / Optimized")].note == "error: step did not run"  # left out by --only
    assert cells[("RNN / ptb", "Zero-Shot / Random")].note == "error: boom"
    assert cells[("RNN / cifar10", "Zero-Shot / Random")].note == "error: no test graphs"
