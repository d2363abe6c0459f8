# Two commands on a fresh machine: `make bench` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install bench test lint typecheck pytest clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

install: $(STAMP)

# The offline run checks the pipeline; the recorded real-model run beside it gives the first verdict to read.
REAL_MODEL_RUN := docs/runs/qwen2.5-coder-1.5b-cpu/results.jsonl

bench: $(STAMP)
	$(BIN)/erp-ai bench
	$(BIN)/erp-ai report $(REAL_MODEL_RUN) reports/latest --out reports/with-real-model

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy shared planner_mode toolcalling_mode benchmarks

# The type check runs beside the tests, which leave a core idle while they wait on servers and subprocesses.
test: $(STAMP) lint
	bash scripts/ensure_postgres.sh
	$(MAKE) --no-print-directory -j2 typecheck pytest

# One worker per core; a test module stays on one worker, so its module-wide fixtures are built once.
# pytest-benchmark cannot time under workers, so it is off (without a warning): its fixture runs once.
pytest: $(STAMP)
	$(BIN)/pytest -n auto --dist loadscope --benchmark-disable

clean:
	rm -rf $(VENV) .erp-ai reports .pytest_cache .mypy_cache .ruff_cache
