# segsim — one entry point per job. `make help` lists them.

CARGO ?= cargo
SIM = $(CARGO) run --release -q -p sim --

.PHONY: quickstart quickstart-stdfs fjall-raw-probe open-findings bench-compare bench-compare-smoke help test lint fmt check sweep determinism soak soak-deep crash-os crash-os-kit canaries test-canaries explore redb sqlite kit-example stdfs trace live kernel-check bench ci kv fuzz corpus report-check readme-example

help:
	@echo "make test         - the whole test suite (unit, property, integration, replayed regressions)"
	@echo "make lint         - rustfmt --check and clippy -D warnings"
	@echo "make fmt          - format the workspace"
	@echo "make sweep        - the simulator over SEEDS (default 0..500) on JOBS workers (default 2)"
	@echo "make determinism  - every seed of DSEEDS (default 0..100) run twice, traces compared"
	@echo "make soak         - the simulator for TIME seconds (default 600) from a random base seed"
	@echo "make soak-deep    - nightly-sized soak (scripts/soak-deep.sh): 1M segsim seeds, 200k on ext4, 100k of each kit target with readers, from a fresh base, resumable (OUT=dir), summarized and compared (COMPARE=old/summary.json); SOAK_SCALE=0.01 for a small one"
	@echo "make crash-os     - the engine on the real disk, SIGKILLed CYCLES times (default 200), checked each time"
	@echo "make crash-os-kit - the kit's crash-os: logkv, redb and SQLite on the real disk, SIGKILLed KIT_CYCLES times (default 100) each, checked against the kit's model; the planted early ack caught"
	@echo "make canaries     - plant each engine bug (--features canaries); the simulator must catch every one within BUDGET s (default 60)"
	@echo "make test-canaries - the canary tests: each planted bug caught within its seed cap, by a seed that passes without it"
	@echo "make explore      - exhaustive crash exploration of ESEED's (default 10: fsync everysec) EOPS-op (default 100) workload at depth EDEPTH (default 2: every recovery crashed again too); EFSYNC=always|everysec|no forces the policy"
	@echo "make redb         - the redb target (REDB.md): RSEEDS (default 0..2000) swept, determinism-checked, seeds 1..3 explored (40 ops, depth 2), seed 1 at 100 ops with --faults, finding 3's abort contained by --isolate; with readers (--clients 3): RCSEEDS (default 0..500) swept, the unpinned reader caught"
	@echo "make sqlite       - the sqlite target (SQLITE.md): SQSEEDS (default 410..710) swept, 0..100 determinism-checked, seed 1 explored at depth 2, the six planted bugs caught (the three lock plants with readers, --clients 3, two of them by explore too), the pinned findings replayed, readers swept (WAL and DELETE on ext4)"
	@echo "make kit-example - the target kit's example engine (logkv): KSEEDS (default 0..2000) clean, its planted bugs caught, explored; the same with readers (--clients 4), its live-reader caught"
	@echo "make stdfs        - persy, unmodified, on the simulated disk through the stdfs layer (STDFS.md): a sweep contained by --isolate, determinism, an explore at depth 2 with faults, persy's findings still reproducing; the layer's planted mistakes caught under cowkv; tlog's thread bugs; fjall with its worker thread (FJALL.md); jammdb through the layer's maps (JAMMDB.md)"
	@echo "make live         - sim live (LIVE.md): the fsyncgate probe caught and its honest twin clean, sqlite3's ignored directory fsync (SQLITE.md finding 5), agreement with sim trace (seconds)"
	@echo "make trace        - sim trace on real processes (PROGRAMS.md): programs/replace's planted missing fsync found under posix and the fixed program clean; sqlite3 and redis-server pairs (under a minute)"
	@echo "make kernel-check - every file-system rule's probe (probes/) on a real ext4, XFS and btrfs from loop devices (root), crashed and remounted; every state the kernel left must be one the model allows (FILESYSTEMS.md); exit 77 when skipped, naming what is missing"
	@echo "make readme-example - rewrite the README's seed-42 example output from a fresh run (a test fails when it drifts)"
	@echo "make report-check - --report pages (a canary failure, a redb failure, an explore repro) rendered in headless Chromium and checked; screenshots in target/ci-artifacts/reports/"
	@echo "make open-findings - the segsim findings not fixed yet (corpus/open-findings/) must still fail"
	@echo "make quickstart   - the kit's quickstart template built outside the repository as a user would, tested, swept and explored"
	@echo "make quickstart-stdfs - the std::fs quickstart (quickstart-stdfs/, STDFS.md) built outside the repository on stdfs-layer alone: tested, swept, explored, a planted bug found, saved and failing cargo test until fixed"
	@echo "make bench        - the harness and the engine measured side by side (BENCHMARKS.md)"
	@echo "make bench-compare OLD=path - two sim builds alternated in one run: a sweep's wall/user/sys time, page faults, peak RSS and sim bench's figures, NEW/OLD (scripts/bench-compare.py)"
	@echo "make ci           - what .ci/run runs: lint, test, sweep, determinism, explore, redb, sqlite, trace, live, kernel-check, crash-os, crash-os-kit, canaries, test-canaries, report-check"
	@echo "make kv DIR=/tmp/kvdemo - the engine's interactive shell on a real directory"
	@echo "make fuzz TARGET=name TIME=secs - one cargo-fuzz target (aof_recover seg_read manifest_open store_ops), seeded from corpus/TARGET"
	@echo "make corpus       - regenerate the fuzz seed corpus corpus/<target>/ from what the engine writes"

test:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --workspace --all-targets --features sim/canaries -- -D warnings
	$(CARGO) clippy -p sim --all-targets --no-default-features -- -D warnings
	$(CARGO) clippy -p adapters --all-targets --no-default-features -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps -q

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

# Soak at scale (issue 52): fresh seed ranges for segsim (posix, ext4) and
# every kit target with readers, in resumable chunks under OUT (default
# target/soak-deep/<base>), summed into OUT/summary.txt by failure class
# and compared with COMPARE (an earlier summary.json). Full size takes
# hours on two cores; SOAK_SCALE shrinks every section.
OUT ?=
soak-deep:
	JOBS=$(JOBS) scripts/soak-deep.sh $(OUT)

CYCLES ?= 200
KILL_SEED ?= 1
crash-os:
	$(CARGO) run --release -q -p engine --example crash_os -- --cycles $(CYCLES) --seed $(KILL_SEED)

# The kit's real-disk crash test (simkit/src/crash_os/, TESTING-YOUR-ENGINE.md
# section 7): the example engine logkv, built as a kit user builds it, redb,
# and SQLite in WAL mode with synchronous=NORMAL (its commits promise only
# Eventual, and reach the kernel before they return), each in child
# processes SIGKILLed at moments drawn from KIT_SEED, KIT_CYCLES times (SQLite
# half as often), every recovery held to the kit's model; then the planted
# harness mistake (the child acknowledges a commit before running it) must
# be caught on logkv and redb within 100 cycles (exit 1 expected; a caught
# run ends at once. Measured over seeds 1..10, twice: logkv by its sixth
# cycle, redb by its ninth, once by its 35th). Seed 4 draws both of logkv's
# commit levels and all four of redb's.
KIT_CYCLES ?= 100
KIT_SEED ?= 4
crash-os-kit:
	$(LOGKV) crash-os --cycles $(KIT_CYCLES) --seed $(KIT_SEED)
	$(SIM) crash-os --target redb --cycles $(KIT_CYCLES) --seed $(KIT_SEED)
	$(SIM) crash-os --target sqlite --cycles $$(( $(KIT_CYCLES) / 2 + 1 )) --seed $(KIT_SEED) --set journal_mode=wal --set synchronous=normal
	$(LOGKV) crash-os --cycles 100 --seed $(KIT_SEED) --plant-early-ack >/dev/null 2>&1; test $$? -eq 1 || { echo "crash-os-kit: logkv's planted early ack was not caught"; exit 1; }
	$(SIM) crash-os --target redb --cycles 100 --seed $(KIT_SEED) --plant-early-ack >/dev/null 2>&1; test $$? -eq 1 || { echo "crash-os-kit: redb's planted early ack was not caught"; exit 1; }

BUDGET ?= 60
canaries:
	$(CARGO) run --release -q -p sim --features canaries -- canaries --budget $(BUDGET) --jobs $(JOBS)

# In release: it shares the build `make canaries` makes. The canary tests
# beside the code are segsim-target's (its explorer and fault tests), the
# table's proof is sim's: every canary hunted from seed 0 and caught at
# exactly the seed CANARIES.md's table gives.
test-canaries:
	$(CARGO) test --release -p segsim-target --features canaries --lib
	$(CARGO) test --release -p sim --features canaries --test canaries

