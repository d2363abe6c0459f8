# Two commands on a fresh machine: `make bench` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install bench test lint typecheck clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

install: $(STAMP)

bench: $(STAMP)
	$(BIN)/erp-ai bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy shared planner_mode toolcalling_mode benchmarks

test: $(STAMP) lint typecheck
	bash scripts/ensure_postgres.sh
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .erp-ai reports .pytest_cache .mypy_cache .ruff_cache
