#!/bin/sh
# The checker for run.sh (PROGRAMS.md): start redis-server on the crash
# state DIR (AOF on, as in the run: its own recovery loads the manifest
# and the AOF files, `aof-load-truncated yes` cutting a torn tail), then
#  - redis must start (a state it refuses to load fails);
#  - the keys present must be a prefix k1..kJ of the workload, each with
#    its exact value;
#  - under RULE=durable (appendfsync always promises it), every key whose
#    "ack I" was printed must be there: J >= the last ack.
# Under RULE=prefix (everysec, no) acknowledged writes may be lost by
# design: a loss is printed, not failed.
#
#   check.sh DIR PRINTED RULE     (RULE: durable or prefix)
set -u
dir=$1
printed=$2
rule=$3
run=$(mktemp -d)
sock=$run/redis.sock
cleanup() {
    [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$run"
}
trap cleanup EXIT
redis-server --dir "$dir" --appendonly yes --save '' --port 0 --unixsocket "$sock" \
    --daemonize no --logfile "$run/log" &
pid=$!
tries=0
until [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "redis-server refused to start: $(grep -v WARNING "$run/log" | grep -E "Bad|Unrecoverable|rror|# " | tail -n 1 | sed "s/^.* # //")"
        exit 1
    fi
    tries=$((tries + 1))
    [ "$tries" -lt 1000 ] || { echo "redis-server did not answer in 10 s"; exit 1; }
    sleep 0.01
done
acked=$(grep -o '^ack [0-9]*$' "$printed" | tail -n 1 | cut -d' ' -f2)
acked=${acked:-0}
# One MGET of k1..k(max(acked, 32)): the present keys must be k1..kJ.
want=$((acked > 32 ? acked : 32))
names=$(seq -f 'k%g' 1 "$want" | tr '\n' ' ')
# shellcheck disable=SC2086
redis-cli -s "$sock" --raw MGET $names > "$run/values" || { echo "MGET failed"; exit 1; }
keys=$(redis-cli -s "$sock" DBSIZE)
i=0
while IFS= read -r value; do
    i=$((i + 1))
    if [ "$i" -le "$keys" ]; then
        [ "$value" = "v$i-$(printf '%0200d' "$i")" ] || { echo "not a prefix: $keys keys, k$i = '$value'"; exit 1; }
    fi
done < "$run/values"
[ "$keys" -le "$want" ] || { echo "$keys keys: more than the workload wrote"; exit 1; }
if [ "$keys" -lt "$acked" ]; then
    if [ "$rule" = durable ]; then
        echo "ack $acked was printed, but redis holds $keys keys"
        exit 1
    fi
    echo "ack $acked was printed, redis holds $keys keys (allowed: $rule)"
fi
exit 0
