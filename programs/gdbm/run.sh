#!/bin/sh
# GDBM's workload for `sim trace` (PROGRAMS.md), through Debian's
# `gdbmtool`: N stores (default 6) into DIR/db, one gdbmtool process each
# (open, store kI, close: the database is created by the first), printing
# "ack I" after each process exits 0 with nothing on stderr (gdbmtool
# exits 0 even when it fails, and says so on stderr).
#
#   run.sh DIR SYNC [N]   SYNC: default (gdbm_close's fsync only) or
#                         sync (`-s`: GDBM_SYNC, an fsync after every write)
#
# `-m` (no mmap): GDBM maps its file shared and writable by default, which
# `sim trace record` refuses (those writes bypass write()); with -m it
# reads and writes the same file format with read/write calls.
set -eu
dir=$1
sync=$2
n=${3:-6}
case $sync in
    default) flag= ;;
    sync) flag=-s ;;
    *) echo "run.sh: SYNC is default or sync" >&2; exit 2 ;;
esac
err=$(mktemp)
trap 'rm -f "$err"' EXIT
i=1
while [ "$i" -le "$n" ]; do
    # shellcheck disable=SC2086
    gdbmtool -N -q -m $flag "$dir/db" store "k$i" "v$i-$(printf '%0300d' "$i")" 2>"$err"
    [ ! -s "$err" ] || { cat "$err" >&2; exit 1; }
    echo "ack $i"
    i=$((i + 1))
done
