#!/usr/bin/env bash
# Soak at scale: fresh seed ranges far from CI's, for segsim and every kit
# target, in resumable chunks, summed into a summary a later run compares
# with (`make soak-deep`; the nightly workflow and the fleet job run it
# sharded). Issue 52: CI sweeps 1,000 seeds, and a failing seed one in
# 15,000 needs this to be seen at all.
#
#   scripts/soak-deep.sh [OUT]
#
# Sections (full size; SOAK_SCALE multiplies every count, e.g. 0.01):
#   segsim-posix  1,000,000 seeds  sim
#   segsim-ext4     200,000 seeds  sim --fs ext4
#   redb            100,000 seeds  sim --target redb --clients 3 --fs ext4
#   sqlite          100,000 seeds  sim --target sqlite --clients 3 --fs ext4
#   logkv           100,000 seeds  logkv --clients 3 --fs ext4
#   persy           100,000 seeds  stdfs --isolate --reuse-children --fs ext4
#                                  (persy declares no readers; --isolate:
#                                  its aborts are one failed seed each;
#                                  --reuse-children: a process start per
#                                  abort, not per seed, ~7x the seeds/s;
#                                  the aborts are findings, STDFS.md)
#
# Environment:
#   SOAK_BASE     first seed of every section (default: drawn at random in
#                 1e9..1e12, a multiple of 1e6, far from every seed a
#                 document or CI names; printed, and kept in OUT/plan.txt)
#   SOAK_SCALE    multiplies the section sizes (default 1)
#   SOAK_SECTIONS space-separated subset of the sections (default: all)
#   SOAK_SHARD    K/N: run only chunks whose index is K modulo N (fleet)
#   JOBS          workers per chunk (default 2)
#   COMPARE       an earlier run's summary.json to compare with
#   SIM, LOGKV, STDFS  the binaries (default: this checkout's release
#                 builds, built first); SOAK_BUILD=0 skips the build (the
#                 fleet's image carries them prebuilt)
#
# OUT (default target/soak-deep/<base>) holds plan.txt, one JSON summary per
# chunk (<section>/chunk-<first seed>.json, its stderr beside it), the first
# failing seeds of each section shrunk (<section>/shrunk-<seed>.txt; not
# persy's, whose known findings fail most seeds: STDFS.md) and
# summary.json / summary.txt (scripts/soak-summary.py). Running again with
# the same OUT resumes: finished chunks are kept, the rest run.
#
# Exit status: 0 when every seed passed, 1 when a seed failed (listed, by
# class, in summary.txt), 2 on bad usage or a run that could not finish.
set -uo pipefail
# The summarizer lives beside this script (in the fleet's image too).
SUMMARY="$(cd "$(dirname "$0")" && pwd)/soak-summary.py"
[ "${SOAK_BUILD:-1}" = 1 ] && cd "$(dirname "$0")/.."

SCALE=${SOAK_SCALE:-1}
JOBS=${JOBS:-2}
SHARD=${SOAK_SHARD:-0/1}
shard_k=${SHARD%/*}
shard_n=${SHARD#*/}
if ! [[ "$shard_k" =~ ^[0-9]+$ && "$shard_n" =~ ^[1-9][0-9]*$ ]] || [ "$shard_k" -ge "$shard_n" ]; then
    echo "soak-deep: SOAK_SHARD must be K/N with 0 <= K < N, not '$SHARD'" >&2
    exit 2
fi

SIM=${SIM:-./target/release/sim}
STDFS=${STDFS:-./target/release/examples/stdfs}
LOGKV=${LOGKV:-./target/release/examples/logkv}

# name | command | full size | chunk (seeds)
SECTIONS_TABLE="segsim-posix|$SIM|1000000|20000
segsim-ext4|$SIM --fs ext4|200000|20000
redb|$SIM --target redb --clients 3 --fs ext4|100000|5000
sqlite|$SIM --target sqlite --clients 3 --fs ext4|100000|5000
logkv|$LOGKV --clients 3 --fs ext4|100000|10000
persy|$STDFS --isolate --reuse-children --fs ext4|100000|2000"
WANTED=${SOAK_SECTIONS:-segsim-posix segsim-ext4 redb sqlite logkv persy}
for name in $WANTED; do
    if ! echo "$SECTIONS_TABLE" | grep -q "^$name|"; then
        echo "soak-deep: unknown section '$name' (known: $(echo "$SECTIONS_TABLE" | cut -d'|' -f1 | tr '\n' ' '))" >&2
        exit 2
    fi