# Seed 10 draws fsync everysec (4 KiB sectors), seed 8 always (512-byte
# sectors): between them, at 100 ops, every planted bug a crash state can
# expose is caught (CANARIES.md). EFSYNC empty: the seed's own policy.
ESEED ?= 10
EOPS ?= 100
EDEPTH ?= 2
EFSYNC ?=
# EFAULTS=1: also fail each I/O (any kind) of every recovery (--faults).
EFAULTS ?=
# EDAMAGE=1: also damage every record of every durable image (--damage).
EDAMAGE ?=
explore:
	$(SIM) explore --seed $(ESEED) --ops $(EOPS) --depth $(EDEPTH) $(if $(EFSYNC),--fsync $(EFSYNC)) $(if $(EFAULTS),--faults) $(if $(EDAMAGE),--damage) --jobs $(JOBS)

# The redb target (REDB.md): a sweep, a determinism sample, three explored
# seeds at 40 ops (REDB.md's figures) and depth 2, the same with readers
# beside the writer (below), and finding 3's abort
# (seed 114 under redb-late-write) contained by --isolate in the release
# build the finding names (sim/tests/isolate.rs checks it in the test
# profile): the sweep must finish all 6 seeds, exit 1 and report 114 as
# died.
RSEEDS ?= 0..2000
# With readers beside the writer (--clients 3, REDB.md's concurrent rows):
# a sweep, a determinism sample, the planted unpinned reader caught by the
# random mode and by explore.
RCSEEDS ?= 0..500
RCEXPLORE ?= 1
redb:
	$(SIM) --target redb --seeds $(RSEEDS) --jobs $(JOBS)
	out=$$($(SIM) --target redb --seeds 110..116 --plant redb-late-write --isolate 2>&1); test $$? -eq 1 && echo "$$out" | grep -q "^6 seeds," && echo "$$out" | grep -q "^seed 114 failed check 'died':" || { echo "redb: --isolate did not finish the sweep with seed 114 reported as died (REDB.md, finding 3)"; exit 1; }
	$(SIM) --target redb --seeds 0..200 --jobs $(JOBS) --check-determinism
	for seed in 1 2 3; do $(SIM) explore --target redb --seed $$seed --ops 40 --depth 2 --jobs $(JOBS) || exit 1; done
	$(SIM) explore --target redb --seed 1 --depth 2 --faults --jobs $(JOBS)
	$(SIM) --target redb --clients 3 --seeds $(RCSEEDS) --jobs $(JOBS)
	$(SIM) --target redb --clients 3 --seeds 0..100 --jobs $(JOBS) --check-determinism
	$(SIM) --target redb --clients 3 --seeds 0..20 --plant redb-reader-unpinned --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "redb: the random mode missed redb-reader-unpinned"; exit 1; }
	$(SIM) explore --target redb --clients 3 --seed $(RCEXPLORE) --plant redb-reader-unpinned 2>/dev/null | grep -q "check 'isolation'" || { echo "redb: explore missed redb-reader-unpinned"; exit 1; }

