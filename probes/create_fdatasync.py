"""A new file's fdatasync persists its data and length everywhere; of its
name: ext4 commits the journal up to the transaction that created it (the
create sets the inode's datasync transaction), XFS logs the inode's core
with the create, btrfs logs the same as for fsync; posix: nothing."""
import os

from lib import create, keep, main

RULE = "fdatasync of a new file: its data, length and (profile) name"
INITIAL = {"old": b"kept\n"}
CRASH_AFTER = [1, 2]


def write(d, s):
    keep(s, "f", create(os.path.join(d, "new"), b"fdatasynced data\n" * 40))


def fdatasync(d, s):
    os.fdatasync(s["f"])


STEPS = [write, fdatasync]
main(__name__, INITIAL, STEPS)
