"""A directory fsync persists its entries (every profile); an fdatasync of
a directory does too (ext4 forces a full commit for a directory, XFS logs
the directory inode)."""
import os

from lib import create, dir_fsync, main

RULE = "directory fsync (and fdatasync) persists the entries"
INITIAL = {"old": b"kept\n"}
CRASH_AFTER = [1, 2, 3]


def create_two(d, s):
    for name in ("a", "b"):
        os.close(create(os.path.join(d, name), name.encode() * 10))


def fsync_dir(d, s):
    dir_fsync(d)


def unlink_then_fdatasync_dir(d, s):
    os.unlink(os.path.join(d, "a"))
    dir_fsync(d, data_only=True)


STEPS = [create_two, fsync_dir, unlink_then_fdatasync_dir]
main(__name__, INITIAL, STEPS)
