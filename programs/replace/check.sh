#!/bin/sh
# The checker for run.sh: DIR/config holds the old content or the new one,
# in full, and the new one once "replaced" was printed.
#   check.sh DIR PRINTED   (as `sim trace explore --check` passes them)
set -u
dir=$1
printed=$2
old='old content, version 1'
new='new content, version 2'
if [ ! -f "$dir/config" ]; then
    echo "config is missing"
    exit 1
fi
content=$(cat "$dir/config")
if grep -q '^replaced$' "$printed"; then
    [ "$content" = "$new" ] || { echo "\"replaced\" was printed, but config holds: '$content'"; exit 1; }
else
    [ "$content" = "$old" ] || [ "$content" = "$new" ] || { echo "config holds neither version: '$content'"; exit 1; }
fi
