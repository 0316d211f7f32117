#!/bin/sh
# check.sh's rule as a checker server (`sim trace explore --check-server`,
# PROGRAMS.md): for each line DIR<TAB>PRINTED<TAB>CRASH_INDEX<TAB>STATE on
# standard input, check.sh itself runs on DIR and PRINTED in a subshell (a
# fork, no new shell to start; its `cd` and `exit` stay inside it), and the
# answer is `pass` or `fail` with what it printed. The rule is check.sh's,
# read from the same file, so the verdicts cannot drift apart. What it
# saves is small: a state's cost is git's own processes (rev-parse,
# merge-base, `fsck --full`), which a server cannot keep running.
#
#   check-server.sh
here=$(dirname "$0")
tab=$(printf '\t')
while IFS=$tab read -r dir printed io state; do
    if why=$(set -- "$dir" "$printed"; . "$here/check.sh" 2>&1); then
        echo pass
    else
        echo "fail $(printf '%s' "$why" | tr '\n' ' ')"
    fi
done
