# The README's two commands (demo, test), and the quick tier for every change (check: lint and the
# tests not marked slow: those that ask for no Spark fixture). Each creates .venv when needed and installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint clean

demo: $(STAMP)
	$(BIN)/aether-mcp demo

# Two pytest-xdist workers, each with its own Spark workers; a test waits for its JVM or its Python
# workers' sockets often enough that the other keeps the second core busy (see docs/development.md).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal

check: lint
	$(BIN)/python -m pytest -m "not slow" -q

lint: $(STAMP)
	$(BIN)/ruff check .

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "aether-mcp needs Python 3.11 or newer: run make with PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info
