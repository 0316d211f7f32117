"""What every kernel probe shares (FILESYSTEMS.md, "Probes").

A probe is a few file-system calls, in numbered steps, that one rule of
FILESYSTEMS.md is about. `scripts/kernel-check.py` runs it twice over: on
a real ext4, XFS and btrfs (mounted from a loop device, crashed after a
chosen step, remounted, read back) and under `sim trace` (recorded with
strace, every crash state the model allows after that step enumerated),
and checks that every state the kernel left is one the model allows.

A probe module defines:
  INITIAL  the directory's files before the run ({name: bytes}; names with
           a "/" are in a subdirectory, made too); made durable before the
           run, on the kernel by syncfs, in a recording by construction.
  STEPS    functions of (the directory, a dict the steps share), each one
           step; a descriptor a later step uses is kept with `keep`.
  CRASH_AFTER  the steps after which the probe is crashed (1-based).
  RULE     the FILESYSTEMS.md row it probes, in a few words.

and ends with `main(__name__, INITIAL, STEPS)`. Its command line:
  probe.py init DIR     write INITIAL under DIR (no sync)
  probe.py run DIR N    run the first N steps, printing "step K" after each
                        and "done" once every file is closed (so the last
                        line is printed after the last I/O on DIR: the
                        model's crash index after step N is the one where
                        everything was printed)
Each call is one system call on purpose (os.open, os.write, os.fsync,
os.fdatasync, os.rename, ...): a probe must make exactly the calls its
rule is about, nothing a library adds.
"""

import os
import sys

O_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def create(path, data, flags=0):
    """A new file holding `data`: open(O_CREAT|O_TRUNC), one write, the
    descriptor returned open (the caller syncs or closes it)."""
    fd = os.open(path, O_CREATE | flags, 0o644)
    os.write(fd, data)
    return fd


def dir_fsync(path, data_only=False):
    """fsync (or fdatasync) of a directory: its entries."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    if data_only:
        os.fdatasync(fd)
    else:
        os.fsync(fd)
    os.close(fd)


def init(directory, initial):
    for name, data in sorted(initial.items()):
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def keep(shared, name, fd):
    """Keep descriptor `fd` open for later steps, as `shared[name]`; the
    run closes it after the last step."""
    shared[name] = fd
    shared.setdefault("open", []).append(fd)
    return fd


def run(directory, steps, count):
    shared = {}
    for number, step in enumerate(steps[:count], start=1):
        step(directory, shared)
        print(f"step {number}", flush=True)
    for fd in shared.get("open", []):
        os.close(fd)
    print("done", flush=True)


def main(name, initial, steps):
    if name != "__main__":
        return
    if len(sys.argv) >= 3 and sys.argv[1] == "init":
        init(sys.argv[2], initial)
    elif len(sys.argv) == 4 and sys.argv[1] == "run":
        run(sys.argv[2], steps, int(sys.argv[3]))
    else:
        sys.exit("usage: probe.py init DIR | probe.py run DIR STEPS")
