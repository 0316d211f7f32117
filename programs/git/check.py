#!/usr/bin/env python3
"""check.sh's rule for run.sh's repository, read by Python itself instead
of by git's processes (PROGRAMS.md; issue 51), so that one process can
judge many crash states: `git rev-parse`, `merge-base` and `fsck --full`
are one process each per state, and a checker server that runs them
(check-server.sh) saves almost nothing.

    check.py DIR PRINTED     judge one state (exit 0 pass, 1 fail + why)
    check.py --server        a checker server (`sim trace explore
                             --check-server`): for each line
                             DIR<TAB>PRINTED<TAB>CRASH_INDEX<TAB>STATE on
                             standard input, `pass` or `fail WHY` back

The rule, in check.sh's order (the first failure is the one reported):
once a commit was acknowledged, HEAD resolves to a commit, every
acknowledged commit is reachable from it and the acknowledged branch names
its commit; then what `git fsck --full` holds a repository to, for the
files this workload writes: every loose object inflates to what its name
hashes; every pack's index, pack and reverse index whole (their trailing
SHA-1s) and the pack's objects readable; the commit graph whole, naming
objects that exist; packed-refs well formed; every ref, reflog entry, index
entry and cache-tree entry naming an object that exists; the index whole
(signature, version, trailing SHA-1); and every object reachable from
those present. Nothing is carried from one state to the next. The rule
is a reading of git 2.47's behaviour, not git itself: `make trace` holds
its verdicts to check.sh's, state for state, on a recording.
"""
import hashlib
import os
import re
import struct
import sys
import zlib

HEX40 = re.compile(rb"^[0-9a-f]{40}$")
REFLOG_STAMP = re.compile(rb"> ([0-9]+) ")
TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}


class Bad(Exception):
    """The state fails; the message says why."""


class Repo:
    """One crash state's repository, read on demand."""

    def __init__(self, top):
        self.git = os.path.join(top, ".git")
        self.objects = os.path.join(self.git, "objects")
        self.cache = {}
        self.packs = None

    def path(self, *parts):
        return os.path.join(self.git, *parts)

    def loose(self, oid):
        """(type, body) of a loose object, None if there is no file."""
        name = os.path.join(self.objects, oid[:2], oid[2:])
        try:
            with open(name, "rb") as f:
                raw = f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        where = f".git/objects/{oid[:2]}/{oid[2:]}"
        if not raw:
            raise Bad(f"fsck: object file {where} is empty")
        try:
            data = zlib.decompress(raw)
        except zlib.error as e:
            raise Bad(f"fsck: inflate: {e} of {where}")
        if hashlib.sha1(data).hexdigest() != oid:
            raise Bad(f"fsck: {where}: hash mismatch")
        header, _, body = data.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not size.isdigit() or int(size) != len(body):
            raise Bad(f"fsck: {where}: bad header")
        return kind, body

    def load_packs(self):
        """Every pack with an index: (offsets by oid, pack bytes, name).

        A pack is what git's packfile.c takes for one: any `*.idx` in the
        pack directory (prepare_pack: no `pack-` prefix asked, so a
        repack's `.tmp-*-pack-*.idx` a crash left is read too) whose
        `.pack` is there (add_packed_git: an index without it is no pack)."""
        if self.packs is not None:
            return self.packs
        self.packs = []
        folder = os.path.join(self.objects, "pack")
        names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        for name in names:
            stem = name[: -len(".idx")]
            if name.endswith(".idx") and stem + ".pack" in names:
                self.packs.append(read_pack(folder, stem, names))
        return self.packs

    def read(self, oid):
        """(type, body) of an object, or Bad naming it missing."""
        if oid in self.cache:
            return self.cache[oid]
        found = self.loose(oid)
        if found is None:
            for offsets, pack, name in self.load_packs():
                if oid in offsets:
                    found = pack_object(pack, offsets[oid], name)
                    break
        if found is None:
            raise Missing(oid)
        self.cache[oid] = found
        return found

    def has(self, oid):
        try:
            self.read(oid)
            return True
        except Missing:
            return False


class Missing(Bad):
    def __init__(self, oid):
        super().__init__(f"missing object {oid}")
        self.oid = oid


def sha1_trailer_ok(data):
    return len(data) >= 20 and hashlib.sha1(data[:-20]).digest() == data[-20:]