# The sqlite target (SQLITE.md): a short sweep, a determinism sample, seed 1
# explored at depth 2, each planted VFS bug caught (exit 1 expected) in a
# forced sweep (the three lock plants with readers, --clients 3, the
# first two by explore too), readers swept in the WAL and DELETE modes on ext4 (where
# finding 5 cannot fail a seed), and the pinned findings of corpus/sqlite/findings replayed:
# each must still fail as SQLITE.md says (or pass: the EXTRA twin, and
# finding 3's two repros since our disk model was fixed), so a change in
# SQLite or in our disk model shows here. SQSEEDS is a range of the
# default configuration where no known finding fails (300..600 held seed
# 409, finding 5, once the VFS claimed os_unix's PSOW by default; it is
# pinned as delete-full-ignored-dirsync-hole.ops instead).
SQSEEDS ?= 410..710
SQFIND = corpus/sqlite/findings
# Explore where SQLite promises something: seed 1's own draw (PERSIST +
# NORMAL) promises nothing, so a plant could not fail it there.
SQDURABLE = --set journal_mode=wal --set synchronous=full
sqlite:
	$(SIM) --target sqlite --seeds $(SQSEEDS) --jobs $(JOBS)
	$(SIM) --target sqlite --seeds 0..100 --jobs $(JOBS) --check-determinism
	$(SIM) explore --target sqlite --seed 1 --depth 2 --ops 60 --jobs $(JOBS) $(SQDURABLE)
	$(SIM) explore --target sqlite --seed 1 --depth 2 --ops 60 --jobs $(JOBS) $(SQDURABLE) --plant sqlite-no-sync >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: explore missed sqlite-no-sync"; exit 1; }
	$(SIM) --target sqlite --seeds 0..20 --plant sqlite-no-sync --set journal_mode=wal --set synchronous=full >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: sqlite-no-sync not caught"; exit 1; }
	$(SIM) --target sqlite --seeds 0..20 --plant sqlite-delete-no-dirsync --set journal_mode=delete --set synchronous=extra >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: sqlite-delete-no-dirsync not caught"; exit 1; }
	$(SIM) --target sqlite --seeds 0..20 --plant sqlite-late-truncate --set journal_mode=truncate --set synchronous=full >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: sqlite-late-truncate not caught"; exit 1; }
	for f in delete-extra-keeps-it delete-extra-empty-commit-after-failed-commit disk-model-torn-shrink-wal disk-model-torn-shrink-vacuum wal-failed-commit-comes-back wal-kill-then-fsync-drops-pages restart-shows-durable-content-keeps-later-states; do $(SIM) --replay $(SQFIND)/$$f.ops || exit 1; done
	for f in delete-full-loses-a-commit delete-full-vacuum-unordered-metadata delete-full-vacuum-unordered-metadata-prefix truncate-normal-corrupts delete-full-ignored-dirsync-hole wal-rolled-back-commit-revived wal-rolled-back-commit-revived-4k wal-rolled-back-commit-revived-page512 wal-rolled-back-commit-revived-sector512 wal-rolled-back-commit-revived-frame1 wal-rolled-back-commit-revived-page8k; do \
		$(SIM) --replay $(SQFIND)/$$f.ops >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: finding $$f no longer reproduces: update SQLITE.md"; exit 1; }; done
	$(SIM) --target sqlite --clients 3 --seeds $(SQSEEDS) --jobs $(JOBS)
	$(SIM) --target sqlite --clients 3 --seeds 0..100 --jobs $(JOBS) --check-determinism
	$(SIM) --target sqlite --clients 3 --seeds 0..500 --fs ext4 --jobs $(JOBS) --set journal_mode=wal
	$(SIM) --target sqlite --clients 3 --seeds 0..500 --fs ext4 --jobs $(JOBS) --set journal_mode=delete
	$(SIM) --target sqlite --clients 3 --seeds 0..20 --set journal_mode=wal --plant sqlite-shm-lock-lies --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: the random mode missed sqlite-shm-lock-lies"; exit 1; }
	$(SIM) --target sqlite --clients 3 --seeds 0..20 --set journal_mode=delete --plant sqlite-locks-per-process --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: the random mode missed sqlite-locks-per-process"; exit 1; }
	$(SIM) --target sqlite --clients 3 --seeds 0..20 --set journal_mode=delete --plant sqlite-unlock-keeps-pending --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "sqlite: the random mode missed sqlite-unlock-keeps-pending"; exit 1; }
	$(SIM) explore --target sqlite --clients 3 --seed 21 --set journal_mode=wal --plant sqlite-shm-lock-lies 2>/dev/null | grep -q "check '" || { echo "sqlite: explore missed sqlite-shm-lock-lies"; exit 1; }
	$(SIM) explore --target sqlite --clients 3 --seed 2 --set journal_mode=delete --plant sqlite-locks-per-process 2>/dev/null | grep -q "check 'isolation'" || { echo "sqlite: explore missed sqlite-locks-per-process"; exit 1; }

