"""``docs/guide/adding-a-baseline.md`` followed as written: its placer file listed in the registry (for this test
only), every ``placelab`` command of its "Where it shows" block with the exit codes and messages the guide states,
then the tests of its "Tests to add" file. A guide whose code or commands stop working fails here."""

from __future__ import annotations

import re
import shlex
import types
from pathlib import Path

from engine._discover import cards_of
from policies import registry
from policies.base import PlacerInfo
from tests.cli.cli_run import run_cli

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "adding-a-baseline.md"


def section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n")[1].split("\n## ")[0]


def test_the_baseline_guide_runs_as_written(tmp_path, monkeypatch, capsys):
    text = GUIDE.read_text(encoding="utf-8")
    placer = re.findall(r"```python\n(.*?)```", section(text, "A worked example"), flags=re.S)[0]
    tests = re.findall(r"```python\n(.*?)```", section(text, "Tests to add"), flags=re.S)[0]
    shows = section(text, "Where it shows")
    commands = [line.split("#")[0].strip() for line in re.findall(r"```\n(.*?)```", shows, flags=re.S)[0].splitlines()]
    module = types.ModuleType("policies.least_loaded")
    exec(compile(placer, "policies/least_loaded.py", "exec"), module.__dict__)
    assert "from policies import enumerative, expert, least_loaded," in section(text, "How placelab finds it")
    for name, card in cards_of([module], PlacerInfo, "placers").items():  # its line in MODULES
        monkeypatch.setitem(registry.PLACERS, name, card)  # taken out of the registry afterwards
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "runs"))

    results = [run_cli(capsys, *shlex.split(c)[1:]) for c in commands]
    assert [code for code, _, _ in results] == [0, 0, 0, 2, 0], results
    assert re.search(r"^least-loaded\s+each op \(colocation group\) on the device with the least compute so far$",
                     results[0][1], flags=re.M)
    refused, misspelt = re.findall(r"prints `(error: [^`]+)`|\(`(placer 'least-loaded' has no[^`]+)`\)", shows)
    assert results[3][2].strip() == refused[0]
    code, _, err = run_cli(capsys, *shlex.split(commands[1])[1:], "--param", "device=2")
    assert code == 2 and err.strip() == f"error: {misspelt[1]}".replace("\n", " ")
    assert re.search(r"^least-loaded\s+\d", results[4][1], flags=re.M)

    namespace: dict = {"__name__": "test_least_loaded"}
    exec(compile(tests, "tests/policies/test_least_loaded.py", "exec"), namespace)
    for name in [n for n in namespace if n.startswith("test_")]:
        namespace[name]()
