"""A directory renamed whole (a snapshot published by renaming it into
place over an empty one): the rename is one change of the parent, durable
at the parent's fsync; a file's fsync inside it does not promise it
(ext4 and XFS commit it with their journal; the model keeps it pending:
weaker). The tree is whole at one name in every state."""
import os

from lib import dir_fsync, main

RULE = "a directory's rename: a file fsynced inside, then the parent's fsync"
INITIAL = {"tmp/a": b"A\n", "tmp/sub/b": b"B\n", "keep": b"k\n"}
CRASH_AFTER = [2, 3, 4, 5]


def mkdir_snap(d, s):
    os.mkdir(os.path.join(d, "snap"))
    dir_fsync(d)


def rename(d, s):
    os.rename(os.path.join(d, "tmp"), os.path.join(d, "snap"))


def fsync_inside(d, s):
    fd = os.open(os.path.join(d, "snap", "a"), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def fsync_renamed(d, s):
    dir_fsync(os.path.join(d, "snap"))


def fsync_parent(d, s):
    dir_fsync(d)


STEPS = [mkdir_snap, rename, fsync_inside, fsync_renamed, fsync_parent]
main(__name__, INITIAL, STEPS)
