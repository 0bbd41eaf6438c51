# One command each for a fresh machine with only Python 3.11+ and pip:
#   make demo   -> creates .venv, installs evalatlas, ingests examples/ and prints the summary
#   make test   -> creates .venv, installs evalatlas with test deps, runs ruff, mypy and the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DB ?= examples/demo.duckdb

.PHONY: demo test lint bench install clean schemas

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/activate
	$(BIN)/python -m pip install -q -e ".[dev]"

demo: install
	rm -f $(DEMO_DB)
	$(BIN)/evalatlas --db $(DEMO_DB) ingest examples/
	$(BIN)/evalatlas --db $(DEMO_DB) summary

test: lint
	$(BIN)/python -m pytest

# mypy reads [tool.mypy] in pyproject.toml (strict for records/, metrics/, stats/ and
# the public API); a warm cache (.mypy_cache) makes a re-run take a second or two.
lint: install
	$(BIN)/ruff check src tests benchmarks examples
	@echo "mypy: type-checking src/evalatlas ([tool.mypy] in pyproject.toml)"
	@$(BIN)/mypy || { echo "make: mypy found the type errors listed above (file:line: error ... [code]); fix them, or see docs/DEVELOPING.md 'Type checking'"; exit 1; }

schemas: install
	$(BIN)/evalatlas schema --write schemas/

bench: install
	$(BIN)/python benchmarks/bench_ingest.py
	$(BIN)/python benchmarks/bench_outcomes.py
	$(BIN)/python benchmarks/bench_speedup.py
	$(BIN)/python benchmarks/bench_codequality.py
	$(BIN)/python benchmarks/bench_judge.py
	$(BIN)/python benchmarks/bench_investigate.py
	$(BIN)/python benchmarks/bench_report.py

clean:
	rm -rf $(VENV) $(DEMO_DB) .pytest_cache
