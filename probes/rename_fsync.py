"""The same replace-by-rename with fsync: a file's fsync persists its own
rename on ext4 and XFS (the rename dirties the inode in its transaction)
and on btrfs (its log tree); posix: only a directory fsync does."""
import os

from lib import create, keep, main

RULE = "fsync after a rename over an existing file"
INITIAL = {"cfg": b"old config\n"}
CRASH_AFTER = [1, 2, 3]


def write_and_fsync(d, s):
    fd = keep(s, "tmp", create(os.path.join(d, "cfg.tmp"), b"new config\n"))
    os.fsync(fd)


def rename(d, s):
    os.rename(os.path.join(d, "cfg.tmp"), os.path.join(d, "cfg"))


def fsync(d, s):
    os.fsync(s["tmp"])


STEPS = [write_and_fsync, rename, fsync]
main(__name__, INITIAL, STEPS)
