# Entry points (see README): `make demo` runs the main job (train, tournament, report),
# `make test` the whole test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LINKS := $(VENV)/.linked

.PHONY: demo test lint typecheck bench docs clean browser screenshots

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch's CPU build first: an unpinned torch would pull a CUDA build of several GB
	$(PY) -m pip install --quiet torch==2.13.0
	# editable_mode=strict: a tree of links holding exactly the wheel's import names
	# (docs/architecture.md), which type checkers and IDEs follow like the wheel's files
	# constraints.txt: the NumPy and Numba the recipe weight digests were taken on
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,docs,all]' \
		--config-settings editable_mode=strict
	touch $(STAMP) $(LINKS)

# The link tree lists files, not folders: a module added or removed (its folder's time changes)
# links the tree again.
PACKAGE_DIRS := $(shell find dragons_egg_env agents experiments -type d -not -name __pycache__)
$(LINKS): $(STAMP) $(PACKAGE_DIRS)
	$(PY) -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	touch $(LINKS)

demo: $(LINKS)
	$(PY) -m dragons_egg.experiments.cli.main_job

# --max-worker-restart=0: a test that takes its worker process down fails the run at once,
# naming the test (pytest-xdist's --dist loadfile can wait forever on a replaced worker).
test: $(LINKS) browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy -p dragons_egg_env -p dragons_egg.agents -p dragons_egg.experiments
	$(VENV)/bin/pytest -n 2 --dist loadfile --max-worker-restart=0 -q
	$(MAKE) docs

# The browser tests (tests/experiments/web) drive Debian's Chromium through Playwright's Python
# API, never a browser of Playwright's own: installed here where it can be (as root, with
# apt-get), quietly. Without it those tests skip, saying why; under CI=true they fail.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium (apt-get) for the browser tests"; \
		( export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null && \
		  apt-get install -y -qq chromium >/dev/null 2>&1 ) || \
		echo "could not install chromium: the browser tests will skip (fail under CI=true)"; \
	fi

# The screenshots of docs/watching.md (docs/web/*.png), taken by the browser tests.
screenshots: $(LINKS) browser
	DRAGONS_EGG_SCREENSHOTS=docs/web $(VENV)/bin/pytest -q -p no:randomly \
		tests/experiments/web/test_web_browser.py

lint: $(LINKS)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# mypy --strict on the env, agents and experiments packages ([tool.mypy] in pyproject.toml).
typecheck: $(LINKS)
	$(VENV)/bin/mypy -p dragons_egg_env -p dragons_egg.agents -p dragons_egg.experiments

bench: $(LINKS)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,bench]' \
		--config-settings editable_mode=strict
	$(PY) -m dragons_egg.experiments.bench

# The generated tables of docs/ must be fresh (python -m dragons_egg.experiments.tools.docs writes
# them), then the site (mkdocs.yml): every warning, a broken link or cross-reference among
# them, is an error.
docs: $(LINKS)
	$(PY) -m dragons_egg.experiments.tools.docs --check
	$(PY) -m dragons_egg.experiments.cli.leaderboard --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache
