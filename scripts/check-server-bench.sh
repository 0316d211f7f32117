#!/usr/bin/env bash
# Checkers that stay up (issue 51, PROGRAMS.md "Speed"): the same Python
# rule run as one process per crash state and as one checker server per
# job (`--check-server`), on the same recordings, alternated in one run
# (server, per state, server), and the failing states compared state for
# state between every run and with the shell checker's (check.sh). The
# recordings: sqlite3 DELETE+EXTRA and DELETE+FULL, git `default` (posix,
# `--complete-up-to 2 --max-dir-subsets 2`). Prints one line per run:
# distinct states, failing, states/s, checker mean; exits 1 if any two
# runs of a recording disagree on a failing state.
#
#   SIM=target/release/sim PY=/usr/bin/python3 JOBS=1 scripts/check-server-bench.sh [OUT]
#
# PY: the interpreter (default python3; where `python3` is a pyenv shim, a
# shell script that starts first, the per-state runs pay that too: pass
# the real interpreter to measure the protocol, not the shim). OUT keeps
# the reports (default: a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${SIM:-"cargo run --release -q -p sim --"}
PY=${PY:-python3}
JOBS=${JOBS:-1}
out=${1:-$(mktemp -d)}
mkdir -p "$out"
here=$PWD

# run NAME RECORDING FLAGS... : one explore, its report in $out/NAME.txt,
# its failing states in $out/NAME.fails, its figures on one line.
run() {
    local name=$1 recording=$2
    shift 2
    set +e
    $SIM trace explore "$recording" --jobs "$JOBS" "$@" > "$out/$name.txt" 2>&1
    local status=$?
    set -e
    [ "$status" -le 1 ] || { cat "$out/$name.txt"; echo "check-server-bench: $name exited $status" >&2; exit 1; }
    grep '^FAIL crash index' "$out/$name.txt" > "$out/$name.fails" || true
    local counts rates
    counts=$(sed -n 2p "$out/$name.txt" | grep -o 'distinct [0-9]*.*')
    rates=$(sed -n 3p "$out/$name.txt" | grep -o '[0-9.]* states/s; checker mean [0-9.]* ms')
    echo "$name: $counts; $rates"
}

# same A B: the two runs' failing states are the same, state for state.
same() {
    if ! cmp -s "$out/$1.fails" "$out/$2.fails"; then
        diff "$out/$1.fails" "$out/$2.fails" | head -n 20 || true
        echo "check-server-bench: $1 and $2 fail different states" >&2
        exit 1
    fi
}

for sync in extra full; do
    dir="$out/sqlite-$sync"
    rm -rf "$dir" && mkdir -p "$dir"
    $SIM trace record --dir "$dir" --out "$dir.syscalls" -- programs/sqlite3/run.sh "$dir" delete "$sync" > /dev/null
    server="$PY $here/programs/sqlite3/check-server.py delete extra"
    per_state="printf '%s\t%s\t0\t0\n' \"\$1\" \"\$2\" | $server | grep -qx pass"
    run "sqlite-$sync-server-1" "$dir.syscalls" --check "$server" --check-server
    run "sqlite-$sync-per-state" "$dir.syscalls" --check "$per_state"
    run "sqlite-$sync-server-2" "$dir.syscalls" --check "$server" --check-server
    run "sqlite-$sync-check-sh" "$dir.syscalls" --check "$here/programs/sqlite3/check.sh \"\$1\" \"\$2\" delete extra"
    for other in per-state server-2 check-sh; do same "sqlite-$sync-server-1" "sqlite-$sync-$other"; done
done

dir="$out/git"
rm -rf "$dir"
programs/git/init.sh "$dir"
$SIM trace record --dir "$dir" --out "$dir.syscalls" -- programs/git/run.sh "$dir" default > /dev/null
bound=(--complete-up-to 2 --max-dir-subsets 2)
run git-server-1 "$dir.syscalls" "${bound[@]}" --check "$PY $here/programs/git/check.py --server" --check-server
run git-per-state "$dir.syscalls" "${bound[@]}" --check "$PY $here/programs/git/check.py \"\$1\" \"\$2\""
run git-server-2 "$dir.syscalls" "${bound[@]}" --check "$PY $here/programs/git/check.py --server" --check-server
for other in per-state server-2; do same git-server-1 "git-$other"; done
if [ -n "${GIT_CHECK_SH:-}" ]; then
    run git-check-sh "$dir.syscalls" "${bound[@]}" --check "$here/programs/git/check.sh \"\$1\" \"\$2\""
    same git-server-1 git-check-sh
fi
echo "check-server-bench: every recording's runs fail the same states (reports in $out)"
