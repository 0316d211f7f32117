#!/usr/bin/env python3
"""Group the failing states of `sim trace explore --json` reports into
vulnerability classes by what the checker said (PROGRAMS.md).

The checker's message is normalised first: object names and hashes
(40 hex digits), loose-object paths, temporary-file suffixes, scratch
paths, numbers and bytes that are not printable text (a torn file's
garbage) are replaced by placeholders and a repeated "missing blob" is
said once, so two states that failed the same
way for different objects or acknowledgements fall in one class. A class
is a heuristic grouping, not a proof of one root cause: PROGRAMS.md names
the operations behind each from the reports' `crash` lines.

    trace-classify.py REPORT.json...          one Markdown row per class
    trace-classify.py --count REPORT.json     the number of classes only
    trace-classify.py LABEL=REPORT.json...    one row per class, with the
                                              failing states per labelled report
"""
import json
import re
import sys

RULES = [
    (re.compile(r"/dev/shm/\S*|/tmp/\S*"), "PATH"),
    (re.compile(r"objects/[0-9a-f]{2}/[0-9a-f]{38}"), "objects/XX/OBJECT"),
    (re.compile(r"pack-[0-9a-f]{40}"), "pack-HASH"),
    (re.compile(r"\b[0-9a-f]{40}\b"), "SHA"),
    (re.compile(r"tmp_[a-z]+_\w{6}"), "tmp_FILE"),
    (re.compile(r"\b0x[0-9a-f]+\b"), "0xN"),
    (re.compile(r"[^\x20-\x7e]+"), "?"),
    (re.compile(r"\b\d+\b"), "N"),
    (re.compile(r"\s+"), " "),
    # The same complaint about several objects is one complaint.
    (re.compile(r"(missing \w+ SHA)( \1)+"), r"\1"),
]


def normalise(message):
    """The checker's message with what varies per state replaced."""
    text = message.strip()
    for pattern, placeholder in RULES:
        text = pattern.sub(placeholder, text)
    return text[:160]


def classes(reports):
    """Failing states grouped: {class: [(label, io_index, state), ...]}."""
    grouped = {}
    for label, report in reports:
        for failure in report["failures"]:
            key = normalise(failure["checker_output"] or failure["checker"])
            grouped.setdefault(key, []).append((label, failure["io_index"], failure["state"]))
    return grouped


def load(arg):
    """`LABEL=PATH` or `PATH` (labelled by itself)."""
    label, _, path = arg.rpartition("=")
    return (label or path, json.load(open(path)))


def main(argv):
    count_only = argv[:1] == ["--count"]
    paths = argv[1:] if count_only else argv
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    reports = [load(path) for path in paths]
    grouped = classes(reports)
    if count_only:
        print(len(grouped))
        return 0
    print("| class | failing states | in (report: states at crash indices) | checker says (normalised) |")
    print("|---|---|---|---|")
    ranked = sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0]))
    for number, (key, states) in enumerate(ranked, 1):
        where = []
        for label, _ in reports:
            indices = sorted({io for at, io, _ in states if at == label})
            if indices:
                count = sum(1 for at, _, _ in states if at == label)
                span = f"{indices[0]}..{indices[-1]}" if len(indices) > 1 else str(indices[0])
                where.append(f"{label}: {count} at {span}")
        print(f"| {number} | {len(states)} | {'; '.join(where)} | {key.replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
