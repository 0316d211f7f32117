"""A directory emptied and removed (what `remove_dir_all` does): its
files' unlinks are changes of it, its removal a change of the parent,
durable at the parent's fsync; another file's fsync in the parent commits
the removal with it on ext4 and XFS (their journal), not on btrfs (its
own changes) or posix."""
import os

from lib import create, dir_fsync, main

RULE = "rmdir of an emptied directory, then another file's fsync, then the parent's fsync"
INITIAL = {"d/f": b"f\n", "d/g": b"g\n", "keep": b"k\n"}
CRASH_AFTER = [2, 3, 4]


def empty(d, s):
    os.unlink(os.path.join(d, "d", "f"))
    os.unlink(os.path.join(d, "d", "g"))


def rmdir(d, s):
    os.rmdir(os.path.join(d, "d"))


def fsync_other(d, s):
    fd = create(os.path.join(d, "other"), b"o\n")
    os.fsync(fd)
    os.close(fd)


def fsync_parent(d, s):
    dir_fsync(d)


STEPS = [empty, rmdir, fsync_other, fsync_parent]
main(__name__, INITIAL, STEPS)
