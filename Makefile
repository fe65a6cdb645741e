# Entry points (see README): `make demo` runs the main job (train, tournament, report),
# `make test` the whole test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch's CPU build first: an unpinned torch would pull a CUDA build of several GB
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,docs,all]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m dragons_egg.experiments.main_job

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -n 2 --dist loadfile -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) -m dragons_egg.experiments.bench

docs: $(STAMP)
	$(PY) -m dragons_egg.experiments.docs

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
