#!/usr/bin/env bash
# Print "seed trace-hash" for every seed of a range, one line each, from a
# built sim binary: two builds' outputs diffed say exactly which seeds moved.
#
#   scripts/trace-hashes.sh target/release/sim 0 400 [extra sim flags...] > new.txt
#   diff old.txt new.txt
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 SIM_BINARY FIRST_SEED END_SEED [SIM FLAGS...]" >&2
    exit 2
fi
sim=$1 first=$2 end=$3
shift 3
for ((seed = first; seed < end; seed++)); do
    # A failing seed (exit 1) has a trace hash too: pipefail must not end
    # the list there (persy fails most seeds).
    hash=$("$sim" --seed "$seed" "$@" 2>&1 | sed -n 's/^trace hash: //p' || true)
    echo "$seed ${hash:-none}"
done
