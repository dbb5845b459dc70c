"""`python -m placelab.warmup` (run by `make setup`): every compiled kernel group has its job, and a run on a
warm cache finishes and says so."""

import ast
import json
import subprocess
import sys
from pathlib import Path

from engine.sim.simulator import KERNELS
from placelab import warmup
from policies.registry import PLACERS

REPO = Path(__file__).resolve().parents[2]


def test_a_job_for_every_simulation_mode_and_the_list_schedulers():
    assert set(warmup.JOBS) == set(KERNELS) | {"list-scheduling", "dag", "doppler"}
    assert set(warmup.LIST_SCHEDULERS) <= set(PLACERS)


def test_the_list_scheduling_job_covers_every_placer_of_the_kernels_module():
    """Each placer registered in policies/list_scheduling.py (the module that calls the list-scheduling kernels)
    is one the job compiles."""
    tree = ast.parse((REPO / "policies" / "list_scheduling.py").read_text())
    registered = {d.args[0].value for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef)
                  for d in node.decorator_list
                  if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "placer"}
    assert registered and registered <= set(warmup.LIST_SCHEDULERS)


def test_the_dag_job_uses_every_kernel_of_the_dag_module():
    """In a fresh process, after the job alone, every compiled function of engine/graph/_kernels.py has a version."""
    script = ("import json; from numba.core.registry import CPUDispatcher; from engine.graph import _kernels as k; "
              "from placelab import warmup; warmup.compile_job('dag'); "
              "print(json.dumps({n: len(f.signatures) for n, f in vars(k).items() if isinstance(f, CPUDispatcher)}))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    versions = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(versions) >= 6 and all(versions.values()), versions


def test_the_tiny_job_compiles_and_runs_a_mode():
    assert warmup.compile_job("default") >= 0.0


def test_the_module_runs_on_a_warm_cache():
    out = subprocess.run([sys.executable, "-m", "placelab.warmup"], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("numba kernels ready in ")
