# placelab — developer entry points. Everything runs from the virtualenv at .venv/.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
REQ_STAMP := $(VENV)/.requirements.sha256
PKG_STAMP := $(VENV)/.package.sha256
KERNEL_STAMP := $(VENV)/.kernels.sha256
# numba caches a kernel keyed on its own file only, not on the modules it calls: when any of these files changes,
# setup deletes every cached kernel before compiling them again (a stale one would load and run the old code)
KERNEL_SOURCES := engine/sim/_layout.py engine/sim/_core.py engine/sim/_kernel_*.py engine/graph/_kernels.py \
  engine/sim/_plankernels.py engine/sim/estimator.py policies/_listsched_kernels.py policies/_listsched_heaps.py \
  policies/_listsched_room.py policies/_listsched_events.py \
  policies/rl/doppler/_assign_kernel.py
CHROMIUM := /usr/bin/chromium

.PHONY: help setup browser-deps app test test-cluster fuzz lint bench clean bundled-runs docs-results readme-picture

help:
	@echo "make app    - set up .venv and serve the app on http://localhost:$${PORT:-8501}"
	@echo "make test   - set up .venv, lint, and run the whole test suite (what CI runs)"
	@echo "make test-cluster - the tests that start a two-node Ray cluster on loopback (CI runs them too)"
	@echo "make fuzz   - the property tests with new random examples, 10 times as many (FUZZ_ROUNDS=N repeats)"
	@echo "make lint   - ruff check and the import layers (import-linter)"
	@echo "make bench  - run the benchmarks (each prints its figures)"
	@echo "make setup  - create/update .venv (quick when nothing changed)"
	@echo "make clean  - remove caches and build output (keeps .venv and runs/)"
	@echo "make bundled-runs - regenerate the example runs shipped in runs/"
	@echo "make docs-results - regenerate docs/results.md from the runs in runs/"
	@echo "make readme-picture - retake docs/img/place-page.png, the README's screenshot (needs chromium)"

# Idempotent: requirements are reinstalled only when requirements.txt changed since the
# last successful install, the editable package only when pyproject.toml or the set of
# top-level packages changed (an editable install maps the packages it found), and the numba
# kernels are compiled into their on-disk cache only when their sources or the requirements changed.
# Byte code: pip installs with --no-compile and compileall then compiles site-packages on every core (pip's own
# compile is serial). Python would compile on first use instead, but where PYTHONDONTWRITEBYTECODE is set (CI's
# machines, the development VM) it never writes the result, and every process compiled tensorflow, torch and ray
# again (docs/lab/2026-11-27-byte-code-and-kernel-versions.md). Files written for newer Pythons (torch's
# py312_intrinsics.py) do not compile; pip skips them the same way, hence -qq and || true. The project's own
# packages are compiled on every setup (compileall redoes only changed files).
setup:
	@if [ ! -x $(PY) ]; then \
	  echo "creating $(VENV) with $(PYTHON)"; \
	  $(PYTHON) -m venv $(VENV); \
	fi
	@want=$$(sha256sum requirements.txt | cut -d' ' -f1); \
	if [ "$$(cat $(REQ_STAMP) 2>/dev/null)" != "$$want" ]; then \
	  echo "installing requirements.txt into $(VENV)"; \
	  $(PY) -m pip install --no-compile -r requirements.txt; \
	  echo "byte-compiling the installed packages"; \
	  $(PY) -m compileall -qq -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true; \
	  echo "$$want" > $(REQ_STAMP); \
	fi
	@want=$$({ cat pyproject.toml; echo $(wildcard */__init__.py); } | sha256sum | cut -d' ' -f1); \
	if [ "$$(cat $(PKG_STAMP) 2>/dev/null)" != "$$want" ]; then \
	  echo "installing placelab (editable) into $(VENV)"; \
	  $(PY) -m pip install --quiet --no-deps -e .; \
	  echo "$$want" > $(PKG_STAMP); \
	fi
	@want=$$(cat $(KERNEL_SOURCES) $(REQ_STAMP) | sha256sum | cut -d' ' -f1); \
	if [ "$$(cat $(KERNEL_STAMP) 2>/dev/null)" != "$$want" ]; then \
	  echo "compiling the numba kernels into their on-disk cache (placelab/warmup.py)"; \
	  find engine policies -name '*.nbi' -delete -o -name '*.nbc' -delete; \
	  $(PY) -m placelab.warmup; \
	  echo "$$want" > $(KERNEL_STAMP); \
	fi
	@$(PY) -m compileall -q -j 0 dashboard engine policies placelab

# Chromium drives the browser end-to-end tests (marker `e2e`). When it cannot be
# installed, those tests skip with a reason in pytest's summary; they never pass silently.
browser-deps:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
	  echo "installing chromium (for the browser tests) via apt-get"; \
	  if ! { $$SUDO apt-get update -qq && \
	         DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	           --no-install-recommends chromium fonts-liberation; }; then \
	    echo "WARNING: could not install chromium; the browser (e2e) tests will be skipped." >&2; \
	  fi; \
	fi

