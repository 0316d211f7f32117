"""Issue 45's program: cfg.tmp written and fdatasynced, renamed over cfg,
fdatasynced again. ext4's second fdatasync waits for the inode's datasync
transaction, which the rename does not advance: the rename may be lost.
XFS's rename logs the inode's core, which its fdatasync forces; btrfs's
fdatasync logs as its fsync does."""
import os

from lib import create, keep, main

RULE = "fdatasync after a rename over an existing file"
INITIAL = {"cfg": b"old config\n"}
CRASH_AFTER = [1, 2, 3]


def write_and_fdatasync(d, s):
    fd = keep(s, "tmp", create(os.path.join(d, "cfg.tmp"), b"new config\n"))
    os.fdatasync(fd)


def rename(d, s):
    os.rename(os.path.join(d, "cfg.tmp"), os.path.join(d, "cfg"))


def fdatasync(d, s):
    os.fdatasync(s["tmp"])


STEPS = [write_and_fdatasync, rename, fdatasync]
main(__name__, INITIAL, STEPS)
