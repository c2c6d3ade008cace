# Two commands set everything up on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The CPU build of torch; pinned so pip never pulls a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
# As root, jupyter lab refuses to start without --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: install lab test test-browser chromium bench slides clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

lab: install
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" --ServerApp.default_url=/lab/tree/notebooks

# `make test` runs every test, the browser tests in tests/browser/ included.
test: install chromium
	$(BIN)/python -m pytest

test-browser: install chromium
	$(BIN)/python -m pytest tests/browser

# Debian's Chromium for the browser tests (never Playwright's own download); they skip if it cannot be had.
chromium:
	@[ -x /usr/bin/chromium ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium; } \
		|| echo "Chromium could not be installed: the browser tests will be skipped"

bench: install
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_widgets.py
	$(BIN)/python benchmarks/bench_mnist.py
	$(BIN)/python benchmarks/bench_grade.py
	$(BIN)/python benchmarks/bench_search.py

# Static reveal.js decks of every chapter that open offline (reveal.js etc. from npm into build/slides).
slides: install
	$(BIN)/python -m ppedu.slides --execute --out build/slides notebooks/*.ipynb

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
