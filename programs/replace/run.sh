#!/bin/sh
# The planted proof of `sim trace` (PROGRAMS.md): replace DIR/config with
# new content the classic way — write a temporary file, rename it over the
# old one, fsync the directory — and print "replaced" once it is done.
#
#   run.sh DIR buggy   never fsyncs the temporary file: the rename can be
#                      durable while its data is not, so a crash leaves an
#                      empty config after the old one was gone
#   run.sh DIR fixed   fsyncs the temporary file before the rename
#
# `sync FILE` is coreutils' fsync of one file (a directory: its entries).
set -eu
dir=$1
mode=$2
printf 'new content, version 2\n' > "$dir/config.tmp"
if [ "$mode" = fixed ]; then
    sync "$dir/config.tmp"
fi
mv "$dir/config.tmp" "$dir/config"
sync "$dir"
echo replaced
