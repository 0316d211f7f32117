# segsim — one entry point per job. `make help` lists them.

CARGO ?= cargo

.PHONY: help test lint fmt check ci kv

help:
	@echo "make test   - the whole test suite (unit, property, integration)"
	@echo "make lint   - rustfmt --check and clippy -D warnings"
	@echo "make fmt    - format the workspace"
	@echo "make check  - lint + test (what CI runs)"
	@echo "make kv DIR=/tmp/kvdemo - the engine's interactive shell on a real directory"

test:
	$(CARGO) test --workspace --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

check: lint test

ci: check

DIR ?= /tmp/segsim-kv
kv:
	$(CARGO) run -q -p engine --example kv -- --dir $(DIR)
