"""An append made durable by fdatasync (data and the size change), then
one by fsync; the file existed, durable, before."""
import os

from lib import keep, main

RULE = "fdatasync and fsync after an append: data and length"
INITIAL = {"log": b"record 1\n"}
CRASH_AFTER = [1, 2, 3]


def append_and_fdatasync(d, s):
    fd = keep(s, "log", os.open(os.path.join(d, "log"), os.O_WRONLY | os.O_APPEND))
    os.write(fd, b"record 2\n" * 100)
    os.fdatasync(fd)


def append(d, s):
    os.write(s["log"], b"record 3\n" * 100)


def fsync(d, s):
    os.fsync(s["log"])


STEPS = [append_and_fdatasync, append, fsync]
main(__name__, INITIAL, STEPS)
