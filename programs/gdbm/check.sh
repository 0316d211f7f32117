#!/bin/sh
# The checker for run.sh (PROGRAMS.md), on the crash state DIR: open
# DIR/db with gdbmtool and list it; if that fails, run GDBM's own
# recovery (`recover`, gdbm_recover) and list again. Then:
#  - the database must be readable (after recovery if needed);
#  - its keys must be a prefix k1..kJ of the workload, each with its
#    exact value;
#  - every key whose "ack I" was printed must be there (J >= the last
#    ack): gdbm_close fsyncs the file before gdbmtool exits, so each
#    acknowledged store was meant to be durable.
# A missing or empty db is fine only before the first ack.
#
#   check.sh DIR PRINTED
set -u
cd "$1" || { echo "no directory"; exit 1; }
db=db
printed=$2
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
fail() { echo "$*"; exit 1; }
acked=$(grep -o '^ack [0-9]*$' "$printed" | tail -n 1 | cut -d' ' -f2)
acked=${acked:-0}
if [ ! -s "$db" ]; then
    [ "$acked" -eq 0 ] && exit 0
    [ -f "$db" ] && fail "db is empty after ack $acked"
    fail "db is missing after ack $acked"
fi
list() { gdbmtool -N -q -m "$db" list > "$run/list" 2> "$run/err" && [ ! -s "$run/err" ]; }
recovered=""
if ! list; then
    first=$(head -c 200 "$run/err" | tr '\n' ' ')
    gdbmtool -N -q -m "$db" recover > "$run/recover" 2>&1
    list || fail "unreadable ($first); after recover: $(head -c 200 "$run/err" | tr '\n' ' ')"
    recovered=" (after recover: $first)"
fi
count=$(wc -l < "$run/list")
while read -r key value; do
    i=${key#k}
    case $i in '' | *[!0-9]*) fail "a key not of the workload: '$key'$recovered" ;; esac
    [ "$i" -ge 1 ] && [ "$i" -le "$count" ] || fail "not a prefix: k$i among $count keys$recovered"
    [ "$value" = "v$i-$(printf '%0300d' "$i")" ] || fail "k$i holds a wrong value$recovered"
done < "$run/list"
[ "$count" -ge "$acked" ] || fail "ack $acked was printed, but the db holds $count keys$recovered"
exit 0
