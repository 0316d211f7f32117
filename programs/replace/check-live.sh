#!/bin/sh
# The checker for live.sh: before "ready" nothing was promised; after it,
# check.sh's rule (the old config or the new one, in full, and the new one
# once "replaced" was printed).
#   check-live.sh DIR PRINTED
set -u
grep -q '^ready$' "$2" || exit 0
exec "$(dirname "$0")/check.sh" "$1" "$2"
