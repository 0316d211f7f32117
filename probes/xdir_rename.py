"""A file and a directory moved into another directory (rename across
parents: one change of both), then the moved file's fsync, then the
destination's fsync, then the source's. ext4 and XFS journal the move
whole (one transaction: both parents change together); btrfs logs it with
the fsynced inode or directory. The model: the move is one change of both
parents, never in both or in neither, durable at either parent's fsync."""
import os

from lib import dir_fsync, main

RULE = "rename across directories: the file's fsync, the destination's, the source's"
INITIAL = {"a/f": b"F\n", "a/sub/x": b"X\n", "a/keep": b"a\n", "b/keep": b"b\n"}
CRASH_AFTER = [2, 3, 4, 5]


def move_file(d, s):
    os.rename(os.path.join(d, "a", "f"), os.path.join(d, "b", "f"))


def move_dir(d, s):
    os.rename(os.path.join(d, "a", "sub"), os.path.join(d, "b", "sub"))


def fsync_moved(d, s):
    fd = os.open(os.path.join(d, "b", "f"), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def fsync_destination(d, s):
    dir_fsync(os.path.join(d, "b"))


def fsync_source(d, s):
    dir_fsync(os.path.join(d, "a"))


STEPS = [move_file, move_dir, fsync_moved, fsync_destination, fsync_source]
main(__name__, INITIAL, STEPS)
