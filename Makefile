# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv run test lint typecheck contracts pytest clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: venv
	$(BIN)/tiny-agent-gui

lint: venv
	$(BIN)/ruff check tiny_agent_core tiny_agent_gui tests benchmarks
	$(BIN)/ruff format --check tiny_agent_core tiny_agent_gui tests benchmarks

typecheck: venv
	$(BIN)/mypy tiny_agent_core

contracts: venv
	$(BIN)/lint-imports

pytest: venv
	$(BIN)/python -m pytest -q

test: lint typecheck contracts pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
