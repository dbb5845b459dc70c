"""docs/results.md from the stored runs (placelab.reproduce.results_doc): the numbers are the runs' numbers.

The fixture is a copy of two bundled reproduction runs in a temporary run store; every file the
tests write is under ``tmp_path`` (never ``runs/`` or ``docs/``). The expected values are read
independently, with the csv module, from each run's ``table.csv``.
"""

import csv
import json
import math
import re
import shutil
from pathlib import Path

import pytest

from placelab.reproduce.results_doc import FINDINGS_HEADING, findings_sections, main, results_markdown, write_results

DOCS = Path(__file__).resolve().parents[2] / "docs"
BUNDLED = Path(__file__).resolve().parents[2] / "runs"
DOPPLER = "20261127-152051-reproduce-doppler-table2-7553"
ABLATIONS = "20261128-081435-reproduce-placeto-ablations-ac9d"
NUMBER = re.compile(r"-?[0-9][0-9,]*\.?[0-9]*(?:e[+-]?[0-9]+)?")


@pytest.fixture
def store(tmp_path):
    """A run store holding copies of the bundled doppler-table2 and placeto-ablations runs (quick)."""
    root = tmp_path / "runs"
    root.mkdir()
    for rid in (DOPPLER, ABLATIONS):
        shutil.copytree(BUNDLED / rid, root / rid)
    return root


def _csv_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "table.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _md_tables(text: str) -> dict[str, dict[tuple[str, str], dict[str, str]]]:
    """Run id → (row, column) → the cells of its line, parsed back from the Markdown."""
    out: dict[str, dict[tuple[str, str], dict[str, str]]] = {}
    run_id, header = None, None
    for line in text.splitlines():
        m = re.match(r"### .* run `([^`]+)`", line)
        if m:
            run_id, header = m.group(1), None
            continue
        if run_id is None or not line.startswith("| "):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells, strict=True))
        out.setdefault(run_id, {})[(row["row"], row["column"])] = row
    return out


def _parts(cell: str) -> list[float]:
    """The numbers in a cell ("275.6 ± 3.79" → [275.6, 3.79]; "20,400" → [20400])."""
    return [float(x.replace(",", "")) for x in NUMBER.findall(cell)]


def _close(shown: float, stored: str, rel: float) -> bool:
    return math.isclose(shown, float(stored), rel_tol=rel, abs_tol=1e-12)


def test_every_stored_cell_is_in_the_document(store, tmp_path):
    out = tmp_path / "results.md"
    text = write_results(store, out)
    assert out.read_text(encoding="utf-8") == text
    tables = _md_tables(text)
    for rid in (DOPPLER, ABLATIONS):
        rows = _csv_rows(store / rid)
        shown = tables[rid]
        assert len(shown) == len(rows)  # one line per stored cell
        for r in rows:
            cell = shown[(r["row"], r["column"])]
            ours = _parts(cell["ours"])
            if r["ours"]:  # 4 significant digits, the std 3
                assert _close(ours[0], r["ours"], 5e-4), (rid, r["row"], r["column"], cell["ours"], r["ours"])
                if r["ours_std"]:
                    assert _close(ours[1], r["ours_std"], 5e-3)
            else:
                assert ours == []
            if r["paper"] == "OOM":
                assert cell["paper"] == "OOM"
            elif r["paper"]:
                assert _close(_parts(cell["paper"])[0], r["paper"], 5e-4)
            if r["ratio"]:
                assert _close(_parts(cell["ours / paper"])[0], r["ratio"], 5e-3)
            assert cell["note"] == " ".join(r["note"].split())


def test_hand_read_cells_and_agreement(store):
    """Values read by hand from the bundled doppler-table2 run's table.csv (critical-path 275.56 ± 3.79 ms,
    GDP 265.01 ± 1.47 ms, DOPPLER-SIM 264.95 ± 6.46 ms; paper 230.4 ± 4.3, 198 ± 3.3 and 122.5 ± 4)."""
    text = results_markdown(store)
    shown = _md_tables(text)[DOPPLER]
    cp, sim = shown[("CHAINMM", "Critical path")], shown[("CHAINMM", "DOPPLER-SIM")]
    assert (cp["ours"], cp["paper"], cp["ours / paper"]) == ("275.6 ± 3.79", "230.4 ± 4.3", "1.2")
    assert (sim["ours"], sim["paper"]) == ("265 ± 6.46", "122.5 ± 4")
    # the reference column normalised by itself: 1, so it agrees; DOPPLER-SIM: (264.95/275.56) / (122.5/230.4)
    assert (cp["normalised"], cp["agreement"]) == ("1", "agree")
    assert (sim["normalised"], sim["agreement"]) == ("1.81", "differ")
    gdp = shown[("CHAINMM", "GDP")]  # (265.01/275.56) / (198/230.4) = 1.119: within the 'close' band
    assert (gdp["ours"], gdp["paper"], gdp["normalised"], gdp["agreement"]) == ("265 ± 1.47", "198 ± 3.3", "1.12",
                                                                                "close")
    # the runner counted the cells within 10 % when it stored each run: the labels must give the same count
    for rid in (DOPPLER, ABLATIONS):
        metrics = json.loads((store / rid / "run.json").read_text(encoding="utf-8"))["metrics"]
        labels = [c["agreement"] for c in _md_tables(text)[rid].values()]
        assert labels.count("agree") == metrics["cells_within_10pct"]
        assert len(labels) - labels.count("n/a") == metrics["cells_compared"]
        assert f"{metrics['cells_within_10pct']} of {metrics['cells_compared']} compared cells" in text


