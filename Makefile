# snapledger: the two commands a newcomer needs are `make demo` and `make test`.
SHELL := bash
UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := python3 -m uv
endif
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1

.PHONY: setup test lint format bench demo synth schema clean

setup: .venv/.synced .local/dynamodb-local/DynamoDBLocal.jar

.venv/.synced: pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet "uv==$(UV_VERSION)"
	$(UV) sync --frozen
	@touch $@

.local/dynamodb-local/DynamoDBLocal.jar:
	tools/install-dynamodb-local.sh

test: setup
	$(UV) run --frozen pytest $(PYTEST_ARGS)

lint: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen mypy shared/snapledger functions

format: setup
	$(UV) run --frozen ruff format .
	$(UV) run --frozen ruff check --fix .

bench: setup
	$(UV) run --frozen python -m bench $(BENCH_ARGS)

demo: setup
	$(UV) run --frozen python -m snapledger.local.demo $(DEMO_ARGS)

synth: setup
	$(UV) run --frozen python -m infra.app

schema: setup
	$(UV) run --frozen python -m snapledger.models.schema_export

clean:
	rm -rf .venv .local .bench cdk.out .pytest_cache .mypy_cache .ruff_cache
