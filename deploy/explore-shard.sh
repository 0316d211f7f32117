#!/bin/sh
# Explore one shard of a seed range, for the fleet (the nightly workflow,
# the Kubernetes job): seeds BASE+SHARD, BASE+SHARD+SHARDS, ... each
# explored at depth 2 with --faults (and, for segsim, whose records the
# explorer knows, --damage), one JSON report per seed in OUTDIR,
# until SECONDS have passed (the seed under way finishes). `sim merge
# OUTDIR/*.json` adds them up beside the soak's summaries.
#
#   deploy/explore-shard.sh "EXPLORE COMMAND" TARGET OUTDIR BASE SHARD SHARDS SECONDS [OPS]
#   deploy/explore-shard.sh "./target/release/sim explore --target redb" redb out 0 3 8 1200
#
# Exit status: 0 when every exploration ran (failures are in the reports,
# and `sim merge` exits 1 on them), 2 on bad usage or an exploration that
# could not run.
set -u
if [ $# -lt 7 ]; then
    echo "usage: $0 \"EXPLORE COMMAND\" TARGET OUTDIR BASE SHARD SHARDS SECONDS [OPS]" >&2
    exit 2
fi
cmd=$1 target=$2 out=$3 base=$4 shard=$5 shards=$6 seconds=$7 ops=${8:-100}
mkdir -p "$out" || exit 2
damage=
[ "$target" = segsim ] && damage=--damage
start=$(date +%s)
seed=$((base + shard))
while [ $(( $(date +%s) - start )) -lt "$seconds" ]; do
    $cmd --seed "$seed" --ops "$ops" --depth 2 --faults $damage --jobs 2 --json > "$out/explore-$target-$seed.json"
    status=$?
    if [ "$status" -ge 2 ]; then
        echo "$0: exploring $target seed $seed exited $status" >&2
        exit 2
    fi
    seed=$((seed + shards))
done
echo "$0: $target shard $shard/$shards explored seeds $((base + shard)).. step $shards up to $((seed - shards))" >&2