def read_pack(folder, stem, names):
    """A pack's index (v2) and pack, both checked whole, and its reverse
    index if there is one."""
    def whole(suffix, magic):
        try:
            with open(os.path.join(folder, stem + suffix), "rb") as f:
                data = f.read()
        except OSError as e:
            raise Bad(f"fsck: packfile {stem}{suffix} cannot be read: {e.strerror}")
        if not data.startswith(magic) or not sha1_trailer_ok(data):
            raise Bad(f"fsck: {stem}{suffix} is torn (bad signature or SHA-1 trailer)")
        return data

    idx = whole(".idx", b"\377tOc\0\0\0\2")
    pack = whole(".pack", b"PACK")
    if idx[-40:-20] != pack[-20:]:
        raise Bad(f"fsck: {stem}.pack does not match its index")
    if stem + ".rev" in names:
        whole(".rev", b"RIDX")
    count = struct.unpack(">I", idx[8 + 255 * 4 : 8 + 256 * 4])[0]
    oids_at = 8 + 256 * 4
    offsets_at = oids_at + count * 20 + count * 4
    offsets = {}
    for i in range(count):
        oid = idx[oids_at + 20 * i : oids_at + 20 * i + 20].hex()
        (offset,) = struct.unpack(">I", idx[offsets_at + 4 * i : offsets_at + 4 * i + 4])
        if offset & 0x80000000:
            raise Bad(f"fsck: {stem}.idx: a 64-bit offset (not expected of this workload)")
        offsets[oid] = offset
    by_offset = {offset: oid for oid, offset in offsets.items()}
    for oid, offset in offsets.items():
        kind, body = pack_object(pack, offset, stem, by_offset)
        if hashlib.sha1(b"%s %d\0" % (kind, len(body)) + body).hexdigest() != oid:
            raise Bad(f"fsck: {stem}.pack: object {oid} does not hash to its name")
    return offsets, pack, stem


def pack_object(pack, offset, stem, by_offset=None):
    """(type, body) of the object at `offset`, deltas applied."""
    byte = pack[offset]
    kind, size, shift, at = (byte >> 4) & 7, byte & 15, 4, offset + 1
    while byte & 0x80:
        byte = pack[at]
        size |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
    if kind == 6:  # OFS_DELTA
        byte = pack[at]
        back, at = byte & 0x7F, at + 1
        while byte & 0x80:
            byte = pack[at]
            back, at = ((back + 1) << 7) | (byte & 0x7F), at + 1
        base_kind, base = pack_object(pack, offset - back, stem, by_offset)
        return base_kind, apply_delta(base, inflate(pack, at, stem))
    if kind == 7:  # REF_DELTA
        raise Bad(f"fsck: {stem}.pack: a REF_DELTA (not expected of this workload)")
    if kind not in TYPES:
        raise Bad(f"fsck: {stem}.pack: object type {kind} at {offset}")
    body = inflate(pack, at, stem)
    if len(body) != size:
        raise Bad(f"fsck: {stem}.pack: object at {offset} has the wrong size")
    return TYPES[kind], body


def inflate(pack, at, stem):
    try:
        return zlib.decompressobj().decompress(pack[at:])
    except zlib.error as e:
        raise Bad(f"fsck: {stem}.pack: inflate: {e}")


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def apply_delta(base, delta):
    _, at = varint(delta, 0)
    size, at = varint(delta, at)
    out = bytearray()
    while at < len(delta):
        op = delta[at]
        at += 1
        if op & 0x80:
            offset = length = 0
            for i in range(4):
                if op & (1 << i):
                    offset |= delta[at] << (8 * i)
                    at += 1
            for i in range(3):
                if op & (0x10 << i):
                    length |= delta[at] << (8 * i)
                    at += 1
            out += base[offset : offset + (length or 0x10000)]
        else:
            out += delta[at : at + op]
            at += op
    if len(out) != size:
        raise Bad("fsck: a delta does not give its declared size")
    return bytes(out)


