#!/usr/bin/env bash
# The kit's quickstart (quickstart/, TESTING-YOUR-ENGINE.md section 0) built
# as a user builds it: copied to a temporary directory outside this
# repository, `sim` pointed at this checkout by path, built offline from
# the workspace's lock file; clippy-clean, its tests run, a short sweep and
# an explore run,
# and its dependency tree holds neither redb nor libsqlite3-sys.
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
sed -i "s#SIM_PATH#$repo/sim#" "$dir/Cargo.toml"
cp "$repo/Cargo.lock" "$dir/Cargo.lock"
export CARGO_TARGET_DIR="${QUICKSTART_TARGET_DIR:-$repo/target/quickstart}"
cd "$dir"
if cargo tree --offline -e normal,build --prefix none | grep -E '^(redb|libsqlite3-sys) '; then
    echo "quickstart: the kit pulled in a third-party engine the user does not test" >&2
    exit 1
fi
cargo clippy --offline --release --all-targets -q -- -D warnings
cargo test --offline --release -q
cargo run --offline --release -q -- --seeds 0..200 --jobs 2
cargo run --offline --release -q -- explore --seed 1 --depth 2 --faults --jobs 2 >/dev/null
echo "quickstart: built outside the repository at $dir, tested, swept and explored"
