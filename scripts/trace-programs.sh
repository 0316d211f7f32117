#!/usr/bin/env bash
# PROGRAMS.md's sqlite3 table: each (journal mode, synchronous level) of
# programs/sqlite3 recorded once under strace, then explored under every
# file-system profile with its checker; one Markdown row per pair and
# profile (crash states, distinct states, failing, wall time, rate). Also
# DELETE+FULL and DELETE+NORMAL held to the durable rule they do not
# promise, the rows that show the checker can fail.
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${SIM:-target/release/sim}
JOBS=${JOBS:-2}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "| journal_mode | synchronous | held to | fs | crash states | distinct | failing (at crash indices) | checks wall s | states/s | checker mean ms | floor ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
row() { # journal sync rule_journal rule_sync
    local j=$1 s=$2 rj=$3 rs=$4 fs
    for fs in posix ext4 xfs btrfs; do
        set +e
        "$SIM" trace explore "$scratch/$j-$s.syscalls" --fs "$fs" --jobs "$JOBS" --json \
            --check "$PWD/programs/sqlite3/check.sh \"\$1\" \"\$2\" $rj $rs" > "$scratch/out.json" 2>/dev/null
        set -e
        python3 - "$j" "$s" "$rj/$rs" "$fs" "$scratch/out.json" <<'PY'
import json, sys
j, s, rule, fs, path = sys.argv[1:]
r = json.load(open(path))
idx = sorted({f["io_index"] for f in r["failures"]})
failing = f'{r["failing_states"]}' + (f' ({", ".join(map(str, idx))})' if idx else '')
print(f'| {j.upper()} | {s.upper()} | {rule} | {fs} | {r["crash_states"]} | {r["distinct_states"]} | {failing} | '
      f'{r["check_seconds"]:.2f} | {r["states_per_second"]:.0f} | {r["checker_mean_seconds"]*1e3:.1f} | {r["floor_seconds"]*1e3:.1f} |')
PY
    done
}
for pair in "delete full" "delete extra" "truncate full" "persist full" "wal normal" "wal full" "delete normal"; do
    set -- $pair
    mkdir "$scratch/db-$1-$2"
    "$SIM" trace record --dir "$scratch/db-$1-$2" --out "$scratch/$1-$2.syscalls" -- programs/sqlite3/run.sh "$scratch/db-$1-$2" "$1" "$2" >/dev/null 2>&1
done
row delete full delete full
row delete full delete extra
row delete extra delete extra
row truncate full truncate full
row persist full persist full
row wal normal wal normal
row wal full wal full
row delete normal delete extra
