#!/bin/sh
# Prepare DIR for run.sh, before `sim trace record`: an empty git
# repository (Debian's git) with DIR as its work tree, its identity set,
# automatic gc and maintenance off (the workload runs `git gc` itself, in
# the foreground), and `core.createObject=rename`: git's default moves a
# new object into place with link() and unlink(), and the simulated disk
# has no hard links (`sim trace record` refuses link), so objects are
# renamed into place instead, the way git does where links fail
# (PROGRAMS.md says so). The sample hooks are removed: they are not state.
#
#   init.sh DIR
set -eu
dir=$1
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
git init -q -b main "$dir"
git -C "$dir" config user.name "segsim workload"
git -C "$dir" config user.email "workload@segsim.invalid"
git -C "$dir" config gc.auto 0
git -C "$dir" config gc.autoDetach false
git -C "$dir" config maintenance.auto false
git -C "$dir" config core.createObject rename
rm -rf "$dir/.git/hooks"
