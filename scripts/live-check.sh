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
    echo "live: $name: exit $status in $((SECONDS - started)) s; $(grep -E '^sim live sweep: seeds' "$scratch/$name.txt" || true)"
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

# 4. A shell script on the simulated disk (PROGRAMS.md's planted proof, run
#    live): dash's `> FILE` (a simulated file placed at fd 1), coreutils'
#    `sync` and `mv`. Agreement with sim trace: `buggy` (no fsync of the
#    new file before the rename) loses the config under posix and is saved
#    by auto_da_alloc under ext4; `fixed` is clean; and with the new file's
#    fsync failed, `fixed` stops (`sync` reports it, `set -e`) and
#    acknowledges nothing.
replace_check="$PWD/programs/replace/check-live.sh \"\$1\" \"\$2\""
expect 1 replace-buggy-posix -- sweep --dir "$dir" --seeds 0..2 --every-index --crash-mode strict --check "$replace_check" -- programs/replace/live.sh "$dir" buggy
grep -q "\"replaced\" was printed, but config holds: ''" "$scratch/replace-buggy-posix.txt" || { echo "live: replace buggy's failure is not the empty config" >&2; exit 1; }
expect 0 replace-buggy-ext4 -- sweep --dir "$dir" --seeds 0..2 --every-index --fs ext4 --crash-mode strict --check "$replace_check" -- programs/replace/live.sh "$dir" buggy
expect 0 replace-fixed-posix -- sweep --dir "$dir" --seeds 0..2 --every-index --crash-mode strict --check "$replace_check" -- programs/replace/live.sh "$dir" fixed
tmpsync=$($SIM live run --dir "$dir" --show-ios -- programs/replace/live.sh "$dir" fixed 2>&1 | grep ': fsync h' | sed -n 2p | sed 's/^sim live: io \([0-9]*\):.*/\1/')
[ -n "$tmpsync" ] || { echo "live: no fsync of config.tmp in replace's fixed run" >&2; exit 1; }
expect 0 replace-fixed-tmp-fsync-eio -- run --dir "$dir" --fs ext4 --fault-at "$tmpsync:eio" --check "$replace_check" -- programs/replace/live.sh "$dir" fixed
grep -q 'printed before the crash: "ready\\n"' "$scratch/replace-fixed-tmp-fsync-eio.txt" || { cat "$scratch/replace-fixed-tmp-fsync-eio.txt"; echo "live: replace fixed went on after its failed fsync" >&2; exit 1; }
echo "live: a shell script's redirect, sync and mv run live; buggy caught under posix, saved by auto_da_alloc under ext4; fixed clean, and stops at a failed fsync"

# 5. Determinism of what the system hands a program fresh: sqlite3 stores
#    datetime('now'), random() and randomblob() (seeded from /dev/urandom,
#    its pid and the time), the shell prints its pid and `date`. Twice
#    under one seed: the same output, trace hash and database bytes; under
#    another seed the random row differs.
stamp() { # SEED OUT
    STAMP_OUT=$2 $SIM live run --dir "$dir" --seed "$1" --check 'cp "$1/db" "$STAMP_OUT"' -- programs/sqlite3/stamp.sh "$dir" > "$2.txt" 2>&1
}
stamp 3 "$scratch/stamp-a" && stamp 3 "$scratch/stamp-b" && stamp 4 "$scratch/stamp-c" || { cat "$scratch"/stamp-*.txt; echo "live: stamp.sh failed" >&2; exit 1; }
cmp "$scratch/stamp-a.txt" "$scratch/stamp-b.txt" && cmp "$scratch/stamp-a" "$scratch/stamp-b" \
    || { echo "live: one seed gave two different runs of stamp.sh" >&2; exit 1; }
grep -q '^shell pid 1000$' "$scratch/stamp-a.txt" && grep -q '^row|2023-11-14 ' "$scratch/stamp-a.txt" \
    || { cat "$scratch/stamp-a.txt"; echo "live: the pid or the time is not the seed's" >&2; exit 1; }
[ "$(grep '^row' "$scratch/stamp-a.txt")" != "$(grep '^row' "$scratch/stamp-c.txt")" ] \
    || { echo "live: seeds 3 and 4 drew the same random row" >&2; exit 1; }
echo "live: stamp.sh under one seed twice: the same output, trace hash and database bytes (pid, time, /dev/urandom the seed's); another seed differs"

