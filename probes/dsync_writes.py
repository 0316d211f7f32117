"""Writes through O_DSYNC and O_SYNC descriptors are durable when they
return: O_DSYNC as fdatasync after each (data and length, the name as the
profile's fdatasync rule says), O_SYNC as fsync."""
import os

from lib import create, keep, main

RULE = "O_DSYNC and O_SYNC writes"
INITIAL = {"old": b"kept\n"}
CRASH_AFTER = [1, 2]


def dsync_write(d, s):
    fd = keep(s, "d", create(os.path.join(d, "dsync"), b"first ", os.O_DSYNC))
    os.write(fd, b"second\n")


def sync_write(d, s):
    fd = keep(s, "s", create(os.path.join(d, "osync"), b"first ", os.O_SYNC))
    os.write(fd, b"second\n")


STEPS = [dsync_write, sync_write]
main(__name__, INITIAL, STEPS)
