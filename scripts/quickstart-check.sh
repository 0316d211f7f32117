#!/usr/bin/env bash
# The kit's quickstart (quickstart/, TESTING-YOUR-ENGINE.md section 0) built
# as a user builds it: copied to a temporary directory outside this
# repository, the kit crate (`simkit`) pointed at this checkout by path,
# built offline from
# the workspace's lock file; clippy-clean, its tests run, a short sweep and
# an explore run,
# and its dependency tree holds the kit, the simulator and the seam from
# this repository and nothing else of it: no segsim engine, no testkit, no
# redb, no libsqlite3-sys.
#
#   scripts/quickstart-check.sh            (make quickstart)
#
# QUICKSTART_TARGET_DIR (default: this checkout's target/quickstart) is
# where it builds; a fresh directory measures a user's first build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -r "$repo/quickstart/." "$dir/"
sed -i "s#SIMKIT_PATH#$repo/simkit#" "$dir/Cargo.toml"
cp "$repo/Cargo.lock" "$dir/Cargo.lock"
export CARGO_TARGET_DIR="${QUICKSTART_TARGET_DIR:-$repo/target/quickstart}"
cd "$dir"
tree=$(cargo tree --offline --prefix none)
if echo "$tree" | grep -E '^(redb|libsqlite3-sys|engine|testkit|segsim-target|adapters|simtrace|sim) '; then
    echo "quickstart: the kit pulled in an engine or a product the user does not test" >&2
    exit 1
fi
for crate in simkit simulator vfs; do
    echo "$tree" | grep -q "^$crate " || { echo "quickstart: the kit's $crate is not in its tree" >&2; exit 1; }
done
echo "quickstart: its tree holds simkit, simulator and vfs of this repository, and no engine, testkit, redb or SQLite"
# The first build, measured as the guide quotes it (TESTING-YOUR-ENGINE.md):
# crates compiled, seconds, the binary's size. Into a fresh target
# directory it is a user's cold build.
started=$(date +%s)
crates=$(cargo build --offline --release 2>&1 | grep -c '^ *Compiling ' || true)
seconds=$(( $(date +%s) - started ))
bytes=$(stat -c %s "$CARGO_TARGET_DIR/release/quickstart")
echo "quickstart: first release build compiled $crates crates in ${seconds} s; the binary is $(( bytes / 1024 )) KiB"
cargo clippy --offline --release --all-targets -q -- -D warnings
cargo test --offline --release -q
cargo run --offline --release -q -- --seeds 0..200 --jobs 2
cargo run --offline --release -q -- explore --seed 1 --depth 2 --faults --jobs 2 >/dev/null

# A user's story (TESTING-YOUR-ENGINE.md): a bug in the engine (its commit's
# directory fsync left out), found by a sweep, shrunk and saved under
# corpus/<target>/ — where `cargo test` must then fail — and, once the bug
# is fixed, the saved repro passes and `cargo test` is green again.
cp src/store.rs store.rs.fixed
sed -i 's|^        self.vfs.sync_dir(&self.dir)?;$|        // the bug: no directory fsync|' src/store.rs && touch src/store.rs
if cmp -s src/store.rs store.rs.fixed; then
    echo "quickstart: could not plant the bug in src/store.rs (its commit changed?)" >&2
    exit 1
fi
# (The sweep exits 1: it found what it was meant to.)
seed=$({ cargo run --offline --release -q -- --seeds 0..100 2>&1 || true; } | sed -n 's/^seed \([0-9]*\) failed check.*/\1/p' | head -1)
if [ -z "$seed" ]; then
    echo "quickstart: a sweep missed a commit with no directory fsync" >&2
    exit 1
fi
cargo run --offline --release -q -- --seed "$seed" --shrink --save >/dev/null 2>&1 || true
ls corpus/quickstart/*.ops >/dev/null || { echo "quickstart: --shrink --save wrote no repro" >&2; exit 1; }
if cargo test --offline --release -q >/dev/null 2>&1; then
    echo "quickstart: cargo test stayed green with a failing repro under corpus/quickstart/" >&2
    exit 1
fi
# (touched: cargo goes by mtimes, and the copy is older than the build)
mv store.rs.fixed src/store.rs && touch src/store.rs
cargo test --offline --release -q
echo "quickstart: built outside the repository at $dir, tested, swept and explored; a saved failing repro failed cargo test until the bug was fixed"
