"""Replace by rename with no fsync of the new file, then a journal commit
forced by another file's fsync. ext4's auto_da_alloc (on by default)
allocates the renamed file's delayed blocks before the rename, so under
data=ordered its data reaches the disk before the commit that holds the
rename; mounted noauto_da_alloc (profile ext4-noauto), a committed rename
may name an empty file. XFS and btrfs promise no such thing."""
import os

from lib import create, main

RULE = "rename over an existing file without a data sync (auto_da_alloc)"
INITIAL = {"cfg": b"old config\n"}
CRASH_AFTER = [2, 3]


def write(d, s):
    os.close(create(os.path.join(d, "cfg.tmp"), b"new config\n" * 50))


def rename(d, s):
    os.rename(os.path.join(d, "cfg.tmp"), os.path.join(d, "cfg"))


def commit_elsewhere(d, s):
    fd = create(os.path.join(d, "marker"), b"m\n")
    os.fsync(fd)
    os.close(fd)


STEPS = [write, rename, commit_elsewhere]
main(__name__, INITIAL, STEPS)
