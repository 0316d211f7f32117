#!/usr/bin/env bash
# `sim live` on real programs (`make live`, run by .ci/run; LIVE.md): the
# layer preloaded into C programs, faults and crashes injected as they run.
#
# 1. The planted proof: programs/fsyncgate/probe.c, built here with cc.
#    `retry` retries a failed fsync and believes the retry (fsyncgate's
#    mistake): caught under ext4 with fsync faults (exit 1, the checker
#    naming an acknowledged record missing); `honest` reports the failure
#    and acknowledges nothing more: clean (exit 0).
# 2. The Debian sqlite3 shell, SQLITE.md's finding 5: WAL+FULL with the new
#    WAL's directory fsync failed. Under posix SQLite ignores the failure,
#    acknowledges, and a crash takes the WAL's name with acknowledged
#    commits (exit 1; `--crash-mode strict`: the power loss keeps nothing
#    unsynced, so the WAL's name, whose directory fsync failed, is lost at
#    every index after it); under ext4 the failed directory fsync shuts the file
#    system down, the next fdatasync fails, sqlite3 reports it and
#    acknowledges nothing more (exit 0). Then fsync faults drawn under
#    ext4 in DELETE+FULL: sqlite3 reports each, no acknowledged commit lost.
# 3. Agreement with `sim trace` (no faults; trace-check.sh asserts trace's
#    side): sqlite3 DELETE+FULL is clean held to its own promise and loses
#    an acknowledged commit held to the durable rule; GDBM (gdbmtool) loses
#    its database file under posix (never a directory fsync) and, under
#    ext4, a header block left as zeros (reorder crashes only).
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${SIM:-"cargo run --release -q -p sim --"}
cargo build --release -q -p stdfs-preload
export SIM_LIVE_PRELOAD="$PWD/target/release/libstdfs_preload.so"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cc -O2 -Wall -Werror -o "$scratch/probe" programs/fsyncgate/probe.c
cc -O2 -Wall -Werror -o "$scratch/forks" programs/forks/forks.c

# expect WANT NAME -- ARGS...: run `sim live ARGS`, assert its exit status.
expect() {
    local want=$1 name=$2
    shift 3
    local started=$SECONDS
    set +e
    $SIM live "$@" > "$scratch/$name.txt" 2>&1
    local status=$?
    set -e
    echo "live: $name: exit $status in $((SECONDS - started)) s; $(grep -E '^sim live sweep:' "$scratch/$name.txt" || true)"
    if [ "$status" -ne "$want" ]; then
        cat "$scratch/$name.txt"
        echo "live: $name exited $status, expected $want" >&2
        exit 1
    fi
}

dir="$scratch/live"
probe_check="$PWD/programs/fsyncgate/check.sh \"\$1\" \"\$2\""
for mode in retry honest; do
    want=$([ "$mode" = retry ] && echo 1 || echo 0)
    expect "$want" "probe-$mode" -- sweep --dir "$dir" --seeds 0..4 --fs ext4 --faults fsync --fault-rate 0.3 --shrink \
        --check "$probe_check" -- "$scratch/probe" "$dir" "$mode"
done
grep -q 'but record [0-9]* is not in the log' "$scratch/probe-retry.txt" || { echo "live: the retry probe's failure does not name the lost record" >&2; exit 1; }
grep -q '^shrunk (seed [0-9]*, [0-9]* runs): one eio at I/O' "$scratch/probe-retry.txt" || { echo "live: the retry probe's failure did not shrink to one fault" >&2; exit 1; }
echo "live: the fsyncgate probe is caught under ext4 and its honest twin is clean"

# The fork rule: served with no simulated descriptor open (the child's
# write read back by the parent), refused with one open (the run fails).
expect 1 forks -- run --dir "$dir" -- "$scratch/forks" "$dir"
grep -q 'parent read: child' "$scratch/forks.txt" && grep -q 'REFUSED: fork with 1 simulated descriptor' "$scratch/forks.txt" \
    || { cat "$scratch/forks.txt"; echo "live: the fork rule did not hold" >&2; exit 1; }
echo "live: a fork with no simulated descriptor is served, one with a descriptor open refused"

sqlite_check() { echo "$PWD/programs/sqlite3/check.sh \"\$1\" \"\$2\" $1 $2"; }
# The new WAL's directory fsync: the second directory fsync of the run.
dirsync=$($SIM live run --dir "$dir" --show-ios -- programs/sqlite3/run.sh "$dir" wal full 2>&1 \
    | grep 'fsync directory' | sed -n 2p | sed 's/^sim live: io \([0-9]*\):.*/\1/')
[ -n "$dirsync" ] || { echo "live: no second directory fsync in sqlite3's WAL run" >&2; exit 1; }
for fs in posix ext4; do
    want=$([ "$fs" = posix ] && echo 1 || echo 0)
    expect "$want" "sqlite-wal-dirsync-$fs" -- sweep --dir "$dir" --seeds 0..1 --every-index --fs "$fs" --crash-mode strict \
        --fault-at "$dirsync:eio" --check "$(sqlite_check wal full)" -- programs/sqlite3/run.sh "$dir" wal full
done
grep -q 'was printed, but the database holds' "$scratch/sqlite-wal-dirsync-posix.txt" || { echo "live: finding 5's failure is not a lost acknowledged commit" >&2; exit 1; }
echo "live: sqlite3 ignores a failed directory fsync of its new WAL (I/O $dirsync) and loses acknowledged commits under posix; under ext4 it reports the shut-down file system"
expect 0 sqlite-fsync-faults -- sweep --dir "$dir" --seeds 0..4 --fs ext4 --faults fsync --fault-rate 0.2 \
    --check "$(sqlite_check delete full)" -- programs/sqlite3/run.sh "$dir" delete full

expect 0 agree-sqlite-delete-full -- sweep --dir "$dir" --seeds 0..3 --check "$(sqlite_check delete full)" -- programs/sqlite3/run.sh "$dir" delete full
expect 1 agree-sqlite-delete-full-held-durable -- sweep --dir "$dir" --seeds 0..3 --check "$(sqlite_check delete extra)" -- programs/sqlite3/run.sh "$dir" delete full
gdbm_check="$PWD/programs/gdbm/check.sh \"\$1\" \"\$2\""
expect 1 agree-gdbm-posix -- sweep --dir "$dir" --seeds 0..2 --check "$gdbm_check" -- programs/gdbm/run.sh "$dir" default
grep -q 'db is missing after ack' "$scratch/agree-gdbm-posix.txt" || { echo "live: gdbm's posix failure is not the lost database file" >&2; exit 1; }
# ext4's class (the creating process's header block left as zeros: `Bad
# magic number`, sim trace's 5 states at crash indices 4..6) is a reorder
# crash's state: found with --crash-mode reorder --every-index at seed 5
# (its crash indices 4..8), never by the default prefix crash.
expect 1 agree-gdbm-ext4 -- sweep --dir "$dir" --seeds 5..6 --fs ext4 --crash-mode reorder --every-index --check "$gdbm_check" -- programs/gdbm/run.sh "$dir" default
grep -aq 'Bad magic number' "$scratch/agree-gdbm-ext4.txt" || { echo "live: gdbm's ext4 failure is not the zeroed header" >&2; exit 1; }
echo "live: sqlite3 and gdbmtool agree with sim trace's verdicts (gdbm's ext4 class by reorder crashes at every index)"