# The target kit's worked example (sim/examples/logkv, TESTING-YOUR-ENGINE.md):
# KSEEDS clean, its planted lazy-fsync caught by the random mode and by
# explore (exit 1 expected: a failure found; explore at a crash state of
# seed 4, not only in its recording run), seed 1 explored at depth 2 with
# --faults, and with --damage: clean, and its planted no-checksum caught
# at a damaged durable image; with readers beside the writer (--clients 4)
# clean, and its planted live-reader caught by the random mode and by
# explore (in its recording: a reader's isolation is not a crash state's);
# with readers stepping inside the writer's commits (--interleave) 0..500
# clean, and its planted past-commit caught there and only there.
KSEEDS ?= 0..2000
# Built as a kit user builds it: without the redb and sqlite features.
LOGKV = $(CARGO) run --release -q -p sim --no-default-features --example logkv --
kit-example:
	$(LOGKV) --seeds $(KSEEDS) --jobs $(JOBS)
	$(LOGKV) --seeds 0..100 --plant lazy-fsync --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "kit-example: the random mode missed lazy-fsync"; exit 1; }
	$(LOGKV) explore --seed 4 --plant lazy-fsync 2>/dev/null | grep -q '\[crash index' || { echo "kit-example: explore missed lazy-fsync at its crash states"; exit 1; }
	$(LOGKV) explore --seed 1 --depth 2 --faults --jobs $(JOBS)
	$(LOGKV) explore --seed 1 --damage --jobs $(JOBS)
	$(LOGKV) explore --seed 1 --damage --plant no-checksum 2>/dev/null | grep -q '\[durable image' || { echo "kit-example: explore --damage missed no-checksum"; exit 1; }
	$(LOGKV) --seeds $(KSEEDS) --clients 4 --jobs $(JOBS)
	$(LOGKV) --seeds 0..20 --clients 4 --plant live-reader --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "kit-example: the random mode missed live-reader"; exit 1; }
	$(LOGKV) explore --seed 0 --clients 4 --plant live-reader 2>/dev/null | grep -q "check 'isolation'" || { echo "kit-example: explore missed live-reader"; exit 1; }
	$(LOGKV) --seeds 0..500 --clients 4 --interleave --jobs $(JOBS)
	$(LOGKV) --seeds 0..300 --clients 4 --interleave --plant past-commit --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "kit-example: --interleave missed past-commit"; exit 1; }
	$(LOGKV) --seeds 0..300 --clients 4 --plant past-commit --jobs $(JOBS) >/dev/null 2>&1 || { echo "kit-example: past-commit was caught without --interleave (only a step inside a commit can see it)"; exit 1; }

