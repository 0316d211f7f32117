# segsim — one entry point per job. `make help` lists them.

CARGO ?= cargo
SIM = $(CARGO) run --release -q -p sim --

.PHONY: help test lint fmt check sweep determinism soak crash-os ci kv

help:
	@echo "make test         - the whole test suite (unit, property, integration, replayed regressions)"
	@echo "make lint         - rustfmt --check and clippy -D warnings"
	@echo "make fmt          - format the workspace"
	@echo "make sweep        - the simulator over SEEDS (default 0..500) on JOBS workers (default 2)"
	@echo "make determinism  - every seed of DSEEDS (default 0..100) run twice, traces compared"
	@echo "make soak         - the simulator for TIME seconds (default 600) from a random base seed"
	@echo "make crash-os     - the engine on the real disk, SIGKILLed CYCLES times (default 200), checked each time"
	@echo "make ci           - what .ci/run runs: lint, test, sweep, determinism, crash-os"
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

TIME ?= 600
soak:
	$(SIM) --time $(TIME) --jobs $(JOBS)

CYCLES ?= 200
KILL_SEED ?= 1
crash-os:
	$(CARGO) run --release -q -p engine --example crash_os -- --cycles $(CYCLES) --seed $(KILL_SEED)

ci: lint test sweep determinism crash-os

DIR ?= /tmp/segsim-kv
kv:
	$(CARGO) run -q -p engine --example kv -- --dir $(DIR)
