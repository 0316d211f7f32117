#!/usr/bin/env bash
# `sim trace` on real processes (`make trace`, run by .ci/run; PROGRAMS.md):
# the planted proof. programs/replace/run.sh replaces a file through a
# temporary file and a rename; recorded under strace in its `buggy` mode
# (the temporary file never fsynced) and its `fixed` mode, each recording is
# explored under every file-system profile. Under posix the buggy one must
# fail (exit 1) and the fixed one pass (exit 0): the check proves it can
# fail. The other profiles' verdicts are printed, not asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${SIM:-"cargo run --release -q -p sim --"}
JOBS=${JOBS:-2}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
check="$PWD/programs/replace/check.sh \"\$1\" \"\$2\""
for mode in buggy fixed; do
    mkdir "$scratch/db-$mode"
    echo 'old content, version 1' > "$scratch/db-$mode/config"
    $SIM trace record --dir "$scratch/db-$mode" --out "$scratch/$mode.syscalls" -- programs/replace/run.sh "$scratch/db-$mode" "$mode" >/dev/null
    for fs in posix ext4 xfs btrfs; do
        set +e
        $SIM trace explore "$scratch/$mode.syscalls" --check "$check" --fs "$fs" --jobs "$JOBS" > "$scratch/$mode-$fs.txt" 2>&1
        status=$?
        set -e
        echo "trace: replace $mode under $fs: exit $status; $(sed -n 2p "$scratch/$mode-$fs.txt" | sed 's/^ *//')"
        if [ "$fs" = posix ]; then
            want=$([ "$mode" = buggy ] && echo 1 || echo 0)
            if [ "$status" -ne "$want" ]; then
                cat "$scratch/$mode-$fs.txt"
                echo "trace: replace $mode under posix exited $status, expected $want" >&2
                exit 1
            fi
        fi
    done
done
grep -q 'unsynced data op is lost' "$scratch/buggy-posix.txt" || { echo "trace: the buggy run's report does not name the lost write" >&2; exit 1; }
echo "trace: the planted missing fsync is found under posix and the fixed program is clean"
