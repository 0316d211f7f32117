#!/bin/sh
# The checker for run.sh (PROGRAMS.md): the crash state's database passes
# PRAGMA integrity_check and holds a prefix of the workload (rows 1..k,
# each with its exact value; no table counts as k = -1), and, where the
# journal mode and synchronous level promise durability (SQLITE.md's
# table: DELETE+EXTRA, TRUNCATE and PERSIST at FULL or EXTRA, WAL at FULL
# or EXTRA), every acknowledged commit is there: k >= the last "ack N".
# DELETE+FULL and WAL+NORMAL promise only a consistent prefix ("eventual").
# Other levels promise nothing a checker could hold them to: refused.
#
#   check.sh DIR PRINTED JOURNAL SYNC   (DIR, PRINTED as sim trace passes them)
set -u
dir=$1
printed=$2
case "$3:$4" in
    delete:extra | truncate:full | truncate:extra | persist:full | persist:extra | wal:full | wal:extra) promise=durable ;;
    delete:full | wal:normal) promise=eventual ;;
    *) echo "check.sh: $3/$4 promises nothing to check"; exit 2 ;;
esac
acked=$(grep -o '^ack [0-9]*$' "$printed" | tail -n 1 | cut -d' ' -f2)
acked=${acked:--1}
if [ ! -f "$dir/db" ]; then
    [ "$promise" = eventual ] || [ "$acked" -lt 0 ] && exit 0
    echo "db is missing after ack $acked"
    exit 1
fi
integrity=$(sqlite3 "$dir/db" 'PRAGMA integrity_check;' 2>&1)
[ "$integrity" = ok ] || { echo "integrity_check: $integrity"; exit 1; }
tables=$(sqlite3 "$dir/db" "SELECT count(*) FROM sqlite_master WHERE name = 't'" 2>&1)
k=-1
if [ "$tables" = 1 ]; then
    rows=$(sqlite3 "$dir/db" "SELECT count(*), ifnull(max(id), 0), ifnull(sum(v = printf('row %d %s', id, hex(zeroblob(1500)))), 0) FROM t" 2>&1)
    count=$(echo "$rows" | cut -d'|' -f1)
    [ "$rows" = "$count|$count|$count" ] || { echo "not a prefix of the workload: count|max|exact = $rows"; exit 1; }
    k=$count
elif [ "$tables" != 0 ]; then
    echo "reading the schema: $tables"
    exit 1
fi
if [ "$promise" = durable ] && [ "$k" -lt "$acked" ]; then
    echo "ack $acked was printed, but the database holds $k rows (-1: no table)"
    exit 1
fi
