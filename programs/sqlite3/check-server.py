#!/usr/bin/env python3
"""check.sh's rule as a checker server (`sim trace explore --check-server`,
PROGRAMS.md): one process judges every state its job is handed.

For each line `DIR<TAB>PRINTED<TAB>CRASH_INDEX<TAB>STATE` on standard input
it answers `pass` or `fail WHY` on standard output, by exactly check.sh's
rule: the crash state's database passes PRAGMA integrity_check and holds a
prefix of the workload (rows 1..k, each with its exact value; no table
counts as k = -1), and where JOURNAL and SYNC promise durability every
acknowledged commit is there (k >= the last "ack N"). The database is
opened with Python's sqlite3 module, the same library the sqlite3 shell
uses, so a hot journal is rolled back on open as the shell rolls it back.
Nothing is carried from one state to the next: each is opened, judged and
closed on its own.

    check-server.py JOURNAL SYNC
"""
import os
import re
import sqlite3
import sys

DURABLE = {"delete:extra", "truncate:full", "truncate:extra", "persist:full", "persist:extra", "wal:full", "wal:extra"}
EVENTUAL = {"delete:full", "wal:normal"}
ROWS = "SELECT count(*), ifnull(max(id), 0), ifnull(sum(v = printf('row %d %s', id, hex(zeroblob(1500)))), 0) FROM t"


def last_ack(printed):
    with open(printed, "rb") as f:
        acks = re.findall(rb"^ack ([0-9]+)$", f.read(), re.M)
    return int(acks[-1]) if acks else -1


def judge(dir, printed, promise):
    """None if the state passes, else why not (check.sh's words)."""
    acked = last_ack(printed)
    db = os.path.join(dir, "db")
    if not os.path.isfile(db):
        if promise == "eventual" or acked < 0:
            return None
        return f"db is missing after ack {acked}"
    try:
        conn = sqlite3.connect(db, isolation_level=None)
    except sqlite3.Error as e:
        return f"integrity_check: {e}"
    try:
        try:
            integrity = "\n".join(row[0] for row in conn.execute("PRAGMA integrity_check"))
        except sqlite3.Error as e:
            integrity = f"Error: {e}"
        if integrity != "ok":
            return f"integrity_check: {integrity}"
        try:
            (tables,) = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 't'").fetchone()
        except sqlite3.Error as e:
            return f"reading the schema: {e}"
        k = -1
        if tables == 1:
            try:
                count, top, exact = conn.execute(ROWS).fetchone()
            except sqlite3.Error as e:
                return f"not a prefix of the workload: count|max|exact = {e}"
            if not (count == top == exact):
                return f"not a prefix of the workload: count|max|exact = {count}|{top}|{exact}"
            k = count
        elif tables != 0:
            return f"reading the schema: {tables}"
        if promise == "durable" and k < acked:
            return f"ack {acked} was printed, but the database holds {k} rows (-1: no table)"
        return None
    finally:
        conn.close()


def main():
    level = f"{sys.argv[1]}:{sys.argv[2]}"
    if level in DURABLE:
        promise = "durable"
    elif level in EVENTUAL:
        promise = "eventual"
    else:
        print(f"check-server.py: {sys.argv[1]}/{sys.argv[2]} promises nothing to check", file=sys.stderr)
        return 2
    for line in sys.stdin:
        dir, printed, _io, _state = line.rstrip("\n").split("\t")
        why = judge(dir, printed, promise)
        print("pass" if why is None else "fail " + why.replace("\n", " "), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
