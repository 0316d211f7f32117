#!/usr/bin/env python3
"""Sum a soak-deep run (scripts/soak-deep.sh) into one summary a later run
can compare with.

    soak-summary.py OUT [--compare EARLIER/summary.json]
    soak-summary.py --failing-seeds OUT/SECTION N

OUT holds plan.txt and one directory per section, each with the JSON
summaries of its chunks (`sim --json`, one per seed range). The summary sums
them per section (seeds, operations, crashes, time), lists every failing
seed, and groups failures into *classes*: the check and the first line of
the failure's detail with its numbers, hashes and quoted names blanked, so
that one bug found at a hundred seeds is one line, and a new bug is a new
line. It writes OUT/summary.json and OUT/summary.txt and prints the text.
With --compare it also says, per section, how the failure rate moved and
which classes are new or gone since the earlier run.

Exit status: 0 when no seed failed, 1 when one did, 2 on bad usage or an
unreadable chunk.
"""

import json
import re
import sys
from pathlib import Path


def failure_class(failure):
    """The check and the detail's first line, its particulars blanked."""
    line = failure.get("detail", "").splitlines()[0] if failure.get("detail") else ""
    line = re.sub(r'"[^"]*"', '"…"', line)
    line = re.sub(r"\b[0-9a-f]{8,}\b", "H", line)
    line = re.sub(r"\d+", "N", line)
    line = re.sub(r"\s+", " ", line).strip()
    return f"{failure.get('check', '?')}: {line[:160]}"


def chunks(section_dir):
    for path in sorted(section_dir.glob("chunk-*.json")):
        try:
            yield json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"soak-summary: {path}: {error}") from None


def section_summary(section_dir):
    total = {"seeds": 0, "ops": 0, "crashes": 0, "elapsed_sec": 0.0, "chunks": 0}
    failures = []
    for chunk in chunks(section_dir):
        total["chunks"] += 1
        for key in ("seeds", "ops", "crashes"):
            total[key] += chunk.get(key, 0)
        total["elapsed_sec"] += chunk.get("elapsed_sec", 0.0)
        failures.extend(chunk.get("failures", []))
    failures.sort(key=lambda f: f.get("seed", 0))
    classes = {}
    for failure in failures:
        entry = classes.setdefault(failure_class(failure), {"count": 0, "seeds": []})
        entry["count"] += 1
        if len(entry["seeds"]) < 5:
            entry["seeds"].append(failure.get("seed"))
    total["elapsed_sec"] = round(total["elapsed_sec"], 1)
    total["failing_seeds"] = len(failures)
    total["failures"] = [
        {"seed": f.get("seed"), "check": f.get("check"), "detail": (f.get("detail") or "").splitlines()[:1]}
        for f in failures
    ]
    total["classes"] = dict(sorted(classes.items(), key=lambda kv: -kv[1]["count"]))
    return total


def plan_of(out):
    plan = {}
    path = out / "plan.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            plan[key] = value
    return plan


def per_100k(section):
    return 100_000 * section["failing_seeds"] / section["seeds"] if section["seeds"] else 0.0


def text_of(summary, comparison):
    lines = [f"soak-deep base {summary['plan'].get('base', '?')} at {summary['plan'].get('commit', '?')}"]
    for name, section in summary["sections"].items():
        rate = section["seeds"] / section["elapsed_sec"] if section["elapsed_sec"] else 0.0
        lines.append(
            f"{name}: {section['seeds']} seeds, {section['ops']} ops, {section['crashes']} crashes, "
            f"{section['failing_seeds']} failing ({per_100k(section):.1f} per 100k), {rate:.0f} seeds/s of worker time"
        )
        for klass, entry in section["classes"].items():
            seeds = ", ".join(str(s) for s in entry["seeds"])
            lines.append(f"    {entry['count']:>6}  {klass}  [seeds {seeds}{', …' if entry['count'] > 5 else ''}]")
    lines.extend(comparison)
    return "\n".join(lines) + "\n"


def compare(summary, earlier_path):
    earlier = json.loads(Path(earlier_path).read_text())
    lines = [f"compared with {earlier_path} (base {earlier.get('plan', {}).get('base', '?')}):"]
    for name, section in summary["sections"].items():
        before = earlier.get("sections", {}).get(name)
        if before is None:
            lines.append(f"  {name}: not in the earlier run")
            continue
        new = sorted(set(section["classes"]) - set(before["classes"]))
        gone = sorted(set(before["classes"]) - set(section["classes"]))
        lines.append(
            f"  {name}: {per_100k(before):.1f} -> {per_100k(section):.1f} failing per 100k seeds "
            f"({before['seeds']} -> {section['seeds']} seeds)"
        )
        lines.extend(f"    new:  {klass}" for klass in new)
        lines.extend(f"    gone: {klass}" for klass in gone)
    return lines


def failing_seeds(section_dir, count):
    seeds = sorted(f.get("seed") for chunk in chunks(Path(section_dir)) for f in chunk.get("failures", []))
    print("\n".join(str(s) for s in seeds[:count]))


def main(argv):
    if len(argv) == 4 and argv[1] == "--failing-seeds":
        failing_seeds(argv[2], int(argv[3]))
        return 0
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--compare"):
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    if not out.is_dir():
        print(f"soak-summary: {out} is not a soak-deep output directory (it holds plan.txt and a directory per section)", file=sys.stderr)
        return 2
    sections = {d.name: section_summary(d) for d in sorted(out.iterdir()) if d.is_dir()}
    summary = {"plan": plan_of(out), "sections": sections}
    comparison = compare(summary, argv[3]) if len(argv) == 4 else []
    text = text_of(summary, comparison)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "summary.txt").write_text(text)
    sys.stdout.write(text)
    return 1 if any(s["failing_seeds"] for s in sections.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
