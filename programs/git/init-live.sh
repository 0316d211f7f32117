#!/bin/sh
# init.sh for `sim live` (LIVE.md): the same repository made with no
# template instead of removing the sample hooks afterwards, since the
# simulated disk cannot list a directory's subdirectories for `rm -rf`;
# and one pack thread (`pack.threads 1`): `git gc`'s pack-objects would
# otherwise write from threads the layer does not schedule in a preloaded
# program. What the workload then does (run.sh) is unchanged.
#
#   init-live.sh DIR
set -eu
dir=$1
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
git init -q --template= -b main "$dir"
git -C "$dir" config user.name "segsim workload"
git -C "$dir" config user.email "workload@segsim.invalid"
git -C "$dir" config gc.auto 0
git -C "$dir" config gc.autoDetach false
git -C "$dir" config maintenance.auto false
git -C "$dir" config core.createObject rename
git -C "$dir" config pack.threads 1
