#!/usr/bin/env bash
# A quickstart template built as a user builds it: copied to a temporary
# directory outside this repository, its one dependency pointed at this
# checkout by path, built offline from the workspace's lock file; its
# dependency tree holds what that dependency brings of this repository and
# nothing else of it (no segsim engine, no testkit, no redb, no
# libsqlite3-sys, no persy); clippy-clean, its tests run, a sweep and an
# explore run; then a bug planted in its store (its commit's directory
# fsync left out) is found by a sweep, shrunk, saved, fails `cargo test`,
# and passes once fixed. The guides' steps are these.
#
#   scripts/quickstart-check.sh [quickstart]     (make quickstart)
#       the kit's (quickstart/, TESTING-YOUR-ENGINE.md section 0), on simkit
#   scripts/quickstart-check.sh quickstart-stdfs (make quickstart-stdfs)
#       a std::fs engine's (quickstart-stdfs/, STDFS.md "Bring your own
#       std::fs engine"), on stdfs-layer
#
# QUICKSTART_TARGET_DIR (default: this checkout's target/<template>) is
# where it builds; a fresh directory measures a user's first build. CI
# builds the std::fs template into the kit template's directory, which
# already holds the kit, the simulator and what they use: its build is
# then two crates, not forty-four.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
name=${1:-quickstart}
# What differs between the templates: the placeholder its Cargo.toml names
# its dependency by and that crate, the crates of this repository its tree
# must hold, and the line of its store the planted bug replaces.
case "$name" in
    quickstart)
        placeholder=SIMKIT_PATH dependency=simkit
        required="simkit simulator vfs"
        fsync_line='        self.vfs.sync_dir(&self.dir)?;'
        no_fsync_line='        // the bug: no directory fsync'
        ;;
    quickstart-stdfs)
        placeholder=STDFS_LAYER_PATH dependency=stdfs-layer
        required="stdfs-layer simkit simulator vfs"
        fsync_line='    File::open(dir)?.sync_all()'
        no_fsync_line='    Ok(()) // the bug: no directory fsync'
        ;;
    *)
        echo "usage: $0 [quickstart|quickstart-stdfs]" >&2
        exit 2
        ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -r "$repo/$name/." "$dir/"
sed -i "s#$placeholder#$repo/$dependency#" "$dir/Cargo.toml"
cp "$repo/Cargo.lock" "$dir/Cargo.lock"
export CARGO_TARGET_DIR="${QUICKSTART_TARGET_DIR:-$repo/target/$name}"
cd "$dir"
tree=$(cargo tree --offline --prefix none)
if echo "$tree" | grep -E '^(redb|libsqlite3-sys|persy|engine|testkit|segsim-target|adapters|simtrace|sim) '; then
    echo "$name: $dependency pulled in an engine or a product the user does not test" >&2
    exit 1
fi
for crate in $required; do
    echo "$tree" | grep -q "^$crate " || { echo "$name: $crate is not in its tree" >&2; exit 1; }
done
echo "$name: its tree holds $required of this repository, and no engine, testkit, redb, SQLite or persy"
# The guide quotes how many crates a kit user's first build compiles
# (TESTING-YOUR-ENGINE.md): the packages of the template's normal and
# build tree, itself included. A dependency added or dropped must show
# there too, so the quote cannot drift from the build.
if [ "$name" = quickstart ]; then
    quoted=$(sed -n 's/.*compiled \*\*\([0-9]*\) crates\*\*.*/\1/p' "$repo/TESTING-YOUR-ENGINE.md")
    packages=$(cargo tree --offline --prefix none -e normal,build | sed 's/ (\*)$//' | sort -u | wc -l)
    if [ "$quoted" != "$packages" ]; then
        echo "$name: its build compiles $packages crates, TESTING-YOUR-ENGINE.md says ${quoted:-nothing}: update the guide" >&2
        exit 1
    fi
    echo "$name: its build compiles $packages crates, as TESTING-YOUR-ENGINE.md says"
fi
# The first build, measured as the guide quotes it (TESTING-YOUR-ENGINE.md):
# crates compiled, seconds, the binary's size. Into a fresh target
# directory it is a user's cold build.
# A target directory that already holds a release build (CI builds the
# std::fs template into the kit template's) makes a warm build: said so.
build="first release build"
[ -d "$CARGO_TARGET_DIR/release" ] && build="release build into a target directory that held one (not a user's first)"
started=$(date +%s)
crates=$(cargo build --offline --release 2>&1 | grep -c '^ *Compiling ' || true)
seconds=$(( $(date +%s) - started ))
bytes=$(stat -c %s "$CARGO_TARGET_DIR/release/$name")
echo "$name: $build compiled $crates crates in ${seconds} s; the binary is $(( bytes / 1024 )) KiB"
cargo clippy --offline --release --all-targets -q -- -D warnings
cargo test --offline --release -q
cargo run --offline --release -q -- --seeds 0..200 --jobs 2
cargo run --offline --release -q -- explore --seed 1 --depth 2 --faults --jobs 2 >/dev/null

# A user's story: a bug in the engine (its commit's directory fsync left
# out), found by a sweep, shrunk and saved under corpus/<target>/ — where
# `cargo test` must then fail — and, once the bug is fixed, the saved repro
# passes and `cargo test` is green again.
cp src/store.rs store.rs.fixed
sed -i "s|^$fsync_line\$|$no_fsync_line|" src/store.rs && touch src/store.rs
if cmp -s src/store.rs store.rs.fixed; then
    echo "$name: could not plant the bug in src/store.rs (its commit changed?)" >&2
    exit 1
fi
# (The sweep exits 1: it found what it was meant to.)
seed=$({ cargo run --offline --release -q -- --seeds 0..100 2>&1 || true; } | sed -n 's/^seed \([0-9]*\) failed check.*/\1/p' | head -1)
if [ -z "$seed" ]; then
    echo "$name: a sweep missed a commit with no directory fsync" >&2
    exit 1
fi
cargo run --offline --release -q -- --seed "$seed" --shrink --save >/dev/null 2>&1 || true
ls "corpus/$name/"*.ops >/dev/null || { echo "$name: --shrink --save wrote no repro" >&2; exit 1; }
if cargo test --offline --release -q >/dev/null 2>&1; then
    echo "$name: cargo test stayed green with a failing repro under corpus/$name/" >&2
    exit 1
fi
# (touched: cargo goes by mtimes, and the copy is older than the build)
mv store.rs.fixed src/store.rs && touch src/store.rs
cargo test --offline --release -q
echo "$name: built outside the repository at $dir, tested, swept and explored; a saved failing repro (seed $seed) failed cargo test until the bug was fixed"
