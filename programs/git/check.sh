#!/bin/sh
# The checker for run.sh (PROGRAMS.md), on the crash state DIR: git's own
# reading of the repository is its recovery (git has no recovery step;
# a stale *.lock is left for the user). It requires, in this order (the
# first failure is the one reported):
#  - HEAD to resolve to a commit, once the first commit was acknowledged;
#  - every commit printed as "commit N SHA" to be reachable from HEAD;
#  - the branch printed as "branch topic SHA" to name that commit;
#  - `git fsck --full` to pass (every object readable and whole, every
#    ref and reflog entry naming an object that exists, the index sound).
#
#   check.sh DIR PRINTED
set -u
dir=$1
printed=$2
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
cd "$dir" || { echo "no directory"; exit 1; }
fail() { echo "$*"; exit 1; }
# fsck's first two errors, without its notices and dangling objects (and
# with any garbage bytes in a torn file's name shown as text).
fsck_errors() { echo "$1" | grep -av '^dangling\|^notice' | head -n 2 | tr '\n' ' '; }
# Nothing acknowledged yet: only soundness is asked.
if grep -q '^commit ' "$printed"; then
    # What was acknowledged first (a lost acknowledgement is the worse
    # news), then soundness.
    if ! head=$(git rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null); then
        ref=$(sed -n 's/^ref: //p' .git/HEAD 2>/dev/null)
        if [ -f ".git/$ref" ]; then loose="$(wc -c < ".git/$ref") bytes"; else loose=missing; fi
        packed=$(grep -c " $ref\$" .git/packed-refs 2>/dev/null)
        fail "HEAD does not resolve: its ref ${ref:-?} is $loose as a loose ref, in packed-refs ${packed:-0} times"
    fi
    while read -r word n sha; do
        case $word in
            commit)
                why=$(git merge-base --is-ancestor "$sha" "$head" 2>&1) ||
                    fail "acknowledged commit $n is not reachable from HEAD: $(echo "$why" | head -n 1)"
                ;;
            branch)
                got=$(git rev-parse -q --verify "refs/heads/$n" 2>&1) || fail "acknowledged branch $n is missing"
                [ "$got" = "$sha" ] || fail "branch $n names $got, not the acknowledged $sha"
                ;;
        esac
    done < "$printed"
fi
out=$(git fsck --full 2>&1) || fail "fsck: $(fsck_errors "$out")"
exit 0
