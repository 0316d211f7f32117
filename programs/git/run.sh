#!/bin/sh
# git's workload for `sim trace` (PROGRAMS.md), the operations ALICE
# studied: in the repository init.sh made in DIR, under the fsync setting
# FSYNC, add and commit (twice), create a branch, commit with `commit -a`,
# `git gc`, and commit once more. After each step git reports done, it
# prints an acknowledgement: "commit N SHA", "branch topic SHA", "gc".
#
#   run.sh DIR FSYNC     FSYNC: default (git's own), committed, or all
#                        (core.fsync's components; core.fsyncMethod=fsync)
set -eu
dir=$1
fsync=$2
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_DATE="2026-12-01T00:00:00Z" GIT_COMMITTER_DATE="2026-12-01T00:00:00Z"
cd "$dir"
case $fsync in
    default) set -- ;;
    committed | all) set -- -c "core.fsync=$fsync" -c core.fsyncMethod=fsync ;;
    *) echo "run.sh: FSYNC is default, committed or all" >&2; exit 2 ;;
esac
commit() { # N GIT-OPTIONS: change a tracked file, add a new one, commit
    n=$1
    shift
    seq 1 "$((40 * n))" | sed "s/^/commit $n line /" > notes.txt
    echo "file $n" > "file$n.txt"
    git "$@" add notes.txt "file$n.txt"
    git "$@" commit -q -m "commit $n"
    echo "commit $n $(git rev-parse HEAD)"
}
commit_all() { # N GIT-OPTIONS: `commit -a` (the index written by commit itself)
    n=$1
    shift
    seq 1 "$((40 * n))" | sed "s/^/commit $n line /" > notes.txt
    git "$@" commit -q -a -m "commit $n"
    echo "commit $n $(git rev-parse HEAD)"
}
commit 1 "$@"
commit 2 "$@"
git "$@" branch topic
echo "branch topic $(git rev-parse topic)"
commit_all 3 "$@"
git "$@" gc -q
echo "gc"
commit 4 "$@"
