"""Ordering across two directories: a file created in one, another in the
second, then the second directory fsynced. A journal commits the first's
change too (ext4, XFS); the model makes durable only the synced
directory's (weaker)."""
import os

from lib import create, dir_fsync, main

RULE = "two directories: one's fsync and the other's changes"
INITIAL = {"one/keep": b"1\n", "two/keep": b"2\n"}
CRASH_AFTER = [2, 3]


def create_in_one(d, s):
    os.close(create(os.path.join(d, "one", "a"), b"in one\n"))


def create_in_two(d, s):
    os.close(create(os.path.join(d, "two", "b"), b"in two\n"))


def fsync_two(d, s):
    dir_fsync(os.path.join(d, "two"))


STEPS = [create_in_one, create_in_two, fsync_two]
main(__name__, INITIAL, STEPS)
