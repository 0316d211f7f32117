#!/bin/sh
# Prepare DIR for run.sh, before `sim trace record`: start redis-server
# once on the empty DIR with `appendonly yes`, let it make Redis 7's AOF
# set in DIR/appendonlydir (`appenddirname`: a manifest, an empty base
# file, an empty incr file), and shut it down cleanly. The recording then
# starts from that set, durable, and the recorded server only appends to
# the incr file. Without it, the recorded server's first act is an AOF
# rewrite whose base file is written in DIR and renamed into
# appendonlydir: a rename across directories, which the simulated disk
# does not model (PROGRAMS.md), so the replay would be refused.
#
#   init.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
redis-server --dir "$dir" --appendonly yes --save '' --port 0 --unixsocket "$run/redis.sock" \
    --daemonize no --logfile "$run/log" &
pid=$!
tries=0
until [ "$(redis-cli -s "$run/redis.sock" ping 2>/dev/null)" = PONG ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 500 ] || { cat "$run/log" >&2; kill -9 "$pid"; exit 1; }
    sleep 0.01
done
redis-cli -s "$run/redis.sock" shutdown >/dev/null 2>&1 || true
wait "$pid" || true
[ -f "$dir/appendonlydir/appendonly.aof.manifest" ] || { echo "init.sh: no AOF manifest in $dir" >&2; exit 1; }