done

# --- the plan: a fresh base, or the one an earlier run of OUT chose -------
OUT=${1:-}
if [ -n "$OUT" ] && [ -f "$OUT/plan.txt" ]; then
    BASE=$(sed -n 's/^base //p' "$OUT/plan.txt")
    echo "soak-deep: resuming $OUT (base $BASE)" >&2
else
    if [ -n "${SOAK_BASE:-}" ]; then
        BASE=$SOAK_BASE
    else
        # 1e9..1e12, a multiple of 1e6: no document, test or CI run names
        # a seed there.
        BASE=$(( ( ( $(od -An -N4 -tu4 /dev/urandom) % 999000 ) + 1000 ) * 1000000 ))
    fi
    OUT=${OUT:-target/soak-deep/$BASE}
    mkdir -p "$OUT" || exit 2
    {
        echo "base $BASE"
        echo "scale $SCALE"
        echo "sections $WANTED"
        echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo "${SOAK_COMMIT:-unknown}")"
    } > "$OUT/plan.txt"
fi
echo "soak-deep: base seed $BASE, scale $SCALE, shard $SHARD, output $OUT" >&2

# --- the binaries ----------------------------------------------------------
if [ "${SOAK_BUILD:-1}" = 1 ]; then
    echo "soak-deep: building the simulator, logkv and the stdfs layer (release)" >&2
    cargo build --release -q -p sim --bin sim --example stdfs || exit 2
    cargo build --release -q -p sim --no-default-features --example logkv || exit 2
fi
for binary in "$SIM" "$LOGKV" "$STDFS"; do
    if [ ! -x "$binary" ]; then
        echo "soak-deep: $binary is missing (build it, or set SIM, LOGKV, STDFS)" >&2
        exit 2
    fi
done

# --- the chunks -------------------------------------------------------------
chunk_done() { # FILE SEEDS: a whole summary of that many seeds
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d.get("seeds")==int(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
}

started=$(date +%s)
index=0
while IFS='|' read -r name command full chunk; do
    case " $WANTED " in *" $name "*) ;; *) continue ;; esac
    count=$(python3 -c "import sys; print(max(1, int(float(sys.argv[1]) * float(sys.argv[2]))))" "$full" "$SCALE")
    mkdir -p "$OUT/$name" || exit 2
    echo "soak-deep: $name: seeds $BASE..$((BASE + count)) ($command)" >&2
    first=$BASE
    while [ "$first" -lt $((BASE + count)) ]; do
        last=$(( first + chunk < BASE + count ? first + chunk : BASE + count ))
        mine=$(( index % shard_n == shard_k ))
        index=$((index + 1))
        json="$OUT/$name/chunk-$first.json"
        if [ "$mine" -eq 1 ] && ! chunk_done "$json" $((last - first)); then
            $command --seeds "$first..$last" --jobs "$JOBS" --json > "$json.tmp" 2> "$OUT/$name/chunk-$first.err"
            status=$?
            if [ "$status" -ge 2 ] || ! chunk_done "$json.tmp" $((last - first)); then
                echo "soak-deep: $name seeds $first..$last exited $status; see $OUT/$name/chunk-$first.err" >&2
                exit 2
            fi
            mv "$json.tmp" "$json"
            failed=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["failures"]))' "$json")
            echo "soak-deep: $name $first..$last: $failed failing seeds ($(( $(date +%s) - started )) s so far)" >&2
        fi
        first=$last
    done
done <<< "$SECTIONS_TABLE"

# A shard stops here: the others may still be writing their chunks.
if [ "$SHARD" != 0/1 ]; then
    echo "soak-deep: shard $SHARD done; when every shard is, sum them: $SUMMARY $OUT" >&2
    exit 0
fi

# --- shrink the first few failures of each section -------------------------
while IFS='|' read -r name command _ _; do
    [ -d "$OUT/$name" ] && [ "$name" != persy ] || continue
    for seed in $(python3 "$SUMMARY" --failing-seeds "$OUT/$name" 3); do
        shrunk="$OUT/$name/shrunk-$seed.txt"
        [ -s "$shrunk" ] && continue
        # --isolate is for sweeps; a shrink runs its seed in process.
        timeout 600 ${command/ --isolate --reuse-children/} --seed "$seed" --shrink > "$shrunk" 2>&1 || true
    done
done <<< "$SECTIONS_TABLE"

# --- the summary ------------------------------------------------------------
python3 "$SUMMARY" "$OUT" ${COMPARE:+--compare "$COMPARE"}
