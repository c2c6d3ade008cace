# Two commands set everything up on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The CPU build of torch; pinned so pip never pulls a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
# As root, jupyter lab refuses to start without --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: install lab test test-browser chromium bubblewrap bench slides sheet clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

lab: install bubblewrap
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir="$(CURDIR)" --ServerApp.default_url=/lab/tree/notebooks

# `make test` runs every test, the browser tests in tests/browser/ included.
test: install chromium bubblewrap
	$(BIN)/python -m pytest

test-browser: install chromium
	$(BIN)/python -m pytest tests/browser

# Debian's Chromium for the browser tests (never Playwright's own download); they skip if it cannot be had.
chromium:
	@[ -x /usr/bin/chromium ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium; } \
		|| echo "Chromium could not be installed: the browser tests will be skipped"

# Debian's bubblewrap: every notebook the autograder (or `ppedu check`) runs is sandboxed with it;
# without it `ppedu grade` refuses to grade (unless --no-sandbox) and its tests fail.
bubblewrap:
	@[ -x /usr/bin/bwrap ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends bubblewrap; } \
		|| echo "bubblewrap could not be installed: autograding will refuse to run unsandboxed"

bench: install bubblewrap
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_widgets.py
	$(BIN)/python benchmarks/bench_mnist.py
	$(BIN)/python benchmarks/bench_grade.py

# Static reveal.js decks of every chapter that open offline (reveal.js etc. from npm into build/slides).
slides: install
	$(BIN)/python -m ppedu.slides --execute --out build/slides notebooks/*.ipynb

# The formula sheet as one printable page (open it in a browser, print to PDF).
sheet: install
	$(BIN)/python -m ppedu.sheet --out build/formula-sheet.html

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
