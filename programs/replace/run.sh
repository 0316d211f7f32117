#!/bin/sh
# The planted proof of `sim trace` (PROGRAMS.md): replace DIR/config with
# new content the classic way — write a temporary file, rename it over the
# old one, fsync the directory — and print "replaced" once it is done.
#
#   run.sh DIR buggy   never fsyncs the temporary file: the rename can be
#                      durable while its data is not, so a crash leaves an
#                      empty config after the old one was gone
#   run.sh DIR fixed   fsyncs the temporary file before the rename
#   run.sh DIR fdatasync   issue 45's program: fdatasyncs the temporary
#                      file, renames it, fdatasyncs it again and prints,
#                      with no directory fsync: the second fdatasync makes
#                      the rename durable on XFS and btrfs, not on ext4
#                      (nor posix), where "replaced" can be followed by the
#                      old config (FILESYSTEMS.md; the kernel probe
#                      probes/rename_fdatasync.py sees ext4 lose it)
#
# `sync FILE` is coreutils' fsync of one file (a directory: its entries),
# `sync -d FILE` its fdatasync.
set -eu
dir=$1
mode=$2
printf 'new content, version 2\n' > "$dir/config.tmp"
if [ "$mode" = fdatasync ]; then
    sync -d "$dir/config.tmp"
    mv "$dir/config.tmp" "$dir/config"
    sync -d "$dir/config"
    echo replaced
    exit 0
fi
if [ "$mode" = fixed ]; then
    sync "$dir/config.tmp"
fi
mv "$dir/config.tmp" "$dir/config"
sync "$dir"
echo replaced
