# Installing the course into .venv and starting JupyterLab on it: shared by the course's Makefile and the
# students' release (where this file sits beside the Makefile).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The CPU build of torch; pinned so pip never pulls a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
# pip's extras for the course itself ([test] in the instructors' repository).
EXTRAS ?=
# Where JupyterLab listens, and whether it opens a browser (OPEN=no on a server without a screen).
HOST   ?= 127.0.0.1
PORT   ?= 8888
OPEN   ?= yes
# As root, jupyter lab refuses to start without --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: install lab

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e ".$(EXTRAS)"
	@# jupyterlab-rise's slide page cannot load the widget manager (it lacks @jupyterlab/console), so its slides show
	@# dead widgets; lecture mode is jupyterlab-slideshow's deck instead. Remove RISE from a .venv made before.
	$(BIN)/python -m pip uninstall --quiet --yes jupyterlab-rise 2>/dev/null || true
	touch $@

lab: install
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.ip=$(HOST) --ServerApp.port=$(PORT) \
		--ServerApp.open_browser=$(if $(filter no,$(OPEN)),False,True) \
		--ServerApp.root_dir="$(CURDIR)" --ServerApp.default_url=/lab/tree/notebooks