def packed_refs(repo):
    """{refname: oid} from packed-refs (missing: none)."""
    try:
        with open(repo.path("packed-refs"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    if data and not data.endswith(b"\n"):
        raise Bad("fsck: fatal: unterminated line in .git/packed-refs")
    refs = {}
    for line in data.splitlines():
        if line.startswith(b"#") or (line.startswith(b"^") and HEX40.match(line[1:])):
            continue
        oid, _, name = line.partition(b" ")
        if not HEX40.match(oid) or not name:
            raise Bad(f"fsck: fatal: unexpected line in .git/packed-refs: {line[:60]!r}")
        refs[name.decode()] = oid.decode()
    return refs


def loose_ref(repo, name):
    """The oid a loose ref holds; None if there is no file; Bad if broken."""
    try:
        with open(repo.path(name), "rb") as f:
            data = f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    oid = data.strip()
    if not HEX40.match(oid):
        raise Bad(f"{name} is broken ({len(data)} bytes)")
    return oid.decode()


def resolve(repo, name, packed):
    oid = loose_ref(repo, name)
    return oid if oid is not None else packed.get(name)


def head_ref(repo):
    with open(repo.path("HEAD"), "rb") as f:
        data = f.read()
    if not data.startswith(b"ref: "):
        raise Bad(f"HEAD is not a symbolic ref: {data[:60]!r}")
    return data[5:].strip().decode()


def is_ancestor(repo, oid, head):
    seen, todo = set(), [head]
    while todo:
        at = todo.pop()
        if at == oid:
            return True
        if at in seen:
            continue
        seen.add(at)
        kind, body = repo.read(at)
        if kind != b"commit":
            raise Bad(f"{at} is a {kind.decode()}, not a commit")
        todo += [line[7:].decode() for line in body.split(b"\n\n")[0].split(b"\n") if line.startswith(b"parent ")]
    return False


def acknowledged(repo, printed, packed):
    """check.sh's first half: what was acknowledged is there."""
    lines = printed.decode(errors="replace").splitlines()
    if not any(line.startswith("commit ") for line in lines):
        return
    ref = head_ref(repo)
    try:
        head = resolve(repo, ref, packed)
    except Bad:
        head = None
    if head is None or not repo.has(head) or repo.read(head)[0] != b"commit":
        raise Bad(f"HEAD does not resolve (its ref {ref})")
    for line in lines:
        words = line.split()
        if len(words) == 3 and words[0] == "commit":
            try:
                reached = repo.has(words[2]) and is_ancestor(repo, words[2], head)
            except Bad as e:
                raise Bad(f"acknowledged commit {words[1]} is not reachable from HEAD: {e}")
            if not reached:
                raise Bad(f"acknowledged commit {words[1]} is not reachable from HEAD")
        elif len(words) == 3 and words[0] == "branch":
            try:
                got = resolve(repo, f"refs/heads/{words[1]}", packed)
            except Bad:
                got = None
            if got is None:
                raise Bad(f"acknowledged branch {words[1]} is missing")
            if got != words[2]:
                raise Bad(f"branch {words[1]} names {got}, not the acknowledged {words[2]}")


def loose_objects(repo):
    """Every loose object file, checked whole (fsck reads each)."""
    for fan in sorted(os.listdir(repo.objects)):
        folder = os.path.join(repo.objects, fan)
        if len(fan) != 2 or not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if len(name) == 38 and HEX40.match((fan + name).encode()):
                repo.read(fan + name)


def commit_graph(repo):
    """The commit graph whole, every commit it lists present."""
    try:
        with open(os.path.join(repo.objects, "info", "commit-graph"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return
    if not data.startswith(b"CGPH") or not sha1_trailer_ok(data):
        raise Bad("fsck: the commit-graph is torn (bad signature or checksum)")
    chunks = data[8]
    table = [struct.unpack(">IQ", data[8 + 4 + 12 * i : 8 + 4 + 12 * i + 12]) for i in range(chunks + 1)]
    for (chunk, start), (_, end) in zip(table, table[1:]):
        if chunk == 0x4F49444C:  # OIDL
            for at in range(start, end, 20):
                oid = data[at : at + 20].hex()
                if not repo.has(oid):
                    raise Bad(f"fsck: the commit-graph names {oid}, which is missing")


def reflog_roots(repo):
    """Every reflog entry's objects (fsck: each must exist)."""
    roots = []
    top = repo.path("logs")
    for folder, _, files in sorted(os.walk(top)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                for line in f.read().split(b"\n"):
                    words = line.split(b" ", 2)
                    if len(words) < 3 or not HEX40.match(words[0]) or not HEX40.match(words[1]):
                        continue
                    # git skips an entry it cannot parse: no `> `, or a
                    # timestamp that is not a number above zero.
                    stamp = REFLOG_STAMP.search(words[2])
                    if not stamp or int(stamp.group(1)) == 0:
                        continue
                    for oid in words[:2]:
                        if oid != b"0" * 40:
                            if not repo.has(oid.decode()):
                                raise Bad(f"fsck: {os.path.relpath(path, top)}: invalid reflog entry {oid.decode()}")
                            roots.append(oid.decode())
    return roots


def index_roots(repo):
    """The index whole; its entries' and cache-tree's objects."""
    try:
        with open(repo.path("index"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    if len(data) < 32:
        raise Bad("fsck: fatal: .git/index: index file smaller than expected")
    if data[:4] != b"DIRC":
        raise Bad("fsck: error: bad signature, index file corrupt")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3) or not sha1_trailer_ok(data):
        raise Bad("fsck: error: bad index file sha1 signature, index file corrupt")
    roots, at = [], 12
    for _ in range(count):
        roots.append(data[at + 40 : at + 60].hex())
        flags = struct.unpack(">H", data[at + 60 : at + 62])[0]
        extended = 2 if version == 3 and flags & 0x4000 else 0
        name_end = data.index(b"\0", at + 62 + extended)
        at += (name_end - at + 8) // 8 * 8
    while at < len(data) - 20:
        signature, size = data[at : at + 4], struct.unpack(">I", data[at + 4 : at + 8])[0]
        if signature == b"TREE":
            roots += cache_tree(data[at + 8 : at + 8 + size])
        at += 8 + size
    for oid in roots:
        if not repo.has(oid):
            raise Bad(f"fsck: {oid}: invalid sha1 pointer in the index or its cache-tree")
    return roots


def cache_tree(ext):
    oids, at = [], 0
    while at < len(ext):
        end = ext.index(b"\n", ext.index(b"\0", at))
        entries = int(ext[ext.index(b"\0", at) + 1 : end].split(b" ")[0])
        at = end + 1
        if entries >= 0:
            oids.append(ext[at : at + 20].hex())
            at += 20
    return oids


def links(kind, body):
    if kind == b"commit":
        head = body.split(b"\n\n")[0].split(b"\n")
        return [line[5:].decode() for line in head if line.startswith(b"tree ")] + [
            line[7:].decode() for line in head if line.startswith(b"parent ")
        ]
    if kind == b"tree":
        out, at = [], 0
        while at < len(body):
            space, nul = body.index(b" ", at), body.index(b"\0", at)
            if body[at:space] != b"160000":
                out.append(body[nul + 1 : nul + 21].hex())
            at = nul + 21
        return out
    return []


def fsck(repo, packed):
    """`git fsck --full`'s errors, for what this workload writes."""
    loose_objects(repo)
    repo.load_packs()
    commit_graph(repo)
    roots = []
    for folder, _, files in sorted(os.walk(repo.path("refs"))):
        for name in sorted(files):
            if name.endswith(".lock"):
                continue
            ref = os.path.relpath(os.path.join(folder, name), repo.git)
            try:
                roots.append(loose_ref(repo, ref))
            except Bad:
                raise Bad(f"fsck: {ref}: invalid sha1 pointer")
    roots += packed.values()
    for oid in roots:
        if not repo.has(oid):
            raise Bad(f"fsck: invalid sha1 pointer {oid}")
    roots += reflog_roots(repo) + index_roots(repo)
    seen = set()
    while roots:
        oid = roots.pop()
        if oid in seen:
            continue
        seen.add(oid)
        try:
            kind, body = repo.read(oid)
        except Missing as e:
            raise Bad(f"fsck: missing {e.oid}")
        roots += links(kind, body)


def git_directory(repo):
    """Bad unless git takes `.git` for a repository, which check.sh's
    `git fsck` asks before anything (setup.c's is_git_directory: HEAD a
    symbolic ref into `refs/` or an object name, `objects/` and `refs/`
    there); a crash inside `git init` (sim live runs it) can leave less."""
    try:
        with open(repo.path("HEAD"), "rb") as f:
            head = f.read()
    except OSError:
        head = b""
    symbolic = re.match(rb"ref:\s*refs/", head)
    if not (symbolic or re.match(rb"[0-9a-fA-F]{40}", head)):
        raise Bad(f"fsck: fatal: not a git repository (HEAD: {head[:60]!r})")
    for folder in ("objects", "refs"):
        if not os.access(repo.path(folder), os.X_OK):
            raise Bad(f"fsck: fatal: not a git repository (no .git/{folder})")


def judge(top, printed_file):
    """None if the state passes, else why not."""
    with open(printed_file, "rb") as f:
        printed = f.read()
    if not os.path.isdir(top):
        return "no directory"
    repo = Repo(top)
    try:
        try:
            packed = packed_refs(repo)
        except Bad:
            packed = None
        if packed is not None:
            acknowledged(repo, printed, packed)
        elif re.search(rb"^commit ", printed, re.M):
            raise Bad("HEAD does not resolve: packed-refs is unreadable")
        git_directory(repo)
        fsck(repo, packed or packed_refs(repo))
    except Bad as e:
        return str(e)
    except (IndexError, ValueError, struct.error, OSError) as e:
        return f"unreadable: {type(e).__name__}: {e}"
    return None


def main():
    if sys.argv[1:] == ["--server"]:
        for line in sys.stdin:
            top, printed, _io, _state = line.rstrip("\n").split("\t")
            why = judge(top, printed)
            print("pass" if why is None else "fail " + why.replace("\n", " "), flush=True)
        return 0
    if len(sys.argv) != 3:
        print("usage: check.py DIR PRINTED | check.py --server", file=sys.stderr)
        return 2
    why = judge(sys.argv[1], sys.argv[2])
    if why is not None:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
