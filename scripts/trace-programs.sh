#!/usr/bin/env bash
# PROGRAMS.md's tables: each program recorded once per setting under
# strace, then explored under every file-system profile with its checker;
# one Markdown row per setting and profile (crash states, distinct states,
# failing, vulnerability classes, wall time, rate), then, per program, the
# failing states grouped into classes (scripts/trace-classify.py).
#
#   SECTIONS=sqlite,git,redis,gdbm (default: all)   which tables
#   SIM=target/release/sim  JOBS=2                  the binary, checker jobs
#   KEEP=DIR                                        keep recordings and JSON reports there
#   TORN_GARBAGE=1                                  explore torn sectors holding garbage too (--torn-garbage)
#
# sqlite: each (journal mode, synchronous level) of programs/sqlite3, and
# DELETE+FULL and DELETE+NORMAL held to the durable rule they do not
# promise, the rows that show the checker can fail. git: programs/git under
# core.fsync default, committed and all. redis: programs/redis under
# appendfsync always (held to durable), everysec and no (held to a prefix;
# and `no` once more to durable). gdbm: programs/gdbm, default and -s.
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${SIM:-target/release/sim}
JOBS=${JOBS:-2}
SECTIONS=${SECTIONS:-sqlite,git,redis,gdbm}
if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    scratch=$(cd "$KEEP" && pwd)
else
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
fi
FSES="posix ext4 ext4-noauto xfs btrfs"
GARBAGE=$([ -n "${TORN_GARBAGE:-}" ] && echo --torn-garbage || true)

# explore NAME CHECK FS: explore $scratch/NAME.syscalls into $scratch/NAME-FS.json.
explore() {
    set +e
    "$SIM" trace explore "$scratch/$1.syscalls" --fs "$3" --jobs "$JOBS" $GARBAGE --json --check "$2" > "$scratch/$1-$3.json" 2>/dev/null
    set -e
}

# explore_all NAME CHECK SETTING: explore NAME under every profile, a row
# each (`| SETTING | FS |`), each report added to the caller's `labels`.
explore_all() {
    local fs
    for fs in $FSES; do
        explore "$1" "$2" "$fs"
        row "| $3 | $fs |" "$scratch/$1-$fs.json"
        labels+=("$3/$fs=$scratch/$1-$fs.json")
    done
}

# classes: the caller's `labels` reports' failing states, grouped into classes.
classes() {
    echo
    python3 scripts/trace-classify.py "${labels[@]}"
    echo
}

# row CELLS JSON: a table row, CELLS (`| a | b |`) then the report's figures.
row() {
    python3 - "$1" "$2" "$(python3 scripts/trace-classify.py --count "$2")" <<'PY'
import json, sys
cells, path, classes = sys.argv[1:]
r = json.load(open(path))
idx = sorted({f["io_index"] for f in r["failures"]})
failing = f'{r["failing_states"]}' + (f' ({len(idx)} crash indices)' if idx else '')
print(f'{cells} {r["crash_states"]} | {r["distinct_states"]} | {failing} | {classes if idx else 0} | '
      f'{r["check_seconds"]:.2f} | {r["states_per_second"]:.0f} | {r["checker_mean_seconds"]*1e3:.1f} | {r["floor_seconds"]*1e3:.1f} |')
PY
}

HEADER="| crash states | distinct | failing (at) | classes | checks wall s | states/s | checker mean ms | floor ms |"
RULE="|---|---|---|---|---|---|---|---|"

sqlite_section() {
echo "### sqlite3"
echo
echo "| journal_mode | synchronous | held to | fs | crash states | distinct | failing (at crash indices) | checks wall s | states/s | checker mean ms | floor ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
row_sqlite() { # journal sync rule_journal rule_sync
    local j=$1 s=$2 rj=$3 rs=$4 fs
    for fs in posix ext4 xfs btrfs; do
        set +e
        "$SIM" trace explore "$scratch/$j-$s.syscalls" --fs "$fs" --jobs "$JOBS" $GARBAGE --json \
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
    rm -rf "$scratch/db-$1-$2"
    mkdir "$scratch/db-$1-$2"
    "$SIM" trace record --dir "$scratch/db-$1-$2" --out "$scratch/$1-$2.syscalls" -- programs/sqlite3/run.sh "$scratch/db-$1-$2" "$1" "$2" >/dev/null 2>&1
done
row_sqlite delete full delete full
row_sqlite delete full delete extra
row_sqlite delete extra delete extra
row_sqlite truncate full truncate full
row_sqlite persist full persist full
row_sqlite wal normal wal normal
row_sqlite wal full wal full
row_sqlite delete normal delete extra
echo
}

git_section() {
echo "### git"
echo
echo "| core.fsync | fs $HEADER"
echo "|---|---$RULE"
local fsync labels=()
for fsync in default committed all; do
    rm -rf "$scratch/git-$fsync"
    programs/git/init.sh "$scratch/git-$fsync"
    "$SIM" trace record --dir "$scratch/git-$fsync" --out "$scratch/git-$fsync.syscalls" -- programs/git/run.sh "$scratch/git-$fsync" "$fsync" >/dev/null 2>&1
    explore_all "git-$fsync" "$PWD/programs/git/check.sh \"\$1\" \"\$2\"" "$fsync"
done
classes
}

redis_section() {
echo "### redis-server"
echo
echo "| appendfsync | held to | fs $HEADER"
echo "|---|---|---$RULE"
local fsync rule fs labels=()
for fsync in always everysec no; do
    rm -rf "$scratch/redis-$fsync"
    programs/redis/init.sh "$scratch/redis-$fsync"
    "$SIM" trace record --dir "$scratch/redis-$fsync" --out "$scratch/redis-$fsync.syscalls" -- programs/redis/run.sh "$scratch/redis-$fsync" "$fsync" >/dev/null 2>&1
done
for pair in "always durable" "everysec prefix" "no prefix" "no durable"; do
    set -- $pair
    for fs in $FSES; do
        explore "redis-$1" "$PWD/programs/redis/check.sh \"\$1\" \"\$2\" $2" "$fs"
        cp "$scratch/redis-$1-$fs.json" "$scratch/redis-$1-$2-$fs.json"
        row "| $1 | $2 | $fs |" "$scratch/redis-$1-$2-$fs.json"
        labels+=("$1/$2/$fs=$scratch/redis-$1-$2-$fs.json")
    done
done
classes
}

gdbm_section() {
echo "### GDBM (gdbmtool)"
echo
echo "| mode | fs $HEADER"
echo "|---|---$RULE"
local sync labels=()
for sync in default sync; do
    rm -rf "$scratch/gdbm-$sync"
    mkdir "$scratch/gdbm-$sync"
    "$SIM" trace record --dir "$scratch/gdbm-$sync" --out "$scratch/gdbm-$sync.syscalls" -- programs/gdbm/run.sh "$scratch/gdbm-$sync" "$sync" >/dev/null 2>&1
    explore_all "gdbm-$sync" "$PWD/programs/gdbm/check.sh \"\$1\" \"\$2\"" "$sync"
done
classes
}

for section in ${SECTIONS//,/ }; do
    started=$SECONDS
    case $section in
        sqlite) sqlite_section ;;
        git) git_section ;;
        redis) redis_section ;;
        gdbm) gdbm_section ;;
        *) echo "trace-programs.sh: unknown section $section (sqlite, git, redis, gdbm)" >&2; exit 2 ;;
    esac
    echo "($section: $((SECONDS - started)) s wall, recordings included, JOBS=$JOBS)"
    echo
done
