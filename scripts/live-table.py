#!/usr/bin/env python3
"""LIVE.md's fsync-failure table (issue 50, after CuttleFS): for each program
and each place an fsync can fail (the data file, the journal or WAL, the
directory), one `sim live sweep --every-index --crash-mode strict
--fault-at I:eio` per profile: what the program did after the failure (its
exit status and the acknowledgements it printed, from the run to the end)
and whether any crash after it lost an acknowledged write.

The I/O index of each fault site is found in the program's own run
(`sim live run --show-ios`), by the call's pattern and its occurrence.

    SIM=target/release/sim python3 scripts/live-table.py > table.md
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

SIM = os.environ.get("SIM", "target/release/sim").split()
PROFILES = os.environ.get("PROFILES", "posix ext4 xfs btrfs").split()
SEEDS = os.environ.get("SEEDS", "0..1")


def ios(command):
    out = subprocess.run(SIM + ["live", "run", "--dir", DIR, "--show-ios", "--"] + command,
                         capture_output=True, text=True).stderr
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^sim live: io (\d+): (.*)$", out, re.M)]


def site(calls, pattern, nth):
    hits = [index for index, call in calls if re.search(pattern, call)]
    return hits[nth] if len(hits) > nth else None


def sweep(command, check, fs, index):
    args = SIM + ["live", "sweep", "--dir", DIR, "--seeds", SEEDS, "--every-index", "--crash-mode", "strict",
                  "--fs", fs, "--fault-at", f"{index}:eio", "--check", check, "--"] + command
    done = subprocess.run(args, capture_output=True, text=True)
    text = done.stderr
    end = re.search(r"seed \d+ to the end: (?:ok \((\d+) I/Os, ([^,]+), .*printed (\".*\")\)|FAIL\n.*the program: ([^\n]+)\n(?:.*\n)*?  printed before the crash: (\".*\"))", text)
    ended = (end.group(2) or end.group(4)) if end else "?"
    printed = (end.group(3) or end.group(5)) if end else "?"
    acks = len(re.findall(r"ack \d+|replaced", printed))
    summary = re.search(r"(\d+) runs, (\d+) failing", text)
    fails = re.findall(r"checker: FAIL: (.*)", text)
    first = re.sub(r"\d+", "N", fails[0])[:70] if fails else ""
    return ended, acks, summary.groups() if summary else ("?", "?"), first


ROWS = []


def program(name, command, check, sites):
    if ONLY and not name.startswith(ONLY):
        return
    calls = ios(command)
    for label, pattern, nth in sites:
        index = site(calls, pattern, nth)
        if index is None:
            print(f"| {name} | {label} | (no such call) |", file=sys.stderr)
            continue
        for fs in PROFILES:
            ended, acks, (runs, failing), first = sweep(command, check, fs, index)
            repro = f"--fault-at {index}:eio --fs {fs}"
            ROWS.append(f"| {name} | {label} (I/O {index}) | {fs} | {ended}, {acks} acks | {failing} of {runs} | {first} | `{repro}` |")
            print(ROWS[-1], flush=True)


DIR = tempfile.mkdtemp(prefix="live-table-") + "/db"
ONLY = os.environ.get("ONLY", "")
probe = os.environ.get("PROBE", "/tmp/probe")
here = os.getcwd()
print("| program | fsync failed | fs | the program then | runs losing an ack | the checker says | flags |")
print("|---|---|---|---|---|---|---|")
for mode in ["retry", "honest"]:
    program(f"probe {mode}", [probe, DIR, mode], f'{here}/programs/fsyncgate/check.sh "$1" "$2"',
            [("data (record 2)", r"^fsync h1$", 1), ("directory", r"^fsync directory", 0)])
sq = lambda j, s: f'{here}/programs/sqlite3/check.sh "$1" "$2" {j} {s}'
program("sqlite3 DELETE+FULL", [f"{here}/programs/sqlite3/run.sh", DIR, "delete", "full"], sq("delete", "full"),
        [("journal (commit 1)", r"^fdatasync h7$", 0), ("directory (commit 1's journal)", r"^fsync directory", 1),
         ("database (commit 1)", r"^fdatasync h1$", 1)])
program("sqlite3 WAL+FULL", [f"{here}/programs/sqlite3/run.sh", DIR, "wal", "full"], sq("wal", "full"),
        [("WAL (commit 1)", r"^fdatasync h6$", 2), ("directory (new WAL)", r"^fsync directory", 1),
         ("database (checkpoint)", r"^fdatasync h1$", 1)])
program("gdbmtool", [f"{here}/programs/gdbm/run.sh", DIR, "default"], f'{here}/programs/gdbm/check.sh "$1" "$2"',
        [("data (store 2's close)", r"^fsync h1$", 2)])
rp = f'{here}/programs/replace/check-live.sh "$1" "$2"'
for mode, sites in [("fixed", [("data (config.tmp)", r"^fsync h", 1), ("directory (after the rename)", r"^fsync directory", 1)]),
                    ("buggy", [("directory (after the rename)", r"^fsync directory", 1)]),
                    ("fdatasync", [("data (config.tmp)", r"^fdatasync h", 0), ("data (config, after the rename)", r"^fdatasync h", 1)])]:
    program(f"replace {mode} (sh, sync, mv)", [f"{here}/programs/replace/live.sh", DIR, mode], rp, sites)
