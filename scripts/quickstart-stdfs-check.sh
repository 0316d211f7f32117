#!/usr/bin/env bash
# The std::fs quickstart (quickstart-stdfs/, STDFS.md "Bring your own
# std::fs engine") built as a user builds it: copied to a temporary
# directory outside this repository, its one dependency (`stdfs-layer`)
# pointed at this checkout by path, built offline from the workspace's lock
# file; its dependency tree holds the layer, the kit, the simulator and the
# seam of this repository and no engine (segsim's, redb, SQLite, persy);
# clippy-clean, its tests run, a sweep and an explore run; then a bug
# planted in its store is found by a sweep, shrunk, saved, fails `cargo
# test`, and passes once fixed. The guide's steps are these.
#
#   scripts/quickstart-stdfs-check.sh            (make quickstart-stdfs)
#
# QUICKSTART_STDFS_TARGET_DIR (default: this checkout's
# target/quickstart-stdfs) is where it builds.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -r "$repo/quickstart-stdfs/." "$dir/"
sed -i "s#STDFS_LAYER_PATH#$repo/stdfs-layer#" "$dir/Cargo.toml"
cp "$repo/Cargo.lock" "$dir/Cargo.lock"
export CARGO_TARGET_DIR="${QUICKSTART_STDFS_TARGET_DIR:-$repo/target/quickstart-stdfs}"
cd "$dir"
tree=$(cargo tree --offline --prefix none)
if echo "$tree" | grep -E '^(redb|libsqlite3-sys|persy|engine|testkit|segsim-target|adapters|simtrace|sim) '; then
    echo "quickstart-stdfs: the layer pulled in an engine or a product the user does not test" >&2
    exit 1
fi
for crate in stdfs-layer simkit simulator vfs; do
    echo "$tree" | grep -q "^$crate " || { echo "quickstart-stdfs: $crate is not in its tree" >&2; exit 1; }
done
echo "quickstart-stdfs: its tree holds stdfs-layer, simkit, simulator and vfs of this repository, and no engine, testkit, redb, SQLite or persy"
cargo clippy --offline --release --all-targets -q -- -D warnings
cargo test --offline --release -q
cargo run --offline --release -q -- --seeds 0..200 --jobs 2
cargo run --offline --release -q -- explore --seed 1 --depth 2 --faults --jobs 2 >/dev/null

# A user's story: a bug in the engine (its commit's directory fsync left
# out), found by a sweep, shrunk and saved under corpus/<target>/ — where
# `cargo test` must then fail — and, once the bug is fixed, the saved repro
# passes and `cargo test` is green again.
cp src/store.rs store.rs.fixed
sed -i 's|^    File::open(dir)?.sync_all()$|    Ok(()) // the bug: no directory fsync|' src/store.rs && touch src/store.rs
if cmp -s src/store.rs store.rs.fixed; then
    echo "quickstart-stdfs: could not plant the bug in src/store.rs (its commit changed?)" >&2
    exit 1
fi
# (The sweep exits 1: it found what it was meant to.)
seed=$({ cargo run --offline --release -q -- --seeds 0..100 2>&1 || true; } | sed -n 's/^seed \([0-9]*\) failed check.*/\1/p' | head -1)
if [ -z "$seed" ]; then
    echo "quickstart-stdfs: a sweep missed a commit with no directory fsync" >&2
    exit 1
fi
cargo run --offline --release -q -- --seed "$seed" --shrink --save >/dev/null 2>&1 || true
ls corpus/quickstart-stdfs/*.ops >/dev/null || { echo "quickstart-stdfs: --shrink --save wrote no repro" >&2; exit 1; }
if cargo test --offline --release -q >/dev/null 2>&1; then
    echo "quickstart-stdfs: cargo test stayed green with a failing repro under corpus/quickstart-stdfs/" >&2
    exit 1
fi
# (touched: cargo goes by mtimes, and the copy is older than the build)
mv store.rs.fixed src/store.rs && touch src/store.rs
cargo test --offline --release -q
echo "quickstart-stdfs: built outside the repository at $dir, tested, swept and explored; a saved failing repro (seed $seed) failed cargo test until the bug was fixed"
