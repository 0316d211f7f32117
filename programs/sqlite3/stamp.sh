#!/bin/sh
# A program whose bytes depend on what the operating system hands it fresh
# (`sim live`'s determinism check, LIVE.md): sqlite3 stores the time
# (`datetime('now')`, its `gettimeofday`), a random number (`random()`,
# seeded from `/dev/urandom` mixed with its pid and the time) and a random
# blob in DIR/db, in DELETE mode (the journal's header nonce is random
# too), and prints them, with the shell's pid, its parent's, and `date`.
#
#   stamp.sh DIR
set -eu
dir=$1
echo "shell pid $$"
date -u '+date %Y-%m-%dT%H:%M:%S'
sqlite3 "$dir/db" "CREATE TABLE t(at TEXT, r INTEGER, b BLOB);
INSERT INTO t VALUES(datetime('now'), random(), randomblob(8));
SELECT 'row', at, r, hex(b) FROM t;"
