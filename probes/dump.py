"""One line naming a directory's whole content, the same for a crash state
that `sim trace explore` writes out and for a probe's directory read back
from a remounted kernel file system: every subdirectory (`d NAME`) and
every file (`f NAME SIZE SHA256-PREFIX`), in name order, joined by "; ".

  dump.py DIR   print the line (one write, so that checkers running at
                once can append lines to one file)
"""

import hashlib
import os
import sys


def state(directory):
    entries = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        rel = os.path.relpath(root, directory)
        for name in dirs:
            entries.append("d " + os.path.normpath(os.path.join(rel, name)))
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            digest = hashlib.sha256(data).hexdigest()[:16]
            entries.append(f"f {os.path.normpath(os.path.join(rel, name))} {len(data)} {digest}")
    return "; ".join(sorted(entries))


if __name__ == "__main__":
    sys.stdout.write(state(sys.argv[1]) + "\n")
