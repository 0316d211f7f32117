#!/usr/bin/env bash
# Checkers that stay up, live (issue 51, LIVE.md, BENCHMARKS.md): one
# `sim live sweep` of sqlite3 (WAL+FULL, SQLITE.md finding 5: the new
# WAL's directory fsync failed under posix, every index cut, `--crash-mode
# strict`) judged by the same Python rule (programs/sqlite3/check-server.py)
# started once per crash state and kept up as one server (`--check-server`),
# alternated in one run (no checker, server, per state; three times each),
# with the verdicts compared line for line between every checked run. The
# sweep with no checker is the floor: each state is also one run of the
# program, which no checker can save. Prints one line per run: runs,
# failing, wall seconds, states/s, the checker's mean per state; exits 1
# if two runs disagree on any state.
#
#   SIM=target/release/sim PY=/usr/bin/python3 SEEDS=0..2 scripts/live-check-server-bench.sh [OUT]
#
# PY: the interpreter (pass the real one where `python3` is a shim, as in
# scripts/check-server-bench.sh). OUT keeps the reports (default: a
# temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${SIM:-"cargo run --release -q -p sim --"}
PY=${PY:-python3}
SEEDS=${SEEDS:-0..2}
export SIM_LIVE_PRELOAD=${SIM_LIVE_PRELOAD:-"$PWD/target/release/libstdfs_preload.so"}
[ -f "$SIM_LIVE_PRELOAD" ] || cargo build --release -q -p stdfs-preload
out=${1:-$(mktemp -d)}
mkdir -p "$out"
here=$PWD
dir="$out/live"
rm -rf "$dir"

# The new WAL's directory fsync: the run's second directory fsync.
dirsync=$($SIM live run --dir "$dir" --show-ios -- programs/sqlite3/run.sh "$dir" wal full 2>&1 \
    | grep 'fsync directory' | sed -n 2p | sed 's/^sim live: io \([0-9]*\):.*/\1/')
[ -n "$dirsync" ] || { echo "live-check-server-bench: no second directory fsync in sqlite3's WAL run" >&2; exit 1; }
flags=(sweep --dir "$dir" --seeds "$SEEDS" --every-index --fs posix --crash-mode strict --fault-at "$dirsync:eio")
server="$PY $here/programs/sqlite3/check-server.py wal full"
per_state="printf '%s\t%s\tend\t0\n' \"\$1\" \"\$2\" | $server | grep -qx pass"

# run NAME CHECK-FLAGS...: one sweep, its report in $out/NAME.txt, its
# verdict lines in $out/NAME.verdicts, its figures on one line.
run() {
    local name=$1
    shift
    local started ended status
    started=$(date +%s.%N)
    set +e
    $SIM live "${flags[@]}" "$@" -- programs/sqlite3/run.sh "$dir" wal full > "$out/$name.txt" 2>&1
    status=$?
    set -e
    ended=$(date +%s.%N)
    [ "$status" -le 1 ] || { tail -n 20 "$out/$name.txt"; echo "live-check-server-bench: $name exited $status" >&2; exit 1; }
    grep -E '^seed [0-9]+ (to the end|cut at I/O [0-9]+): (ok|FAIL)' "$out/$name.txt" > "$out/$name.verdicts"
    local runs failing
    runs=$(grep -o '[0-9]* runs, [0-9]* failing' "$out/$name.txt")
    failing=$(grep -c 'FAIL$' "$out/$name.verdicts" || true)
    awk -v n="$name" -v r="$runs" -v s="$started" -v e="$ended" -v c="$(grep -o 'checker mean [0-9.]* ms.*' "$out/$name.txt")" \
        'BEGIN { split(r, w, " "); printf "%s: %s; %.2f s wall, %.1f states/s; %s\n", n, r, e - s, w[1] / (e - s), c }'
    [ "$name" != "${name#none}" ] || [ "$failing" -gt 0 ] || { echo "live-check-server-bench: $name failed no state (finding 5 is not reached)" >&2; exit 1; }
}

for round in 1 2 3; do
    run "none-$round"
    run "server-$round" --check "$server" --check-server
    run "per-state-$round" --check "$per_state"
done
for name in per-state-1 server-2 per-state-2 server-3 per-state-3; do
    if ! cmp -s "$out/server-1.verdicts" "$out/$name.verdicts"; then
        diff "$out/server-1.verdicts" "$out/$name.verdicts" | head -n 20 || true
        echo "live-check-server-bench: server-1 and $name judge some state differently" >&2
        exit 1
    fi
done
echo "live-check-server-bench: all six sweeps give the same verdict on every state (reports in $out)"