app: setup
	$(VENV)/bin/streamlit run dashboard/app.py --server.headless true \
	  --server.port $${PORT:-8501} --server.address $${ADDRESS:-127.0.0.1} \
	  --browser.gatherUsageStats false

# --durations: the 25 slowest tests, so a slow one shows in every run (CI's included). The tests that start a
# real two-node Ray cluster (marker `cluster`, about 2 minutes) run apart: make test-cluster, which CI runs too.
# Property tests run derandomized here (profile `ci`, tests/hypothesis_profiles.py): the same commit gives the same
# result on every run. `make fuzz` is where they explore: new random examples on every round.
test: lint browser-deps
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -n 2 -q --durations=25 -m "not cluster"

FUZZ_ROUNDS ?= 1
fuzz: setup
	for round in $$(seq $(FUZZ_ROUNDS)); do \
	  HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -n 2 -q -m "hypothesis and not cluster and not e2e"; \
	done

test-cluster: setup
	$(PY) -m pytest -q --durations=5 -m cluster

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

bench: setup
	$(PY) benchmarks/run_all.py

# docs/results.md: each reproduction's current table, from the stored runs in runs/, then the hand-written
# docs/results-findings.md (CONTRIBUTING.md, "Documentation")
docs-results: setup
	$(PY) -m placelab.reproduce.results_doc --runs-dir runs -o docs/results.md

# The README's screenshot: the Place page in headless Chromium (docs/img/readme_picture.py says how)
readme-picture: setup browser-deps
	$(PY) docs/img/readme_picture.py

clean:
	find . -path ./$(VENV) -prune -o -type d \
	  \( -name __pycache__ -o -name .pytest_cache -o -name .ruff_cache -o -name .hypothesis \
	     -o -name '*.egg-info' \) -print0 | xargs -0 rm -rf
	find . -path ./$(VENV) -prune -o -type f \( -name '*.nbi' -o -name '*.nbc' \) -print0 \
	  | xargs -0 rm -f
	rm -rf build dist tests/artifacts $(KERNEL_STAMP)

# The example runs shipped in runs/ so every page of the app has content on first start:
# DOPPLER's CHAINMM and FFNN (App. D) on 4 x P100 and a Placeto cifar10-family graph on 2 x K80,
# each with a set of baseline placers; a validation of the simulator on this machine's cores (the
# Fidelity page); and the --quick reproductions of the papers' tables.
BUNDLED_PLACERS := single-device,round-robin,metis,scotch,critical-path,heft,m-etf,local-search
# the papers' tables and figures in their --quick setting, for the Papers page (only their own runs are kept)
BUNDLED_REPRODUCTIONS := mirhoseini-table2 placeto-table1 placeto-fig5 placeto-ablations doppler-table2 doppler-table3 doppler-table4 doppler-table8 doppler-table9 doppler-g1 heldout-learning
# Full-setting reproductions in runs/ (an hour or more of compute each) are kept; everything else is made again.
bundled-runs: setup
	$(PY) -c "import json, pathlib, shutil; [shutil.rmtree(p) for p in pathlib.Path('runs').iterdir() if p.is_dir() and json.loads((p / 'run.json').read_text()).get('parameters', {}).get('setting') != 'full']"
	$(VENV)/bin/placelab compare gen:chainmm -c p100x4 --placers $(BUNDLED_PLACERS) --runs-dir runs
	$(VENV)/bin/placelab compare gen:ffnn -c p100x4 --placers $(BUNDLED_PLACERS) --runs-dir runs
	$(VENV)/bin/placelab compare "gen:family-cifar10?index=0" -c k80x2 --placers single-device,metis,m-etf,local-search --runs-dir runs
	$(VENV)/bin/placelab train --placer placeto -g "gen:family-cifar10?index=0" -c k80x2 --episodes 400 --save \
	  --name "Placeto on cifar10 #0" --runs-dir runs --threads 1
	$(VENV)/bin/placelab train --placer rnn -g "gen:family-cifar10?index=0" -c k80x2 --episodes 4000 --param hidden=128 --save \
	  --name "RNN placer on cifar10 #0" --runs-dir runs --threads 1
	$(VENV)/bin/placelab experiment --family cifar10 -c k80x2 --episodes 400 --optimized-episodes 50 \
	  --runs-dir runs --threads 1
	$(VENV)/bin/placelab validate gen:chainmm -c local --placements 12 --repeats 3 --runs-dir runs
	$(PY) -c "from engine.store.runs import RunStore; s = RunStore('runs'); s.rename(s.list(kind='validate')[0].id, 'Validation: chainmm on this machine')"
	for r in $(BUNDLED_REPRODUCTIONS); do \
	  $(VENV)/bin/placelab reproduce $$r --quick --no-keep-step-runs --runs-dir runs; done
