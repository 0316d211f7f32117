# segsim — one entry point per job. `make help` lists them.

CARGO ?= cargo
SIM = $(CARGO) run --release -q -p sim --

.PHONY: help test lint fmt check sweep determinism ci kv

help:
	@echo "make test         - the whole test suite (unit, property, integration, replayed regressions)"
	@echo "make lint         - rustfmt --check and clippy -D warnings"
	@echo "make fmt          - format the workspace"
	@echo "make sweep        - the simulator over SEEDS (default 0..500) on JOBS workers (default 2)"
	@echo "make determinism  - every seed of DSEEDS (default 0..100) run twice, traces compared"
	@echo "make ci           - what .ci/run runs: lint, test, sweep, determinism"
	@echo "make kv DIR=/tmp/kvdemo - the engine's interactive shell on a real directory"

test:
	$(CARGO) test --workspace --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

check: lint test

SEEDS ?= 0..500
JOBS ?= 2
sweep:
	$(SIM) --seeds $(SEEDS) --jobs $(JOBS)

DSEEDS ?= 0..100
determinism:
	$(SIM) --seeds $(DSEEDS) --jobs $(JOBS) --check-determinism

ci: lint test sweep determinism

DIR ?= /tmp/segsim-kv
kv:
	$(CARGO) run -q -p engine --example kv -- --dir $(DIR)
