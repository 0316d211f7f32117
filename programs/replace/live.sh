#!/bin/sh
# run.sh for `sim live` (LIVE.md), whose disk starts empty: first make the
# old config durable (written, fsynced, its directory fsynced: coreutils'
# `sync`), print "ready", then replace it as run.sh MODE does. The shell's
# `> FILE` redirect and coreutils' `sync` and `mv` all run on the
# simulated disk.
#
#   live.sh DIR MODE     MODE: buggy, fixed or fdatasync (run.sh's)
set -eu
dir=$1
printf 'old content, version 1\n' > "$dir/config"
sync "$dir/config"
sync "$dir"
echo ready
exec "$(dirname "$0")/run.sh" "$dir" "$2"
