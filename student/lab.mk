# Installing the course into .venv and starting JupyterLab on it: shared by the course's Makefile and the
# students' release (where this file sits beside the Makefile). The work is install.py's, beside this file, which
# students without make run themselves (`python install.py`, `python install.py --lab`).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SETUP  := $(PYTHON) $(dir $(lastword $(MAKEFILE_LIST)))install.py --venv $(VENV)
# PyTorch's CPU build (the version pinned in install.py), from PyTorch's CPU index where it can be reached;
# TORCH="torch==…" installs another; LIGHT=1 installs no torch (everything but the MNIST lab and ps5).
TORCH  ?=
LIGHT  ?=
# More of pip's extras for the course itself (test,hub in the instructors' repository).
EXTRAS ?=
# Where JupyterLab listens, and whether it opens a browser (OPEN=no on a server without a screen).
HOST   ?= 127.0.0.1
PORT   ?= 8888
OPEN   ?= yes
INSTALL_FLAGS = $(if $(TORCH),--torch "$(TORCH)") $(if $(EXTRAS),--extras $(EXTRAS)) $(if $(LIGHT),--light)

.PHONY: install lab

install: $(VENV)/.installed

# Again when install.py changes: it also writes the environment's Jupyter settings (terminals, no news pop-up).
$(VENV)/.installed: pyproject.toml $(dir $(lastword $(MAKEFILE_LIST)))install.py
	$(SETUP) $(INSTALL_FLAGS)

lab: install
	$(SETUP) $(INSTALL_FLAGS) --lab --host $(HOST) --port $(PORT) $(if $(filter no,$(OPEN)),--no-browser)
