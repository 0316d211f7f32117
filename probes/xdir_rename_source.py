"""A file and a directory moved into another directory, then only the
source directory's fsync, then the destination's: whether the source's
fsync alone makes the move durable, or can leave the name in neither
parent (btrfs logs the source's entries; ext4 and XFS commit their
journal). The model: the move is durable at either parent's fsync."""
import os

from lib import dir_fsync, main

RULE = "rename across directories: the source's fsync, then the destination's"
INITIAL = {"a/f": b"F\n", "a/sub/x": b"X\n", "a/keep": b"a\n", "b/keep": b"b\n"}
CRASH_AFTER = [1, 2, 3, 4]


def move_file(d, s):
    os.rename(os.path.join(d, "a", "f"), os.path.join(d, "b", "f"))


def move_dir(d, s):
    os.rename(os.path.join(d, "a", "sub"), os.path.join(d, "b", "sub"))


def fsync_source(d, s):
    dir_fsync(os.path.join(d, "a"))


def fsync_destination(d, s):
    dir_fsync(os.path.join(d, "b"))


STEPS = [move_file, move_dir, fsync_source, fsync_destination]
main(__name__, INITIAL, STEPS)
