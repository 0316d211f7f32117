#!/bin/sh
# redis-server's workload for `sim trace` (PROGRAMS.md): a server with
# `appendonly yes` and the given `appendfsync` (always, everysec or no) on
# DIR, then N writes (SET kI vI, default 6) sent one by one with
# redis-cli; after each reply OK it prints "ack I" (with a 1.2 s pause
# half way, see below). The server is then
# killed with SIGKILL: a crash, so nothing a clean shutdown would flush
# helps it.
#
#   run.sh DIR FSYNC [N]    e.g. run.sh /tmp/r always 6
#
# The server talks on a unix socket in a directory of its own, outside
# DIR (its bind names no file of the recording); its log goes to that
# directory too, not to stdout (stdout is the acknowledgements). `save ""`
# turns RDB snapshots off: the AOF alone is the store. Redis 7 keeps the
# AOF in DIR/appendonlydir (`appenddirname`): init.sh creates it before
# the recording, so the recording starts with it (the disk model makes a
# new directory durable at once anyway).
set -eu
dir=$1
fsync=$2
n=${3:-6}
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
sock=$run/redis.sock
redis-server --dir "$dir" --appendonly yes --appendfsync "$fsync" --save '' --port 0 \
    --unixsocket "$sock" --daemonize no --logfile "$run/log" --aof-use-rdb-preamble yes &
pid=$!
tries=0
until [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 500 ] || { cat "$run/log" >&2; kill -9 "$pid"; exit 1; }
    sleep 0.01
done
i=1
while [ "$i" -le "$n" ]; do
    reply=$(redis-cli -s "$sock" SET "k$i" "v$i-$(printf '%0200d' "$i")")
    [ "$reply" = OK ] || { echo "SET k$i: $reply" >&2; kill -9 "$pid"; exit 1; }
    echo "ack $i"
    # Half way, wait past a second: under everysec the server's
    # once-a-second fsync (on a background thread) then falls inside the
    # run, between two acknowledgements, rather than wherever the clock
    # puts it.
    [ "$i" -ne $((n / 2)) ] || sleep 1.2
    i=$((i + 1))
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
