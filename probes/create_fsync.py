"""A file's fsync persists its data and its own new name (ext4, XFS: with
every earlier change of its directory; btrfs: its own changes); posix:
only a directory fsync makes the name durable."""
import os

from lib import create, keep, main

RULE = "fsync of a new file: its data, length and name"
INITIAL = {"old": b"kept\n"}
CRASH_AFTER = [1, 2]


def write(d, s):
    keep(s, "f", create(os.path.join(d, "new"), b"fsynced data\n" * 40))


def fsync(d, s):
    os.fsync(s["f"])


STEPS = [write, fsync]
main(__name__, INITIAL, STEPS)
