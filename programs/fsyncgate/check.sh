#!/bin/sh
# The probe's checker (`sim live`, LIVE.md): every record whose "ack N"
# was printed must be in DIR/log, whole, at its place.
#
#   check.sh STATE PRINTED   (STATE: the crash state, the probe's DIR)
set -eu
state=$1
printed=$2
last=$(grep -c '^ack ' "$printed" || true)
n=1
while [ "$n" -le "$last" ]; do
    want=$(printf 'record %d' "$n")
    got=$(dd if="$state/log" bs=64 skip=$((n - 1)) count=1 2>/dev/null | cut -c1-${#want} || true)
    if [ "$got" != "$want" ]; then
        echo "ack $n was printed, but record $n is not in the log (found '$got')"
        exit 1
    fi
    n=$((n + 1))
done
echo "all $last acknowledged records are in the log"