# persy through the stdfs layer (STDFS.md): persy fails most seeds (its
# findings), so the sweep must finish all its seeds under --isolate (a
# panic inside persy's own unwinding aborts one child: check 'died') and
# exit 1; a sample is run twice, traces compared, and no seed may fail
# check 'determinism'; one explore seed at depth 2 with --faults must
# finish (exit 0 or 1, never an abort); each pinned finding must still
# fail (exit 1), so a fix in persy or a change in our disk model shows
# here: finding 1 at its explored crash state (a durable commit lost with
# no fault), findings 4 and 5 from their .ops, findings 2, 3, 6 and 7 by
# their seeds (each with its panic's words). Then the layer's own proof:
# cowkv, a correct std::fs engine, passes clean in the random mode and in
# explore, and each mistake planted in the layer is caught by both. Then
# the scheduler's (STDFS.md "Threads"): tlog, our engine with a flusher
# and a compactor thread, passes clean and replays alike, and each of its
# three planted thread bugs is caught. Then fjall, unmodified, with its
# worker thread (FJALL.md): a short sweep clean, a few seeds giving the same
# trace hash in two processes (in one process they cannot: FJALL.md
# finding 5), a short explore at depth 2 with faults, each finding's .ops
# still failing and each fixed one passing. Then jammdb, unmodified, reading
# its pages through the layer's maps (JAMMDB.md): a short sweep clean, seeds
# run twice alike, an explore at depth 2 with faults that must end (exit 0
# or 1, never an abort), each finding's .ops and explored state still failing.
FJALL = $(CARGO) run --release -q -p stdfs-fjall --
JAMMDB = $(CARGO) run --release -q -p stdfs-jammdb --
STDFS = $(CARGO) run --release -q -p sim --example stdfs --
COWKV = $(CARGO) run --release -q -p sim --example stdfs-cowkv --
TLOG = $(CARGO) run --release -q -p sim --example stdfs-tlog --
STDFS_SEEDS ?= 0..200
STDFS_COUNT ?= 200
stdfs:
	out=$$($(STDFS) --seeds $(STDFS_SEEDS) --jobs $(JOBS) --isolate 2>&1); test $$? -eq 1 && echo "$$out" | grep -q "^$(STDFS_COUNT) seeds," || { echo "stdfs: the sweep did not finish its seeds (or found nothing: update STDFS.md)"; exit 1; }
	out=$$($(STDFS) --seeds 0..50 --jobs $(JOBS) --check-determinism 2>&1); echo "$$out" | grep -q "^50 seeds," && ! echo "$$out" | grep -q "failed check 'determinism'" || { echo "stdfs: a seed's two runs differ"; exit 1; }
	$(STDFS) explore --seed 1 --ops 20 --depth 2 --faults --jobs $(JOBS) >/dev/null 2>&1; rc=$$?; test $$rc -le 1 || { echo "stdfs: explore --depth 2 --faults on persy ended with status $$rc"; exit 1; }
	$(STDFS) explore --seed 18 --ops 3 --only-io 163 --only-state 15 >/dev/null 2>&1; test $$? -eq 1 || { echo "stdfs: finding 1 no longer reproduces: update STDFS.md"; exit 1; }
	for f in corpus/persy/*.ops; do $(STDFS) --replay $$f >/dev/null 2>&1; test $$? -eq 1 || { echo "stdfs: $$f no longer fails: update STDFS.md"; exit 1; }; done
	for pin in "177:index out of bounds" "553:Option::unwrap()" "78:livelock: the engine never returned" "181:livelock: the engine never returned"; do s=$${pin%%:*}; m=$${pin#*:}; out=$$($(STDFS) --seed $$s 2>&1); test $$? -eq 1 && echo "$$out" | grep -qF "$$m" || { echo "stdfs: seed $$s no longer fails with '$$m': update STDFS.md"; exit 1; }; done
	$(COWKV) --seeds 0..500 --jobs $(JOBS)
	$(COWKV) explore --seed 1 --depth 2 --faults --jobs $(JOBS)
	for p in tmp-fsync-noop dir-fsync-parent; do $(COWKV) --seeds 0..20 --plant $$p --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "stdfs: the random mode missed the layer's $$p"; exit 1; }; done
	$(COWKV) explore --seed 1 --ops 3 --plant tmp-fsync-noop 2>/dev/null | grep -q '\[crash index' || { echo "stdfs: explore missed tmp-fsync-noop at its crash states"; exit 1; }
	$(COWKV) explore --seed 1 --ops 2 --plant dir-fsync-parent 2>/dev/null | grep -q '\[crash index' || { echo "stdfs: explore missed dir-fsync-parent at its crash states"; exit 1; }
	$(TLOG) --seeds 0..500 --jobs $(JOBS) --check-determinism
	$(TLOG) explore --seed 1 --depth 2 --faults --jobs $(JOBS)
	for p in ack-before-fsync compact-rename-race unsynced-flag; do $(TLOG) --seeds 0..20 --plant $$p --jobs $(JOBS) >/dev/null 2>&1; test $$? -eq 1 || { echo "stdfs: the random mode missed tlog's $$p"; exit 1; }; done
	for pin in "eventfd-wait:unknown blocking call" "spin-wait:spinning thread"; do p=$${pin%%:*}; m=$${pin#*:}; out=$$($(TLOG) --seeds 0..3 --plant $$p --jobs $(JOBS) 2>&1); test $$? -eq 1 && echo "$$out" | grep -q "^3 seeds," && echo "$$out" | grep -qF "$$m" || { echo "stdfs: tlog's $$p did not end its runs with '$$m'"; exit 1; }; done
	$(FJALL) --seeds 0..40 --jobs $(JOBS) --check-determinism
	out=$$($(FJALL) --seeds 0..3 --jobs $(JOBS) --check-determinism --plant fastrand-unseeded 2>&1); echo "$$out" | grep -q "^3 seeds," && echo "$$out" | grep -q "failed check 'determinism'" || { echo "stdfs: --check-determinism missed fjall's temp names drawn from std's thread ids (FJALL.md finding 5)"; exit 1; }
	for s in 0 1 2 3; do a=$$($(FJALL) --seed $$s 2>&1 | grep '^trace hash'); b=$$($(FJALL) --seed $$s 2>&1 | grep '^trace hash'); test -n "$$a" && test "$$a" = "$$b" || { echo "stdfs: fjall seed $$s gave two trace hashes in two processes"; exit 1; }; done
	$(FJALL) explore --seed 1 --ops 20 --depth 2 --faults --jobs $(JOBS)
	for f in corpus/fjall/*.ops; do $(FJALL) --replay $$f >/dev/null 2>&1; test $$? -eq 1 || { echo "stdfs: $$f no longer fails: update FJALL.md"; exit 1; }; done
	for s in 541 835 1509 1108; do $(FJALL) --seed $$s >/dev/null 2>&1 || { echo "stdfs: fjall seed $$s fails again (FJALL.md findings 4 and 6, fixed in the kit)"; exit 1; }; done
	out=$$($(FJALL) --seed 658 2>&1); echo "$$out" | grep -q "failed check 'hazard'" && echo "$$out" | grep -qF "then acknowledged (the operation ended)" || { echo "stdfs: fjall seed 658 no longer fails 'hazard' at the operation's end (FJALL.md finding 4)"; exit 1; }
	for f in corpus/fjall/fixed/*.ops; do $(FJALL) --replay $$f || { echo "stdfs: $$f fails again: FJALL.md"; exit 1; }; done
	out=$$($(JAMMDB) --seeds 0..60 --jobs $(JOBS) --isolate 2>&1); echo "$$out" | grep -q "^60 seeds," && ! echo "$$out" | grep -q "failed check" || { echo "stdfs: jammdb's 0..60 sweep did not finish clean: JAMMDB.md"; exit 1; }
	$(JAMMDB) --seeds 0..40 --jobs $(JOBS) --check-determinism --isolate >/dev/null 2>&1 || { echo "stdfs: jammdb's seeds 0..40 are not deterministic in one process"; exit 1; }
	for s in 0 1 2 3; do a=$$($(JAMMDB) --seed $$s 2>&1 | grep '^trace hash'); b=$$($(JAMMDB) --seed $$s 2>&1 | grep '^trace hash'); test -n "$$a" && test "$$a" = "$$b" || { echo "stdfs: jammdb seed $$s gave two trace hashes in two processes"; exit 1; }; done
	a=$$($(JAMMDB) explore --seed 1 --ops 20 --depth 2 --faults --jobs $(JOBS) 2>/dev/null); rc=$$?; b=$$($(JAMMDB) explore --seed 1 --ops 20 --depth 2 --faults --jobs $(JOBS) 2>/dev/null); rc2=$$?; test $$rc -le 1 && test $$rc2 -eq $$rc || { echo "stdfs: explore --depth 2 --faults on jammdb ended with status $$rc"; exit 1; }; test "$$(echo "$$a" | sed -E 's/[0-9]+ (states|recoveries)\/s//g; s/[0-9]+\.[0-9]+//g')" = "$$(echo "$$b" | sed -E 's/[0-9]+ (states|recoveries)\/s//g; s/[0-9]+\.[0-9]+//g')" || { echo "stdfs: jammdb's explore gave two reports (timings aside): JAMMDB.md finding 4"; exit 1; }
	for f in corpus/jammdb/*.ops; do $(JAMMDB) --replay $$f >/dev/null 2>&1; test $$? -eq 1 || { echo "stdfs: $$f no longer fails: update JAMMDB.md"; exit 1; }; done
	for pin in "13:check 'durability'" "8:Did not find meta page"; do st=$${pin%%:*}; m=$${pin#*:}; out=$$($(JAMMDB) explore --seed 1 --ops 20 --only-io 37 --only-state $$st 2>&1); test $$? -eq 1 && echo "$$out" | grep -qF "$$m" || { echo "stdfs: jammdb's explored state $$st no longer fails with '$$m': update JAMMDB.md"; exit 1; }; done

# The kit's quickstart (quickstart/, TESTING-YOUR-ENGINE.md section 0),
# built as a user builds it: outside this repository, offline, without
# redb or SQLite in its tree; tested, swept and explored.
quickstart:
	scripts/quickstart-check.sh

# The std::fs quickstart (quickstart-stdfs/, STDFS.md "Bring your own
# std::fs engine"): a std::fs store of its own on the layer, built outside
# this repository on `stdfs-layer` alone, the same way.
quickstart-stdfs:
	scripts/quickstart-check.sh quickstart-stdfs

# fjall 3 as shipped (rustix's own system calls, trapped) on the layer's
# disk and scheduler (STDFS.md, "System calls made without libc"). Not in
# `ci`: its build compiles fjall and lsm-tree.
fjall-raw-probe:
	cd stdfs-layer/fjall-probe && $(CARGO) run --release --offline -q --target-dir ../../target -- 0..5

bench:
	$(SIM) bench

# Two builds side by side, alternated in one run (scripts/bench-compare.py):
# a sweep's wall, user and system time, page faults and peak RSS, and `sim
# bench`'s figures, medians and NEW/OLD. OLD is the build before the change
# (copy its target/release/sim out first). `make bench-compare-smoke` runs it
# on the one build at a small size, so the script cannot rot unseen (CI).
OLD ?=
NEW ?= target/release/sim
ROUNDS ?= 3
bench-compare:
	@test -n "$(OLD)" || { echo "make bench-compare OLD=/path/to/old/sim [NEW=target/release/sim] [ROUNDS=3]"; exit 2; }
	$(CARGO) build --release -q -p sim
	python3 scripts/bench-compare.py $(OLD) $(NEW) --rounds $(ROUNDS)

bench-compare-smoke:
	$(CARGO) build --release -q -p sim
	python3 scripts/bench-compare.py target/release/sim target/release/sim --rounds 1 --sweep-seeds 20 \
		--bench-args '--seeds 5 --os-seeds 1 --rows 1000 --explore-ops 10'

# Segsim findings not fixed yet (corpus/open-findings/*.ops, each with its
# analysis): each must still fail; once one passes, move it to
# corpus/regressions/ (which cargo test replays) and say so. None open (the
# directory may be missing: git keeps no empty one) passes, saying so.
open-findings:
	@found=0; for f in corpus/open-findings/*.ops; do [ -e "$$f" ] || continue; found=1; \
		$(SIM) --replay $$f >/dev/null 2>&1; test $$? -eq 1 || { echo "open finding $$f no longer fails: move it to corpus/regressions/"; exit 1; }; done; \
		[ $$found -eq 1 ] || echo "open-findings: none open (corpus/open-findings/ holds no .ops)"

# `sim trace` on real processes (scripts/trace-check.sh, PROGRAMS.md): needs
# strace, sqlite3 and redis-server (.ci/run installs Debian's).
trace:
	SIM="$(SIM)" JOBS=$(JOBS) bash scripts/trace-check.sh

# `sim live` on real programs (scripts/live-check.sh, LIVE.md): the stdfs
# layer preloaded (builds stdfs-preload), faults and crashes injected live;
# needs cc, sqlite3 and gdbmtool (.ci/run installs Debian's).
live:
	SIM="$(SIM)" bash scripts/live-check.sh

# Every file-system rule's probe (probes/, FILESYSTEMS.md "Probes") on a real
# ext4 (data=ordered, and noauto_da_alloc), XFS and btrfs, each on a loop
# device in a temporary directory, crashed after chosen steps and
# remounted, against `sim trace explore`'s state set under the matching
# profile and posix (scripts/kernel-check.py). Needs root, a loop device,
# strace, python3, mkfs.xfs and mkfs.btrfs (xfsprogs, btrfs-progs); exit 77
# names what is missing and is no pass. About 80 s here.
kernel-check:
	$(CARGO) build --release -q -p sim
	SIM=target/release/sim JOBS=$(JOBS) python3 scripts/kernel-check.py

# The README's seed-42 output is checked by sim/tests/readme.rs; after an
# intended change of the simulator, rewrite it from a fresh run and commit.
readme-example:
	SIM_README_UPDATE=1 $(CARGO) test -q -p sim --test readme

# The --report pages in a real browser (scripts/report-check.sh): needs
# Chromium (.ci/run installs Debian's; locally the check is skipped, saying
# so, when it is missing). Builds with --features canaries, as `make
# canaries` does.
report-check:
	bash scripts/report-check.sh

ci: lint test sweep determinism explore redb sqlite trace live kernel-check kit-example stdfs crash-os crash-os-kit canaries test-canaries report-check

DIR ?= /tmp/segsim-kv
kv:
	$(CARGO) run -q -p engine --example kv -- --dir $(DIR)

# Fuzzing (not part of `make ci`: it needs cargo-fuzz, and its budget is
# wall-clock time). With a nightly toolchain the target runs under
# AddressSanitizer; on stable without sanitizer. New inputs go to
# fuzz/corpus/TARGET (git-ignored), seeded from corpus/TARGET and the
# target's crashers in corpus/regressions; crashes land in fuzz/artifacts.
TARGET ?= aof_recover
RSS_MB ?= 2048
FUZZ_TIMEOUT ?= 10
FUZZ_TARGETS = aof_recover seg_read manifest_open store_ops
FUZZ_TOOLCHAIN = $(if $(shell rustup toolchain list 2>/dev/null | grep '^nightly'),+nightly,)
FUZZ_SANITIZER = $(if $(FUZZ_TOOLCHAIN),address,none)
fuzz:
	@case " $(FUZZ_TARGETS) " in *" $(TARGET) "*) ;; *) echo "no fuzz target '$(TARGET)'; one of: $(FUZZ_TARGETS)"; exit 2;; esac
	@command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is missing: cargo install cargo-fuzz"; exit 2; }
	mkdir -p fuzz/corpus/$(TARGET)
	cp corpus/$(TARGET)/* fuzz/corpus/$(TARGET)/
	for crasher in corpus/regressions/$(TARGET)-*; do [ ! -e "$$crasher" ] || cp "$$crasher" fuzz/corpus/$(TARGET)/; done
	cd fuzz && $(CARGO) $(FUZZ_TOOLCHAIN) fuzz run --sanitizer $(FUZZ_SANITIZER) $(TARGET) corpus/$(TARGET) -- \
		-max_total_time=$(TIME) -rss_limit_mb=$(RSS_MB) -timeout=$(FUZZ_TIMEOUT) -print_final_stats=1

corpus:
	$(CARGO) run -q -p sim --example fuzz_corpus -- corpus
