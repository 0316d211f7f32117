#!/bin/sh
# The sqlite3 shell's workload for `sim trace` (PROGRAMS.md): in DIR/db,
# under the given journal mode and synchronous level, create a table, then
# insert three rows of about 3 KB (overflow pages, so a commit touches
# several pages), each in its own transaction; after each commit print
# "ack N" (N = rows committed; "ack 0": the table exists).
#
#   run.sh DIR JOURNAL SYNC    e.g. run.sh /tmp/db delete full
#
# stdbuf -oL: the shell's stdout is a pipe, which stdio buffers to the end;
# line buffering prints each acknowledgement when it is made. WAL runs in
# EXCLUSIVE locking mode: the wal-index then lives in heap memory, not in
# a shared writable mapping of db-shm, which `sim trace record` refuses.
set -eu
dir=$1
journal=$2
sync=$3
sql=""
if [ "$journal" = wal ]; then
    sql="PRAGMA locking_mode=EXCLUSIVE;"
fi
sql="$sql PRAGMA journal_mode=$journal; PRAGMA synchronous=$sync;"
sql="$sql CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); SELECT 'ack 0';"
for i in 1 2 3; do
    sql="$sql INSERT INTO t(id, v) VALUES($i, printf('row %d %s', $i, hex(zeroblob(1500)))); SELECT 'ack $i';"
done
exec stdbuf -oL sqlite3 "$dir/db" "$sql"