# 6. Checkers that stay up (`--check-server`, LIVE.md): sqlite3's rule as
#    one Python server for the whole sweep (programs/sqlite3/check-server.py)
#    judges every state as check.sh does per state (section 3's sweep held
#    to the durable rule): the same verdict, state for state. A server
#    that dies at its fourth state (a shell server running check.sh per
#    line, `exit 3` on the fourth) fails that state with a typed fault and
#    a fresh server judges the rest as check.sh does; one that answers
#    outside the protocol fails its states, said so.
verdicts() { grep -E '^seed [0-9]+ (to the end|cut at I/O [0-9]+): (ok|FAIL)' "$scratch/$1.txt"; }
sqlite_server() { echo "$PWD/programs/sqlite3/check-server.py $1 $2"; }
expect 1 server-sqlite-delete-full-held-durable -- sweep --dir "$dir" --seeds 0..3 --timeout 20 --check "$(sqlite_server delete extra)" --check-server -- programs/sqlite3/run.sh "$dir" delete full
cmp <(verdicts agree-sqlite-delete-full-held-durable) <(verdicts server-sqlite-delete-full-held-durable) \
    || { echo "live: sqlite3's checker server and check.sh judge some state differently" >&2; exit 1; }
dies_after_3="n=0; while IFS=\"\$(printf '\\t')\" read -r dir printed at seed; do n=\$((n + 1)); [ \$n -le 3 ] || exit 3;
    if why=\$($PWD/programs/sqlite3/check.sh \"\$dir\" \"\$printed\" delete extra); then echo pass; else echo \"fail \$why\"; fi; done"
expect 1 server-dies -- sweep --dir "$dir" --seeds 0..3 --timeout 20 --check "$dies_after_3" --check-server -- programs/sqlite3/run.sh "$dir" delete full
[ "$(grep -c 'CHECKER SERVER FAULT at seed 1, the cut at I/O [0-9]*: the checker server exited with 3 before answering' "$scratch/server-dies.txt")" = 2 ] \
    || { cat "$scratch/server-dies.txt"; echo "live: the dead server's state is not failed once, typed and named" >&2; exit 1; }
cmp <(verdicts agree-sqlite-delete-full-held-durable | sed 4d) <(verdicts server-dies | sed 4d) \
    || { echo "live: after a dead server, the fresh one judges differently" >&2; exit 1; }
expect 1 server-garbage -- sweep --dir "$dir" --seeds 0..1 --timeout 20 --check 'while read -r line; do echo maybe; done' --check-server -- "$scratch/probe" "$dir" honest
[ "$(grep -c 'the checker server answered "maybe": not `pass` nor `fail WHY`' "$scratch/server-garbage.txt")" = 4 ] \
    || { cat "$scratch/server-garbage.txt"; echo "live: a server's garbage is not a typed fault on each state" >&2; exit 1; }
# git's rule read by Python (programs/git/check.py --server) against
# check.sh (git's own rev-parse, merge-base and fsck) per state, on live
# runs whose `git init` is inside the run (ext4): seed 4's cut leaves gc's
# repack as a `.tmp-*-pack-*.idx` that git reads, seed 9's cut a `.git`
# without HEAD that git does not take for a repository.
git_run=(sh -c "programs/git/init-live.sh $dir && programs/git/run.sh $dir committed")
for seeds in 4..5 9..10; do
    expect 1 "git-server-$seeds" -- sweep --dir "$dir" --seeds "$seeds" --fs ext4 --timeout 20 --check "$PWD/programs/git/check.py --server" --check-server -- "${git_run[@]}"
    expect 1 "git-check-sh-$seeds" -- sweep --dir "$dir" --seeds "$seeds" --fs ext4 --timeout 20 --check "$PWD/programs/git/check.sh \"\$1\" \"\$2\"" -- "${git_run[@]}"
    cmp <(verdicts "git-server-$seeds") <(verdicts "git-check-sh-$seeds") \
        || { echo "live: git's check.py server and check.sh judge some state of seeds $seeds differently" >&2; exit 1; }
done
grep -q '^seed 4 cut at I/O [0-9]*: ok' "$scratch/git-server-4..5.txt" && grep -q '^seed 9 cut at I/O [0-9]*: FAIL' "$scratch/git-server-9..10.txt" \
    || { echo "live: git's two disputed states are not judged as git judges them" >&2; exit 1; }
echo "live: sqlite3's and git's checker servers give check.sh's verdicts state for state; a dead server fails one state and is replaced; garbage is a fault"
