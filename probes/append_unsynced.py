"""An append left unsynced at the crash point, while another file's fsync
commits the journal: under data=ordered ext4 never exposes a length whose
blocks were not written; the model keeps any prefix of the append (zeros
or the append's bytes past the old end), weaker."""
import os

from lib import main

RULE = "an append unsynced at the crash (no stale data, no garbage)"
INITIAL = {"log": b"record 1\n"}
CRASH_AFTER = [1, 2]


def append(d, s):
    fd = os.open(os.path.join(d, "log"), os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"record 2\n" * 600)
    os.close(fd)


def commit_elsewhere(d, s):
    fd = os.open(os.path.join(d, "other"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"x")
    os.fsync(fd)
    os.close(fd)


STEPS = [append, commit_elsewhere]
main(__name__, INITIAL, STEPS)
