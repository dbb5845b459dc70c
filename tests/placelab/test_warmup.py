"""`python -m placelab.warmup` (run by `make setup`): every compiled kernel group has its job, and a run on a
warm cache finishes and says so."""

import ast
import subprocess
import sys
from pathlib import Path

from engine.simulator import KERNELS
from placelab import warmup
from policies.base import PLACERS

REPO = Path(__file__).resolve().parents[2]


def test_a_job_for_every_simulation_mode_and_the_list_schedulers():
    assert set(warmup.JOBS) == set(KERNELS) | {"list-scheduling"}
    assert set(warmup.LIST_SCHEDULERS) <= set(PLACERS)


def test_the_list_scheduling_job_covers_every_placer_of_the_kernels_module():
    """Each placer registered in policies/list_scheduling.py (the module that calls the list-scheduling kernels)
    is one the job compiles."""
    tree = ast.parse((REPO / "policies" / "list_scheduling.py").read_text())
    registered = {d.args[0].value for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef)
                  for d in node.decorator_list
                  if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "register"}
    assert registered and registered <= set(warmup.LIST_SCHEDULERS)


def test_the_tiny_job_compiles_and_runs_a_mode():
    assert warmup.compile_job("default") >= 0.0


def test_the_module_runs_on_a_warm_cache():
    out = subprocess.run([sys.executable, "-m", "placelab.warmup"], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("numba kernels ready in ")
