"""ftruncate made durable by fdatasync (the size change is data's part),
then a truncation left to another file's fsync."""
import os

from lib import keep, main

RULE = "truncate: the length after fdatasync, and unsynced"
INITIAL = {"data": b"0123456789" * 1000, "other": b"o\n"}
CRASH_AFTER = [1, 2]


def truncate_and_fdatasync(d, s):
    fd = keep(s, "data", os.open(os.path.join(d, "data"), os.O_WRONLY))
    os.ftruncate(fd, 5000)
    os.fdatasync(fd)


def truncate_then_commit_elsewhere(d, s):
    os.ftruncate(s["data"], 100)
    fd = os.open(os.path.join(d, "other"), os.O_WRONLY)
    os.write(fd, b"p")
    os.fsync(fd)
    os.close(fd)


STEPS = [truncate_and_fdatasync, truncate_then_commit_elsewhere]
main(__name__, INITIAL, STEPS)
