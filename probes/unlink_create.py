"""Unlink a name, create it again with new content, fsync the new file: on
ext4 and XFS the fsync commits the unlink too (the journal's prefix); on
btrfs the earlier unlink touches the new file's name (the model then
persists nothing, weaker than btrfs's log replay)."""
import os

from lib import create, keep, main

RULE = "unlink then create of the same name, fsync"
INITIAL = {"f": b"first file\n", "g": b"untouched\n"}
CRASH_AFTER = [1, 2]


def unlink_and_create(d, s):
    os.unlink(os.path.join(d, "f"))
    keep(s, "f", create(os.path.join(d, "f"), b"second file\n"))


def fsync(d, s):
    os.fsync(s["f"])


STEPS = [unlink_and_create, fsync]
main(__name__, INITIAL, STEPS)