def test_reproductions_without_runs_say_so(store):
    text = results_markdown(store)
    section = text.split("## placeto-table1:")[1].split("\n## ")[0]
    assert "No stored run of this reproduction" in section
    assert f"placelab reproduce placeto-table1 --quick --runs-dir {store}" in section
    assert "| doppler-table2 | DOPPLER, Table 2" in text and f"quick: `{DOPPLER}`" in text
    assert "| placeto-table1 |" in text and text.split("| placeto-table1 |")[1].split("\n")[0].endswith("none |")


def test_the_newest_run_of_a_setting_is_shown(store):
    older = store / "20261101-000000-reproduce-doppler-table2-0000"
    shutil.copytree(store / DOPPLER, older)
    meta = json.loads((older / "run.json").read_text(encoding="utf-8"))
    meta.update(id=older.name, created="2026-11-01T00:00:00+00:00")
    (older / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    text = results_markdown(store)
    assert f"run `{DOPPLER}`" in text and older.name not in text


def test_a_resumed_run_names_the_code_it_went_on_with(store):
    """A run stopped and resumed twice (``placelab reproduce --resume``): its line names both later code versions
    and says its wall time is that of the last part."""
    path = store / DOPPLER / "run.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["parameters"]["resumed"] = [{"at": "2026-11-27T12:11:03+00:00", "code_version": {"git": "73fa769"}},
                                     {"at": "2026-11-27T12:24:11+00:00", "code_version": {"git": "7baeabf"}}]
    meta["metrics"]["wall_s"] = 3162.156
    path.write_text(json.dumps(meta), encoding="utf-8")
    line = next(x for x in results_markdown(store).splitlines() if x.startswith("Created ") and "7baeabf" in x)
    assert f"on code version `{meta['code_version']['git']}`, resumed 2 times (on `73fa769`, `7baeabf`), " \
           "52.7 min in its last part;" in line


FINDINGS = """# Findings

Written by hand.

## A baseline

Measured [here](lab/note.md).

```
## not a heading: inside code
```

### Its detail

## A rule judged again

Text.
"""


def test_hand_written_findings_beside_the_output_survive_regeneration(store, tmp_path):
    out = tmp_path / "results.md"
    assert f"## {FINDINGS_HEADING}" not in write_results(store, out)  # no findings file: no such part
    (tmp_path / "results-findings.md").write_text(FINDINGS, encoding="utf-8")
    for _ in range(2):  # written again: the findings are still there, once
        text = write_results(store, out)
        tail = text.split(f"\n## {FINDINGS_HEADING}\n")[1]
        assert text.count(f"## {FINDINGS_HEADING}") == 1 and "Written by hand." not in text
        # every heading one level down, the title and preamble dropped, code left as it is
        assert [x for x in tail.splitlines() if x.startswith("#")] == [
            "### A baseline", "## not a heading: inside code", "#### Its detail", "### A rule judged again"]
        assert tail.endswith("### A rule judged again\n\nText.\n") and "Measured [here](lab/note.md)." in tail
    assert text.split(f"\n## {FINDINGS_HEADING}")[0] == results_markdown(store)  # the tables are unchanged


def test_the_documents_findings_are_those_of_its_findings_file():
    """docs/results.md was regenerated after docs/results-findings.md last changed (`make docs-results`)."""
    sections = findings_sections((DOCS / "results-findings.md").read_text(encoding="utf-8"))
    assert sections and sections[0].startswith("### ")
    assert (DOCS / "results.md").read_text(encoding="utf-8").endswith("\n".join(sections).rstrip("\n") + "\n")


def test_command_writes_the_file(store, tmp_path, capsys):
    out = tmp_path / "doc.md"
    main(["--runs-dir", str(store), "-o", str(out)])
    assert out.read_text(encoding="utf-8").startswith("# Reproduction results\n")
    assert capsys.readouterr().err == f"wrote {out}\n"


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--runs-dir", "{tmp}/missing"], "the folder does not exist"),
    (["--runs-dir", "{tmp}/file.txt"], "it is not a folder"),
    (["-o", "{tmp}/no/such/folder/results.md"], "does not exist"),
    (["-o", "{tmp}"], "it is a directory"),
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
])
def test_bad_input_is_one_line_and_exit_2(store, tmp_path, capsys, argv, fragment):
    (tmp_path / "file.txt").write_text("x")
    args = {"--runs-dir": str(store), "-o": str(tmp_path / "out.md")}
    given = [a.format(tmp=tmp_path) for a in argv]
    for i in range(0, len(given) - 1, 2):
        args[given[i]] = given[i + 1]
    full = [x for kv in args.items() for x in kv] + ([given[-1]] if len(given) % 2 else [])
    with pytest.raises(SystemExit) as exc:
        main(full)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and fragment in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out.md").exists()
